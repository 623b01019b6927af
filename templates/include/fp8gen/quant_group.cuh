// Per-token-group activation quantizer: bf16 [M,K] -> e4m3 [M,K] plus one
// FP32 scale per token per 128-K group (DESIGN.md numerics):
//   s = max(amax, eps) / 448  (or the next power of two for UE8M0),
//   q = sat_e4m3(x / s)       (IEEE quotient, round to nearest even).
// A thread owns 16 consecutive elements (two 16-byte loads in flight); the 8
// threads of one group reduce their amax with shuffles. With MN-major scales
// the launch also covers the padded tokens M..ld_scale-1, whose scales are
// written as zeros (padded-M consumers read them).
#pragma once
#include "fp8gen/ptx.cuh"

namespace fp8gen {

constexpr float kE4m3Max = 448.f;
constexpr int kQuantGroup = 128;
constexpr int kQuantElemsPerThread = 16;
constexpr int kQuantThreadsPerGroup = kQuantGroup / kQuantElemsPerThread;

// Smallest power of two >= v (v positive, normal): exact, no log2 rounding.
__device__ __forceinline__ float pow2_ceil(float v) {
  uint32_t bits = __float_as_uint(v);
  const uint32_t mantissa = bits & 0x7fffffu;
  bits &= 0xff800000u;
  if (mantissa != 0) bits += 0x00800000u;
  return __uint_as_float(bits);
}

// x / s correctly rounded, given inv = 1/s correctly rounded: q0 = x*inv is
// within an ulp, the FMA residual is exact, and one correction step yields the
// IEEE quotient (Markstein). Bit-identical to __fdiv_rn at 3 FP ops instead
// of a full division per element; underflowing quotients round to e4m3 zero
// either way. The correction turns x = -0 into +0 (+0 + -0 rounds to +0), so
// the quotient takes x's sign back (s > 0): -0 stays -0, as x / s gives.
__device__ __forceinline__ float div_rn_by(float x, float s, float inv) {
  const float q0 = x * inv;
  const float r = fmaf(-q0, s, x);
  return copysignf(fmaf(r, inv, q0), x);
}

__device__ __forceinline__ float group_scale(float amax, float eps, bool ue8m0) {
  const float s = __fdiv_rn(fmaxf(amax, eps), kE4m3Max);
  return ue8m0 ? pow2_ceil(s) : s;
}

// 16 values -> e4m3 under scale s (IEEE quotients, RNE, saturating) at q, a
// streaming store: the quantized activation is read once, by the GEMM.
__device__ __forceinline__ void quantize_16_by(const float (&f)[kQuantElemsPerThread], float s, uint8_t* q) {
  const float inv = __frcp_rn(s);
  uint32_t packed[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint32_t lo = ptx::cvt_e4m3x2(div_rn_by(f[4 * i], s, inv), div_rn_by(f[4 * i + 1], s, inv));
    const uint32_t hi = ptx::cvt_e4m3x2(div_rn_by(f[4 * i + 2], s, inv), div_rn_by(f[4 * i + 3], s, inv));
    packed[i] = lo | (hi << 16);
  }
  __stcs(reinterpret_cast<uint4*>(q), make_uint4(packed[0], packed[1], packed[2], packed[3]));
}

// Where a thread's 16 elements sit, and which of its writes are real.
struct QuantChunk {
  int64_t index;     // chunk number, row-major over [rows, K/16]
  bool valid;        // inside the M x K activation
  bool scale_valid;  // inside the scale tensor (MN-major pads included)
};

__device__ __forceinline__ QuantChunk quant_chunk(int threads, int M, int K, int ld_scale, int mn_major) {
  QuantChunk c;
  c.index = static_cast<int64_t>(blockIdx.x) * threads + threadIdx.x;
  const int64_t per_row = K / kQuantElemsPerThread;
  c.valid = c.index < static_cast<int64_t>(M) * per_row;
  c.scale_valid = c.index < static_cast<int64_t>(mn_major ? ld_scale : M) * per_row;
  return c;
}

// Quantizes one thread's 16 values (already rounded to bf16 and widened).
// Every lane of the warp must call it: the group amax uses shuffles.
__device__ __forceinline__ void quantize_16(const float (&f)[kQuantElemsPerThread], const QuantChunk& c,
                                            uint8_t* q, float* scale, int K, int ld_scale, int mn_major,
                                            int ue8m0, float eps) {
  float amax = 0.f;
#pragma unroll
  for (int i = 0; i < kQuantElemsPerThread; ++i) amax = fmaxf(amax, fabsf(f[i]));
  // Groups are 8 aligned lanes; invalid lanes hold zeros and only ever share
  // a group with other invalid lanes (M*K/16 is a multiple of 8).
#pragma unroll
  for (int off = 1; off < kQuantThreadsPerGroup; off <<= 1)
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
  const float s = group_scale(amax, eps, ue8m0 != 0);
  const int per_row = K / kQuantElemsPerThread;
  const int col_chunk = static_cast<int>(c.index % per_row);
  if (c.scale_valid && col_chunk % kQuantThreadsPerGroup == 0) {
    const int64_t row = c.index / per_row;
    const int group = col_chunk / kQuantThreadsPerGroup;
    const int64_t at = mn_major ? static_cast<int64_t>(group) * ld_scale + row : row * ld_scale + group;
    scale[at] = c.valid ? s : 0.f;
  }
  if (!c.valid) return;
  quantize_16_by(f, s, q + c.index * kQuantElemsPerThread);
}

// 16 bf16 at `src` (read once: streaming loads), or zeros when !valid.
__device__ __forceinline__ void load_bf16x16(float (&f)[kQuantElemsPerThread], const __nv_bfloat16* src,
                                             bool valid) {
  uint4 raw[2] = {make_uint4(0, 0, 0, 0), make_uint4(0, 0, 0, 0)};
  if (valid) {
    raw[0] = __ldcs(reinterpret_cast<const uint4*>(src));
    raw[1] = __ldcs(reinterpret_cast<const uint4*>(src) + 1);
  }
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(raw);
#pragma unroll
  for (int i = 0; i < kQuantElemsPerThread / 2; ++i) {
    const float2 v = __bfloat1622float2(h[i]);
    f[2 * i] = v.x;
    f[2 * i + 1] = v.y;
  }
}

template <int THREADS>
__device__ __forceinline__ void quant_group(const __nv_bfloat16* x, uint8_t* q, float* scale, int M, int K,
                                            int ld_scale, int mn_major, int ue8m0, float eps) {
  static_assert(THREADS % 32 == 0, "whole warps: the amax shuffle uses every lane");
  // No launch_dependents() here: the GEMM after this one (launched with
  // programmatic serialization) may launch when these CTAs exit. Measured on
  // the H200 (2026-11-29, M = 1193, N = 17408, K = 5120): with a trigger at
  // the start, or after the loads, quant_group -> the 1-CTA CUTLASS 128x128
  // GEMM took 218 us against 184 us without PDL and 182 us with PDL and no
  // trigger (our 128x128 t2: 220 / 209 / 208 us; 2-CTA clusters were not
  // slowed). Likely cause, not confirmed: the GEMM's persistent CTAs take
  // SMs, and wait there, while this grid still has CTAs to place.
  const QuantChunk c = quant_chunk(THREADS, M, K, ld_scale, mn_major);
  float f[kQuantElemsPerThread];
  load_bf16x16(f, x + c.index * kQuantElemsPerThread, c.valid);
  quantize_16(f, c, q, scale, K, ld_scale, mn_major, ue8m0, eps);
}

}  // namespace fp8gen
