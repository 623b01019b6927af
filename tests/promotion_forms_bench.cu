// The promotion's operand forms beside a two-temporary wgmma chain: two math
// warpgroups of 132 CTAs issue 4 m64n128k32 e4m3 wgmmas per block from
// shared memory into alternating temporaries (the kernel's loop shape) and
// promote the waited one into a 64-register total as: nothing (one add),
// FFMA with per-thread register scales, FFMA with an immediate, FADD, or
// FFMA with scales loaded per block as the kernel loads them (activation
// scales by LDS from a stage slot times the weight scale by LDG one block
// ahead, or one of the two; read after the block's MMAs are issued, before
// them, or a block earlier; _grp: with each row's FFMAs written first). Then the same with more of the kernel around
// it (B): _b the 5-stage full/empty barrier ring with a producer warp that
// arrives without copying and the kernel's register split (setmaxnreg
// 232 / 40); _regsplit only the register split (the producer warpgroup
// leaves at once); _backoff the ring with the producer sleeping 200 ns
// between non-blocking tests; _nofullwait the ring without the math warps'
// full-barrier waits. Which part of the ring matters: _spinonly a producer
// spinning on one barrier all call, no ring; _arriveonly each math warp's
// per-block arrive on "empty" alone (no producer, no waits); _stsonly a
// plain shared store in its place; _namedonly a bar.arrive in its place;
// _noproducer the ring re-armed by the math warps. Other placements and
// partners of the ring: _laterelease (arrive after the promotion),
// _issuedrelease (after the next block's MMAs are issued; _arriveonly_issued
// likewise without the rest), _testfull (the next full barrier tested before
// the promotion), _elect (one warp per warpgroup waits on "full", bar.sync
// passes it on), _suspend (the producer's waits with a 1 ms suspend hint),
// _namedempty (releases by bar.arrive, the producer warp bar.syncs),
// _namedring (both sides on named barriers, warp 9 forwarding "full"),
// _namedfull (only "full" so), _pairstage (stages of two blocks: one wait
// and one release per two; ptxas serializes none_pairstage's wgmmas, C7514,
// so its forms compare with none_b). The release's instruction: _clusterarrive
// (a cluster-scope arrive on the CTA's own barrier), _cpasyncarrive (by the
// cp.async unit: cp.async.mbarrier.arrive.noinc), _cpasynclate (that, after
// the promotion), _proxyrelease (bar.arrive to warp 9, which bar.syncs and
// arrives on the mbarrier for the producer); the _..only forms without
// producer or waits. How many warps arrive on one barrier: _arrive1 (only
// each warpgroup's first warp releases: a diagnostic, since the kernel's
// other warps may still read the stage), _arrive1only (that alone, as
// _arriveonly), _emptywg ("empty" split into one barrier per warpgroup, the
// producer waiting on both), _emptywarp (one per warp, it waits on 8).
// How a warp arrives: _allarrive (every thread, "empty" counting 256: no
// branch on the lane), _electarrive (the lane elect.sync picks), _syncelect
// (that after a __syncwarp, as the kernel's lanes must have read the stage). No TMA copy
// anywhere. HARDWARE.toml cites its
// H200 figures. Build here, run on the GPU (cupy; optional suffixes pick
// kernels, e.g. `... promotion_forms.cubin b arriveonly`):
//   nvcc -arch=sm_90a -O3 -std=c++17 -I templates/include -cubin -o promotion_forms.cubin tests/promotion_forms_bench.cu
//   python3 tests/promotion_forms_bench.py promotion_forms.cubin
#include <cstdint>
#include "fp8gen/ptx_sm90.cuh"
using namespace fp8gen;
__device__ __forceinline__ void mma(float (&d)[64], uint64_t da, uint64_t db, int acc) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
               : "l"(da), "l"(db), "r"(acc));
}
template <int V0>
__device__ __forceinline__ void promote(float (&acc)[64], float (&t)[64], float s0, float s1) {
  constexpr int V = V0 == 7 ? 7 : V0 >= 4 ? 1 : V0;  // loaded scales: the register-scale FFMA (7: grouped)
#pragma unroll
  for (int i = 0; i < 64; ++i) ptx::fence_operand(t[i]);
  if constexpr (V == 0) {
    acc[0] += t[63];
  } else if constexpr (V == 7) {  // loaded scales as V = 4, row r's 32 FFMAs written before row r + 8's
#pragma unroll
    for (int c = 0; c < 16; ++c) {
      acc[4 * c + 0] = fmaf(t[4 * c + 0], s0, acc[4 * c + 0]);
      acc[4 * c + 1] = fmaf(t[4 * c + 1], s0, acc[4 * c + 1]);
    }
#pragma unroll
    for (int c = 0; c < 16; ++c) {
      acc[4 * c + 2] = fmaf(t[4 * c + 2], s1, acc[4 * c + 2]);
      acc[4 * c + 3] = fmaf(t[4 * c + 3], s1, acc[4 * c + 3]);
    }
  } else {
#pragma unroll
    for (int c = 0; c < 16; ++c) {
      if constexpr (V == 1) {  // per-thread register scales (rows r, r + 8)
        acc[4 * c + 0] = fmaf(t[4 * c + 0], s0, acc[4 * c + 0]);
        acc[4 * c + 1] = fmaf(t[4 * c + 1], s0, acc[4 * c + 1]);
        acc[4 * c + 2] = fmaf(t[4 * c + 2], s1, acc[4 * c + 2]);
        acc[4 * c + 3] = fmaf(t[4 * c + 3], s1, acc[4 * c + 3]);
      } else if constexpr (V == 2) {  // an immediate
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[4 * c + j] = fmaf(t[4 * c + j], 1.0001f, acc[4 * c + j]);
      } else {  // an add
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[4 * c + j] += t[4 * c + j];
      }
    }
  }
}
// V: the promotion's form (0 none, 1 register scales, 2 immediate, 3 FADD,
// 4 loaded scales, 5 activation scales only, 6 weight scale only, 7 loaded
// scales with row r's FFMAs written before row r + 8's: _grp). L: where
// loaded scales are read (0 after the MMAs' issue, 1 before, 2 a block
// early). B: what surrounds the loop (0 nothing; the kernel names below say
// which ring or barrier variant each other B is).
template <int V, int L = 0, int B = 0>
__device__ void body(int iters, float* sink, const float* scales) {
  // the B whose producer thread runs the ring's refill loop (the others
  // have none, or warps of their own in its place)
  constexpr bool kProducerLoop = B != 0 && B != 2 && B != 5 && B != 6 && B != 7 && B != 13 && B != 15 &&
                                 B != 16 && B != 17 && B != 22 && B != 23 && B != 26;
  // the B whose math warps wait on each stage's full mbarrier before its MMAs
  constexpr bool kFullWait = B == 1 || B == 3 || B == 7 || B == 10 || B == 11 || B == 12 || B == 14 || B == 20 ||
                             B == 21 || B == 24 || B == 25 || B == 27 || B == 28 || B == 29 || B == 30 || B == 31 ||
                             B == 32;
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  const int wg = threadIdx.x / 128, warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  for (int i = threadIdx.x; i < (128 + 128) * 128 / 16; i += blockDim.x)
    reinterpret_cast<uint4*>(smem)[i] = make_uint4(0x38383838u, 0x30303030u, 0x38383838u, 0x30303030u);
  // 8 stages x 128 rows, past the 1024-aligned tiles (a shared-window pointer: LDS, as in the kernel)
  float* sa = reinterpret_cast<float*>(smem_raw + 1024 + (128 + 128) * 128);
  for (int i = threadIdx.x; i < 8 * 128; i += blockDim.x) sa[i] = 0.5f + 0.001f * (i % 97);
  // B: a 5-stage ring of full/empty barriers as in the kernel, with a producer
  // warp (the third warpgroup's first thread) that arrives on "full" without
  // copying anything, and each math warp releasing a stage after its block's
  // promotion
  constexpr int S = 5;
  __shared__ __align__(8) uint64_t bars[2 * S];
  auto full = [&](int st) { return ptx::smem_addr(&bars[st]); };
  auto empty = [&](int st) { return ptx::smem_addr(&bars[S + st]); };
  __shared__ __align__(8) uint64_t done_bar;  // (B = 5) the math warps' end, for the spinning producer
  // (B = 28, 29) "empty" split per warpgroup (2 barriers of 4 arrivals per
  // stage) or per warp (8 of 1): fewer warps arrive on each barrier
  constexpr int kEmptySplit = B == 28 ? 2 : B == 29 ? 8 : 1;
  __shared__ __align__(8) uint64_t split_bars[8 * S];
  auto split_empty = [&](int st, int part) { return ptx::smem_addr(&split_bars[st * 8 + part]); };
  if (B && B != 2 && threadIdx.x == 0) {
    for (int st = 0; st < S; ++st) {
      ptx::mbar_init(full(st), B == 7 ? 8 : 1);
      ptx::mbar_init(empty(st), B == 25 ? 1 : B == 26 || B == 27 ? 2 : B == 30 ? 256 : 8);
      if constexpr (kEmptySplit > 1)
        for (int part = 0; part < kEmptySplit; ++part) ptx::mbar_init(split_empty(st, part), 8 / kEmptySplit);
    }
    ptx::mbar_init(ptx::smem_addr(&done_bar), 8);
    ptx::fence_barrier_init();
  }
  __syncthreads();
  // B = 7: no producer; each math warp's release of block kb is its arrive on
  // full(kb % S) for block kb + S, and the first S phases are arrived here
  if (B == 7 && wg < 2 && lane == 0)
    for (int st = 0; st < S; ++st) ptx::mbar_arrive(full(st));
  if (B && wg == 2) {
    ptx::setmaxnreg_dec<40>();  // the kernel's register split: 40 here, 232 per math thread
    if (B == 5 && threadIdx.x == 256) ptx::mbar_wait(ptx::smem_addr(&done_bar), 0);  // spins to the end
    // B = 17, 19: a forwarder warp (warp 9) waits for each stage's "full"
    // barrier in order and passes it to the math warps on named barrier
    // 1 + stage (they bar.sync there instead of waiting on the mbarrier).
    // B = 17 also releases stages on named barrier 6 + stage, which the
    // whole producer warp (warp 8) bar.syncs before refilling.
    if ((B == 17 || B == 19) && warp == 1) {
      for (int kb = 0, st = 0; kb < 2 * iters; ++kb, st = (st + 1) % S) {
        ptx::mbar_wait(full(st), (kb / S) & 1);
        ptx::named_barrier_arrive(1 + st, 288);
      }
    }
    if (B == 25 && warp == 1) {  // the proxy: the math warps' bar.arrive in, one mbarrier arrive out
      for (int kb = 0, st = 0; kb < 2 * iters; ++kb, st = (st + 1) % S) {
        ptx::named_barrier(6 + st, 288);
        if (lane == 0) ptx::mbar_arrive(empty(st));
      }
    }
    if (B == 17 && warp == 0) {
      int st = 0;
      for (int kb = 0; kb < 2 * iters; ++kb) {
        if (kb >= S) ptx::named_barrier(6 + st, 288);
        if (lane == 0) ptx::mbar_arrive(full(st));
        if (++st == S) st = 0;
      }
      for (int i = 0; i < S; ++i, st = (st + 1) % S) ptx::named_barrier(6 + st, 288);
    }
    if (kProducerLoop && threadIdx.x == 256) {
      int st = 0;
      uint32_t ph = 0;
      for (int kb = 0; kb < (B == 18 ? iters : 2 * iters); ++kb) {
        if constexpr (B == 18) {  // kb counts two-block stages here, over 3 stages
          ptx::mbar_wait(empty(kb % 3), ((kb / 3) & 1) ^ 1);
          ptx::mbar_arrive(full(kb % 3));
          continue;
        }
        if constexpr (B == 3) {
          uint32_t done = 0;
          for (;;) {
            asm volatile("{\n .reg .pred p;\n mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                         : "=r"(done) : "r"(empty(st)), "r"((ph ^ 1)) : "memory");
            if (done) break;
            __nanosleep(200);
          }
        } else if constexpr (B == 11) {  // try_wait with a 1 ms suspend-time hint
          uint32_t done = 0;
          do {
            asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, %3;\n selp.u32 %0, 1, 0, p;\n}\n"
                         : "=r"(done) : "r"(empty(st)), "r"((ph ^ 1)), "r"(1000000u) : "memory");
          } while (!done);
        } else if constexpr (B == 14) {  // named barrier 1 + st: the 8 math warps' bar.arrive for its last use
          if (kb >= S) ptx::named_barrier(1 + st, 288);
        } else if constexpr (kEmptySplit > 1) {
          for (int part = 0; part < kEmptySplit; ++part) ptx::mbar_wait(split_empty(st, part), ph ^ 1);
        } else {
          ptx::mbar_wait(empty(st), ph ^ 1);
        }
        ptx::mbar_arrive(full(st));
        if (++st == S) { st = 0; ph ^= 1; }
      }
      if constexpr (B == 14)  // the last S blocks' releases
        for (int i = 0; i < S; ++i, st = (st + 1) % S) ptx::named_barrier(1 + st, 288);
    }
    return;
  }
  if constexpr (B) ptx::setmaxnreg_inc<232>();
  const uint32_t base = ptx::smem_addr(smem);
  const uint64_t da = ptx::desc_k_major_sw128(base + wg * 64 * 128);
  const uint64_t db = ptx::desc_k_major_sw128(base + 128 * 128);
  const int row = wg * 64 + warp * 16 + lane / 4;
  float acc[64], ta[64], tb[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) acc[i] = ta[i] = tb[i] = 0.f;
  float s0 = scales[threadIdx.x % 32], s1 = scales[32 + threadIdx.x % 32];
  float w_next = scales[0];
  // block kb's scales, read after its MMAs are issued (as the kernel does)
  auto block_scales = [&](int kb, float& x0, float& x1) {
    if constexpr (V < 4) {
      s0 = s0 * 0.5f + 0.25f; s1 = s1 * 0.5f + 0.25f;  // a new scale per block, off the FFMAs' path
      x0 = s0; x1 = s1;
    } else {
      const float w = V == 5 ? 1.f : w_next;
      if constexpr (V != 5) w_next = __ldg(scales + (kb + 1) % 64);  // one block ahead
      const float* slot = sa + (kb % 8) * 128;
      x0 = (V == 6 ? 1.f : slot[row]) * w;
      x1 = (V == 6 ? 1.f : slot[row + 8]) * w;
    }
  };
  auto issue = [&](float (&t)[64]) {
#pragma unroll
    for (int i = 0; i < 64; ++i) ptx::fence_operand(t[i]);
    ptx::wgmma_fence();
#pragma unroll
    for (int k = 0; k < 4; ++k) mma(t, da + 2 * k, db + 2 * k, k > 0);
    ptx::wgmma_commit();
  };
  // the real kernel's loop shape: every exit waits for all groups on its own path
  const int steps = 2 * iters;
  float a0, a1, b0, b1, n0 = 0.f, n1 = 0.f;  // (L = 2: the next block's scales, read a block early)
  // block kb's scales into (x0, x1) around its MMAs' issue, where L says
  // (B = 8) the next block's full barrier tested before the promotion:
  // ready says it had completed then, and the wait below is skipped
  uint32_t ready = 0;
  auto test_full = [&](int kb) {
    if constexpr (B == 8) {
      if (kb < steps)
        asm volatile("{\n .reg .pred p;\n mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(ready) : "r"(full(kb % S)), "r"((kb / S) & 1) : "memory");
    }
  };
  auto issue_block = [&](float (&t)[64], int kb, float& x0, float& x1) {
    if constexpr (kFullWait) ptx::mbar_wait(full(kb % S), (kb / S) & 1);
    if constexpr (B == 8) {
      if (!ready) ptx::mbar_wait(full(kb % S), (kb / S) & 1);
      ready = 0;
    }
    if constexpr (B == 17 || B == 19) ptx::named_barrier(1 + kb % S, 288);  // the forwarder's pass
    if constexpr (B == 18) {  // stages of two blocks: one wait per stage, at its first block
      if (kb % 2 == 0) ptx::mbar_wait(full((kb / 2) % 3), (kb / 6) & 1);
    }
    if constexpr (B == 9) {  // warp 0 waits for the stage, and passes it on to its warpgroup
      if (warp == 0) ptx::mbar_wait(full(kb % S), (kb / S) & 1);
      ptx::named_barrier(1 + wg, 128);
    }
    if constexpr (L == 1) block_scales(kb, x0, x1);
    if constexpr (L == 2) {
      if (kb == 0) block_scales(0, n0, n1);
      x0 = n0; x1 = n1;
    }
    issue(t);
    if constexpr (L == 0) block_scales(kb, x0, x1);
    if constexpr (L == 2) block_scales(kb + 1, n0, n1);
  };
  auto release = [&](int kb) {  // (B) this warp is done with block kb's stage
    if constexpr (B == 18) {  // one release per two-block stage, after its second block
      if (kb % 2 == 1) {
        __syncwarp();
        if (lane == 0) ptx::mbar_arrive(empty((kb / 2) % 3));
      }
    } else if constexpr (B == 17 || B == 25) {
      ptx::named_barrier_arrive(6 + kb % S, 288);
    } else if constexpr (B == 14) {  // the whole warp arrives on the stage's named barrier
      ptx::named_barrier_arrive(1 + kb % S, 288);
    } else if constexpr (B == 15) {  // (diagnostic) a plain shared store instead of an arrive
      if (lane == 0) *reinterpret_cast<volatile int*>(sa + 1000 + (threadIdx.x / 32)) = kb;
    } else if constexpr (B == 16) {  // (diagnostic) a named-barrier arrive that nobody waits for
      ptx::named_barrier_arrive(1 + kb % S, 256);
    } else if constexpr (B == 20 || B == 22) {  // the ring's release as a cluster-scope arrive on its own CTA's barrier
      __syncwarp();
      if (lane == 0) {
        uint32_t remote;
        asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(empty(kb % S)), "r"(0u));
        asm volatile("mbarrier.arrive.relaxed.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
      }
    } else if constexpr (B == 21 || B == 23) {  // the ring's release by the cp.async unit (no copies pending)
      __syncwarp();
      if (lane == 0) asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(empty(kb % S)) : "memory");
    } else if constexpr (B == 30) {  // every thread arrives (no branch on the lane)
      ptx::mbar_arrive(empty(kb % S));
    } else if constexpr (B == 31 || B == 32) {  // one lane, chosen by elect.sync, arrives (32: after __syncwarp)
      if constexpr (B == 32) __syncwarp();
      asm volatile(
          "{\n .reg .pred p;\n elect.sync _|p, 0xffffffff;\n @p mbarrier.arrive.shared::cta.b64 _, [%0];\n}\n" ::"r"(
              empty(kb % S))
          : "memory");
    } else if constexpr (B == 26 || B == 27) {  // (diagnostic) only each warpgroup's first warp arrives
      __syncwarp();
      if (warp == 0 && lane == 0) ptx::mbar_arrive(empty(kb % S));
    } else if constexpr (kEmptySplit > 1) {  // this warp's warpgroup's (or its own) barrier
      __syncwarp();
      if (lane == 0) ptx::mbar_arrive(split_empty(kb % S, kEmptySplit == 2 ? wg : wg * 4 + warp));
    } else if constexpr (B != 0 && B != 2 && B != 5 && B != 10 && B != 12 && B != 13 && B != 24) {
      __syncwarp();
      if (lane == 0) ptx::mbar_arrive(B == 7 ? full(kb % S) : empty(kb % S));
    }
  };
  // (B = 12, 13) block kb released after the next block's MMAs are issued
  auto issued_release = [&](int kb) {
    if constexpr (B == 12 || B == 13) {
      if (kb >= 0) {
        __syncwarp();
        if (lane == 0) ptx::mbar_arrive(empty(kb % S));
      }
    }
  };
  auto late_release = [&](int kb) {  // (B = 10) after the promotion instead
    if constexpr (B == 24) {  // (B = 24) by the cp.async unit, after the promotion
      __syncwarp();
      if (lane == 0) asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(empty(kb % S)) : "memory");
    }
    if constexpr (B == 10) {
      __syncwarp();
      if (lane == 0) ptx::mbar_arrive(empty(kb % S));
    }
  };
  issue_block(ta, 0, a0, a1);
  for (int j = 0;; j += 2) {
    if (j + 1 < steps) {
      issue_block(tb, j + 1, b0, b1);
      issued_release(j - 1);
      ptx::wgmma_wait<1>();
      release(j);
      test_full(j + 2);
      promote<V>(acc, ta, a0, a1);
      late_release(j);
    } else {
      ptx::wgmma_wait<0>();
      release(j);
      issued_release(j - 1);
      issued_release(j);
      promote<V>(acc, ta, a0, a1);
      late_release(j);
      break;
    }
    if (j + 2 < steps) {
      issue_block(ta, j + 2, a0, a1);
      issued_release(j);
      ptx::wgmma_wait<1>();
      release(j + 1);
      test_full(j + 3);
      promote<V>(acc, tb, b0, b1);
      late_release(j + 1);
    } else {
      ptx::wgmma_wait<0>();
      release(j + 1);
      issued_release(j);
      issued_release(j + 1);
      promote<V>(acc, tb, b0, b1);
      late_release(j + 1);
      break;
    }
  }
  if (B == 5) {
    __syncwarp();
    if (lane == 0) ptx::mbar_arrive(ptx::smem_addr(&done_bar));
  }
  float x = 0.f;
#pragma unroll
  for (int i = 0; i < 64; ++i) x += acc[i] + ta[i];
  if (x == 123.456f) sink[blockIdx.x * blockDim.x + threadIdx.x] = x;
}
extern "C" __global__ void __launch_bounds__(256, 1) none(int n, float* s, const float* c) { body<0>(n, s, c); }
extern "C" __global__ void __launch_bounds__(256, 1) ffma_reg(int n, float* s, const float* c) { body<1>(n, s, c); }
extern "C" __global__ void __launch_bounds__(256, 1) ffma_imm(int n, float* s, const float* c) { body<2>(n, s, c); }
extern "C" __global__ void __launch_bounds__(256, 1) f_add(int n, float* s, const float* c) { body<3>(n, s, c); }
extern "C" __global__ void __launch_bounds__(256, 1) ffma_loaded(int n, float* s, const float* c) { body<4>(n, s, c); }
extern "C" __global__ void __launch_bounds__(256, 1) ffma_sa_only(int n, float* s, const float* c) { body<5>(n, s, c); }
extern "C" __global__ void __launch_bounds__(256, 1) ffma_w_only(int n, float* s, const float* c) { body<6>(n, s, c); }
extern "C" __global__ void __launch_bounds__(256, 1) ffma_loaded_before(int n, float* s, const float* c) { body<4, 1>(n, s, c); }
extern "C" __global__ void __launch_bounds__(256, 1) ffma_loaded_ahead(int n, float* s, const float* c) { body<4, 2>(n, s, c); }
extern "C" __global__ void __launch_bounds__(256, 1) ffma_sa_only_ahead(int n, float* s, const float* c) { body<5, 2>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) none_b(int n, float* s, const float* c) { body<0, 0, 1>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_reg_b(int n, float* s, const float* c) { body<1, 0, 1>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_imm_b(int n, float* s, const float* c) { body<2, 0, 1>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_loaded_b(int n, float* s, const float* c) { body<4, 0, 1>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) none_regsplit(int n, float* s, const float* c) { body<0, 0, 2>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_reg_regsplit(int n, float* s, const float* c) { body<1, 0, 2>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_imm_regsplit(int n, float* s, const float* c) { body<2, 0, 2>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) none_backoff(int n, float* s, const float* c) { body<0, 0, 3>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_reg_backoff(int n, float* s, const float* c) { body<1, 0, 3>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_imm_backoff(int n, float* s, const float* c) { body<2, 0, 3>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) none_nofullwait(int n, float* s, const float* c) { body<0, 0, 4>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_reg_nofullwait(int n, float* s, const float* c) { body<1, 0, 4>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_imm_nofullwait(int n, float* s, const float* c) { body<2, 0, 4>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) none_spinonly(int n, float* s, const float* c) { body<0, 0, 5>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_reg_spinonly(int n, float* s, const float* c) { body<1, 0, 5>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_imm_spinonly(int n, float* s, const float* c) { body<2, 0, 5>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) none_arriveonly(int n, float* s, const float* c) { body<0, 0, 6>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_reg_arriveonly(int n, float* s, const float* c) { body<1, 0, 6>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_imm_arriveonly(int n, float* s, const float* c) { body<2, 0, 6>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) none_noproducer(int n, float* s, const float* c) { body<0, 0, 7>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_reg_noproducer(int n, float* s, const float* c) { body<1, 0, 7>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_imm_noproducer(int n, float* s, const float* c) { body<2, 0, 7>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) none_testfull(int n, float* s, const float* c) { body<0, 0, 8>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_reg_testfull(int n, float* s, const float* c) { body<1, 0, 8>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_imm_testfull(int n, float* s, const float* c) { body<2, 0, 8>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) none_elect(int n, float* s, const float* c) { body<0, 0, 9>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_reg_elect(int n, float* s, const float* c) { body<1, 0, 9>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_imm_elect(int n, float* s, const float* c) { body<2, 0, 9>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) none_laterelease(int n, float* s, const float* c) { body<0, 0, 10>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_reg_laterelease(int n, float* s, const float* c) { body<1, 0, 10>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_imm_laterelease(int n, float* s, const float* c) { body<2, 0, 10>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) none_suspend(int n, float* s, const float* c) { body<0, 0, 11>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_reg_suspend(int n, float* s, const float* c) { body<1, 0, 11>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_imm_suspend(int n, float* s, const float* c) { body<2, 0, 11>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) none_issuedrelease(int n, float* s, const float* c) { body<0, 0, 12>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_reg_issuedrelease(int n, float* s, const float* c) { body<1, 0, 12>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_imm_issuedrelease(int n, float* s, const float* c) { body<2, 0, 12>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_loaded_issuedrelease(int n, float* s, const float* c) { body<4, 0, 12>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) none_arriveonly_issued(int n, float* s, const float* c) { body<0, 0, 13>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_reg_arriveonly_issued(int n, float* s, const float* c) { body<1, 0, 13>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_imm_arriveonly_issued(int n, float* s, const float* c) { body<2, 0, 13>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_loaded_arriveonly_issued(int n, float* s, const float* c) { body<4, 0, 13>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) none_namedempty(int n, float* s, const float* c) { body<0, 0, 14>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_reg_namedempty(int n, float* s, const float* c) { body<1, 0, 14>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_imm_namedempty(int n, float* s, const float* c) { body<2, 0, 14>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_loaded_namedempty(int n, float* s, const float* c) { body<4, 0, 14>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) none_stsonly(int n, float* s, const float* c) { body<0, 0, 15>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_reg_stsonly(int n, float* s, const float* c) { body<1, 0, 15>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_imm_stsonly(int n, float* s, const float* c) { body<2, 0, 15>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_loaded_stsonly(int n, float* s, const float* c) { body<4, 0, 15>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) none_namedonly(int n, float* s, const float* c) { body<0, 0, 16>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_reg_namedonly(int n, float* s, const float* c) { body<1, 0, 16>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_imm_namedonly(int n, float* s, const float* c) { body<2, 0, 16>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_loaded_namedonly(int n, float* s, const float* c) { body<4, 0, 16>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) none_namedring(int n, float* s, const float* c) { body<0, 0, 17>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_reg_namedring(int n, float* s, const float* c) { body<1, 0, 17>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_imm_namedring(int n, float* s, const float* c) { body<2, 0, 17>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_loaded_namedring(int n, float* s, const float* c) { body<4, 0, 17>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) none_namedfull(int n, float* s, const float* c) { body<0, 0, 19>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_reg_namedfull(int n, float* s, const float* c) { body<1, 0, 19>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_imm_namedfull(int n, float* s, const float* c) { body<2, 0, 19>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_loaded_namedfull(int n, float* s, const float* c) { body<4, 0, 19>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_loaded_before_b(int n, float* s, const float* c) { body<4, 1, 1>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_loaded_ahead_b(int n, float* s, const float* c) { body<4, 2, 1>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_loaded_before_namedring(int n, float* s, const float* c) { body<4, 1, 17>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_loaded_ahead_namedring(int n, float* s, const float* c) { body<4, 2, 17>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) none_pairstage(int n, float* s, const float* c) { body<0, 0, 18>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_reg_pairstage(int n, float* s, const float* c) { body<1, 0, 18>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_imm_pairstage(int n, float* s, const float* c) { body<2, 0, 18>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_loaded_pairstage(int n, float* s, const float* c) { body<4, 0, 18>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) none_clusterarrive(int n, float* s, const float* c) { body<0, 0, 20>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_reg_clusterarrive(int n, float* s, const float* c) { body<1, 0, 20>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_imm_clusterarrive(int n, float* s, const float* c) { body<2, 0, 20>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_loaded_clusterarrive(int n, float* s, const float* c) { body<4, 0, 20>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) none_cpasyncarrive(int n, float* s, const float* c) { body<0, 0, 21>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_reg_cpasyncarrive(int n, float* s, const float* c) { body<1, 0, 21>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_imm_cpasyncarrive(int n, float* s, const float* c) { body<2, 0, 21>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_loaded_cpasyncarrive(int n, float* s, const float* c) { body<4, 0, 21>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) none_clusterarriveonly(int n, float* s, const float* c) { body<0, 0, 22>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_reg_clusterarriveonly(int n, float* s, const float* c) { body<1, 0, 22>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_imm_clusterarriveonly(int n, float* s, const float* c) { body<2, 0, 22>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_loaded_clusterarriveonly(int n, float* s, const float* c) { body<4, 0, 22>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) none_cpasyncarriveonly(int n, float* s, const float* c) { body<0, 0, 23>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_reg_cpasyncarriveonly(int n, float* s, const float* c) { body<1, 0, 23>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_imm_cpasyncarriveonly(int n, float* s, const float* c) { body<2, 0, 23>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_loaded_cpasyncarriveonly(int n, float* s, const float* c) { body<4, 0, 23>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_sa_only_b(int n, float* s, const float* c) { body<5, 0, 1>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_sa_only_cpasyncarrive(int n, float* s, const float* c) { body<5, 0, 21>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_sa_only_cpasynclate(int n, float* s, const float* c) { body<5, 0, 24>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) none_cpasynclate(int n, float* s, const float* c) { body<0, 0, 24>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_reg_cpasynclate(int n, float* s, const float* c) { body<1, 0, 24>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_imm_cpasynclate(int n, float* s, const float* c) { body<2, 0, 24>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_loaded_cpasynclate(int n, float* s, const float* c) { body<4, 0, 24>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) none_proxyrelease(int n, float* s, const float* c) { body<0, 0, 25>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_reg_proxyrelease(int n, float* s, const float* c) { body<1, 0, 25>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_imm_proxyrelease(int n, float* s, const float* c) { body<2, 0, 25>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_loaded_proxyrelease(int n, float* s, const float* c) { body<4, 0, 25>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) none_arrive1only(int n, float* s, const float* c) { body<0, 0, 26>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_reg_arrive1only(int n, float* s, const float* c) { body<1, 0, 26>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_imm_arrive1only(int n, float* s, const float* c) { body<2, 0, 26>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_loaded_arrive1only(int n, float* s, const float* c) { body<4, 0, 26>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) none_arrive1(int n, float* s, const float* c) { body<0, 0, 27>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_reg_arrive1(int n, float* s, const float* c) { body<1, 0, 27>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_imm_arrive1(int n, float* s, const float* c) { body<2, 0, 27>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_loaded_arrive1(int n, float* s, const float* c) { body<4, 0, 27>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) none_emptywg(int n, float* s, const float* c) { body<0, 0, 28>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_reg_emptywg(int n, float* s, const float* c) { body<1, 0, 28>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_imm_emptywg(int n, float* s, const float* c) { body<2, 0, 28>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_loaded_emptywg(int n, float* s, const float* c) { body<4, 0, 28>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) none_emptywarp(int n, float* s, const float* c) { body<0, 0, 29>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_reg_emptywarp(int n, float* s, const float* c) { body<1, 0, 29>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_imm_emptywarp(int n, float* s, const float* c) { body<2, 0, 29>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_loaded_emptywarp(int n, float* s, const float* c) { body<4, 0, 29>(n, s, c); }
extern "C" __global__ void __launch_bounds__(256, 1) ffma_grp(int n, float* s, const float* c) { body<7, 0, 0>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_grp_b(int n, float* s, const float* c) { body<7, 0, 1>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_grp_arriveonly(int n, float* s, const float* c) { body<7, 0, 6>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) none_allarrive(int n, float* s, const float* c) { body<0, 0, 30>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_reg_allarrive(int n, float* s, const float* c) { body<1, 0, 30>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_imm_allarrive(int n, float* s, const float* c) { body<2, 0, 30>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_loaded_allarrive(int n, float* s, const float* c) { body<4, 0, 30>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) none_electarrive(int n, float* s, const float* c) { body<0, 0, 31>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_reg_electarrive(int n, float* s, const float* c) { body<1, 0, 31>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_imm_electarrive(int n, float* s, const float* c) { body<2, 0, 31>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_loaded_electarrive(int n, float* s, const float* c) { body<4, 0, 31>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) none_syncelect(int n, float* s, const float* c) { body<0, 0, 32>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_reg_syncelect(int n, float* s, const float* c) { body<1, 0, 32>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_imm_syncelect(int n, float* s, const float* c) { body<2, 0, 32>(n, s, c); }
extern "C" __global__ void __launch_bounds__(384, 1) ffma_loaded_syncelect(int n, float* s, const float* c) { body<4, 0, 32>(n, s, c); }
