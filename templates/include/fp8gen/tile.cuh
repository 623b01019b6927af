// Pieces shared by the mma.sync GEMM families: swizzled shared-memory tiles
// with 128-element K rows, their cp.async loaders, and fragment loads.
#pragma once
#include "fp8gen/ptx.cuh"

namespace fp8gen {

constexpr int kBlockK = 128;  // one activation scale and one weight-scale column per 128 K

// Byte offset of 16-byte chunk `chunk` of row `row` in a tile whose rows are
// ROW_BYTES long. The XOR keeps the 8 rows an ldmatrix (or an 8-byte LDS
// phase) touches in distinct bank groups.
template <int ROW_BYTES, int SWIZZLE_SHIFT>
__device__ __forceinline__ int swizzled(int row, int chunk) {
  static_assert(ROW_BYTES % 128 == 0, "rows must span whole 128-byte bank lines");
  constexpr int kMask = SWIZZLE_SHIFT == 0 ? 7 : 3;
  return row * ROW_BYTES + ((chunk ^ ((row & kMask) << SWIZZLE_SHIFT)) << 4);
}

// Copies ROWS rows of ROW_BYTES from a row-major matrix (leading dimension
// `ld_bytes`) into a swizzled tile; rows at or past `rows_valid` become zeros.
template <int ROWS, int ROW_BYTES, int SWIZZLE_SHIFT, int THREADS>
__device__ __forceinline__ void load_tile_async(uint8_t* tile, const uint8_t* src, int ld_bytes,
                                                int rows_valid) {
  constexpr int kChunksPerRow = ROW_BYTES / 16;
  constexpr int kChunks = ROWS * kChunksPerRow;
  static_assert(kChunks % THREADS == 0, "each thread copies the same number of chunks");
#pragma unroll
  for (int i = 0; i < kChunks / THREADS; ++i) {
    const int idx = i * THREADS + threadIdx.x;
    const int row = idx / kChunksPerRow;
    const int chunk = idx % kChunksPerRow;
    const bool valid = row < rows_valid;
    const uint8_t* g = valid ? src + static_cast<int64_t>(row) * ld_bytes + chunk * 16 : src;
    ptx::cp_async_16(tile + swizzled<ROW_BYTES, SWIZZLE_SHIFT>(row, chunk), g, valid);
  }
}

// B fragments of two adjacent n8 tiles for one 32-byte K step of an e4m3 tile
// (128-byte rows, SWIZZLE_SHIFT 0). b[j][0] holds k 4t..4t+3 of row g of tile
// j, b[j][1] the same 16 bytes further: the m16n8k32 8-bit B layout.
__device__ __forceinline__ void load_b_pair_e4m3(uint32_t (&b)[2][2], const uint8_t* tile, int n_base,
                                                 int k_step) {
  const int lane = threadIdx.x & 31;
  const int mat = lane >> 3;
  const int row = n_base + (lane & 7) + (mat >> 1) * 8;
  const int chunk = k_step * 2 + (mat & 1);
  uint32_t r[4];
  ptx::ldmatrix_x4(r, tile + swizzled<128, 0>(row, chunk));
  b[0][0] = r[0];
  b[0][1] = r[1];
  b[1][0] = r[2];
  b[1][1] = r[3];
}

// Two e4m3 (low byte = lower K) -> bf16x2, exactly: every e4m3 value is an
// f16 and a bf16 value, so the f16 hop rounds nothing.
__device__ __forceinline__ uint32_t e4m3x2_to_bf16x2(uint32_t two_bytes) {
  const uint32_t h2 = ptx::cvt_e4m3x2_to_f16x2(static_cast<uint16_t>(two_bytes & 0xffffu));
  const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&h2));
  const __nv_bfloat162 b = __floats2bfloat162_rn(f.x, f.y);
  return *reinterpret_cast<const uint32_t*>(&b);
}

template <int MT, int NT>
__device__ __forceinline__ void zero_fragments(float (&f)[MT][NT][4]) {
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) f[i][j][e] = 0.f;
}

// Writes a warp's FP32 accumulators (m16n8 C layout) as bf16 pairs, clipped
// to [M, N). N is even, so a pair is either whole or out.
template <int MT, int NT>
__device__ __forceinline__ void store_bf16_fragments(const float (&acc)[MT][NT][4], __nv_bfloat16* out,
                                                     int M, int N, int row0, int col0) {
  const int lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int i = 0; i < MT; ++i) {
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const int col = col0 + j * 8 + 2 * t;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = row0 + i * 16 + g + 8 * h;
        if (row < M && col < N) {
          *reinterpret_cast<__nv_bfloat162*>(out + static_cast<int64_t>(row) * N + col) =
              __floats2bfloat162_rn(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
        }
      }
    }
  }
}

}  // namespace fp8gen
