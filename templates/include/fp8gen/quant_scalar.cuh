// Single-scale quantizers (DESIGN.md numerics, one scale per tensor or per
// token instead of per 128-K group):
//   s = max(amax, eps) / 448,  q = sat_e4m3(x / s)  (IEEE quotient, RNE).
//
// Per tensor, in three launches on one stream with no host synchronization
// (CUDA-graph capturable), through a caller-owned resident state of 4 floats
//   state[0]  amax as float bits (atomicMax on the bits: non-negative floats
//             order like their bit patterns); 0 between calls
//   state[1]  the activation scale s
//   state[2]  s * w_scale: the GEMM's output scale (w_scale a device scalar)
// stage 0: amax over x into state[0]; stage 1 (one thread): the scales, and
// state[0] back to 0 for the next call; stage 2: the quantization.
//
// NVFP4 -> FP8 predequant (weights): value = e2m1 * e4m3 block scale (per 16
// elements along K) * global scale, quantized to e4m3 under one scale chosen
// from the data (s = amax/448, so nothing overflows), reported in state[1];
// the same three stages.
#pragma once
#include "fp8gen/quant_group.cuh"

namespace fp8gen {

constexpr int kScalarStageAmax = 0, kScalarStageFinalize = 1, kScalarStageQuantize = 2;

template <int THREADS>
__device__ __forceinline__ void block_amax_to(float* state, float amax) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
  __shared__ float warp_max[THREADS / 32];
  if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = amax;
  __syncthreads();
  if (threadIdx.x == 0) {
    float m = 0.f;
#pragma unroll
    for (int w = 0; w < THREADS / 32; ++w) m = fmaxf(m, warp_max[w]);
    atomicMax(reinterpret_cast<unsigned*>(state), __float_as_uint(m));
  }
}

// stage 1 of both pipelines: one thread.
__device__ __forceinline__ void finalize_scale(float* state, const float* w_scale, float eps) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  const float amax = __uint_as_float(*reinterpret_cast<const unsigned*>(state));
  const float s = __fdiv_rn(fmaxf(amax, eps), kE4m3Max);
  state[1] = s;
  state[2] = w_scale ? s * *w_scale : s;
  state[0] = 0.f;  // ready for the next call's amax
}

// bf16 x [M, K] (K % 16 == 0) -> e4m3 q under one scale; a thread owns 16
// consecutive elements, a grid-stride loop covers the tensor.
template <int THREADS>
__device__ __forceinline__ void quant_tensor(const __nv_bfloat16* x, uint8_t* q, float* state, const float* w_scale,
                                             int M, int K, int stage, float eps) {
  if (stage == kScalarStageFinalize) {
    finalize_scale(state, w_scale, eps);
    return;
  }
  const int64_t chunks = static_cast<int64_t>(M) * K / kQuantElemsPerThread;
  const int64_t step = static_cast<int64_t>(gridDim.x) * THREADS;
  float amax = 0.f;
  const float s = stage == kScalarStageQuantize ? state[1] : 0.f;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * THREADS + threadIdx.x; c < chunks; c += step) {
    float f[kQuantElemsPerThread];
    load_bf16x16(f, x + c * kQuantElemsPerThread, true);
    if (stage == kScalarStageAmax) {
#pragma unroll
      for (int i = 0; i < kQuantElemsPerThread; ++i) amax = fmaxf(amax, fabsf(f[i]));
    } else {
      quantize_16_by(f, s, q + c * kQuantElemsPerThread);
    }
  }
  if (stage == kScalarStageAmax) block_amax_to<THREADS>(state, amax);
}

// bf16 x [M, K] -> e4m3 q with one scale per token (row), scale[M]: a block
// per token, reading its row twice (the second time from cache).
template <int THREADS>
__device__ __forceinline__ void quant_token(const __nv_bfloat16* x, uint8_t* q, float* scale, int M, int K,
                                            float eps) {
  const int row = blockIdx.x;
  if (row >= M) return;
  const __nv_bfloat16* xr = x + static_cast<int64_t>(row) * K;
  const int chunks = K / kQuantElemsPerThread;
  float amax = 0.f;
  for (int c = threadIdx.x; c < chunks; c += THREADS) {
    float f[kQuantElemsPerThread];
    load_bf16x16(f, xr + c * kQuantElemsPerThread, true);
#pragma unroll
    for (int i = 0; i < kQuantElemsPerThread; ++i) amax = fmaxf(amax, fabsf(f[i]));
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
  __shared__ float warp_max[THREADS / 32];
  __shared__ float row_scale;
  if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = amax;
  __syncthreads();
  if (threadIdx.x == 0) {
    float m = 0.f;
#pragma unroll
    for (int w = 0; w < THREADS / 32; ++w) m = fmaxf(m, warp_max[w]);
    row_scale = __fdiv_rn(fmaxf(m, eps), kE4m3Max);
    scale[row] = row_scale;
  }
  __syncthreads();
  const float s = row_scale;
  for (int c = threadIdx.x; c < chunks; c += THREADS) {
    float f[kQuantElemsPerThread];
    load_bf16x16(f, xr + c * kQuantElemsPerThread, true);
    quantize_16_by(f, s, q + static_cast<int64_t>(row) * K + c * kQuantElemsPerThread);
  }
}

// e2m1 code (sign bit 3) -> value: magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6
// (decoded arithmetically: a table indexed at run time would live in local
// memory).
__device__ __forceinline__ float e2m1_value(uint32_t code) {
  const uint32_t m = code & 7u;
  const float v = m < 2 ? 0.5f * static_cast<float>(m)
                        : __uint_as_float((((m >> 1) + 126u) << 23) | ((m & 1u) << 22));
  return (code & 8u) ? -v : v;
}

__device__ __forceinline__ float e4m3_value(uint8_t byte) {
  const uint32_t h = ptx::cvt_e4m3x2_to_f16x2(byte);
  return __half2float(__ushort_as_half(static_cast<unsigned short>(h & 0xffffu)));
}

// NVFP4 weight [N, K]: packed [N, K/2] (element 2j in the low nibble of byte
// j), block scales e4m3 [N, K/16], global scale g (device scalar) -> e4m3 q
// [N, K] under the single scale state[1]. A thread owns one 16-element block.
template <int THREADS>
__device__ __forceinline__ void nvfp4_to_fp8(const uint8_t* packed, const uint8_t* block_scale,
                                             const float* global_scale, uint8_t* q, float* state, int N, int K,
                                             int stage) {
  if (stage == kScalarStageFinalize) {
    finalize_scale(state, nullptr, 1e-30f);
    return;
  }
  const int64_t blocks = static_cast<int64_t>(N) * K / 16;
  const int64_t step = static_cast<int64_t>(gridDim.x) * THREADS;
  const float g = *global_scale;
  const float s = stage == kScalarStageQuantize ? state[1] : 0.f;
  float amax = 0.f;
  for (int64_t b = static_cast<int64_t>(blockIdx.x) * THREADS + threadIdx.x; b < blocks; b += step) {
    const uint2 raw = *reinterpret_cast<const uint2*>(packed + b * 8);
    // e2m1 x e4m3 is exact in FP32 (2 + 4 significant bits); x g rounds once
    const float sf = e4m3_value(block_scale[b]);
    float f[kQuantElemsPerThread];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const uint32_t byte = ((i < 4 ? raw.x : raw.y) >> (8 * (i % 4))) & 0xffu;
      f[2 * i] = (e2m1_value(byte & 0xfu) * sf) * g;
      f[2 * i + 1] = (e2m1_value(byte >> 4) * sf) * g;
    }
    if (stage == kScalarStageAmax) {
#pragma unroll
      for (int i = 0; i < kQuantElemsPerThread; ++i) amax = fmaxf(amax, fabsf(f[i]));
    } else {
      quantize_16_by(f, s, q + b * kQuantElemsPerThread);
    }
  }
  if (stage == kScalarStageAmax) block_amax_to<THREADS>(state, amax);
}

}  // namespace fp8gen
