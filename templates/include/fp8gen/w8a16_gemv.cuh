// Decode GEMV, M <= 4: out[m,n] = sum_kb (sum_k x[m,k] w[n,k]) * w_scale[n/128,kb].
// One warp per weight row streams it once in 16-byte loads, UNROLL of them in
// flight per lane; the M activation rows are tiny and stay in L1/L2.
#pragma once
#include "fp8gen/ptx.cuh"

namespace fp8gen {

constexpr int kGemvMaxM = 4;

template <int THREADS, int UNROLL>
__device__ __forceinline__ void w8a16_gemv(const __nv_bfloat16* x, const uint8_t* w, const float* w_scale,
                                           __nv_bfloat16* out, int M, int N, int K) {
  const int lane = threadIdx.x & 31;
  const int n = blockIdx.x * (THREADS / 32) + (threadIdx.x >> 5);
  if (n >= N) return;  // whole warps leave together
  const int chunks = K / 16;       // 16 weights per lane per load
  const int kblocks = K / 128;     // 8 chunks per scale block
  const uint4* wrow = reinterpret_cast<const uint4*>(w + static_cast<int64_t>(n) * K);
  const float* srow = w_scale + static_cast<int64_t>(n / 128) * kblocks;
  float acc[kGemvMaxM] = {0.f, 0.f, 0.f, 0.f};
  for (int base = lane; base < chunks; base += 32 * UNROLL) {
    uint4 wv[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int c = base + u * 32;
      wv[u] = c < chunks ? __ldg(wrow + c) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int c = base + u * 32;
      if (c >= chunks) break;
      float wf[16];
      const uint32_t words[4] = {wv[u].x, wv[u].y, wv[u].z, wv[u].w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const uint32_t h2 = ptx::cvt_e4m3x2_to_f16x2(static_cast<uint16_t>(words[i] >> (16 * h)));
          const float2 p = __half22float2(*reinterpret_cast<const __half2*>(&h2));
          wf[4 * i + 2 * h] = p.x;
          wf[4 * i + 2 * h + 1] = p.y;
        }
      }
      const float sw = __ldg(srow + c / 8);
#pragma unroll
      for (int m = 0; m < kGemvMaxM; ++m) {
        if (m < M) {
          const uint4* xs = reinterpret_cast<const uint4*>(x + static_cast<int64_t>(m) * K) + 2 * c;
          const uint4 xv[2] = {__ldg(xs), __ldg(xs + 1)};
          const __nv_bfloat162* xb = reinterpret_cast<const __nv_bfloat162*>(xv);
          float dot = 0.f;
#pragma unroll
          for (int i = 0; i < 8; ++i) {
            const float2 xf = __bfloat1622float2(xb[i]);
            dot = fmaf(xf.x, wf[2 * i], dot);
            dot = fmaf(xf.y, wf[2 * i + 1], dot);
          }
          acc[m] = fmaf(dot, sw, acc[m]);
        }
      }
    }
  }
#pragma unroll
  for (int m = 0; m < kGemvMaxM; ++m) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) acc[m] += __shfl_xor_sync(0xffffffffu, acc[m], off);
    if (lane == 0 && m < M) out[static_cast<int64_t>(m) * N + n] = __float2bfloat16_rn(acc[m]);
  }
}

}  // namespace fp8gen
