// W streamed by TMA the way w8a8_wgmma's producer streams it: 64-row x
// 128-byte boxes into 10 or 16 stages, one thread issuing, one warp
// releasing, 112 CTAs (N = 7168), no math. Three layouts of the same bytes:
//   tiled:  the checkpoint's [N][K] (a box is 64 rows K bytes apart);
//   packed: [N/64][K/128][64][128] (a box is 8 KB contiguous);
//   8-row:  [N/8][K/128][8][128] through a 4-D map (1 KB contiguous runs).
// It prints the DRAM rate from the difference of K = 16384 and K = 8192
// (fixed costs cancel). HARDWARE.toml cites its H200 figures.
// Build here, run on the GPU (needs only the driver):
//   nvcc -arch=sm_90a -O3 -std=c++17 -I templates/include -o tma_stream tests/tma_stream_bench.cu -ldl
//   ./tma_stream
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <dlfcn.h>
#include "fp8gen/ptx_sm90.cuh"
using namespace fp8gen;

constexpr int BOX_ROWS = 64, BOX_BYTES = 64 * 128;

template <int S>
__global__ void __launch_bounds__(64) stream(const __grid_constant__ CUtensorMap map, int kblocks, int packed) {
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  __shared__ __align__(8) uint64_t bars[2 * S];
  const uint32_t base = ptx::smem_addr(smem);
  auto full = [&](int s) { return ptx::smem_addr(&bars[s]); };
  auto empty = [&](int s) { return ptx::smem_addr(&bars[S + s]); };
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; ++s) { ptx::mbar_init(full(s), 1); ptx::mbar_init(empty(s), 1); }
    ptx::fence_barrier_init();
  }
  __syncthreads();
  const int tn = blockIdx.x;
  if (threadIdx.x == 0) {
    int s = 0; uint32_t ph = 0;
    for (int kb = 0; kb < kblocks; ++kb) {
      ptx::mbar_wait(empty(s), ph ^ 1);
      ptx::mbar_arrive_expect_tx(full(s), BOX_BYTES);
      if (packed == 2)
        asm volatile(
            "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], [%2];\n"
            ::"r"(base + s * BOX_BYTES), "l"(reinterpret_cast<uint64_t>(&map)), "r"(full(s)), "r"(0), "r"(0), "r"(kb),
            "r"(tn * 8) : "memory");
      else if (packed) ptx::tma_load_2d(base + s * BOX_BYTES, &map, full(s), 0, (tn * kblocks + kb) * BOX_ROWS);
      else ptx::tma_load_2d(base + s * BOX_BYTES, &map, full(s), kb * 128, tn * BOX_ROWS);
      if (++s == S) { s = 0; ph ^= 1; }
    }
  } else if (threadIdx.x == 32) {
    int s = 0; uint32_t ph = 0;
    for (int kb = 0; kb < kblocks; ++kb) {
      ptx::mbar_wait(full(s), ph);
      ptx::mbar_arrive(empty(s));
      if (++s == S) { s = 0; ph ^= 1; }
    }
  }
}


using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                  const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                  CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
static EncodeTiled encoder() {
  static EncodeTiled fn = reinterpret_cast<EncodeTiled>(dlsym(dlopen("libcuda.so.1", RTLD_NOW), "cuTensorMapEncodeTiled"));
  return fn;
}
static CUtensorMap make_map(void* ptr, uint64_t inner, uint64_t outer) {
  CUtensorMap m;
  const cuuint64_t dims[2] = {inner, outer};
  const cuuint64_t strides[1] = {inner};
  const cuuint32_t box[2] = {128, BOX_ROWS};
  const cuuint32_t step[2] = {1, 1};
  if (encoder()(&m, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, ptr, dims, strides, box, step, CU_TENSOR_MAP_INTERLEAVE_NONE,
                  CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) { fprintf(stderr, "encode failed\n"); exit(1); }
  return m;
}

static CUtensorMap make_map8(void* ptr, int N, int K) {
  CUtensorMap m;
  const cuuint64_t dims[4] = {128, 8, uint64_t(K / 128), uint64_t(N / 8)};
  const cuuint64_t strides[3] = {128, 1024, uint64_t(K / 128) * 1024};
  const cuuint32_t box[4] = {128, 8, 1, 8};
  const cuuint32_t step[4] = {1, 1, 1, 1};
  if (encoder()(&m, CU_TENSOR_MAP_DATA_TYPE_UINT8, 4, ptr, dims, strides, box, step, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) { fprintf(stderr, "encode8 failed\n"); exit(1); }
  return m;
}

template <int S>
static float time_us(int N, int K, int packed, std::vector<void*>& bufs) {
  const int kblocks = K / 128, ctas = N / BOX_ROWS;
  std::vector<CUtensorMap> maps;
  for (void* b : bufs) maps.push_back(packed == 2 ? make_map8(b, N, K) : packed ? make_map(b, 128, uint64_t(N) * K / 128) : make_map(b, K, N));
  const int smem = S * BOX_BYTES + 1024;
  cudaFuncSetAttribute(stream<S>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  std::vector<float> t;
  for (int batch = 0; batch < 6; ++batch) {
    cudaEventRecord(a);
    for (int i = 0; i < 20; ++i) stream<S><<<ctas, 64, smem>>>(maps[i % maps.size()], kblocks, packed);
    cudaEventRecord(b); cudaEventSynchronize(b);
    float ms; cudaEventElapsedTime(&ms, a, b);
    if (batch) t.push_back(ms * 1e3f / 20);
  }
  if (cudaGetLastError() != cudaSuccess) { fprintf(stderr, "launch failed\n"); exit(1); }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main() {
  const int N = 7168;
  std::vector<void*> bufs(3);
  const size_t bytes = size_t(N) * 16384;
  for (auto& p : bufs) { cudaMalloc(&p, bytes); cudaMemset(p, 0x3c, bytes); }
  for (int rep = 0; rep < 2; ++rep)
    for (int packed = 0; packed < 3; ++packed) {
      float t16 = time_us<10>(N, 16384, packed, bufs), t8 = time_us<10>(N, 8192, packed, bufs);
      float u16 = time_us<16>(N, 16384, packed, bufs), u8 = time_us<16>(N, 8192, packed, bufs);
      const double d = double(N) * 8192;
      printf("%s: 10 stages K=16384 %.2f us K=8192 %.2f us slope %.3f TB/s | 16 stages %.2f / %.2f us slope %.3f TB/s (112 CTAs)\n",
             packed == 2 ? "8-row " : packed ? "packed" : "tiled ", t16, t8, d / (t16 - t8) / 1e6, u16, u8, d / (u16 - u8) / 1e6);
    }
  return 0;
}
