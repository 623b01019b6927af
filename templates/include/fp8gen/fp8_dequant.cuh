// FP8-block -> bf16 dequantization, for engines that keep a bf16 fallback:
// out[n,k] = bf16_rn(float(w[n,k]) * w_scale[n/128, k/128]). The product is
// one FP32 multiply (exact: e4m3 has 4 significant bits), so the result is
// the correctly rounded bf16 of the dequantized weight. A thread owns 16
// consecutive weights: one 16-byte load, two 16-byte stores.
#pragma once
#include "fp8gen/ptx.cuh"

namespace fp8gen {

template <int THREADS>
__device__ __forceinline__ void fp8_dequant(const uint8_t* w, const float* w_scale, __nv_bfloat16* out, int N,
                                            int K) {
  const int64_t chunk = static_cast<int64_t>(blockIdx.x) * THREADS + threadIdx.x;
  const int per_row = K / 16;
  if (chunk >= static_cast<int64_t>(N) * per_row) return;
  const int64_t n = chunk / per_row;
  const int k16 = static_cast<int>(chunk % per_row);
  const float s = __ldg(w_scale + (n / 128) * (K / 128) + k16 / 8);
  const uint4 raw = __ldcs(reinterpret_cast<const uint4*>(w) + chunk);
  const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
  uint32_t packed[8];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint32_t h2 = ptx::cvt_e4m3x2_to_f16x2(static_cast<uint16_t>(words[i] >> (16 * h)));
      const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&h2));
      const __nv_bfloat162 b = __floats2bfloat162_rn(f.x * s, f.y * s);
      packed[2 * i + h] = *reinterpret_cast<const uint32_t*>(&b);
    }
  }
  uint4* dst = reinterpret_cast<uint4*>(out) + 2 * chunk;
  dst[0] = make_uint4(packed[0], packed[1], packed[2], packed[3]);
  dst[1] = make_uint4(packed[4], packed[5], packed[6], packed[7]);
}

}  // namespace fp8gen
