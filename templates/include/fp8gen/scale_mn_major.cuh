// Token-major [M, G] scales -> MN-major [G, M_pad] (token index contiguous).
// Rows M..M_pad-1 are written as zeros: padded-M consumers read them, and a
// zero scale keeps their phantom outputs defined (and zero).
#pragma once
#include <cstdint>

namespace fp8gen {

template <int THREADS>
__device__ __forceinline__ void scale_mn_major(const float* src, float* dst, int M, int G, int M_pad) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * THREADS + threadIdx.x;
  if (i >= static_cast<int64_t>(G) * M_pad) return;
  const int g = static_cast<int>(i / M_pad);
  const int m = static_cast<int>(i % M_pad);
  dst[i] = m < M ? __ldg(src + static_cast<int64_t>(m) * G + g) : 0.f;
}

}  // namespace fp8gen
