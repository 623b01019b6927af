// W8A8 block-scaled GEMM on mma.sync m16n8k32 e4m3 (the in-tree, portable
// family). out[m,n] = sum_kb (sum_{k in kb} a[m,k] w[n,k]) * a_scale[m,kb] *
// w_scale[n/128,kb]: each 128-K partial stays FP32 and is promoted once.
// The single-scale variants (per row: a_scale[m] * w_scale[n]; per tensor:
// one device scalar) add the 128-K partials unscaled and scale once before
// the bf16 store.
#pragma once
#include "fp8gen/gemm_mainloop.cuh"

namespace fp8gen {

template <int BM, int BN, int WARPS_M, int WARPS_N, int STAGES>
using W8A8MmaConfig = MmaTileConfig<BM, BN, WARPS_M, WARPS_N, STAGES, 1>;

enum MmaScaleMode : int { kMmaBlock = 0, kMmaRow = 1, kMmaTensor = 2 };

template <class C, int MODE = kMmaBlock>
struct W8A8MmaMath {
  float acc[C::MT][C::NT][4];
  const float* a_scale;  // [M, kblocks], token-major
  const float* w_scale;  // [ceil(N/128), kblocks]
  int M, row0, n_block;

  __device__ __forceinline__ void operator()(const uint8_t* tile_a, const uint8_t* tile_b, int kb, int kblocks) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int wm0 = (warp / C::WARPS_N) * C::WM;
    const int wn0 = (warp % C::WARPS_N) * C::WN;
    // Scales first: their latency hides behind this block's MMAs (block
    // mode; the single-scale modes scale once, at the end, so every factor is 1).
    float sa[C::MT][2];
    float sw = 1.f;
#pragma unroll
    for (int i = 0; i < C::MT; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = row0 + i * 16 + (lane >> 2) + 8 * h;
        sa[i][h] = 1.f;
        if constexpr (MODE == kMmaBlock)
          sa[i][h] = row < M ? __ldg(a_scale + static_cast<int64_t>(row) * kblocks + kb) : 0.f;
      }
    if constexpr (MODE == kMmaBlock) sw = __ldg(w_scale + static_cast<int64_t>(n_block) * kblocks + kb);

    float part[C::MT][C::NT][4];
    zero_fragments(part);

#pragma unroll
    for (int ks = 0; ks < kBlockK / 32; ++ks) {
      uint32_t af[C::MT][4];
#pragma unroll
      for (int i = 0; i < C::MT; ++i) {
        const int mat = lane >> 3;
        const int row = wm0 + i * 16 + (lane & 7) + (mat & 1) * 8;
        ptx::ldmatrix_x4(af[i], tile_a + swizzled<kBlockK, 0>(row, ks * 2 + (mat >> 1)));
      }
#pragma unroll
      for (int jp = 0; jp < C::NT / 2; ++jp) {
        uint32_t bf[2][2];
        load_b_pair_e4m3(bf, tile_b, wn0 + jp * 16, ks);
#pragma unroll
        for (int i = 0; i < C::MT; ++i) {
          ptx::mma_e4m3_16832(part[i][2 * jp], af[i], bf[0]);
          ptx::mma_e4m3_16832(part[i][2 * jp + 1], af[i], bf[1]);
        }
      }
    }
#pragma unroll
    for (int i = 0; i < C::MT; ++i)
#pragma unroll
      for (int j = 0; j < C::NT; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          if constexpr (MODE == kMmaBlock)
            acc[i][j][e] += part[i][j][e] * (sa[i][e >> 1] * sw);
          else
            acc[i][j][e] += part[i][j][e];
        }
  }
};

// The single-scale families' output scale, applied to the FP32 total.
// Per row: a_scale[m] * w_scale[n] (0 past the edges: those are not stored);
// per tensor: one scalar read on the device.
template <class C, int MODE>
struct SingleScaleOutput {
  const float* a_scale;
  const float* w_scale;
  int M, N;

  __device__ __forceinline__ void operator()(float (&acc)[C::MT][C::NT][4], int row0, int col0) const {
    const int lane = threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;
    if constexpr (MODE == kMmaTensor) {
      const float s = __ldg(a_scale);
#pragma unroll
      for (int i = 0; i < C::MT; ++i)
#pragma unroll
        for (int j = 0; j < C::NT; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[i][j][e] *= s;
    } else {
#pragma unroll
      for (int i = 0; i < C::MT; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int row = row0 + i * 16 + g + 8 * h;
          const float ra = row < M ? __ldg(a_scale + row) : 0.f;
#pragma unroll
          for (int j = 0; j < C::NT; ++j) {
            const int col = col0 + j * 8 + 2 * t;  // N % 16 == 0: col < N means col + 1 < N
            const float w0 = col < N ? __ldg(w_scale + col) : 0.f;
            const float w1 = col < N ? __ldg(w_scale + col + 1) : 0.f;
            acc[i][j][2 * h] *= ra * w0;
            acc[i][j][2 * h + 1] *= ra * w1;
          }
        }
    }
  }
};

template <class C>
__device__ __forceinline__ void w8a8_mma(const uint8_t* a, const float* a_scale, const uint8_t* w,
                                         const float* w_scale, __nv_bfloat16* out, int M, int N, int K) {
  W8A8MmaMath<C> math;
  math.a_scale = a_scale;
  math.w_scale = w_scale;
  math.M = M;
  mma_block_tile<C>(math, a, w, out, M, N, K);
}

// out = (a . w) * a_scale[m] * w_scale[n]: per-token x per-channel scales.
template <class C>
__device__ __forceinline__ void w8a8_mma_row(const uint8_t* a, const float* a_scale, const uint8_t* w,
                                             const float* w_scale, __nv_bfloat16* out, int M, int N, int K) {
  W8A8MmaMath<C, kMmaRow> math;
  math.M = M;
  mma_block_tile<C>(math, a, w, out, M, N, K, SingleScaleOutput<C, kMmaRow>{a_scale, w_scale, M, N});
}

// out = (a . w) * scale, `scale` a device scalar (quant_tensor's state[2]).
template <class C>
__device__ __forceinline__ void w8a8_mma_tensor(const uint8_t* a, const float* scale, const uint8_t* w,
                                                __nv_bfloat16* out, int M, int N, int K) {
  W8A8MmaMath<C, kMmaTensor> math;
  math.M = M;
  mma_block_tile<C>(math, a, w, out, M, N, K, SingleScaleOutput<C, kMmaTensor>{scale, nullptr, M, N});
}

}  // namespace fp8gen
