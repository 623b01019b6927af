// How fast one CTA's TMA stream fills its stages, by box size and count,
// when DRAM is not the limit: the question behind the small-M tiles, whose
// K loop streams W at about 30 GB/s per CTA (64x64 t2, 8 KB W boxes) or
// 22 GB/s (64x32, 4 KB) even with half the SMs idle (HARDWARE.toml).
//
// Each CTA streams its own R rows of W ([N][K], the checkpoint's layout)
// through S stages, one thread issuing and one warp releasing, no math:
//   W only, one box of R rows x 128 bytes per K block;
//   W + A: one more box per block of 16 rows x 128 bytes from a small
//     buffer every CTA reads (L2 hits, as A is at small M);
//   W2 + A2: boxes of two K blocks each (a 3-D view of the same bytes,
//     box {128, R, 2} lands as two R x 128 tiles), one W and one A copy per
//     two blocks.
// Stages are sized so that the bytes in flight per CTA stay the same
// across box sizes (about 96 KB); one thread issues every copy, or two
// warps share them; the issuer waits on a free slot by try_wait or
// test_wait. Rates come after a warm-up, with the SM clock measured.
// Rate: a CTA's bytes over the time difference of K = 16384 and K = 8192
// (fixed costs cancel), for 16 and 132 CTAs. HARDWARE.toml cites
// its H200 figures.
// Build here, run on the GPU (needs only the driver):
//   nvcc -arch=sm_90a -O3 -std=c++17 -I templates/include -o tma_box_rate tests/tma_box_rate_bench.cu -ldl
//   ./tma_box_rate
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "fp8gen/ptx_sm90.cuh"
using namespace fp8gen;

constexpr int A_ROWS = 16;

struct Shape {
  int rows;        // W rows per box (the tile's width)
  int blocks;      // K blocks per copy (1 or 2)
  bool with_a;     // an A box per copy too
  int stage_bytes() const { return blocks * 128 * (rows + (with_a ? A_ROWS : 0)); }
};

__device__ __forceinline__ void tma_load_3d(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1,
                                            int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];\n"
      ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2) : "memory");
}

// Maps are 3-D views {128 bytes, rows, K blocks}: box {128, rows, blocks}.
// issuers 1: thread 0 issues every copy. issuers 2: lane 0 of warps 0 and 1
// issue in parallel (with an A box, warp 0 the W box and the stage's
// expect_tx, warp 1 the A box, whose bytes may land first: the phase still
// waits for warp 0's arrive; without one, the two take alternate stages).
// The last warp releases.
__global__ void __launch_bounds__(96) stream(const __grid_constant__ CUtensorMap map_w,
                                             const __grid_constant__ CUtensorMap map_a, int kblocks, int rows,
                                             int blocks, int with_a, int stages, int issuers, int test_wait,
                                             unsigned long long* clocks) {
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  __shared__ __align__(8) uint64_t bars[2 * 64];
  const uint32_t base = ptx::smem_addr(smem);
  const uint32_t w_bytes = blocks * rows * 128, a_bytes = with_a ? blocks * A_ROWS * 128 : 0;
  // stage slots rounded up to whole 1 KB swizzle atoms
  const uint32_t slot = (w_bytes + a_bytes + 1023) & ~1023u;
  auto full = [&](int s) { return ptx::smem_addr(&bars[s]); };
  auto empty = [&](int s) { return ptx::smem_addr(&bars[64 + s]); };
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) { ptx::mbar_init(full(s), 1); ptx::mbar_init(empty(s), 1); }
    ptx::fence_barrier_init();
  }
  __syncthreads();
  const int copies = kblocks / blocks;
  const int warp = threadIdx.x / 32;
  uint64_t c0 = clock64(), t0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  // the issuer's wait on a free slot: try_wait (may suspend the thread for a
  // while; the kernel's form) or test_wait (returns at once) in a spin
  auto wait_empty = [&](int s, uint32_t parity) {
    if (!test_wait) return ptx::mbar_wait(empty(s), parity);
    uint32_t done = 0;
    do {
      asm volatile("{\n .reg .pred p;\n mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                   : "=r"(done) : "r"(empty(s)), "r"(parity) : "memory");
    } while (!done);
  };
  if (threadIdx.x % 32 == 0 && warp < issuers) {
    const bool alternate = issuers == 2 && !with_a;
    int s = 0; uint32_t ph = 0;
    for (int c = 0; c < copies; ++c) {
      const bool mine = alternate ? c % 2 == warp : true;
      if (mine) {
        wait_empty(s, ph ^ 1);
        if (warp == 0 || alternate) {
          ptx::mbar_arrive_expect_tx(full(s), w_bytes + a_bytes);
          tma_load_3d(base + s * slot, &map_w, full(s), 0, blockIdx.x * rows, c * blocks);
        }
        if (with_a && (issuers == 1 || warp == 1))
          tma_load_3d(base + s * slot + w_bytes, &map_a, full(s), 0, 0, c * blocks);
      }
      if (++s == stages) { s = 0; ph ^= 1; }
    }
  } else if (threadIdx.x == 64) {
    int s = 0; uint32_t ph = 0;
    for (int c = 0; c < copies; ++c) {
      ptx::mbar_wait(full(s), ph);
      ptx::mbar_arrive(empty(s));
      if (++s == stages) { s = 0; ph ^= 1; }
    }
    if (blockIdx.x == 0) {
      uint64_t t1;
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
      clocks[0] = clock64() - c0;
      clocks[1] = t1 - t0;
    }
  }
}

using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                  const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                  CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
static EncodeTiled encoder() {
  static EncodeTiled fn =
      reinterpret_cast<EncodeTiled>(dlsym(dlopen("libcuda.so.1", RTLD_NOW), "cuTensorMapEncodeTiled"));
  return fn;
}

// [rows][K] bytes seen as {128, rows, K / 128} with strides {K, 128}.
static CUtensorMap make_map(void* ptr, uint64_t rows, uint64_t K, uint32_t box_rows, uint32_t box_blocks) {
  CUtensorMap m;
  const cuuint64_t dims[3] = {128, rows, K / 128};
  const cuuint64_t strides[2] = {K, 128};
  const cuuint32_t box[3] = {128, box_rows, box_blocks};
  const cuuint32_t step[3] = {1, 1, 1};
  if (encoder()(&m, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, ptr, dims, strides, box, step, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
    fprintf(stderr, "encode failed\n");
    exit(1);
  }
  return m;
}

struct Run {
  Shape sh;
  int ctas, stages, issuers, test_wait;
};

static unsigned long long* g_clocks;

// Median per-launch microseconds of 20 back-to-back launches, 5 batches.
static float time_us(const Run& r, int K, std::vector<void*>& ws, void* a) {
  std::vector<CUtensorMap> maps;
  for (void* w : ws) maps.push_back(make_map(w, uint64_t(r.ctas) * r.sh.rows, K, r.sh.rows, r.sh.blocks));
  const CUtensorMap map_a = make_map(a, A_ROWS, K, A_ROWS, r.sh.blocks);
  const int smem = r.stages * ((r.sh.stage_bytes() + 1023) & ~1023) + 1024;
  cudaFuncSetAttribute(stream, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<float> t;
  for (int batch = 0; batch < 6; ++batch) {
    cudaEventRecord(e0);
    for (int i = 0; i < 20; ++i)
      stream<<<r.ctas, 96, smem>>>(maps[i % maps.size()], map_a, K / 128, r.sh.rows, r.sh.blocks, r.sh.with_a,
                                   r.stages, r.issuers, r.test_wait, g_clocks);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    if (batch) t.push_back(ms * 1e3f / 20);
  }
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    fprintf(stderr, "launch failed: %s\n", cudaGetErrorString(err));
    exit(1);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Per-CTA GB/s of W (and of all bytes copied) from the K = 16384 / 8192
// slope, and per issuing iteration (one stage) in ns and in SM cycles (the
// clock from CTA 0's issuer in the last K = 16384 launch).
static void row(const Run& r, std::vector<void*>& ws, void* a) {
  const float t8 = time_us(r, 8192, ws, a), t16 = time_us(r, 16384, ws, a);
  unsigned long long c[2];
  cudaMemcpy(c, g_clocks, sizeof c, cudaMemcpyDeviceToHost);
  const double mhz = double(c[0]) / double(c[1]) * 1e3;
  const Shape& sh = r.sh;
  const double dt_us = t16 - t8, w_bytes = double(sh.rows) * 8192, all = double(sh.stage_bytes()) * 64 / sh.blocks;
  const double stages = 64.0 / sh.blocks;
  printf("rows %3d blocks %d A %d issuers %d %s stages %2d ctas %3d: K=16384 %6.2f us, per CTA W %5.1f GB/s, all "
         "%5.1f GB/s; per stage %5.1f ns, %4.0f cycles at %4.0f MHz; all CTAs W %.2f TB/s\n",
         sh.rows, sh.blocks, int(sh.with_a), r.issuers, r.test_wait ? "test" : "try ", r.stages, r.ctas, t16,
         w_bytes / dt_us / 1e3, all / dt_us / 1e3, dt_us * 1e3 / stages, dt_us * 1e3 / stages * mhz / 1e3, mhz,
         w_bytes * r.ctas / dt_us / 1e6);
  fflush(stdout);
}

int main() {
  const int K = 16384, max_rows = 132 * 128;
  std::vector<void*> ws(3);
  for (auto& p : ws) {
    cudaMalloc(&p, size_t(max_rows) * K);
    cudaMemset(p, 0x3c, size_t(max_rows) * K);
  }
  void* a;
  cudaMalloc(&a, size_t(A_ROWS) * K);
  cudaMemset(a, 0x3c, size_t(A_ROWS) * K);
  cudaMalloc(&g_clocks, 2 * sizeof(unsigned long long));
  const Shape shapes[] = {{16, 1, false}, {32, 1, false}, {64, 1, false}, {32, 1, true},
                          {64, 1, true},  {32, 2, true},  {64, 2, true}};
  // warm-up: the clock ramps from idle over the first few hundred ms
  for (int i = 0; i < 40; ++i) time_us(Run{shapes[2], 132, 12, 1, 0}, K, ws, a);
  for (int ctas : {16, 132})
    for (const Shape& sh : shapes) {
      const int stages = std::max(2, std::min(48, 96 * 1024 / ((sh.stage_bytes() + 1023) & ~1023)));
      for (int issuers : {1, 2})
        for (int test_wait : {0, 1}) row(Run{sh, ctas, stages, issuers, test_wait}, ws, a);
    }
  return 0;
}
