// W8A8 block-scaled GEMM for sm_90a in raw PTX: TMA loads on mbarriers,
// one producer warpgroup and one or two math warpgroups (setmaxnreg), e4m3
// wgmma into a per-128-K temporary that is promoted into the FP32 total with
// a_scale * w_scale, and a persistent grid walking the tiles in groups of
// GROUP_N columns (so that concurrently running tiles share A and W in L2).
//
// Operands (as quant_group writes them and checkpoints store them):
//   A [M, K] e4m3 row-major; its scales MN-major [K/128, ld_sfa] f32 (token
//   index contiguous, ld_sfa >= M and a multiple of 4, pad tokens 0);
//   W [N, K] e4m3 row-major; its scales [ceil(N/128), K/128] f32;
//   out [M, N] bf16 = sum over K blocks of (A_blk . W_blk) * a_scale * w_scale.
//
// One header serves the cubin and (FP8GEN_HOST_SHIM) the host shim that
// encodes the tensor maps into Params, so both see one Params layout.
#pragma once
#include <cuda.h>
#include <cuda_bf16.h>
#include <cstdint>

#ifdef FP8GEN_HOST_SHIM
#include <dlfcn.h>
#include <cstring>
#include <type_traits>
#else
#include "fp8gen/ptx_sm90.cuh"
#endif

namespace fp8gen::wgmma_gemm {

constexpr int kBlockK = 128;  // one activation / weight scale per 128 K

// How the output is scaled. Block: 1x128 activation x 128x128 weight scales,
// applied per 128-K block. Row: per-token x per-output-channel scales, and
// Tensor: one scalar read through a device pointer, both applied once in the
// epilogue (the 128-K partial sums are still added in FP32 per block).
enum ScaleMode : int { kScaleBlock = 0, kScaleRow = 1, kScaleTensor = 2 };

// Params::flags bits.
enum ParamFlags : uint32_t { kEarlyWeights = 1u };
// How many of a ring of `stages` stages get their W boxes copied before the
// grid-dependency wait (kEarlyWeights): 4, and two stages fewer than the
// ring holds, so that the copies issued the moment the wait returns fill
// whole stages (A and W) while the early stages wait for their A. On the
// H200 (probe builds of the dispatched instances, back to back, 2026-12-01;
// HARDWARE.toml has the figures) 2 of 4 stages took 0.957-0.966x the time
// of 4 of 4 (64x32 t4 sb4, M <= 128, two runs), 3 of 5 0.988-0.989x that
// of 4 of 5 (128x128 and 128x136, M = 128); with 6 stages and more no
// other count was faster by more than about 1 %, and then at two points.
// The per-row and per-tensor instances (not block_scaled) keep min(4,
// stages): the rule was measured on block-scaled instances, and their
// dispatch tables are tuned from records at many M off the anchor grid,
// which new cubins would void. An instance may name its own count (chosen,
// from the EarlyWeights trait below). A probe build
// (FP8GEN_PROBE_EARLY_STAGES=n) copies min(n, stages) instead of either.
__host__ __device__ constexpr int early_stages(int stages, bool block_scaled, int chosen = -1) {
#ifdef FP8GEN_PROBE_EARLY_STAGES
  int n = FP8GEN_PROBE_EARLY_STAGES;
#else
  int n = chosen;
  if (n < 0) {
    n = block_scaled ? stages - 2 : 4;
    if (n > 4) n = 4;
    if (n < 0) n = 0;
  }
#endif
  return n < stages ? n : stages;
}

// An instance's own early count (-1: the early_stages rule). A trait that
// only the instances naming a count specialize (`_e<n>`), so that every other
// cubin stays byte-identical. Why per instance: with a short K the early
// boxes are a larger share of a call's weight stream; on the H200 (probe
// builds, 2026-12-01) 64x64 t2 s10 at 7168x2048 (16 K blocks) took
// 0.986-0.990x the time with 6 early boxes at M = 16 and 64, but
// 1.000-1.005x at K = 7168 and 16384, and 64x136 s8 at 17408x5120
// 0.989-0.993x with 5. gen tune decides where such a twin is dispatched.
template <class C>
struct EarlyWeights {
  static constexpr int value = -1;
};

// Probe builds (`python -m gen probe build`; `gen build` never defines
// these): each leaves one part of the K loop out, so that what the rest
// costs alone can be timed against the built cubin. Their outputs are wrong
// by design; gen/probe/variants.py says what each one isolates.
//   FP8GEN_PROBE_NO_COPIES: the producer issues no TMA copy; it arrives on
//     each stage's "full" barrier without a byte count, so the math warps
//     run on whatever the stage holds.
//   FP8GEN_PROBE_NO_MMA: the math warps issue no wgmma (barriers, scale
//     reads and the promotion stay).
//   FP8GEN_PROBE_NO_PROMOTION: a block's temporary is not scaled into the
//     total; one add per chunk keeps the MMAs' results live.
//   FP8GEN_PROBE_EARLY_STAGES=n: the whole kernel, with min(n, stages) W
//     boxes copied before the grid-dependency wait (early_stages).
//   FP8GEN_PROBE_TRACE: the whole kernel, plus %globaltimer stamps of each
//     CTA's phases (entry, the grid-dependency wait, first full stage, end
//     of the K loop, exit) written to a module global that `gen probe run`
//     reads back; its output equals the built cubin's.
#ifdef FP8GEN_PROBE_NO_COPIES
constexpr bool kProbeNoCopies = true;
#else
constexpr bool kProbeNoCopies = false;
#endif
#ifdef FP8GEN_PROBE_NO_MMA
constexpr bool kProbeNoMma = true;
#else
constexpr bool kProbeNoMma = false;
#endif
#ifdef FP8GEN_PROBE_NO_PROMOTION
constexpr bool kProbeNoPromotion = true;
#else
constexpr bool kProbeNoPromotion = false;
#endif

struct Params {
  CUtensorMap tma_a;   // A: box 128 K-bytes x BM rows (fewer when M is), 128-byte swizzle
  CUtensorMap tma_w;   // W: box 128 K-bytes x BN rows, 128-byte swizzle
  CUtensorMap tma_sa;  // A scales: box BM tokens (fewer when M is) x 1 K block
  CUtensorMap tma_out; // out: box 64 columns x 64 rows of bf16, 128-byte swizzle (TMA-store epilogue;
                       // a row box: BN columns, no swizzle)
  const float* w_scale;  // block: [ceil(N/128), K/128]; per-row: [N]; per-tensor: unused
  const float* a_scale;  // per-row: per-token [M]; per-tensor: the output scale (a device scalar)
  __nv_bfloat16* out;
  // Split K (slices > 1): tiles [0, whole) run whole (the full waves);
  // each later tile's K blocks are cut into `slices` runs taken by
  // different CTAs (the last wave, so that it fills the SMs). Each writes
  // its FP32 partial tile to `partials` [tiles - whole][slices][BM x BN];
  // the last to finish (counted in counters[tile], zero before the launch
  // and left zero after it) adds them in slice order (deterministic) and
  // stores the tile.
  float* partials;
  int* counters;
  int slices;
  int whole;
  int M, N, K;
  int tiles_m, tiles_n;
  // Bytes one stage's copies bring (its "full" barrier's transaction count):
  // the A, W and A-scale boxes (Shim::prepare sizes the A ones from M).
  uint32_t stage_tx;
  // kEarlyWeights: the host knows that the kernel before this one on the
  // stream does not write W or its scales (the caller says so; rt.linear
  // does, runtime/projection.py), so the first stages' W boxes may be
  // copied before the grid-dependency wait.
  uint32_t flags;
};

// Params of an instance with BulkWeightScales: the weight scales' map too,
// box 4 K blocks x the scale rows a tile spans.
struct ParamsWs : Params {
  CUtensorMap tma_ws;
};

// A tile whose width is not a multiple of 64 (136, 80) stages its bf16
// output for a TMA store as one unswizzled box of BN columns per 64 rows,
// instead of storing each thread's column pairs straight to global memory.
// A warp's 32-bit staging store covers 8 rows BN * 2 bytes apart: 4 banks
// apart mod 32 when BN % 16 == 8 (conflict-free), 8 or 24 when BN % 32 == 16
// (two rows per bank: 2-way). A trait (declared before Config, which reads
// it, and visible to the host shim, which encodes the box) for the reason
// SplitPaths gives below: the instances without it keep their cubins.
template <class C>
struct RowBoxEpilogue {
  static constexpr bool value = false;
};

// A tile whose width is 32 more than a multiple of 64 (160, 96, 32) stages
// its bf16 output as BN / 32 boxes of 32 columns per 64 rows, each with the
// 64-byte swizzle (rows 64 bytes apart; a 16-byte chunk's index XOR bits 1-2
// of its row), and stores them by TMA, instead of storing each thread's
// column pairs straight to global memory. A warp's 32-bit staging store
// covers rows r0..r0+7 of one chunk column: two rows per 32 banks, and the
// four row pairs in four different chunks, so conflict-free. On the H100 the
// register stores held a one-wave 128x160 tile 3.2 us past its K loop
// against 0.7 for the 128x80 row box (gen probe run's trace, 5120x17408
// M=512, thirty-eighth session). A trait for the reason RowBoxEpilogue is.
template <class C>
struct HalfBoxEpilogue {
  static constexpr bool value = false;
};

// Weight scales in the stage by TMA (needs WS_STAGE and one block per
// stage): the producer copies a box of the weight scales, 4 K blocks from
// the stage's block on x the scale rows the tile spans (1 or 2; rows past
// the last are zeros), through its own tensor map (ParamsWs), and every math
// lane reads its scales from the stage. With WS_STAGE's cp.async, every lane
// reading was 0.983x the time of the 128x256 _x4 _n2 tile, but compute-
// sanitizer's racecheck flagged the other lanes' reads against the next
// cp.async (it does not count the __syncwarp before lane 0's release), so
// lane 0 reads for its warp there (1.020x). The copy engine's tensor copies
// are released like the activation scales', which every lane reads. ("Bulk":
// cp.async.bulk.tensor. A non-tensor bulk copy, cp.async.bulk, was flagged
// like cp.async.) The map's rows are K / 128 floats: a multiple of 16
// bytes, so K a multiple of 512.
// A trait for the same reason as RowBoxEpilogue (the shim reads it too).
template <class C>
struct BulkWeightScales {
  static constexpr bool value = false;
};

// K blocks per pipeline stage (a trait for the same reason as
// RowBoxEpilogue). With more than one, each stage is one 3-D box of A, one
// of W and one of A's scales spanning KB blocks (the host shim encodes the
// maps so), and the producer and the math warps meet on its barriers once
// per KB blocks. For narrow tiles (16 or 32 W rows): on the H200 one
// producer thread issued about one stage per 400 cycles whatever its boxes
// held (tests/tma_box_rate_bench.cu, HARDWARE.toml), and a 2-D box per
// block per operand kept a 16-row tile at about 0.15 us per block.
template <class C>
struct StageBlocks {
  static constexpr int value = 1;
};

template <int BM_, int BN_, int STAGES_, int GROUP_N_, int KSPLIT_, int SCALE_MODE_, int TEMPS_ = 1,
          int SLICES_ = 1, int CHUNKS_ = 1, int CLUSTER_M_ = 1, int CLUSTER_N_ = 1, int OUT_BOXES_ = 0,
          int FIXED_N_ = 0, int FIXED_K_ = 0, int CLUSTER_K_ = 1, bool WALK_M_ = false, bool WS_STAGE_ = false>
struct Config {
  static constexpr int BM = BM_, BN = BN_, STAGES = STAGES_, GROUP_N = GROUP_N_, KSPLIT = KSPLIT_;
  // Per-128-K temporaries in flight: with 2, block k+1's MMAs run while
  // block k is promoted (the tensor cores never wait for the promotion).
  static constexpr int TEMPS = TEMPS_;
  // Split K across CTAs (small M: more CTAs, each reading a K slice of A
  // and W): at most SLICES slices per tile, through Params' workspace.
  static constexpr int SLICES = SLICES_;
  // The tile's columns in CHUNKS runs of CHUNK_N, each its own MMA group
  // and temporary: a wide tile (fewer L2 bytes per MMA) whose temporary
  // still fits beside the total (128x256: 128 + 64 registers per thread).
  static constexpr int CHUNKS = CHUNKS_;
  static constexpr int CHUNK_N = BN / CHUNKS;
  // A 2-CTA cluster on neighbouring tiles: along M (CLUSTER_M 2) the pair
  // shares each W box, along N (CLUSTER_N 2) each A box. Each CTA copies
  // half of the shared box and multicasts it to both, so L2 serves that
  // operand once per pair instead of twice.
  static constexpr int CLUSTER_M = CLUSTER_M_, CLUSTER_N = CLUSTER_N_, PAIR = CLUSTER_M_ * CLUSTER_N_;
  // Split K inside a cluster (small M): the cluster's CLUSTER_K CTAs take
  // one tile's K blocks in CLUSTER_K runs; ranks 1.. write their partial
  // tiles into rank 0's shared memory (distributed shared memory) and rank 0
  // adds them in rank order and stores the tile. No global workspace, no
  // L2 round trips: the split tail is a shared-memory copy and a barrier.
  static constexpr int CLUSTER_K = CLUSTER_K_;
  static constexpr int CLUSTER = PAIR * CLUSTER_K;
  static constexpr int SCALE_MODE = SCALE_MODE_;
  // The persistent walk: consecutive work units take neighbouring tiles
  // along N in groups of GROUP_N tile columns (so that the tiles running at
  // once share A and W in L2), or with WALK_M along M in groups of GROUP_N
  // tile rows (CUTLASS's order when there are more tile columns than rows).
  static constexpr bool WALK_M = WALK_M_;
  // Shape-specialized (a model's projection): N and K fixed at compile time
  // (0: read from Params), so that the tile walk, the K loop's bounds and
  // the weight-scale rows fold to constants; the shim refuses other shapes.
  static constexpr int FIXED_N = FIXED_N_, FIXED_K = FIXED_K_;
  static constexpr bool BLOCK_SCALES = SCALE_MODE == kScaleBlock;
  // Each math warpgroup owns 64 rows (wgmma's M). With KSPLIT > 1 (small M:
  // shorter serial K chains), KSPLIT warpgroups share one 64-row tile and
  // take its K blocks in turn; their sums meet in shared memory at the end.
  // A 256-row tile is two waves of 128 rows: each of the two warpgroups owns
  // 64 rows of each wave (rows r and 128 + r) and runs the waves' MMA groups
  // one after the other into its one temporary, so that a stage's W box
  // feeds twice the rows (half the L2 bytes per MMA of a 128-row tile of the
  // same width) while the total stays at 2 x BN / 2 registers.
  static constexpr int WAVES = BM == 256 ? 2 : 1;
  static constexpr int ROW_WG = BM / 64 / WAVES;
  static constexpr int MATH_WG = ROW_WG * KSPLIT;
  static constexpr int THREADS = 128 * (MATH_WG + 1);
  static constexpr int A_BYTES = BM * kBlockK;
  static constexpr int W_BYTES = BN * kBlockK;
  static constexpr int SA_BYTES = BM * 4;
  // Where the math warps read the weight scales (block mode): from global
  // memory (L2), each block's loaded as the block before it is promoted; or
  // (WS_STAGE) from the stage, 16 bytes behind its activation scales, put
  // there by the producer with cp.async. With loads from L2, ptxas moves
  // each loaded scale into a uniform register right after the load, before
  // the block's last wgmma, which then waits for L2. Neither wins on every
  // instance (HARDWARE.toml has the A/B), so it is chosen per instance.
  static constexpr bool WS_STAGE = WS_STAGE_ && BLOCK_SCALES;
  // K blocks per stage (StageBlocks): a stage holds KB blocks of A, W and
  // A's scales, block after block (A's blocks are as long as the rows its
  // box copies: see run).
  static constexpr int KB = StageBlocks<Config>::value;
  static constexpr int STAGE_A = KB * A_BYTES, STAGE_W = KB * W_BYTES;
  static constexpr int SA_STRIDE = (KB * SA_BYTES + (WS_STAGE ? 16 : 0) + 127) / 128 * 128;
  // The epilogue stages bf16 tiles in shared memory and stores them by TMA
  // in boxes of 64 columns (128-byte swizzle), with ROW_BOX in one box of BN
  // columns (RowBoxEpilogue), or with HALF_BOX in boxes of 32 columns (64-byte
  // swizzle; HalfBoxEpilogue); other widths store straight from registers.
  static constexpr bool ROW_BOX = RowBoxEpilogue<Config>::value;
  static constexpr bool HALF_BOX = HalfBoxEpilogue<Config>::value;  // 32-column boxes, 64-byte swizzle
  static constexpr bool TMA_STORE = BN % 64 == 0 || ROW_BOX || HALF_BOX;
  static constexpr int BOX_COLS = ROW_BOX ? BN : HALF_BOX ? 32 : 64;  // columns per output box
  static constexpr int OUT_BOX_BYTES = 64 * BOX_COLS * 2;  // 64 rows x BOX_COLS bf16
  // Boxes staged at once per warpgroup (0: the whole row of BN / BOX_COLS). Fewer
  // stage the tile in passes, leaving shared memory for another pipeline
  // stage (6 x 128x128 stages and a whole staged tile exceed 227 KB).
  static constexpr int OUT_BOXES = TMA_STORE ? (ROW_BOX ? 1 : OUT_BOXES_ > 0 ? OUT_BOXES_ : BN / BOX_COLS) : 0;
  static constexpr int OUT_PASSES = TMA_STORE ? (ROW_BOX ? 1 : BN / BOX_COLS / OUT_BOXES) : 0;
  static_assert(!ROW_BOX || ((BN % 16 == 8 || BN % 32 == 16) && OUT_BOXES_ == 0),
                "a row box: a width whose staging stores conflict at most 2-way (BN % 16 == 8 or BN % 32 == 16), "
                "staged whole");
  static_assert(!HALF_BOX || (BN % 64 == 32 && !ROW_BOX && OUT_BOXES_ == 0),
                "half boxes: a width 32 more than a multiple of 64, staged whole, not a row box");
  static constexpr int OUT_BYTES = ROW_WG * WAVES * OUT_BOXES * OUT_BOX_BYTES;
  // The K-split partial sums: (KSPLIT - 1) x 64 x BN floats.
  static constexpr int RED_BYTES = (KSPLIT - 1) * 64 * BN * 4;
  // A stages, W stages (each 1024-aligned for the swizzle), the epilogue
  // tile, the K-split sums, scale stages, then the full/empty barriers; 1024
  // bytes of slack to align the base.
  // (+16: the split-K "last slice" flag.)
  static constexpr int FLAG_BYTES = SLICES > 1 ? 16 : 0;
  // The cluster split's partial tiles, (CLUSTER_K - 1) x BM x BN floats (in
  // every CTA, so that the offsets agree; only rank 0's is written), and its
  // two barriers (+16): "full" (the peers' partials are in) and "empty"
  // (rank 0 has read them; one in each peer).
  static constexpr int XRED_BYTES = (CLUSTER_K - 1) * BM * BN * 4;
  static constexpr int XBAR_BYTES = CLUSTER_K > 1 ? 16 : 0;
  static constexpr int SMEM_BYTES = STAGES * (STAGE_A + STAGE_W + SA_STRIDE) + OUT_BYTES + RED_BYTES + XRED_BYTES +
                                    2 * STAGES * 8 + FLAG_BYTES + XBAR_BYTES + 1024;
  // Register budgets after reallocation: the sum over warps fits 64K.
  // A math thread's total and temporaries (FP32 registers).
  static constexpr int ACC_REGS = WAVES * BN / 2 + TEMPS * CHUNK_N / 2;
  // Two math warpgroups whose total and temporaries pass 192 registers (a
  // 136-wide tile with two temporaries: 204) take 240 each and leave the
  // producer 24. The three warpgroups share what the CTA was launched with,
  // 168 per thread (65536 / 384, in steps of 8): 24 + 2 x 240 = 3 x 168. An
  // increase past what the others gave back waits forever (a 32-register
  // producer hung on the H200).
  static constexpr bool WIDE_REGS = MATH_WG == 2 && ACC_REGS > 192;
  static constexpr int PRODUCER_REGS = WIDE_REGS ? 24 : 40;
  // Four math warpgroups keep the launch's allotment (65536 / 640 threads):
  // growing them would need more than the producer gives back, and
  // setmaxnreg.inc waits until the pool has it.
  static constexpr int MATH_REGS = MATH_WG == 1 ? 240 : MATH_WG == 2 ? (WIDE_REGS ? 240 : 232) : 0;
  static_assert(MATH_WG != 2 || PRODUCER_REGS + 2 * MATH_REGS <= 3 * 168, "the reallocation fits the launch's registers");
  // A tile may straddle two 128-row weight-scale blocks unless BN divides 128.
  static constexpr bool MAY_STRADDLE = (128 % BN) != 0;

  static_assert(BM == 64 || BM == 128 || BM == 256, "one or two math warpgroups of 64 rows (two waves of 128 rows)");
  static_assert(WAVES == 1 || (TEMPS == 1 && CHUNKS == 1 && KSPLIT == 1 && CLUSTER_K == 1 && KB == 1 &&
                               SCALE_MODE == kScaleBlock && TMA_STORE),
                "a 256-row tile: one temporary, one column chunk, no K split inside the CTA or cluster, "
                "one-block stages, block scales, a TMA-store epilogue");
  static_assert(KSPLIT == 1 || (BM == 64 && (KSPLIT == 2 || KSPLIT == 4)), "K split: 2 or 4 warpgroups, BM 64");
  // A K-split warpgroup waits on a stage's "full" barrier only for its own
  // blocks. If STAGES % KSPLIT != 0 a stage's fills alternate between
  // warpgroups, each waits on every other phase with the same parity, and a
  // parity wait also passes on the phase before the one in flight: a
  // warpgroup could read a stage the copy engine is still filling and
  // release it early (seen as a fault in long H200 runs with 7 stages).
  static_assert(KSPLIT == 1 || STAGES % KSPLIT == 0, "each K-split warpgroup must see every phase of its stages");
  static_assert(BN % 8 == 0 && BN >= 8 && BN <= 256, "wgmma N is a multiple of 8 up to 256");
  static_assert(A_BYTES % 1024 == 0 && W_BYTES % 1024 == 0, "tiles must keep 1024-byte alignment");
  static_assert(BN + 128 - (BN & -BN < 128 ? BN & -BN : 128) <= 256, "a tile spans at most two scale blocks");
  static_assert(STAGES >= 2, "double buffering at least");
  static_assert(KB == 1 || (KB >= 2 && KB <= 8 && (TEMPS == 2 || TEMPS == 4) && CHUNKS == 1 && SLICES == 1 &&
                            PAIR == 1 && !WS_STAGE && STAGES > KSPLIT * ((KB + TEMPS - 2) / KB)),
                "multi-block stages: 2..8 blocks, two or four temporaries, one chunk, no split across CTAs "
                "but a cluster K split, no shared boxes, weight scales from L2, and a ring deep enough "
                "that a warpgroup's stage for its next issue is never one it still holds: it holds the "
                "stages of its TEMPS - 1 blocks in flight, KSPLIT ring positions apart");
  static_assert(TEMPS != 4 || KB > 1, "four temporaries: multi-block stages only");
  static_assert(FIXED_N % 8 == 0 && FIXED_N >= 0 && FIXED_K % kBlockK == 0 && FIXED_K >= 0,
                "a fixed N is a multiple of 8, a fixed K of 128");
  static_assert(SLICES >= 1 && SLICES <= 16 && (SLICES == 1 || KSPLIT == 1), "split K across CTAs or warpgroups");
  static_assert(TEMPS == 1 || TEMPS == 4 || (TEMPS == 2 && (KSPLIT == 1 || KB > 1)),
                "two temporaries: no K split (but for multi-block stages)");
  static_assert((CHUNKS == 1 || (CHUNKS == 2 && KSPLIT == 1)) && CHUNK_N % 8 == 0,
                "one or two column chunks (no K split), each a wgmma N");
  static_assert(PAIR == 1 || (PAIR == 2 && KSPLIT == 1 && SLICES == 1),
                "a 2-CTA cluster (one dimension), without a K split");
  static_assert(CLUSTER_K == 1 || ((CLUSTER_K == 2 || CLUSTER_K == 4) && PAIR == 1 && KSPLIT == 1 && SLICES == 1),
                "a cluster K split of 2 or 4 CTAs, the only K split and the only cluster");
  static_assert(BM / CLUSTER_N % 8 == 0 && BN / CLUSTER_M % 8 == 0, "shared boxes halve into 1024-byte pieces");
  static_assert(OUT_BOXES_ == 0 || (TMA_STORE && (BN / 64) % (OUT_BOXES_ > 0 ? OUT_BOXES_ : 1) == 0),
                "staged boxes divide the row");
  // (gen/catalog.py checks the same budget: 40 registers left for the rest,
  // 36 in the wide budget)
  static_assert(ACC_REGS <= (MATH_REGS > 0 ? MATH_REGS : 96) - (WIDE_REGS ? 36 : 40),
                "the total and its temporaries fit the register budget");
};

// The MMA of one warpgroup: m64 x BN x k32, e4m3 x e4m3 -> f32, both
// operands K-major in shared memory. Specialized per BN by the rendered
// kernel source (the accumulator list is BN/2 registers long).
template <int BN>
struct Wgmma;

#ifndef FP8GEN_HOST_SHIM

// The trace probe (FP8GEN_PROBE_TRACE). Two threads of each CTA record: the
// producer's issuing thread (role 0) and math thread 0 (role 1). Each takes
// a ticket at entry, keeps its stamps in registers and writes them at exit,
// so that no phase waits on a trace write. A role's tickets of one call all
// come before the next call's (that call's CTAs start only after every CTA
// of this one has passed its stamps at entry), so ticket / grid size is the
// call. Word 0 is (SM id << 32 | blockIdx.x); words 1-7 are nanoseconds:
// 1 entry, 2 before the grid-dependency wait, 3 after it, 4 (producer) all
// copies issued / (math) the first full stage, 5 (math) the first unit's K
// loop done, 6 (math) the last unit's K loop done, 7 the role's end.
// gen/probe/trace.py reads and summarizes them.
constexpr int kTraceWords = 8;
#ifdef FP8GEN_PROBE_TRACE
constexpr unsigned kTraceRecords = 16384;  // per role: a ring of the last calls' CTAs
extern "C" {
__device__ unsigned long long fp8gen_probe_trace[2][kTraceRecords][kTraceWords];
__device__ unsigned int fp8gen_probe_tickets[2];
}
struct ProbeTrace {
  unsigned long long entry;
  unsigned d[kTraceWords];  // words 2-7: 1 + nanoseconds after entry (0: not reached); 32 bits to spare registers
  unsigned ticket;
  int role;  // -1: this thread does not record
  __device__ __forceinline__ static unsigned long long now() {
    unsigned long long v;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(v)::"memory");
    return v;
  }
  __device__ __forceinline__ void begin(int r) {
    role = r;
#pragma unroll
    for (int i = 0; i < kTraceWords; ++i) d[i] = 0;
    if (role >= 0) ticket = atomicAdd(&fp8gen_probe_tickets[role], 1u);  // its value is waited for at exit
    entry = now();
  }
  __device__ __forceinline__ void mark(int i) { d[i] = unsigned(now() - entry) + 1u; }
  __device__ __forceinline__ void mark_once(int i) {
    if (d[i] == 0) mark(i);
  }
  __device__ __forceinline__ void finish() {
    mark(7);
    if (role < 0) return;
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    unsigned long long* rec = fp8gen_probe_trace[role][ticket % kTraceRecords];
    rec[0] = (static_cast<unsigned long long>(sm) << 32) | blockIdx.x;
    rec[1] = entry;
#pragma unroll
    for (int i = 2; i < kTraceWords; ++i) rec[i] = d[i] ? entry + d[i] - 1u : 0ull;
  }
};
#else
struct ProbeTrace {  // compiles to nothing in every other build
  __device__ __forceinline__ void begin(int) {}
  __device__ __forceinline__ void mark(int) {}
  __device__ __forceinline__ void mark_once(int) {}
  __device__ __forceinline__ void finish() {}
};
#endif

// Where a straddling tile's columns change weight-scale block. By default
// each 8-column group of the promotion selects its scale at run time (a
// compare and two selects per group per block: on the H200 the 128x112
// tile's math warps issued 194 instructions per K block against 133 for
// 128x128). An instance whose rendered source specializes SplitPaths to
// true builds its one- or two-temporary K loop once per split point instead (the
// 8-column groups before the next scale block), and each tile takes its
// path once, so the promotion multiplies by scales fixed at compile time.
// (A trait rather than a Config parameter: a new Config parameter renames
// every instance's Shim<Config> and so changes every host shim.)
template <class C>
struct SplitPaths {
  static constexpr bool value = false;
};

// The TMA-store epilogue stages the tile with stmatrix (four 8x8 bf16
// matrices per instruction: 16 per thread where st.shared.b32 takes 64;
// the same bits out). Measured on the H200 (HARDWARE.toml): 0.97-0.99x the
// time at K <= 2048, about 1.0 elsewhere. A trait for the same reason as
// SplitPaths: the instances that keep the b32 stores keep their cubins, so
// the records that timed them still count.
template <class C>
struct StmatrixEpilogue {
  static constexpr bool value = false;
};

// The two row warpgroups of a 128-row tile issue their MMA groups in turn
// (named barriers 3 and 4, warpgroup 0 first), instead of whenever each
// is ready. Measured on the H200 (HARDWARE.toml): 0.97-0.99x the time for
// the two-temporary 128x128 tiles, 1.00-1.05x for the one-temporary
// 128x256 column chunks, so it is an instance's choice.
template <class C>
struct OrderedIssue {
  static constexpr bool value = false;
};

// Block mode with the weight scales from L2: instead of one load per K
// block, issued a block ahead and waited on in that block's promotion, each
// lane of a math warp holds the scales of one block of the next 32 (and
// prefetches the 32 after), and a block takes its scale by shuffle. Built
// because in the SASS of the 256x128 tile (ptxas 13.0) the per-block load
// issues during the second wave's MMAs and its R2UR sits straight after
// that wave's wait, ahead of 63 of its 64 FFMAs. Measured on the H200
// (HARDWARE.toml): 0.97-0.98x for 128x64 x4, but 1.01-1.03x for the 256x128
// pair at M >= 1024, so that load was not what the tile waits on; an
// instance's choice. A trait for the same reason as SplitPaths.
template <class C>
struct LaneWeightScales {
  static constexpr bool value = false;
};

// With LaneWeightScales: the lanes load the first 32 blocks' scales of the
// CTA's next unit while this one runs, instead of at the unit's start.
// Built because in the SASS of 128x64 s8 gm16 t2_wl_ru (ptxas 13.0) the
// shuffle of a unit's first block sits ahead of its first QGMMA, straight
// behind that unit's own loads, so every unit's MMAs waited for an L2
// round trip: a fixed cost per tile, large where K is short (4 or 12
// blocks at K = 512 or 1536). The loads themselves are predicated per
// lane, so a short unit loads no more than it uses. A trait for the same
// reason as SplitPaths.
template <class C>
struct LaneWeightScalesAhead {
  static constexpr bool value = false;
};

// The one-temporary K loop unrolled this many blocks (1: as ptxas chooses).
// In the 256x128 tile's SASS (ptxas 13.0) the loop, not unrolled, took 213
// instructions per K block against 192 for DeepGEMM's, unrolled 8 deep with
// its stage arithmetic folded; unrolled 2 here it took 202. A trait for the
// same reason as SplitPaths.
template <class C>
struct KLoopUnroll {
  static constexpr int value = 1;
};

// The two-temporary K loop unrolled by a whole turn of the ring (STAGES
// blocks, twice that when a turn holds an odd number of steps), taken when
// a unit starts at ring slot 0 with a multiple of STAGES blocks (then every
// unit does, and the ring restarts at slot 0 each tile). Each step's slot,
// barriers, descriptors and parity are then compile-time offsets, and the
// loop tests for its end once per turn instead of once per step. Other
// units take the rolled loop. Built because at 2112x7168 M=512 DeepGEMM's
// 128x64 tile (K blocks a multiple of its 8 stages) ran 70.8 warp
// instructions per math warp and K block against 95.5 for ours, 0.59 M
// of the difference uniform ring arithmetic (ncu-h100-src39.json).
// Measured there: the count fell to 4.41 M warp instructions against
// DeepGEMM's 4.19 M (5.65 M rolled), the time by 2-3 % only, so that gap
// is not issue overhead (HARDWARE.toml). A trait for the same reason as
// SplitPaths.
template <class C>
struct RingUnroll {
  static constexpr bool value = false;
};

// The math warps take a unit's work range and tile coordinates computed
// during the unit before it, and compute the next unit's once the unit's
// first MMAs are issued (with LaneWeightScalesAhead, the next unit's lane
// loads go out there too). Built because in the SASS of 128x64 s8 gm16
// t2_ru and t2_wla_ru (ptxas 13.0) a unit's first QGMMA waits behind the
// integer divisions of tile_coords (MUFU.RCP chains), and t2_wla_ru runs
// them twice there: 102 and 184 instructions from the unit loop's back
// edge to the first QGMMA, while the tensor pipe idles. Two-temp loops only.
// A trait for the same reason as SplitPaths.
template <class C>
struct CarriedCoords {
  static constexpr bool value = false;
};

// The one-temporary K loop waits for the next block's stage right after
// issuing a block's last MMA group, while those MMAs run, instead of after
// their promotion: in the 256x128 tile's SASS the path from the last
// group's wait to the next block's first MMA held the stage's try-wait,
// its branch and the descriptor arithmetic (85-108 instructions against
// 67-70 between the waves of a block), and ncu put 35 % of the warp samples
// on the wgmma waits with the tensor pipe 80 % busy. A trait for the same
// reason as SplitPaths.
template <class C>
struct PrewaitNextStage {
  static constexpr bool value = false;
};

// An MMA group's activation scales read from the stage before its MMAs
// are issued, not after: in the 256x128 tiles' SASS (ptxas 13.0) the reads
// landed between the group's second and third MMA with the scale product
// waiting on them there, where DeepGEMM's loop reads them before the group
// (ncu at 4096x7168 M=4096: 2.2 % of the warp samples on that product).
// A trait for the same reason as SplitPaths.
template <class C>
struct ScalesFirst {
  static constexpr bool value = false;
};

// A split point known at compile time: the tile's 8-column groups before
// the next scale block (-1: chosen per group at run time).
template <int V>
struct SplitAt {
  static constexpr int value = V;
};

// f(SplitAt<lo>) for lo in STEP, 2 STEP, ..., LAST (LAST: the tile ends
// before the next scale block); lo is warp-uniform.
template <int LO, int LAST, int STEP, class F>
__device__ __forceinline__ void with_split(int lo, F&& f) {
  if constexpr (LO >= LAST) {
    f(SplitAt<LAST>{});
  } else {
    if (lo == LO)
      f(SplitAt<LO>{});
    else
      with_split<LO + STEP, LAST, STEP>(lo, f);
  }
}

// Registers a split tile's sum loads per round from each slice: the largest
// divisor of the thread's nacc registers with at most 64 loads in flight
// (an 80-wide tile's 40 registers over 2 slices: 20 per round).
__host__ __device__ constexpr int sum_group(int nacc, int slices) {
  int g = nacc * slices <= 64 ? nacc : 64 / slices;
  while (nacc % g) --g;
  return g;
}

__device__ __forceinline__ void tile_coords(int tile, int tiles_m, int tiles_n, int group_n, int& tm, int& tn) {
  const int per_group = group_n * tiles_m;
  const int group = tile / per_group;
  const int first_n = group * group_n;
  const int width = min(group_n, tiles_n - first_n);
  const int local = tile - group * per_group;
  tm = local / width;
  tn = first_n + local % width;
}

// One 8-column group of a warp's accumulator fragment into the epilogue's
// staging tile as bf16: this thread's column pair of row r (acc[0..1]) at
// `lo` and of row r + 8 (acc[2..3]) at `hi`.
__device__ __forceinline__ void stage_bf16_pairs(uint32_t lo, uint32_t hi, const float* acc) {
  const __nv_bfloat162 v0 = __floats2bfloat162_rn(acc[0], acc[1]);
  const __nv_bfloat162 v1 = __floats2bfloat162_rn(acc[2], acc[3]);
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(lo), "r"(*reinterpret_cast<const uint32_t*>(&v0)) : "memory");
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(hi), "r"(*reinterpret_cast<const uint32_t*>(&v1)) : "memory");
}

template <class C>
__device__ __forceinline__ void run(const Params& p, uint8_t* smem_raw) {
  using ptx::smem_addr;
  const uint32_t raw = smem_addr(smem_raw);
  const uint32_t base = (raw + 1023u) & ~1023u;
  const uint32_t a_base = base;
  const uint32_t w_base = a_base + C::STAGES * C::STAGE_A;
  const uint32_t out_base = w_base + C::STAGES * C::STAGE_W;
  const uint32_t red_base = out_base + C::OUT_BYTES;
  const uint32_t xred_base = red_base + C::RED_BYTES;
  const uint32_t sa_base = xred_base + C::XRED_BYTES;
  const uint32_t bar_base = sa_base + C::STAGES * C::SA_STRIDE;
  auto full = [&](int s) { return bar_base + 8u * s; };
  auto empty = [&](int s) { return bar_base + 8u * (C::STAGES + s); };
  const uint32_t xfull = bar_base + 16u * C::STAGES + C::FLAG_BYTES, xempty = xfull + 8u;

  // (read through a shuffle so that ptxas knows it is warp-uniform: the
  // A descriptors built from it then stay in uniform registers instead of
  // being rebuilt and moved into them before every wgmma)
  const int wg = __shfl_sync(0xffffffffu, int(threadIdx.x / 128), 0);
  ProbeTrace trace;
  trace.begin(threadIdx.x == C::MATH_WG * 128 ? 0 : threadIdx.x == 0 ? 1 : -1);
  const int kblocks = (C::FIXED_K ? C::FIXED_K : p.K) / kBlockK;
  const int N = C::FIXED_N ? C::FIXED_N : p.N;
  const int tiles_n = C::FIXED_N ? (C::FIXED_N + C::BN - 1) / C::BN : p.tiles_n;
  // A cluster walks the tiles as one: its CTAs take neighbouring tiles (a
  // CTA past the last row or column loads zeros, stores nothing, but keeps
  // the copy protocol going for its peer).
  const uint32_t rank = C::CLUSTER > 1 ? ptx::cluster_ctarank() : 0;
  const int pairs_m = (p.tiles_m + C::CLUSTER_M - 1) / C::CLUSTER_M;
  const int pairs_n = (tiles_n + C::CLUSTER_N - 1) / C::CLUSTER_N;
  const int tiles = pairs_m * pairs_n;
  // Work units: the whole tiles, then (tile, K slice) for the rest, the
  // slices of a tile adjacent so that they run at the same time on
  // neighbouring CTAs.
  const int slices = C::SLICES > 1 ? p.slices : 1;
  const int whole = C::SLICES > 1 ? p.whole : tiles;
  const int units = whole + (tiles - whole) * slices;
  const int first_unit = C::CLUSTER > 1 ? int(ptx::cluster_id()) : int(blockIdx.x);
  const int unit_step = C::CLUSTER > 1 ? int(ptx::cluster_count()) : int(gridDim.x);
  auto coords = [&](int tile, int& tm, int& tn) {
    if constexpr (C::WALK_M)
      tile_coords(tile, pairs_n, pairs_m, C::GROUP_N, tn, tm);  // the same walk, M and N swapped
    else
      tile_coords(tile, pairs_m, pairs_n, C::GROUP_N, tm, tn);
    if constexpr (C::CLUSTER_M > 1) tm = tm * C::CLUSTER_M + rank;
    if constexpr (C::CLUSTER_N > 1) tn = tn * C::CLUSTER_N + rank;
  };
  // The weight-scale rows (one float per K block) of the 128-column block
  // holding tile column tn's first column and of the block after it (a tile
  // spans at most two); clamped, since a cluster's CTA may be past N.
  auto w_scale_rows = [&](int tn, const float*& lo, const float*& hi) {
    const int last = (N + 127) / 128 - 1, first = tn * C::BN / 128;
    lo = p.w_scale + min(first, last) * kblocks;
    hi = p.w_scale + min(first + 1, last) * kblocks;
  };
  auto work = [&](int unit, int& tile, int& slice, int& kb_begin, int& kb_end) {
    if constexpr (C::CLUSTER_K > 1) {  // the cluster's tile, this CTA's run of its K blocks
      tile = unit;
      slice = int(rank);
      kb_begin = slice * kblocks / C::CLUSTER_K;
      kb_end = (slice + 1) * kblocks / C::CLUSTER_K;
    } else if (unit < whole) {
      tile = unit;
      slice = 0;
      kb_begin = 0;
      kb_end = kblocks;
    } else {
      const int cut = (unit - whole) / slices;
      tile = whole + cut;
      slice = unit - whole - cut * slices;
      kb_begin = slice * kblocks / slices;
      kb_end = (slice + 1) * kblocks / slices;
    }
  };

  if (threadIdx.x == 0) {
    for (int s = 0; s < C::STAGES; ++s) {
      ptx::mbar_init(full(s), 1);               // the producer's arrive (+ the copy bytes)
      // one arrive per math warp that reads the stage, in each CTA whose copies fill it
      ptx::mbar_init(empty(s), C::ROW_WG * 4 * C::PAIR);
    }
    if constexpr (C::CLUSTER_K > 1) {
      ptx::mbar_init(xfull, (C::CLUSTER_K - 1) * C::ROW_WG * 128);  // every math thread of each peer
      ptx::mbar_init(xempty, C::ROW_WG * 4);                       // each math warp of rank 0
    }
    ptx::fence_barrier_init();
  }
  if constexpr (C::PAIR > 1) {
    // the peer's barriers exist before any copy or arrive reaches them (their
    // inits are released by fence_barrier_init; a releasing arrive here cost
    // a GPU-wide fence)
    ptx::cluster_arrive_relaxed();
    ptx::cluster_wait();
  } else if constexpr (C::CLUSTER > 1) {
    ptx::cluster_sync();  // the peers' barriers exist before any copy or arrive reaches them
  } else {
    __syncthreads();
  }
  // Programmatic dependent launch: the barriers above were set up, and the
  // tensor maps (kernel parameters, which no kernel writes) are fetched,
  // while the kernel before this one on the stream may still be running.
  // Nothing in global memory is read or written before it has finished (it
  // may have written A, the scales, or the split counters this call uses).
  if (threadIdx.x == C::MATH_WG * 128) {
    ptx::prefetch_tensormap(&p.tma_a);
    ptx::prefetch_tensormap(&p.tma_w);
    if constexpr (C::BLOCK_SCALES) ptx::prefetch_tensormap(&p.tma_sa);
    if constexpr (C::TMA_STORE) ptx::prefetch_tensormap(&p.tma_out);
    if constexpr (BulkWeightScales<C>::value) ptx::prefetch_tensormap(&static_cast<const ParamsWs&>(p).tma_ws);
  }
  // With PDL this CTA often starts about 1 us before the kernel ahead of it
  // has finished (when that kernel's CTA leaves this SM) while DRAM idles.
  // W does not depend on that kernel (kEarlyWeights), so the copies of the
  // first unit's first early_stages() W boxes (and weight scales) start now;
  // only A and its scales wait. Not more boxes: loads in flight when the
  // kernel ahead finishes delay this grid's release from the wait (H200: by
  // 0.4-1.3 us with every stage early). Not in the cluster K split, which
  // was 2-3 % slower even with 4 (HARDWARE.toml has the A/B). A pair's CTAs
  // share their first unit, so each sends its usual part of the weight side
  // (along M: its half of the W box, to both) for the same stages; the
  // cluster barrier above made the peer's barriers ready for it. Not in the
  // pairs with weight scales in the stage: built with early weights, they
  // took 1.009-1.013x the time, at M >= 256 too, where the few early copies
  // cannot matter (ptxas scheduled their math loops differently; the other
  // pairs took 0.983-0.990x; HARDWARE.toml has the A/B).
  constexpr bool kEarly = C::CLUSTER_K == 1 && !(C::PAIR > 1 && C::WS_STAGE);
  // Stage s's W box at block kb of column tile tn (a pair along M: this
  // CTA's half of the box, to both CTAs; multi-block stages: one 3-D box of
  // KB blocks, laid out block after block).
  auto copy_weight = [&](int s, int kb, int tn) {
    if constexpr (kProbeNoCopies)
      return;
    else if constexpr (C::CLUSTER_M > 1)
      ptx::tma_load_2d_multicast(w_base + s * C::W_BYTES + rank * (C::W_BYTES / 2), &p.tma_w, full(s),
                                 kb * kBlockK, tn * C::BN + rank * (C::BN / 2), 0x3);
    else if constexpr (C::KB > 1)
      ptx::tma_load_3d(w_base + s * C::STAGE_W, &p.tma_w, full(s), 0, tn * C::BN, kb);
    else
      ptx::tma_load_2d(w_base + s * C::W_BYTES, &p.tma_w, full(s), kb * kBlockK, tn * C::BN);
  };
  // The producer's arrive on stage s's "full" barrier, announcing the bytes
  // its copies bring (a probe without copies announces none: the stage
  // completes at the arrive). A multi-block stage's boxes are whole even
  // past K (the copy engine fills those blocks with zeros and counts them).
  auto announce = [&](int s) {
    if constexpr (kProbeNoCopies)
      ptx::mbar_arrive(full(s));
    else if constexpr (C::KB == 1)
      ptx::mbar_arrive_expect_tx(full(s), p.stage_tx);
    else
      ptx::mbar_arrive_expect_tx(full(s), C::KB * p.stage_tx);
  };
  // BulkWeightScales: stage s's box of the weight scales holding block kb's
  // of column tile tn (its bytes are in the shim's stage_tx). The box starts
  // at a multiple of 4 blocks, a 16-byte aligned global address: on the H200
  // a box starting at block kb itself raised an illegal instruction at the
  // copy (observed; the driver's encode had accepted the map).
  constexpr bool kBulkWs = BulkWeightScales<C>::value;
  static_assert(!kBulkWs || (C::WS_STAGE && C::KB == 1 && C::SA_BYTES % 128 == 0 && C::SA_BYTES + 32 <= C::SA_STRIDE),
                "TMA weight scales: in the stage (WS_STAGE), one block per stage");
  auto copy_wscales = [&](int s, int kb, int tn) {
    if constexpr (!kProbeNoCopies)
      ptx::tma_load_2d(sa_base + s * C::SA_STRIDE + C::SA_BYTES, &static_cast<const ParamsWs&>(p).tma_ws, full(s),
                       kb & ~3, tn * C::BN / 128);
  };
  int early = 0;  // stages of the first unit whose weight side is in flight
  if (kEarly && (p.flags & kEarlyWeights) && threadIdx.x == C::MATH_WG * 128 && first_unit < units) {
    int tile, slice, tm, tn, kb_begin, kb_end;
    work(first_unit, tile, slice, kb_begin, kb_end);
    coords(tile, tm, tn);
    const float *ws_lo, *ws_hi;
    w_scale_rows(tn, ws_lo, ws_hi);
    early = min(early_stages(C::STAGES, C::SCALE_MODE == kScaleBlock, EarlyWeights<C>::value),
                (kb_end - kb_begin + C::KB - 1) / C::KB);
    for (int s = 0; s < early; ++s) {
      const int kb = kb_begin + s * C::KB;
      if constexpr (C::WS_STAGE && !kBulkWs) {
        const uint32_t ws = sa_base + s * C::SA_STRIDE + C::SA_BYTES;
        ptx::cp_async_4(ws, ws_lo + kb);
        if constexpr (C::MAY_STRADDLE) ptx::cp_async_4(ws + 4, ws_hi + kb);
        ptx::cp_async_mbar_arrive(full(s));
      }
      announce(s);  // A's bytes, copied after the wait, count too
      copy_weight(s, kb, tn);
      if constexpr (kBulkWs) copy_wscales(s, kb, tn);
    }
  }
  trace.mark(2);
  ptx::grid_dependency_wait();
  trace.mark(3);

  if (wg == C::MATH_WG) {
    // ---- producer warpgroup: one thread issues every copy ----
    ptx::setmaxnreg_dec<C::PRODUCER_REGS>();
    if (threadIdx.x == C::MATH_WG * 128) {
      int stage = 0;
      uint32_t phase = 0;
      for (int unit = first_unit; unit < units; unit += unit_step) {
        int tile, slice, tm, tn, kb_begin, kb_end;
        work(unit, tile, slice, kb_begin, kb_end);
        coords(tile, tm, tn);
        const float *ws_lo, *ws_hi;  // (WS_STAGE's cp.async form; unused with BulkWeightScales)
        w_scale_rows(tn, ws_lo, ws_hi);
        for (int kb = kb_begin; kb < kb_end; kb += C::KB) {
          ptx::mbar_wait(empty(stage), phase ^ 1);
          // (the first `early` stages' weight side went out before the wait)
          const bool weight_sent = early > 0;
          if (weight_sent) {
            --early;
          } else {
            if constexpr (C::WS_STAGE && !kBulkWs) {  // before the arrive below, which may be the phase's last
              const uint32_t ws = sa_base + stage * C::SA_STRIDE + C::SA_BYTES;
              ptx::cp_async_4(ws, ws_lo + kb);
              if constexpr (C::MAY_STRADDLE) ptx::cp_async_4(ws + 4, ws_hi + kb);
              ptx::cp_async_mbar_arrive(full(stage));
            }
            announce(stage);
            if constexpr (kBulkWs) copy_wscales(stage, kb, tn);
          }
          if constexpr (kProbeNoCopies)
            (void)tm;
          else if constexpr (C::CLUSTER_N > 1)  // this CTA's half of the pair's A box, to both
            ptx::tma_load_2d_multicast(a_base + stage * C::A_BYTES + rank * (C::A_BYTES / 2), &p.tma_a, full(stage),
                                       kb * kBlockK, tm * C::BM + rank * (C::BM / 2), 0x3);
          else if constexpr (C::KB > 1)  // one 3-D box of KB blocks
            ptx::tma_load_3d(a_base + stage * C::STAGE_A, &p.tma_a, full(stage), 0, tm * C::BM, kb);
          else
            ptx::tma_load_2d(a_base + stage * C::A_BYTES, &p.tma_a, full(stage), kb * kBlockK, tm * C::BM);
          if (!weight_sent) copy_weight(stage, kb, tn);
          // (multi-block stages: one box of KB blocks' scales)
          if constexpr (C::BLOCK_SCALES && !kProbeNoCopies)
            ptx::tma_load_2d(sa_base + stage * C::SA_STRIDE, &p.tma_sa, full(stage), tm * C::BM, kb);
          if (++stage == C::STAGES) {
            stage = 0;
            phase ^= 1;
          }
        }
      }
      // Every copy of this CTA is issued: the next kernel may start
      // launching (it waits for this one before it touches memory). Not
      // earlier: on the H200 a trigger at the start let the next call's
      // CTAs wait on the SMs this grid leaves idle, and long calls with
      // idle SMs ran 4-12 % slower (5120x17408, M=64: 33.6 us against 30.0).
      trace.mark(4);
      ptx::launch_dependents();
      if constexpr (C::PAIR > 1) {
        // A pair's CTA leaves only when no arrive of its peer can still reach
        // its barriers: every stage it filled was released by both CTAs'
        // math warps (the peer's copies into this CTA's stages were all
        // waited for by its own math warps). A cluster barrier at the end
        // did this, with a GPU-wide fence in every thread, and the pairs
        // took 1.05-1.15x the time of the 1-CTA tiles (H200).
        for (int i = 0; i < C::STAGES; ++i) {
          ptx::mbar_wait(empty(stage), phase ^ 1);
          if (++stage == C::STAGES) {
            stage = 0;
            phase ^= 1;
          }
        }
      }
    }
  } else {
  // ---- math warpgroups ----
  if constexpr (C::MATH_REGS > 0) ptx::setmaxnreg_inc<C::MATH_REGS>();
  constexpr int NACC = C::WAVES * C::BN / 2;  // the total's registers per thread (wave after wave)
  constexpr int TACC = C::CHUNK_N / 2;  // one temporary's
  constexpr bool kSplitPaths = SplitPaths<C>::value;
  constexpr bool kLaneWs = LaneWeightScales<C>::value;
  constexpr bool kPrewait = PrewaitNextStage<C>::value;
  constexpr bool kScalesFirst = ScalesFirst<C>::value;
  static_assert(!kScalesFirst || (C::BLOCK_SCALES && C::KB == 1 && !C::WS_STAGE),
                "activation scales read before the MMAs: block scales from L2, one-block stages");
  static_assert(!kPrewait || (C::TEMPS == 1 && C::KSPLIT == 1 && C::KB == 1),
                "the next stage waited ahead: the one-temporary loop, no K split inside the CTA, one-block stages");
  static_assert(!kLaneWs || (C::BLOCK_SCALES && !C::WS_STAGE && C::KB == 1),
                "lane-held weight scales: block scales from L2, one-block stages");
  static_assert(!kSplitPaths || (C::MAY_STRADDLE && C::BLOCK_SCALES && C::TEMPS <= 2 && C::KB == 1),
                "split paths: block scales, a straddling tile width, one or two temporaries, one-block stages");
  // split points are multiples of gcd(BN, 128) columns
  constexpr int kSplitStep = ((C::BN & -C::BN) < 128 ? (C::BN & -C::BN) : 128) / 8;
  const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  const int wg_row = wg % C::ROW_WG;   // which 64 rows of the tile
  const int k_lane = wg / C::ROW_WG;   // which K blocks (kb % KSPLIT)
  const int row = wg_row * 64 + warp * 16 + lane / 4;  // this thread's rows in the tile: row, row + 8
  const float* sa_smem = reinterpret_cast<const float*>(smem_raw + (sa_base - raw));
  int stage = 0;
  uint32_t phase = 0;
  int seq = 0;  // multi-block stages: the ring position of the next unit's first stage
  uint32_t xtiles = 0;  // cluster split: tiles this CTA has reduced (the parity of its barriers)
  // OrderedIssue: each warpgroup waits for its turn on barrier 3 + wg and
  // passes the turn on barrier 4 - wg after its group; both issue the same
  // groups (the same units, blocks and chunks), so the turns alternate to
  // the end, where warpgroup 0 takes warpgroup 1's last pass.
  constexpr bool kOrdered = OrderedIssue<C>::value;
  static_assert(!kOrdered || (C::ROW_WG == 2 && C::KSPLIT == 1), "ordered issue: two row warpgroups, no K split");
  if constexpr (kOrdered)
    if (wg == 1) ptx::named_barrier_arrive(3, 256);  // warpgroup 0 goes first
  // LaneWeightScalesAhead: lane l holds the scale of block l of the next
  // unit's K run (ahead_lo/hi), loaded while the unit before it runs.
  constexpr bool kLaneAhead = LaneWeightScalesAhead<C>::value;
  static_assert(!kLaneAhead || kLaneWs, "the next unit's weight scales loaded ahead: lane-held weight scales");
  // (LaneWeightScales) lane l's scales of block first + l in the weight-scale
  // rows row_lo and row_hi, 0 from kb_end on
  [[maybe_unused]] auto lane_scales = [&](const float* row_lo, const float* row_hi, int first, int kb_end, float& lo,
                                          float& hi) {
    const int kb = first + lane;
    lo = kb < kb_end ? __ldg(row_lo + kb) : 0.f;
    hi = C::MAY_STRADDLE ? (kb < kb_end ? __ldg(row_hi + kb) : 0.f) : lo;
  };
  [[maybe_unused]] float ahead_lo = 1.f, ahead_hi = 1.f;
  [[maybe_unused]] auto ahead_scales = [&](int tn, int kb_begin, int kb_end) {
    const float *ws_lo, *ws_hi;
    w_scale_rows(tn, ws_lo, ws_hi);
    lane_scales(ws_lo, ws_hi, kb_begin, kb_end, ahead_lo, ahead_hi);
  };
  [[maybe_unused]] auto ahead_load = [&](int next) {
    int tile, slice, tm, tn, kb_begin, kb_end;
    work(next, tile, slice, kb_begin, kb_end);
    coords(tile, tm, tn);
    ahead_scales(tn, kb_begin, kb_end);
  };
  if constexpr (kLaneAhead)
    if (first_unit < units) ahead_load(first_unit);
  // CarriedCoords: the next unit's work range and tile coordinates, computed
  // while the unit before it runs (the first unit's here).
  constexpr bool kCarried = CarriedCoords<C>::value;
  static_assert(!kCarried || (C::TEMPS == 2 && C::KSPLIT == 1 && C::KB == 1 && !kSplitPaths),
                "carried coordinates: the two-temporary loops, no K split inside the CTA, one-block stages");
  [[maybe_unused]] int next_tile = 0, next_slice = 0, next_tm = 0, next_tn = 0, next_kb_begin = 0, next_kb_end = 0;
  [[maybe_unused]] auto place_next = [&](int next) {
    work(next, next_tile, next_slice, next_kb_begin, next_kb_end);
    coords(next_tile, next_tm, next_tn);
  };
  if constexpr (kCarried)
    if (first_unit < units) place_next(first_unit);

  for (int unit = first_unit; unit < units; unit += unit_step) {
    int tile, slice, tm, tn, kb_begin, kb_end;
    if constexpr (kCarried) {
      tile = next_tile, slice = next_slice, tm = next_tm, tn = next_tn;
      kb_begin = next_kb_begin, kb_end = next_kb_end;
    } else {
      work(unit, tile, slice, kb_begin, kb_end);
      coords(tile, tm, tn);
    }
    const int n0 = tn * C::BN;
    const float *ws_lo, *ws_hi;
    w_scale_rows(tn, ws_lo, ws_hi);
    const int boundary = (n0 / 128 + 1) * 128;  // first column of the next scale block

    float acc[NACC];
#pragma unroll
    for (int i = 0; i < NACC; ++i) acc[i] = 0.f;

    // LaneWeightScales: lane l holds the scales of block lane_base + l
    // (lane_lo/hi) and of block lane_base + 32 + l (next_lo/hi).
    [[maybe_unused]] float lane_lo = 1.f, lane_hi = 1.f, next_lo = 1.f, next_hi = 1.f;
    [[maybe_unused]] int lane_base = kb_begin;
    [[maybe_unused]] auto lane_load = [&](int first, float& lo, float& hi) {
      lane_scales(ws_lo, ws_hi, first, kb_end, lo, hi);
    };
    if constexpr (kLaneWs) {
      if constexpr (kLaneAhead) {  // (loaded during the previous unit)
        lane_lo = ahead_lo;
        lane_hi = ahead_hi;
        if constexpr (!kCarried)  // (CarriedCoords: once the first MMAs are issued, in first_issued)
          if (unit + unit_step < units) ahead_load(unit + unit_step);
      } else {
        lane_load(kb_begin, lane_lo, lane_hi);
      }
      lane_load(kb_begin + 32, next_lo, next_hi);
    }
    // Block kb: MMAs into a per-block temporary, waited, then promoted
    // acc += t * a_scale * w_scale. The weight scales come from global
    // memory (L2): they are loaded one block ahead, off the critical path.
    // (Row and tensor modes scale once at the end: here every factor is 1.)
    // With LaneWeightScales a shuffle takes them from the lane holding
    // them (the loops ask for non-decreasing blocks, at most KSPLIT apart,
    // and every lane of the warp asks for the same one).
    auto w_scales = [&](int kb, float& lo, float& hi) {
      lo = hi = 1.f;
      if constexpr (C::BLOCK_SCALES) {
        if constexpr (kLaneWs) {
          if (kb - lane_base >= 32) {
            lane_base += 32;
            lane_lo = next_lo;
            lane_hi = next_hi;
            lane_load(lane_base + 32, next_lo, next_hi);
          }
          lo = __shfl_sync(0xffffffffu, lane_lo, kb - lane_base);
          hi = C::MAY_STRADDLE ? __shfl_sync(0xffffffffu, lane_hi, kb - lane_base) : lo;
        } else {
          lo = __ldg(ws_lo + kb);
          hi = C::MAY_STRADDLE ? __ldg(ws_hi + kb) : lo;
        }
      }
    };
    // CarriedCoords: called once the unit's first MMAs are issued, so that
    // the next unit's divisions (and with LaneWeightScalesAhead its lanes'
    // loads) run while those MMAs do, not ahead of them.
    [[maybe_unused]] auto first_issued = [&]() {
      if constexpr (kCarried) {
        if (unit + unit_step < units) {
          place_next(unit + unit_step);
          if constexpr (kLaneAhead) ahead_scales(next_tn, next_kb_begin, next_kb_end);
        }
      }
    };
    // Stage s's descriptors are stage 0's plus its offset in 16-byte units
    // (the address field cannot carry: shared memory is below 2^18 bytes).
    const uint64_t da0 = ptx::desc_k_major_sw128(a_base + wg_row * 64 * kBlockK);
    // Multi-block stages: block j of a stage lies j A boxes in (the box holds
    // the rows that exist up to BM, whole 8-row atoms, as Shim::prepare
    // sizes it) and its activation scales j token boxes in (floats).
    const int a_slab = C::KB == 1 ? C::A_BYTES : (p.M < C::BM ? (p.M + 7) / 8 * 8 : C::BM) * kBlockK;
    const int sa_slab = C::KB == 1 ? 0 : (p.M < C::BM ? (p.M + 3) / 4 * 4 : C::BM);
    const uint64_t dw0 = ptx::desc_k_major_sw128(w_base);
    // The MMAs of column chunk c of block j of the stage at (s, ph) into t,
    // and that block's activation scales (read while the MMAs run, or with
    // ScalesFirst before they are issued). Chunk 0
    // of block 0 waits for the stage; it stays full until its last block's
    // last chunk is retired. (With WS_STAGE it also reads the stage's weight
    // scales into w_lo, w_hi; otherwise it leaves them to w_scales. kb is the
    // block's K index, where BulkWeightScales finds its scale in the box.)
    // (A 256-row tile's step c is wave c / CHUNKS, column chunk c % CHUNKS.)
    auto issue = [&](int s, uint32_t ph, int j, int c, float (&t)[TACC], float& sa0, float& sa1, float& w_lo,
                     float& w_hi, int kb) {
      const int wave = C::WAVES > 1 ? c / C::CHUNKS : 0;
      const int cc = C::WAVES > 1 ? c % C::CHUNKS : c;
      if (c == 0 && j == 0 && (!kPrewait || kb == kb_begin)) {  // (PrewaitNextStage: waited in the loop)
        ptx::mbar_wait(full(s), ph);
        trace.mark_once(4);
      }
      if constexpr (kOrdered) ptx::named_barrier(3 + wg, 256);  // this warpgroup's turn
      if constexpr (kScalesFirst) {  // (ScalesFirst: one-block stages, weight scales from L2)
        const float* sa = sa_smem + s * (C::SA_STRIDE / 4);
        sa0 = sa[row + wave * 128];
        sa1 = sa[row + wave * 128 + 8];
      }
#pragma unroll
      for (int i = 0; i < TACC; ++i) ptx::fence_operand(t[i]);
      ptx::wgmma_fence();
      const uint64_t da = da0 + uint32_t(C::KB == 1 ? s * (C::A_BYTES >> 4) : (s * C::STAGE_A + j * a_slab) >> 4) +
                          uint32_t(wave * (128 * kBlockK >> 4));
      // (KB == 1 keeps the expressions its cubins were built from: ptxas
      // scheduled the 128x256 tiles differently from the folded forms)
      const uint64_t dw = dw0 + uint32_t(C::KB == 1 ? (s * C::W_BYTES + cc * C::CHUNK_N * kBlockK) >> 4
                                                    : (s * C::STAGE_W + j * C::W_BYTES) >> 4);
#pragma unroll
      for (int k = 0; k < kBlockK / 32; ++k)
        if constexpr (!kProbeNoMma) Wgmma<C::CHUNK_N>::mma(t, da + 2 * k, dw + 2 * k, k > 0);
      ptx::wgmma_commit();
      if constexpr (kOrdered) ptx::named_barrier_arrive(4 - wg, 256);  // the other's turn
      if constexpr (!kScalesFirst) sa0 = sa1 = 1.f;
      if constexpr (C::BLOCK_SCALES && !kScalesFirst) {
        const float* sa = C::KB == 1 ? sa_smem + s * (C::SA_STRIDE / 4) : sa_smem + s * (C::SA_STRIDE / 4) + j * sa_slab;
        sa0 = sa[row + wave * 128];
        sa1 = sa[row + wave * 128 + 8];
        if constexpr (kBulkWs) {
          // (behind the BM activation scales: the box's first row, then its
          // second 16 bytes on; block kb at kb mod 4) every lane reads them
          // (BulkWeightScales; kb is the block's K index)
          w_lo = sa[C::BM + (kb & 3)];
          w_hi = C::MAY_STRADDLE ? sa[C::BM + 4 + (kb & 3)] : w_lo;
        } else if constexpr (C::WS_STAGE) {
          // (behind the BM activation scales) Lane 0 reads them and the
          // warp takes them by shuffle: lane 0 is the lane that frees the
          // stage for the producer's next cp.async, so every read of the
          // slot is ordered before that release by program order (compute-
          // sanitizer's racecheck does not count the __syncwarp before the
          // arrive as ordering the other lanes' reads, and flagged them).
          float lo = 0.f, hi = 0.f;
          if (lane == 0) {
            lo = sa[C::BM];
            if constexpr (C::MAY_STRADDLE) hi = sa[C::BM + 1];
          }
          w_lo = __shfl_sync(0xffffffffu, lo, 0);
          w_hi = C::MAY_STRADDLE ? __shfl_sync(0xffffffffu, hi, 0) : w_lo;
        }
      }
    };
    // After chunk ch's MMAs into t were waited: release stage s if that was
    // its last chunk (of its last block: `last_block`), then acc (that
    // chunk's columns) += t * scales. split: a SplitAt (t's extent is
    // spelled out: nvcc 13.0's front end crashed on a generic lambda whose
    // parameter type named the local TACC).
    auto retire = [&](auto split, int s, int ch, float (&t)[C::CHUNK_N / 2], float sa0, float sa1,
                      float wsc_lo, float wsc_hi, bool last_block) {
      constexpr int LO = decltype(split)::value;
      const int cc = C::WAVES > 1 ? ch % C::CHUNKS : ch;  // the column chunk (a 256-row tile: step ch of the block)
#pragma unroll
      for (int i = 0; i < TACC; ++i) ptx::fence_operand(t[i]);
      if (ch == C::WAVES * C::CHUNKS - 1 && last_block) {
        __syncwarp();  // this warp is done with the stage (its MMAs waited, its scales read)
        if (lane == 0) {
          ptx::mbar_arrive(empty(s));
          if constexpr (C::PAIR > 1) ptx::mbar_arrive_cluster(empty(s), rank ^ 1);  // the peer's copies land here too
        }
      }
      const float lo0 = sa0 * wsc_lo, lo1 = sa1 * wsc_lo;
      const float hi0 = sa0 * wsc_hi, hi1 = sa1 * wsc_hi;
      float* part = acc + ch * TACC;
      if constexpr (kProbeNoPromotion) {
        part[0] += t[TACC - 1];
        return;
      }
#pragma unroll
      for (int c = 0; c < C::CHUNK_N / 8; ++c) {
        // columns n0 + ch * CHUNK_N + 8c .. +7 (scale blocks are 8-column aligned)
        const bool hi = C::MAY_STRADDLE && (LO >= 0 ? cc * (C::CHUNK_N / 8) + c >= LO
                                                     : n0 + cc * C::CHUNK_N + 8 * c >= boundary);
        const float s0 = hi ? hi0 : lo0, s1 = hi ? hi1 : lo1;
        part[4 * c + 0] = fmaf(t[4 * c + 0], s0, part[4 * c + 0]);
        part[4 * c + 1] = fmaf(t[4 * c + 1], s0, part[4 * c + 1]);
        part[4 * c + 2] = fmaf(t[4 * c + 2], s1, part[4 * c + 2]);
        part[4 * c + 3] = fmaf(t[4 * c + 3], s1, part[4 * c + 3]);
      }
    };
    auto advance = [&](int& s, uint32_t& ph) {
      if (++s == C::STAGES) {
        s = 0;
        ph ^= 1;
      }
    };

    if constexpr (C::KB > 1) {
      // Multi-block stages (StageBlocks), one chunk: the two-temporary loop
      // below over this warpgroup's blocks. The unit's blocks fill `nst`
      // stages from the ring position `seq` on (the producer starts each unit
      // on a fresh stage too; only the last stage may hold fewer than KB).
      // With a K split, warpgroup k_lane takes the stages whose position is
      // k_lane mod KSPLIT: since STAGES % KSPLIT == 0 it is also the one that
      // read each slot's previous fill, so its parity wait cannot pass on a
      // phase another warpgroup has not yet seen completed.
      const int nblk = kb_end - kb_begin, nst = (nblk + C::KB - 1) / C::KB;
      const int q0 = C::KSPLIT == 1 ? 0 : (k_lane - seq % C::KSPLIT + C::KSPLIT) % C::KSPLIT;
      const int own = q0 < nst ? (nst - 1 - q0) / C::KSPLIT + 1 : 0;
      const int q_last = q0 + (own - 1) * C::KSPLIT;
      const int steps = own > 0 ? (own - 1) * C::KB + min(C::KB, nblk - q_last * C::KB) : 0;
      // step i of this warpgroup: stage slot s (phase ph), block j of it, K block kb
      auto at = [&](int i, int& s, uint32_t& ph, int& j, int& kb) {
        const int q = q0 + C::KSPLIT * (i / C::KB);
        j = i % C::KB;
        kb = kb_begin + q * C::KB + j;
        s = (seq + q) % C::STAGES;
        ph = uint32_t((seq + q) / C::STAGES) & 1u;
      };
      if constexpr (C::TEMPS == 4) {
        // Four temporaries: three blocks' MMAs stay in flight while the
        // oldest is promoted, and each block's weight scales are loaded three
        // steps before their use. Built because with two, a narrow tile's
        // chain (MMAs, promotion, release) ran at 124 ns per block without
        // copies against 167 ns per block of copies (H200, 64x40 sb2,
        // 5120x17408 M=16). Measured: the 32- and 40-wide tiles run 0.4-1 %
        // faster with four, but their probe without copies is no faster, so
        // why is not located (HARDWARE.toml). Temporary u takes the steps
        // i = u mod 4, so each has fixed registers; every exit waits for all
        // groups on its own path (ptxas serializes otherwise).
        if (steps > 0) {
          float t0[TACC], t1[TACC], t2[TACC], t3[TACC];
          float sa0[4], sa1[4], wlo[4], whi[4];
          int s, j, kb;
          uint32_t ph;
#define FP8GEN_SB_ISSUE(I, T, U)                                \
  at(I, s, ph, j, kb);                                          \
  issue(s, ph, j, 0, T, sa0[U], sa1[U], wlo[U], whi[U], kb);    \
  w_scales(kb, wlo[U], whi[U]);
#define FP8GEN_SB_RETIRE(I, T, U)                                                        \
  at(I, s, ph, j, kb);                                                                   \
  retire(SplitAt<-1>{}, s, 0, T, sa0[U], sa1[U], wlo[U], whi[U], j == C::KB - 1 || (I) + 1 == steps);
// step i + OFF (temporary T, slot U) retires; step i + OFF + 3 goes into TN
// (slot UN); past the last issue, the two after it (T1/U1, T2/U2) retire too
#define FP8GEN_SB_STEP(OFF, T, U, TN, UN, T1, U1, T2, U2)  \
  if (i + OFF + 3 < steps) {                              \
    FP8GEN_SB_ISSUE(i + OFF + 3, TN, UN)                  \
    ptx::wgmma_wait<3>();                                 \
    FP8GEN_SB_RETIRE(i + OFF, T, U)                       \
  } else {                                                \
    ptx::wgmma_wait<0>();                                 \
    FP8GEN_SB_RETIRE(i + OFF, T, U)                       \
    if (i + OFF + 1 < steps) {                            \
      FP8GEN_SB_RETIRE(i + OFF + 1, T1, U1)               \
    }                                                     \
    if (i + OFF + 2 < steps) {                            \
      FP8GEN_SB_RETIRE(i + OFF + 2, T2, U2)               \
    }                                                     \
    break;                                                \
  }
          FP8GEN_SB_ISSUE(0, t0, 0)
          if (1 < steps) {
            FP8GEN_SB_ISSUE(1, t1, 1)
          }
          if (2 < steps) {
            FP8GEN_SB_ISSUE(2, t2, 2)
          }
          for (int i = 0;; i += 4) {
            FP8GEN_SB_STEP(0, t0, 0, t3, 3, t1, 1, t2, 2)
            FP8GEN_SB_STEP(1, t1, 1, t0, 0, t2, 2, t3, 3)
            FP8GEN_SB_STEP(2, t2, 2, t1, 1, t3, 3, t0, 0)
            FP8GEN_SB_STEP(3, t3, 3, t2, 2, t0, 0, t1, 1)
          }
#undef FP8GEN_SB_STEP
#undef FP8GEN_SB_RETIRE
#undef FP8GEN_SB_ISSUE
        }
      } else if (steps > 0) {
        float ta[TACC], tb[TACC];
        float a0, a1, b0, b1, wa_lo, wa_hi, wb_lo, wb_hi;
        int s, j, kb;
        uint32_t ph;
        at(0, s, ph, j, kb);
        issue(s, ph, j, 0, ta, a0, a1, wa_lo, wa_hi, kb);
        w_scales(kb, wa_lo, wa_hi);
        for (int i = 0;; i += 2) {
          if (i + 1 < steps) {
            at(i + 1, s, ph, j, kb);
            issue(s, ph, j, 0, tb, b0, b1, wb_lo, wb_hi, kb);
            w_scales(kb, wb_lo, wb_hi);
            ptx::wgmma_wait<1>();
            at(i, s, ph, j, kb);
            retire(SplitAt<-1>{}, s, 0, ta, a0, a1, wa_lo, wa_hi, j == C::KB - 1);
          } else {
            ptx::wgmma_wait<0>();
            at(i, s, ph, j, kb);
            retire(SplitAt<-1>{}, s, 0, ta, a0, a1, wa_lo, wa_hi, true);
            break;
          }
          if (i + 2 < steps) {
            at(i + 2, s, ph, j, kb);
            issue(s, ph, j, 0, ta, a0, a1, wa_lo, wa_hi, kb);
            w_scales(kb, wa_lo, wa_hi);
            ptx::wgmma_wait<1>();
            at(i + 1, s, ph, j, kb);
            retire(SplitAt<-1>{}, s, 0, tb, b0, b1, wb_lo, wb_hi, j == C::KB - 1);
          } else {
            ptx::wgmma_wait<0>();
            at(i + 1, s, ph, j, kb);
            retire(SplitAt<-1>{}, s, 0, tb, b0, b1, wb_lo, wb_hi, true);
            break;
          }
        }
      }
      seq += nst;
    } else if constexpr (C::TEMPS == 2) {
      // Two temporaries over the steps (block, chunk) in order, the loop
      // unrolled by two so that each temporary has fixed registers (ptxas
      // then keeps one commit group in flight across the other's promotion
      // instead of serializing the wgmmas). ta takes even steps and tb odd
      // ones: with two chunks, ta is always chunk 0 and tb chunk 1.
      // The issue cursor (is, iph) runs one step ahead of (stage, phase);
      // CB is always a block's last chunk. Every exit waits for all groups
      // on its own path: ptxas must see that no wgmma is in flight once the
      // loop is left, or it serializes. (So the two halves stay written out:
      // folding them into one helper that returns "more" merges the paths,
      // and ptxas 13.0 then injected waits (C7517) and serialized every
      // wgmma, which the build refuses.) The loop is a macro so that the
      // split-paths instances (SplitPaths) can build it once per split point
      // inside a generic lambda while the others keep it inline: wrapped in
      // a lambda for every instance it changed what ptxas emitted for 12
      // cubins that the records timed.
#define FP8GEN_WGMMA_T2_LOOP(SPLIT)                                                            \
  constexpr int CA = 0, CB = C::CHUNKS - 1, LAST = C::CHUNKS - 1;                              \
  const int steps = (kb_end - kb_begin) * C::CHUNKS;                                           \
  float ta[TACC], tb[TACC];                                                                    \
  float a0, a1, b0, b1, wa_lo, wa_hi, wb_lo, wb_hi;                                            \
  int is = stage;                                                                              \
  uint32_t iph = phase;                                                                        \
  issue(is, iph, 0, CA, ta, a0, a1, wa_lo, wa_hi, kb_begin);                                   \
  if (CA == LAST) advance(is, iph);                                                            \
  if constexpr (!C::WS_STAGE) w_scales(kb_begin, wa_lo, wa_hi);                                \
  first_issued();                                                                              \
  for (int j = 0;; j += 2) {                                                                   \
    if (j + 1 < steps) {                                                                       \
      issue(is, iph, 0, CB, tb, b0, b1, wb_lo, wb_hi, kb_begin + (j + 1) / C::CHUNKS);         \
      advance(is, iph);                                                                        \
      if constexpr (!C::WS_STAGE) w_scales(kb_begin + (j + 1) / C::CHUNKS, wb_lo, wb_hi);      \
      ptx::wgmma_wait<1>();                                                                    \
      retire(SPLIT, stage, CA, ta, a0, a1, wa_lo, wa_hi, true);                                \
      if (CA == LAST) advance(stage, phase);                                                   \
    } else {                                                                                   \
      ptx::wgmma_wait<0>();                                                                    \
      retire(SPLIT, stage, CA, ta, a0, a1, wa_lo, wa_hi, true);                                \
      if (CA == LAST) advance(stage, phase);                                                   \
      break;                                                                                   \
    }                                                                                          \
    if (j + 2 < steps) {                                                                       \
      issue(is, iph, 0, CA, ta, a0, a1, wa_lo, wa_hi, kb_begin + (j + 2) / C::CHUNKS);         \
      if (CA == LAST) advance(is, iph);                                                        \
      if constexpr (!C::WS_STAGE) w_scales(kb_begin + (j + 2) / C::CHUNKS, wa_lo, wa_hi);      \
      ptx::wgmma_wait<1>();                                                                    \
      retire(SPLIT, stage, CB, tb, b0, b1, wb_lo, wb_hi, true);                                \
      advance(stage, phase);                                                                   \
    } else {                                                                                   \
      ptx::wgmma_wait<0>();                                                                    \
      retire(SPLIT, stage, CB, tb, b0, b1, wb_lo, wb_hi, true);                                \
      advance(stage, phase);                                                                   \
      break;                                                                                   \
    }                                                                                          \
  }
      // RingUnroll: the loop above a turn of the ring per pass (two when a
      // turn holds an odd number of steps, so that each temporary keeps its
      // steps), step i of a pass being block i / CHUNKS of it (slot i /
      // CHUNKS mod STAGES, the parity flipped in its second turn), chunk
      // i % CHUNKS, temporary ta on even steps. Only a step that ends a turn
      // can be the unit's last, but the first step of a pass asks too
      // (never true: a turn holds STAGES >= 2 blocks): with exits only after
      // tb's steps, ptxas 13.0 serialized every wgmma (C7514, in-flight
      // accumulators read), with one after a step of ta's it did not.
#define FP8GEN_WGMMA_T2_RING_STEP(SPLIT, T, X0, X1, XLO, XHI, U, Y0, Y1, YLO, YHI)             \
  if (more) {                                                                                  \
    issue(nb % C::STAGES, rph ^ uint32_t(nb / C::STAGES & 1), 0, nc, U, Y0, Y1, YLO, YHI, kb0 + nb); \
    if constexpr (!C::WS_STAGE) w_scales(kb0 + nb, YLO, YHI);                                  \
    ptx::wgmma_wait<1>();                                                                      \
    retire(SPLIT, b % C::STAGES, c, T, X0, X1, XLO, XHI, true);                                \
  } else {                                                                                     \
    ptx::wgmma_wait<0>();                                                                      \
    retire(SPLIT, b % C::STAGES, c, T, X0, X1, XLO, XHI, true);                                \
    goto fp8gen_ring_done;                                                                     \
  }
#define FP8GEN_WGMMA_T2_RING_LOOP(SPLIT)                                                       \
  constexpr int PASS = C::STAGES * C::CHUNKS % 2 ? 2 * C::STAGES : C::STAGES; /* blocks */     \
  float ta[TACC], tb[TACC];                                                                    \
  float a0, a1, b0, b1, wa_lo, wa_hi, wb_lo, wb_hi;                                            \
  uint32_t rph = phase; /* slot 0's parity in the pass's first turn */                         \
  issue(0, rph, 0, 0, ta, a0, a1, wa_lo, wa_hi, kb_begin);                                     \
  if constexpr (!C::WS_STAGE) w_scales(kb_begin, wa_lo, wa_hi);                                \
  first_issued();                                                                              \
  for (int kb0 = kb_begin;; kb0 += PASS) {                                                     \
    _Pragma("unroll") for (int i = 0; i < PASS * C::CHUNKS; ++i) {                             \
      const int b = i / C::CHUNKS, c = i % C::CHUNKS;               /* this step */           \
      const int nb = (i + 1) / C::CHUNKS, nc = (i + 1) % C::CHUNKS; /* the next */            \
      const bool more = i == 0 || (nc == 0 && nb % C::STAGES == 0) ? kb0 + nb < kb_end : true; \
      if (i % 2 == 0) {                                                                        \
        FP8GEN_WGMMA_T2_RING_STEP(SPLIT, ta, a0, a1, wa_lo, wa_hi, tb, b0, b1, wb_lo, wb_hi)   \
      } else {                                                                                 \
        FP8GEN_WGMMA_T2_RING_STEP(SPLIT, tb, b0, b1, wb_lo, wb_hi, ta, a0, a1, wa_lo, wa_hi)   \
      }                                                                                        \
    }                                                                                          \
    rph ^= uint32_t(PASS / C::STAGES & 1);                                                     \
  }                                                                                            \
  fp8gen_ring_done:                                                                            \
  phase ^= uint32_t((kb_end - kb_begin) / C::STAGES) & 1u; /* (stage: back at 0) */
      if constexpr (RingUnroll<C>::value) {
        // (no split paths: the split-path instance built with it was measured
        // no faster and dropped, so that combination is refused, not kept
        // untested)
        static_assert(C::KSPLIT == 1 && C::WAVES == 1 && !kSplitPaths,
                      "ring unrolling: the two-temporary loop, no split paths");
        // (every unit of a call starts at slot 0 once the first does)
        const int nblk = kb_end - kb_begin;
        const bool ring = stage == 0 && nblk > 0 && nblk % C::STAGES == 0;
        if (ring) {
          FP8GEN_WGMMA_T2_RING_LOOP(SplitAt<-1>{})
        } else {
          FP8GEN_WGMMA_T2_LOOP(SplitAt<-1>{})
        }
      } else if constexpr (kSplitPaths) {
        // (8-column groups before the next scale block, or all of them: a
        // multiple of kSplitStep, since n0 and the boundary both are)
        const int lo = min((boundary - n0) / 8, C::BN / 8);
        with_split<kSplitStep, C::BN / 8, kSplitStep>(lo, [&](auto split) { FP8GEN_WGMMA_T2_LOOP(split) });
      } else {
        FP8GEN_WGMMA_T2_LOOP(SplitAt<-1>{})
      }
#undef FP8GEN_WGMMA_T2_RING_LOOP
#undef FP8GEN_WGMMA_T2_RING_STEP
#undef FP8GEN_WGMMA_T2_LOOP
    } else {
      // One temporary: wait, MMAs, wait, promote, chunk by chunk. The math
      // warpgroups overlap each other's promotion. A macro for the reason
      // the two-temporary loop is one: split-paths instances build it once
      // per split point in a generic lambda, the others keep it inline.
#define FP8GEN_WGMMA_T1_LOOP(SPLIT, UNROLL)                                                    \
  float wsc_lo, wsc_hi;                                                                        \
  if constexpr (!C::WS_STAGE) w_scales(min(kb_begin + k_lane, kb_end - 1), wsc_lo, wsc_hi);    \
  UNROLL for (int kb = kb_begin; kb < kb_end; ++kb) {                                          \
    /* every warpgroup walks every stage (the ring's order), using its own */                  \
    const int s = stage;                                                                       \
    const uint32_t ph = phase;                                                                 \
    advance(stage, phase);                                                                     \
    if (C::KSPLIT > 1 && kb % C::KSPLIT != k_lane) continue;                                   \
    [[maybe_unused]] float next_lo, next_hi; /* (unused with WS_STAGE) */                     \
    _Pragma("unroll") for (int ch = 0; ch < C::WAVES * C::CHUNKS; ++ch) {                      \
      float t[TACC], sa0, sa1;                                                                 \
      issue(s, ph, 0, ch, t, sa0, sa1, wsc_lo, wsc_hi, kb);                                    \
      if constexpr (!C::WS_STAGE)                                                              \
        if (ch == 0) w_scales(min(kb + C::KSPLIT, kb_end - 1), next_lo, next_hi);              \
      _Pragma("unroll") for (int i = 0; i < TACC; ++i) ptx::fence_operand(t[i]);               \
      if constexpr (kPrewait) /* (stage, phase: already the next block's) */                  \
        if (ch == C::WAVES * C::CHUNKS - 1 && kb + 1 < kb_end) ptx::mbar_wait(full(stage), phase); \
      ptx::wgmma_wait<0>();                                                                    \
      retire(SPLIT, s, ch, t, sa0, sa1, wsc_lo, wsc_hi, true);                                 \
    }                                                                                          \
    if constexpr (!C::WS_STAGE) {                                                              \
      wsc_lo = next_lo;                                                                        \
      wsc_hi = next_hi;                                                                        \
    }                                                                                          \
  }
      // (UNROLL: a pragma before the loop, or nothing, so that the loop
      // without KLoopUnroll compiles from the same tokens as before it)
      constexpr int kUnroll = KLoopUnroll<C>::value;
      if constexpr (kSplitPaths) {
        const int lo = min((boundary - n0) / 8, C::BN / 8);
        if constexpr (kUnroll > 1)
          with_split<kSplitStep, C::BN / 8, kSplitStep>(
              lo, [&](auto split) { FP8GEN_WGMMA_T1_LOOP(split, _Pragma("unroll kUnroll")) });
        else
          with_split<kSplitStep, C::BN / 8, kSplitStep>(lo, [&](auto split) { FP8GEN_WGMMA_T1_LOOP(split, ) });
      } else if constexpr (kUnroll > 1) {
        FP8GEN_WGMMA_T1_LOOP(SplitAt<-1>{}, _Pragma("unroll kUnroll"))
      } else {
        FP8GEN_WGMMA_T1_LOOP(SplitAt<-1>{}, )
      }
#undef FP8GEN_WGMMA_T1_LOOP
    }

    trace.mark_once(5);
    trace.mark(6);
    if constexpr (C::KSPLIT > 1) {
      // The K-split warpgroups hand their sums to warpgroup 0 through shared
      // memory, laid out [lane group][register][thread] (conflict-free), and
      // only warpgroup 0 stores. Barrier 15 spans the math warpgroups.
      float* red = reinterpret_cast<float*>(smem_raw + (red_base - raw));
      const int tid = threadIdx.x % 128;
      if (k_lane > 0) {
#pragma unroll
        for (int i = 0; i < NACC; ++i) red[((k_lane - 1) * NACC + i) * 128 + tid] = acc[i];
      }
      ptx::named_barrier(15, C::MATH_WG * 128);
      if (k_lane == 0) {
#pragma unroll
        for (int j = 1; j < C::KSPLIT; ++j)
#pragma unroll
          for (int i = 0; i < NACC; ++i) acc[i] += red[((j - 1) * NACC + i) * 128 + tid];
      }
      ptx::named_barrier(15, C::MATH_WG * 128);  // the sums are read before the next tile writes them
      if (k_lane > 0) continue;
    }

    if constexpr (C::CLUSTER_K > 1) {
      // Partials laid out [rank - 1][64-row slice][register][thread]: each
      // register's stores from a warpgroup are 512 contiguous bytes.
      constexpr uint32_t PARTIAL_BYTES = C::BM * C::BN * 4;
      const uint32_t mine = xred_base + uint32_t(wg_row * NACC * 128 + threadIdx.x % 128) * 4;
      if (rank > 0) {
        // rank 0 has read this slot's previous partial; then write this one
        // into its shared memory and release it there (each thread its own)
        ptx::mbar_wait_cluster(xempty, (xtiles & 1) ^ 1);
        const uint32_t remote = ptx::map_shared_rank(mine + (rank - 1) * PARTIAL_BYTES, 0);
#pragma unroll
        for (int i = 0; i < NACC; ++i) ptx::st_shared_cluster(remote + i * 512, acc[i]);
        ptx::mbar_arrive_release_cluster(xfull, 0);
        ++xtiles;
        continue;  // rank 0 stores the tile
      }
      ptx::mbar_wait_cluster(xfull, xtiles & 1);
      const float* part = reinterpret_cast<const float*>(smem_raw + (mine - raw));
#pragma unroll
      for (int j = 0; j < C::CLUSTER_K - 1; ++j)  // in rank order: the same bits every run
#pragma unroll
        for (int i = 0; i < NACC; ++i) acc[i] += part[j * (PARTIAL_BYTES / 4) + i * 128];
      __syncwarp();  // this warp's reads are done: the peers may write the slots again
      if (lane == 0) {
#pragma unroll
        for (int r = 1; r < C::CLUSTER_K; ++r) ptx::mbar_arrive_release_cluster(xempty, r);
      }
      ++xtiles;
    }

    if constexpr (C::SLICES > 1) {
      if (slices > 1 && tile >= whole) {
        // This slice's partial tile to global memory (L2), laid out
        // [64-row slice][register][thread]: each store instruction writes
        // 512 contiguous bytes.
        // A warp whose 16 rows all lie past M (at M = 16 three of a 64-row
        // slice's four) neither writes nor sums its part: those rows are
        // never stored, and the tail of a small-M call is this traffic.
        const int tid = threadIdx.x % 128;
        const bool rows_live = tm * C::BM + wg_row * 64 + warp * 16 < p.M;
        constexpr int TILE_FLOATS = C::BM * C::BN;
        float* mine = p.partials + (size_t(tile - whole) * slices + slice) * TILE_FLOATS + wg_row * NACC * 128;
        if (rows_live) {
#pragma unroll
          for (int i = 0; i < NACC; ++i) __stcg(mine + i * 128 + tid, acc[i]);
        }
        __threadfence();  // the partial is visible device-wide before the count says so
        ptx::named_barrier(14, C::MATH_WG * 128);
        volatile int* flag = reinterpret_cast<volatile int*>(smem_raw + (bar_base + 16u * C::STAGES - raw));
        if (threadIdx.x == 0) {
          const int done = atomicAdd(p.counters + tile, 1);
          const bool last = done == slices - 1;
          if (last) p.counters[tile] = 0;  // ready for the next launch
          *flag = last;
        }
        ptx::named_barrier(14, C::MATH_WG * 128);
        if (!*flag) continue;  // another slice's CTA finishes this tile
        __threadfence();       // the other slices' partials are seen after their counts
        // The sum in slice order, whichever slice came last: the same bits
        // every run. Every slice's loads of a group of registers are in
        // flight at once (one L2 round trip per group, not one per slice):
        // the tail of a small-M call waits on this.
        const float* first = p.partials + size_t(tile - whole) * slices * TILE_FLOATS + wg_row * NACC * 128 + tid;
        constexpr int GROUP = sum_group(NACC, C::SLICES);  // at most 64 registers in flight
        if (rows_live) {  // (a warp past M still joins the epilogue below)
#pragma unroll
          for (int g = 0; g < NACC; g += GROUP) {
            float part[C::SLICES][GROUP];
#pragma unroll
            for (int j = 0; j < C::SLICES; ++j)
#pragma unroll
              for (int i = 0; i < GROUP; ++i)
                part[j][i] = j < slices ? __ldcg(first + size_t(j) * TILE_FLOATS + (g + i) * 128) : 0.f;
#pragma unroll
            for (int i = 0; i < GROUP; ++i) {
              float sum = part[0][i];
#pragma unroll
              for (int j = 1; j < C::SLICES; ++j)
                if (j < slices) sum += part[j][i];
              acc[g + i] = sum;
            }
          }
        }
      }
    }

    if constexpr (C::SCALE_MODE == kScaleRow) {
      // out = acc * (a_scale[token] * w_scale[channel]); rows and columns past
      // the edges get 0 (they are not stored)
      const int m_lo = tm * C::BM + row;
      const float r0 = m_lo < p.M ? __ldg(p.a_scale + m_lo) : 0.f;
      const float r1 = m_lo + 8 < p.M ? __ldg(p.a_scale + m_lo + 8) : 0.f;
#pragma unroll
      for (int c = 0; c < C::BN / 8; ++c) {
        const int col = n0 + 8 * c + 2 * (lane % 4);  // N % 8 == 0: col < N means col + 1 < N
        const float w0 = col < N ? __ldg(p.w_scale + col) : 0.f;
        const float w1 = col < N ? __ldg(p.w_scale + col + 1) : 0.f;
        acc[4 * c + 0] *= r0 * w0;
        acc[4 * c + 1] *= r0 * w1;
        acc[4 * c + 2] *= r1 * w0;
        acc[4 * c + 3] *= r1 * w1;
      }
    } else if constexpr (C::SCALE_MODE == kScaleTensor) {
      const float scale = __ldg(p.a_scale);  // written on the device by the quantizer's finalize step
#pragma unroll
      for (int i = 0; i < NACC; ++i) acc[i] *= scale;
    }

    if constexpr (C::TMA_STORE) {
      // ---- epilogue: bf16 into this warpgroup's 64-row slice of shared
      // memory (128-byte swizzle: conflict-free), then TMA stores of 64x64
      // boxes that clip ragged rows and columns, OUT_BOXES boxes per pass
      // (a row box: one unswizzled 64 x BN box, one pass; half boxes: BN / 32
      // 64x32 boxes with the 64-byte swizzle, one pass).
      // The stores run on while the next tile's MMAs start; the slice is
      // reused only after they read it.
      // Staging one 64-row slice of bf16 for the TMA stores (pass `pass`):
      // - a row box: rows r and r + 8 of the slice, BN * 2 bytes each, no swizzle;
      // - stmatrix x4 of column groups c and c + 1: matrix j holds rows 0-7 (j
      //   even) or 8-15 (j odd) of the warp's 16, columns 8 (c + j / 2) .. +7;
      //   lane t gives the row address of matrix t / 8;
      // - 32-bit stores: rows r and r + 8 of the slice (r % 8 == lane / 4).
      // A macro, so that the 128- and 64-row tiles' epilogue below stays the
      // code their cubins were built from (the same staging inside the 256-row
      // tile's loop over its waves changed 50 of them).
#define FP8GEN_STAGE_SLICE(SLICE, ACC)                                                                                \
        if constexpr (C::ROW_BOX) {                                                                                   \
          const int r = warp * 16 + lane / 4;                                                                         \
          _Pragma("unroll") for (int c = 0; c < C::BN / 8; ++c) {                                                     \
            const uint32_t at = (SLICE) + r * (C::BN * 2) + c * 16 + (lane % 4) * 4;                                  \
            stage_bf16_pairs(at, at + 8 * (C::BN * 2), (ACC) + 4 * c);                                                \
          }                                                                                                           \
        } else if constexpr (C::HALF_BOX) {                                                                           \
          /* rows r and r + 8 of box c / 4 (64 bytes a row), chunk c % 4 XOR bits 1-2 of the row (lane / 8) */       \
          const int r = warp * 16 + lane / 4;                                                                         \
          _Pragma("unroll") for (int c = 0; c < C::BN / 8; ++c) {                                                     \
            const uint32_t at = (SLICE) + (c / 4) * C::OUT_BOX_BYTES + r * 64 + ((c % 4) ^ (lane / 8)) * 16 +         \
                                (lane % 4) * 4;                                                                       \
            stage_bf16_pairs(at, at + 8 * 64, (ACC) + 4 * c);                                                         \
          }                                                                                                           \
        } else if constexpr (StmatrixEpilogue<C>::value) {                                                            \
          const int srow = warp * 16 + ((lane >> 3) & 1) * 8 + (lane & 7);                                            \
          const int sgrp = lane >> 4;                                                                                 \
          _Pragma("unroll") for (int c = pass * C::OUT_BOXES * 8; c < (pass + 1) * C::OUT_BOXES * 8; c += 2) {        \
            const uint32_t box = (SLICE) + (c / 8 - pass * C::OUT_BOXES) * C::OUT_BOX_BYTES;                          \
            const uint32_t addr = box + srow * 128 + (((c + sgrp) % 8) ^ (lane & 7)) * 16;                            \
            const __nv_bfloat162 v0 = __floats2bfloat162_rn((ACC)[4 * c], (ACC)[4 * c + 1]);                          \
            const __nv_bfloat162 v1 = __floats2bfloat162_rn((ACC)[4 * c + 2], (ACC)[4 * c + 3]);                      \
            const __nv_bfloat162 v2 = __floats2bfloat162_rn((ACC)[4 * c + 4], (ACC)[4 * c + 5]);                      \
            const __nv_bfloat162 v3 = __floats2bfloat162_rn((ACC)[4 * c + 6], (ACC)[4 * c + 7]);                      \
            ptx::stmatrix_x4(addr, *reinterpret_cast<const uint32_t*>(&v0), *reinterpret_cast<const uint32_t*>(&v1),  \
                             *reinterpret_cast<const uint32_t*>(&v2), *reinterpret_cast<const uint32_t*>(&v3));       \
          }                                                                                                           \
        } else {                                                                                                      \
          const int r = warp * 16 + lane / 4;                                                                         \
          _Pragma("unroll") for (int c = pass * C::OUT_BOXES * 8; c < (pass + 1) * C::OUT_BOXES * 8; ++c) {           \
            const uint32_t box = (SLICE) + (c / 8 - pass * C::OUT_BOXES) * C::OUT_BOX_BYTES;                          \
            const uint32_t chunk = ((c % 8) ^ (lane / 4)) * 16 + (lane % 4) * 4;                                      \
            stage_bf16_pairs(box + r * 128 + chunk, box + (r + 8) * 128 + chunk, (ACC) + 4 * c);                      \
          }                                                                                                           \
        }
      if constexpr (C::WAVES == 1) {
        const bool leader = threadIdx.x % 128 == 0;
        const uint32_t slice = out_base + wg_row * C::OUT_BOXES * C::OUT_BOX_BYTES;
#pragma unroll
        for (int pass = 0; pass < C::OUT_PASSES; ++pass) {
          if (leader) ptx::bulk_wait_read<0>();
          ptx::named_barrier(1 + wg, 128);
          FP8GEN_STAGE_SLICE(slice, acc)
          ptx::fence_proxy_async_smem();
          ptx::named_barrier(1 + wg, 128);
          if (leader) {
            if constexpr (C::ROW_BOX) {
              ptx::tma_store_2d(&p.tma_out, slice, n0, tm * C::BM + wg_row * 64);
            } else {
#pragma unroll
              for (int b = 0; b < C::OUT_BOXES; ++b)
                ptx::tma_store_2d(&p.tma_out, slice + b * C::OUT_BOX_BYTES,
                                  n0 + C::BOX_COLS * (pass * C::OUT_BOXES + b), tm * C::BM + wg_row * 64);
            }
            ptx::bulk_commit();
          }
        }
      } else {
        // A 256-row tile: each wave's 64 rows of this warpgroup in their own
        // slice (waves after one another), both staged before either is stored.
        const bool leader = threadIdx.x % 128 == 0;
#pragma unroll
        for (int pass = 0; pass < C::OUT_PASSES; ++pass) {
          if (leader) ptx::bulk_wait_read<0>();
          ptx::named_barrier(1 + wg, 128);
#pragma unroll
          for (int wave = 0; wave < C::WAVES; ++wave)
            FP8GEN_STAGE_SLICE(out_base + (wave * C::ROW_WG + wg_row) * C::OUT_BOXES * C::OUT_BOX_BYTES,
                               acc + wave * (C::BN / 2))
          ptx::fence_proxy_async_smem();
          ptx::named_barrier(1 + wg, 128);
          if (leader) {
#pragma unroll
            for (int wave = 0; wave < C::WAVES; ++wave) {
              const uint32_t slice = out_base + (wave * C::ROW_WG + wg_row) * C::OUT_BOXES * C::OUT_BOX_BYTES;
              const int m0 = tm * C::BM + wave * 128 + wg_row * 64;
              if constexpr (C::ROW_BOX) {
                ptx::tma_store_2d(&p.tma_out, slice, n0, m0);
              } else {
#pragma unroll
                for (int b = 0; b < C::OUT_BOXES; ++b)
                  ptx::tma_store_2d(&p.tma_out, slice + b * C::OUT_BOX_BYTES,
                                    n0 + C::BOX_COLS * (pass * C::OUT_BOXES + b), m0);
              }
            }
            ptx::bulk_commit();
          }
        }
      }
#undef FP8GEN_STAGE_SLICE
    } else {
      // ---- epilogue: bf16 pairs straight to global, ragged rows and columns masked ----
      const int m_lo = tm * C::BM + row, m_hi = m_lo + 8;
      __nv_bfloat16* out_lo = p.out + static_cast<size_t>(m_lo) * N;
      __nv_bfloat16* out_hi = p.out + static_cast<size_t>(m_hi) * N;
#pragma unroll
      for (int c = 0; c < C::BN / 8; ++c) {
        const int col = n0 + 8 * c + 2 * (lane % 4);
        if (col < N) {
          if (m_lo < p.M)
            *reinterpret_cast<__nv_bfloat162*>(out_lo + col) = __floats2bfloat162_rn(acc[4 * c], acc[4 * c + 1]);
          if (m_hi < p.M)
            *reinterpret_cast<__nv_bfloat162*>(out_hi + col) =
                __floats2bfloat162_rn(acc[4 * c + 2], acc[4 * c + 3]);
        }
      }
    }
  }
  // The CTA's shared memory must outlive the last stores' reads of it. Only
  // the reads: the writes complete as part of the grid (the next kernel's
  // grid-dependency wait, or the stream, sees them), so the CTA leaves
  // without waiting a round trip to L2 at the end of every call.
  if (C::TMA_STORE && threadIdx.x % 128 == 0) ptx::bulk_wait_read<0>();
  if constexpr (kOrdered)
    if (wg == 0) ptx::named_barrier(3, 256);  // warpgroup 1's last pass of the turn
  }
  // no CTA leaves while its peer may still arrive on its barriers (a pair:
  // its producer's tail above)
  if constexpr (C::CLUSTER > 1 && C::PAIR == 1) ptx::cluster_sync();
  trace.finish();
}

#else  // FP8GEN_HOST_SHIM

// cuTensorMapEncodeTiled from the driver already loaded by the host app (the
// shim links no driver library: it is built where no driver exists).
using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                 const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

inline EncodeTiled encoder() {
  static const EncodeTiled fn = []() -> EncodeTiled {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    return lib ? reinterpret_cast<EncodeTiled>(dlsym(lib, "cuTensorMapEncodeTiled")) : nullptr;
  }();
  return fn;
}

// A row-major [outer, inner] matrix of `elem` bytes with rows `row_bytes` apart.
inline bool encode_2d(CUtensorMap* map, CUtensorMapDataType type, const void* ptr, uint64_t inner, uint64_t outer,
                      uint64_t row_bytes, uint32_t box_inner, uint32_t box_outer, CUtensorMapSwizzle swizzle) {
  const cuuint64_t dims[2] = {inner, outer};
  const cuuint64_t strides[1] = {row_bytes};
  const cuuint32_t box[2] = {box_inner, box_outer};
  const cuuint32_t step[2] = {1, 1};
  return encoder()(map, type, 2, const_cast<void*>(ptr), dims, strides, box, step, CU_TENSOR_MAP_INTERLEAVE_NONE,
                   swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// A row-major [rows, K] byte matrix seen as {128, rows, K / 128} (strides
// K and 128 bytes): a box of {128, box_rows, blocks} copies `blocks`
// consecutive 128-K blocks of box_rows rows, laid out block after block,
// each as the 2-D box of one block would be (multi-block stages).
inline bool encode_k_blocks(CUtensorMap* map, const void* ptr, uint64_t K, uint64_t rows, uint32_t box_rows,
                            uint32_t blocks) {
  const cuuint64_t dims[3] = {128, rows, K / 128};
  const cuuint64_t strides[2] = {K, 128};
  const cuuint32_t box[3] = {128, box_rows, blocks};
  const cuuint32_t step[3] = {1, 1, 1};
  return encoder()(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, const_cast<void*>(ptr), dims, strides, box, step,
                   CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                   CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// What the runtime calls (the same entry points as the CUTLASS shims).
template <class C>
struct Shim {
  enum Status : int {
    kOk = 0, kCannotImplement = 1, kBufferTooSmall = 2, kNoDriver = 4, kEncodeFailed = 5, kNeedWorkspace = 6
  };
  // the kernel's parameter block (with BulkWeightScales, the scales' map too)
  using P = typename std::conditional<BulkWeightScales<C>::value, ParamsWs, Params>::type;

  // Split K: which tiles a call cuts and into how many slices (1..SLICES,
  // at most one per K block). The tiles fill whole waves of the SMs
  // unsplit; only the last, partial wave's tiles are cut, so that their
  // slices fill that wave (at small M it is the only wave). A split unit
  // pays a serial tail (its partial tile written, fenced, counted, then
  // read and summed by the last slice): fitted to H200 timings of the
  // 1/2/4-slice instances at M <= 512, about 12 K blocks' time (2.4-6.7
  // us), where an unsplit tile's epilogue costs about 2. And the slices
  // must fit that one wave: split units queued behind it run at other K
  // offsets than their tile's first slices, so W is read from DRAM again
  // (5120x17408, M=128, 64x128 tiles: 3 slices in 2 waves took 51 us
  // against 38 us unsplit). So the count whose slices fit the last wave
  // and minimize (K blocks per slice + that cost), plus one block per
  // extra partial summed, wins; the fewest on a tie. (40 tiles of 136 K
  // blocks on 132 SMs: 3 slices, 120 CTAs. 320 tiles: 264 whole, the last
  // 56 in 2 slices.) A split call needs one counter per tile (zero before
  // it, left zero after it: the runtime zeroes them once) and the slices'
  // partial tiles (runtime/workspace.py sizes both for all tiles and
  // SLICES, more than a call uses).
  static constexpr long kUnitCostBlocks = 2, kSplitUnitCostBlocks = 12;
  struct Split {
    int slices;  // K slices of each tile from `whole` on
    long whole;  // the tiles that run whole
  };
  static Split split_for(long tiles, int kblocks, long max_units) {
    Split plan{1, tiles};
    const long rest = tiles % max_units;  // the last wave's tiles (0: every wave is full)
    if (C::SLICES == 1 || rest == 0) return plan;
    const int most = C::SLICES < kblocks ? C::SLICES : kblocks;
    long best_cost = kblocks + kUnitCostBlocks;  // the last wave unsplit
    for (int s = 2; s <= most && rest * s <= max_units; ++s) {
      const long cost = (kblocks + s - 1) / s + kSplitUnitCostBlocks + (s - 1);
      if (cost < best_cost) {
        plan = Split{s, tiles - rest};
        best_cost = cost;
      }
    }
    return plan;
  }

  // The split a call at (M, N, K) on sm_count SMs uses (what prepare puts
  // in Params; the runtime reports it and the tests check the rule).
  static bool split_at(int M, int N, int K, int sm_count, Split& plan) {
    if (M < 1 || N < 1 || K < kBlockK || sm_count < C::CLUSTER) return false;
    const long tiles = long((M + C::BM - 1) / C::BM) * ((N + C::BN - 1) / C::BN);
    plan = split_for(tiles, K / kBlockK, sm_count / C::CLUSTER);
    return true;
  }

  static size_t params_size() { return sizeof(P); }

  // Params::flags of a prepared buffer (kEarlyWeights; 0 clears them).
  static void set_flags(void* params, unsigned flags) { static_cast<Params*>(params)->flags = flags; }

  static void info(int* threads, int* smem, int* cluster) {
    *threads = C::THREADS;
    *smem = C::SMEM_BYTES;
    cluster[0] = C::CLUSTER;  // the grid is 1-D
    cluster[1] = cluster[2] = 1;
  }

  // a_rows: rows of A that may be read (>= M); the A scales' ld_sfa >= M
  // tokens likewise. The rows past M feed only output rows past M, which are
  // never stored, so they may hold anything (see below for why they help).
  static int prepare(void* out, size_t cap, const void* a, const float* sfa, int ld_sfa, const void* w,
                     const float* sfw, void* d, int M, int N, int K, int a_rows, int sm_count, unsigned* grid,
                     int* counters = nullptr, size_t counter_slots = 0, float* partials = nullptr,
                     size_t partial_bytes = 0) {
    if (cap < sizeof(P)) return kBufferTooSmall;
    if (M < 1 || N < 1 || K < kBlockK || K % kBlockK || N % 8 || sm_count < 1 || a_rows < M)
      return kCannotImplement;
    if (K / kBlockK < C::CLUSTER_K) return kCannotImplement;  // every rank of a cluster split takes a K block
    if ((C::FIXED_N && N != C::FIXED_N) || (C::FIXED_K && K != C::FIXED_K)) return kCannotImplement;
    if (C::BLOCK_SCALES && (ld_sfa < M || ld_sfa % 4)) return kCannotImplement;
    // TMA weight scales: rows of K / 128 floats, 16-byte aligned
    if (BulkWeightScales<C>::value && ((K / kBlockK) % 4 || reinterpret_cast<uintptr_t>(sfw) % 16))
      return kCannotImplement;
    if (!encoder()) return kNoDriver;
    P p;
    std::memset(&p, 0, sizeof(p));
    const int kblocks = K / kBlockK;
    // Rows past the map's extent are filled with zeros by the copy engine,
    // which on the H200 is slow: with M < BM, it made the mainloop up to 1.5x
    // slower at M = 16 than at M = 64 (64x32 tiles, 7168x16384). So with one
    // tile row the A box holds only the rows that exist (whole 8-row swizzle
    // atoms) and the A-scale box only the tokens that exist; the stage's other
    // rows keep stale bytes, which feed only output rows past M, never stored
    // (a split tile's partials carry them into rows its sum does not store).
    // Past one tile row the box is whole, and a partial last tile row stays
    // inside the maps only where the caller's buffers have the rows: A's map
    // spans a_rows, the scales' ld_sfa tokens (runtime.Workspace pads both to
    // 128). Filled instead, a last row of 32 real rows made 128x128 t2 at
    // 7168x16384 M=160 take 78.5 us against 56.3 at M=256 (H200, 2026-11-30).
    const int box_rows = C::CLUSTER_N == 1 && M < C::BM ? (M + 7) / 8 * 8 : C::BM / C::CLUSTER_N;
    const int sa_tokens = M < C::BM ? (M + 3) / 4 * 4 : C::BM;
    // (a cluster's CTAs each copy half of the shared box; multi-block stages
    // copy C::KB blocks per box)
    const bool operands_ok =
        C::KB > 1 ? encode_k_blocks(&p.tma_a, a, K, a_rows, box_rows, C::KB) &&
                        encode_k_blocks(&p.tma_w, w, K, N, C::BN, C::KB)
                  : encode_2d(&p.tma_a, CU_TENSOR_MAP_DATA_TYPE_UINT8, a, K, a_rows, K, kBlockK, box_rows,
                              CU_TENSOR_MAP_SWIZZLE_128B) &&
                        encode_2d(&p.tma_w, CU_TENSOR_MAP_DATA_TYPE_UINT8, w, K, N, K, kBlockK, C::BN / C::CLUSTER_M,
                                  CU_TENSOR_MAP_SWIZZLE_128B);
    if (!operands_ok ||
        (C::BLOCK_SCALES && !encode_2d(&p.tma_sa, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, sfa, ld_sfa, kblocks,
                                       uint64_t(ld_sfa) * 4, sa_tokens, C::KB, CU_TENSOR_MAP_SWIZZLE_NONE)) ||
        (C::TMA_STORE && !encode_2d(&p.tma_out, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, d, N, M, uint64_t(N) * 2,
                                    C::BOX_COLS, 64,
                                    C::ROW_BOX    ? CU_TENSOR_MAP_SWIZZLE_NONE
                                    : C::HALF_BOX ? CU_TENSOR_MAP_SWIZZLE_64B
                                                  : CU_TENSOR_MAP_SWIZZLE_128B)))
      return kEncodeFailed;
    if constexpr (BulkWeightScales<C>::value) {  // 4 K blocks x the scale rows a tile spans
      if (!encode_2d(&p.tma_ws, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, sfw, kblocks, (N + 127) / 128, uint64_t(kblocks) * 4,
                     4, C::MAY_STRADDLE ? 2 : 1, CU_TENSOR_MAP_SWIZZLE_NONE))
        return kEncodeFailed;
    }
    p.w_scale = sfw;
    p.a_scale = sfa;
    p.out = static_cast<__nv_bfloat16*>(d);
    p.M = M;
    p.N = N;
    p.K = K;
    p.tiles_m = (M + C::BM - 1) / C::BM;
    p.tiles_n = (N + C::BN - 1) / C::BN;
    p.stage_tx = uint32_t(C::CLUSTER_N * box_rows * kBlockK + C::W_BYTES + (C::BLOCK_SCALES ? sa_tokens * 4 : 0) +
                          (BulkWeightScales<C>::value ? (C::MAY_STRADDLE ? 32 : 16) : 0));
    const long tiles = long(p.tiles_m) * p.tiles_n;
    Split plan;
    if (!split_at(M, N, K, sm_count, plan)) return kCannotImplement;
    p.slices = plan.slices;
    p.whole = int(plan.whole);
    if (p.slices > 1) {
      if (!counters || counter_slots < size_t(tiles) || !partials ||
          partial_bytes < size_t(tiles - plan.whole) * p.slices * C::BM * C::BN * 4)
        return kNeedWorkspace;
      p.counters = counters;
      p.partials = partials;
    }
    // persistent: at most one CTA per SM (for clusters, sm_count is what the
    // runtime's max-active-clusters query says runs at once), whole clusters
    const long units = C::SLICES > 1 ? plan.whole + (tiles - plan.whole) * plan.slices
                                     : long((p.tiles_m + C::CLUSTER_M - 1) / C::CLUSTER_M) *
                                           ((p.tiles_n + C::CLUSTER_N - 1) / C::CLUSTER_N);
    const long max_units = sm_count / C::CLUSTER;
    grid[0] = unsigned((units < max_units ? units : max_units) * C::CLUSTER);
    grid[1] = grid[2] = 1;
    std::memcpy(out, &p, sizeof(p));
    return kOk;
  }
};

// The C entry points the runtime binds (runtime/loader.py), named after the
// kernel symbol. prepare_rows takes A's readable rows (Shim::prepare);
// prepare_rows_split also the workspace's tile counters and partial tiles
// (split-K instances; others need none and ignore them). (The names differ
// from the CUTLASS shims' prepare, which has no a_rows, so that a stale shim
// fails to load instead of reading its arguments shifted.)
#define FP8GEN_WGMMA_SHIM_EXPORTS(SYM, SHIM)                                                                   \
  extern "C" size_t SYM##_params_size() { return SHIM::params_size(); }                                      \
  extern "C" void SYM##_set_flags(void* params, unsigned flags) { SHIM::set_flags(params, flags); }            \
  extern "C" void SYM##_info(int* threads, int* smem, int* cluster) { SHIM::info(threads, smem, cluster); }  \
  extern "C" int SYM##_split(int M, int N, int K, int sm_count, int* slices, long* whole) {                \
    typename SHIM::Split plan;                                                                               \
    if (!SHIM::split_at(M, N, K, sm_count, plan)) return 0;                                                  \
    *slices = plan.slices;                                                                                   \
    *whole = plan.whole;                                                                                     \
    return 1;                                                                                                \
  }                                                                                                          \
  extern "C" int SYM##_prepare_rows(void* out, size_t cap, const void* a, const float* sfa, int ld_sfa,       \
                                    const void* w, const float* sfw, void* d, int M, int N, int K, int a_rows, \
                                    int sm_count, unsigned* grid) {                                           \
    return SHIM::prepare(out, cap, a, sfa, ld_sfa, w, sfw, d, M, N, K, a_rows, sm_count, grid);               \
  }                                                                                                          \
  extern "C" int SYM##_prepare_rows_split(void* out, size_t cap, const void* a, const float* sfa, int ld_sfa, \
                                          const void* w, const float* sfw, void* d, int M, int N, int K,     \
                                          int a_rows, int sm_count, unsigned* grid, int* counters,           \
                                          size_t counter_slots, float* partials, size_t partial_bytes) {     \
    return SHIM::prepare(out, cap, a, sfa, ld_sfa, w, sfw, d, M, N, K, a_rows, sm_count, grid, counters,     \
                         counter_slots, partials, partial_bytes);                                             \
  }

#endif  // FP8GEN_HOST_SHIM

}  // namespace fp8gen::wgmma_gemm
