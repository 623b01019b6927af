// W8A16 prefill GEMM: bf16 activations x e4m3 weights with 128x128 scales on
// bf16 mma.sync m16n8k16, FP32 accumulation. out[m,n] = sum_kb (sum x*w) *
// w_scale[n/128,kb] -- the accuracy reference for W8A8.
//
// The weight fragment comes from the same 8-bit ldmatrix as W8A8: a lane holds
// w[n, 4t..4t+3]. Converted to two bf16x2 it feeds the k16 MMA as logical k
// (2t,2t+1) and (2t+8,2t+9). The MMA sums over k, so any K permutation shared
// by A and B is exact: A is read with the same permutation, x[m, 4t..4t+3] in
// one 8-byte shared load per row.
#pragma once
#include "fp8gen/gemm_mainloop.cuh"

namespace fp8gen {

template <int BM, int BN, int WARPS_M, int WARPS_N, int STAGES>
using W8A16GemmConfig = MmaTileConfig<BM, BN, WARPS_M, WARPS_N, STAGES, 2>;

template <class C>
struct W8A16GemmMath {
  float acc[C::MT][C::NT][4];
  const float* w_scale;
  int row0, n_block;  // row0 is set by mma_block_tile; only W8A8 needs it (activation scales)

  __device__ __forceinline__ void operator()(const uint8_t* tile_a, const uint8_t* tile_b, int kb, int kblocks) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int wm0 = (warp / C::WARPS_N) * C::WM;
    const int wn0 = (warp % C::WARPS_N) * C::WN;
    const int g = lane >> 2, t = lane & 3;
    const float sw = __ldg(w_scale + static_cast<int64_t>(n_block) * kblocks + kb);

    float part[C::MT][C::NT][4];
    zero_fragments(part);

#pragma unroll
    for (int ks = 0; ks < kBlockK / 32; ++ks) {
      uint32_t bf[C::NT][2];
#pragma unroll
      for (int jp = 0; jp < C::NT / 2; ++jp) {
        uint32_t pair[2][2];
        load_b_pair_e4m3(pair, tile_b, wn0 + jp * 16, ks);
        bf[2 * jp][0] = pair[0][0];
        bf[2 * jp][1] = pair[0][1];
        bf[2 * jp + 1][0] = pair[1][0];
        bf[2 * jp + 1][1] = pair[1][1];
      }
#pragma unroll
      for (int hk = 0; hk < 2; ++hk) {  // the two 16-K halves of this 32-K step
        uint32_t af[C::MT][4];
        const int chunk = ks * 4 + hk * 2 + (t >> 1);
        const int within = (t & 1) * 8;
#pragma unroll
        for (int i = 0; i < C::MT; ++i) {
          const int row = wm0 + i * 16 + g;
          const uint2 lo = *reinterpret_cast<const uint2*>(tile_a + swizzled<2 * kBlockK, 1>(row, chunk) + within);
          const uint2 hi =
              *reinterpret_cast<const uint2*>(tile_a + swizzled<2 * kBlockK, 1>(row + 8, chunk) + within);
          af[i][0] = lo.x;
          af[i][1] = hi.x;
          af[i][2] = lo.y;
          af[i][3] = hi.y;
        }
#pragma unroll
        for (int j = 0; j < C::NT; ++j) {
          const uint32_t b[2] = {e4m3x2_to_bf16x2(bf[j][hk]), e4m3x2_to_bf16x2(bf[j][hk] >> 16)};
#pragma unroll
          for (int i = 0; i < C::MT; ++i) ptx::mma_bf16_16816(part[i][j], af[i], b);
        }
      }
    }
#pragma unroll
    for (int i = 0; i < C::MT; ++i)
#pragma unroll
      for (int j = 0; j < C::NT; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][j][e] += part[i][j][e] * sw;
  }
};

template <class C>
__device__ __forceinline__ void w8a16_gemm(const __nv_bfloat16* x, const uint8_t* w, const float* w_scale,
                                           __nv_bfloat16* out, int M, int N, int K) {
  W8A16GemmMath<C> math;
  math.w_scale = w_scale;
  mma_block_tile<C>(math, reinterpret_cast<const uint8_t*>(x), w, out, M, N, K);
}

}  // namespace fp8gen
