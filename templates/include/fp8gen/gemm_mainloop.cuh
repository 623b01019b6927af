// The multi-stage cp.async main loop shared by the mma.sync GEMM families.
// Each stage holds one 128-K slice of the A tile and of the weight tile; the
// family supplies a `Math` functor that consumes one resident stage and folds
// its 128-K partial sum into the FP32 total (the block-scale promotion).
#pragma once
#include "fp8gen/tile.cuh"

namespace fp8gen {

template <int BM_, int BN_, int WARPS_M_, int WARPS_N_, int STAGES_, int A_ELEM_BYTES_>
struct MmaTileConfig {
  static constexpr int BM = BM_, BN = BN_, WARPS_M = WARPS_M_, WARPS_N = WARPS_N_, STAGES = STAGES_;
  static constexpr int THREADS = WARPS_M * WARPS_N * 32;
  static constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;
  static constexpr int MT = WM / 16, NT = WN / 8;
  static constexpr int A_ROW_BYTES = kBlockK * A_ELEM_BYTES_;
  static constexpr int A_TILE_BYTES = BM * A_ROW_BYTES;
  static constexpr int B_TILE_BYTES = BN * kBlockK;  // e4m3 weight
  static constexpr int STAGE_BYTES = A_TILE_BYTES + B_TILE_BYTES;
  static constexpr int SMEM_BYTES = STAGES * STAGE_BYTES;
  // A tiles of 8-bit rows use the ldmatrix swizzle; 16-bit rows the 8-byte LDS one.
  static constexpr int A_SWIZZLE = A_ELEM_BYTES_ == 1 ? 0 : 1;
  static_assert(A_ELEM_BYTES_ == 1 || A_ELEM_BYTES_ == 2, "A is e4m3 or bf16");
  static_assert(BM % (16 * WARPS_M) == 0 && BN % (16 * WARPS_N) == 0, "warp tiles are m16 x n16 multiples");
  static_assert(kBlockK % BN == 0, "a block tile must sit inside one 128-row weight-scale block");
  static_assert(STAGES >= 2 && STAGES <= 8, "2..8 pipeline stages");
};

// Runs the K loop for the block tile at (m0, n0). `a` and `w` are row-major
// with K contiguous; rows past M / N are zero-filled and never stored.
template <class C, class Math>
__device__ __forceinline__ void mma_mainloop(uint8_t* smem, const uint8_t* a, const uint8_t* w, int M, int N,
                                             int K, int m0, int n0, Math& math) {
  const int kblocks = K / kBlockK;
  const int a_ld = K * (C::A_ROW_BYTES / kBlockK);
  const uint8_t* a_blk = a + static_cast<int64_t>(m0) * a_ld;
  const uint8_t* w_blk = w + static_cast<int64_t>(n0) * K;
  auto load_stage = [&](int kb) {
    uint8_t* st = smem + (kb % C::STAGES) * C::STAGE_BYTES;
    load_tile_async<C::BM, C::A_ROW_BYTES, C::A_SWIZZLE, C::THREADS>(st, a_blk + kb * C::A_ROW_BYTES, a_ld,
                                                                     M - m0);
    load_tile_async<C::BN, kBlockK, 0, C::THREADS>(st + C::A_TILE_BYTES, w_blk + kb * kBlockK, K, N - n0);
  };
#pragma unroll
  for (int s = 0; s < C::STAGES - 1; ++s) {
    if (s < kblocks) load_stage(s);
    ptx::cp_async_commit();  // empty groups keep the wait count uniform
  }
  for (int kb = 0; kb < kblocks; ++kb) {
    ptx::cp_async_wait<C::STAGES - 2>();
    // Also guarantees every warp is done with the stage the next load reuses.
    __syncthreads();
    if (kb + C::STAGES - 1 < kblocks) load_stage(kb + C::STAGES - 1);
    ptx::cp_async_commit();
    const uint8_t* st = smem + (kb % C::STAGES) * C::STAGE_BYTES;
    math(st, st + C::A_TILE_BYTES, kb, kblocks);
  }
}

// The block-scaled families apply every scale inside the K loop: nothing to
// do before the bf16 store.
struct NoOutputScale {
  template <class Acc>
  __device__ __forceinline__ void operator()(Acc&, int, int) const {}
};

// One block tile of a family: zero the FP32 total, run the K loop through
// `math` (which must expose acc[MT][NT][4], row0 and n_block), apply
// `scale_out` to the total (single-scale families), write bf16.
template <class C, class Math, class OutputScale = NoOutputScale>
__device__ __forceinline__ void mma_block_tile(Math& math, const uint8_t* a, const uint8_t* w, __nv_bfloat16* out,
                                               int M, int N, int K, const OutputScale& scale_out = OutputScale{}) {
  extern __shared__ __align__(128) uint8_t smem[];
  const int n0 = blockIdx.x * C::BN;
  const int m0 = blockIdx.y * C::BM;
  const int warp = threadIdx.x >> 5;
  const int wm0 = (warp / C::WARPS_N) * C::WM;
  const int wn0 = (warp % C::WARPS_N) * C::WN;
  zero_fragments(math.acc);
  math.row0 = m0 + wm0;
  math.n_block = n0 / kBlockK;
  mma_mainloop<C>(smem, a, w, M, N, K, m0, n0, math);
  scale_out(math.acc, m0 + wm0, n0 + wn0);
  store_bf16_fragments<C::MT, C::NT>(math.acc, out, M, N, m0 + wm0, n0 + wn0);
}

}  // namespace fp8gen
