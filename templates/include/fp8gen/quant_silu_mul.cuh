// The dense FFN's middle: h = SiLU(gate) * up, and h quantized for the down
// projection, in one pass. h is rounded to bf16 before quantizing, exactly as
// an unfused silu_mul (bf16 out) followed by quant_group would, so the fused
// result is bit-identical to that pipeline. Either output is optional (null):
// q only for a W8A8 down projection, h only for a W8A16 one. h may alias
// gate: each thread reads its chunk before writing it.
#pragma once
#include "fp8gen/quant_group.cuh"

namespace fp8gen {

__device__ __forceinline__ float silu(float g) { return __fdiv_rn(g, 1.f + expf(-g)); }

template <int THREADS>
__device__ __forceinline__ void quant_silu_mul(const __nv_bfloat16* gate, const __nv_bfloat16* up,
                                               __nv_bfloat16* h, uint8_t* q, float* scale, int M, int K,
                                               int ld_scale, int mn_major, int ue8m0, float eps) {
  static_assert(THREADS % 32 == 0, "whole warps: the amax shuffle uses every lane");
  // (no launch_dependents(): see quant_group)
  const QuantChunk c = quant_chunk(THREADS, M, K, ld_scale, mn_major);
  float g[kQuantElemsPerThread], u[kQuantElemsPerThread], f[kQuantElemsPerThread];
  load_bf16x16(g, gate + c.index * kQuantElemsPerThread, c.valid);
  load_bf16x16(u, up + c.index * kQuantElemsPerThread, c.valid);
  uint32_t packed[kQuantElemsPerThread / 2];
#pragma unroll
  for (int i = 0; i < kQuantElemsPerThread / 2; ++i) {
    const __nv_bfloat162 hb = __floats2bfloat162_rn(silu(g[2 * i]) * u[2 * i], silu(g[2 * i + 1]) * u[2 * i + 1]);
    packed[i] = *reinterpret_cast<const uint32_t*>(&hb);
    const float2 hf = __bfloat1622float2(hb);
    f[2 * i] = hf.x;
    f[2 * i + 1] = hf.y;
  }
  if (h != nullptr && c.valid) {
    uint4* dst = reinterpret_cast<uint4*>(h + c.index * kQuantElemsPerThread);
    dst[0] = make_uint4(packed[0], packed[1], packed[2], packed[3]);
    dst[1] = make_uint4(packed[4], packed[5], packed[6], packed[7]);
  }
  if (q != nullptr) quantize_16(f, c, q, scale, K, ld_scale, mn_major, ue8m0, eps);
}

}  // namespace fp8gen
