"""Times tests/promotion_forms_bench.cu's kernels, 600 blocks per call, in
alternating order (6 rounds, 3 calls each, medians), against the plain loop
(none) and the barrier-ring loop (none_b).
Usage: python3 tests/promotion_forms_bench.py CUBIN [SUFFIX ...]
(with suffixes, only the kernels named with one, beside the two bases)"""
import os, statistics, sys
import cupy as cp
mod = cp.RawModule(path=sys.argv[1] if len(sys.argv) > 1 else "promotion_forms.cubin")
RING_FORMS = ("none", "ffma_reg", "ffma_imm")
RING_FORMS_LOADED = RING_FORMS + ("ffma_loaded",)
names = ["none", "ffma_reg", "ffma_imm", "f_add", "ffma_loaded", "ffma_sa_only", "ffma_w_only",
         "ffma_loaded_before", "ffma_loaded_ahead", "ffma_sa_only_ahead",
         "none_b", "ffma_reg_b", "ffma_imm_b", "ffma_loaded_b"]
names += [f"{v}_{b}" for b in ("regsplit", "backoff", "nofullwait", "spinonly", "arriveonly", "noproducer",
                               "testfull", "elect", "laterelease", "suspend") for v in RING_FORMS]
names += [f"{v}_{b}" for b in ("issuedrelease", "arriveonly_issued", "namedempty", "stsonly", "namedonly",
                               "namedring", "namedfull", "pairstage", "clusterarrive", "cpasyncarrive",
                               "clusterarriveonly", "cpasyncarriveonly", "cpasynclate", "proxyrelease", "arrive1only", "arrive1",
                               "emptywg", "emptywarp", "allarrive", "electarrive", "syncelect") for v in RING_FORMS_LOADED]
names += [f"ffma_sa_only_{b}" for b in ("b", "cpasyncarrive", "cpasynclate")]
names += [f"ffma_loaded_{l}_{b}" for b in ("b", "namedring") for l in ("before", "ahead")]
PLAIN = set(names[:10])  # 256 threads: no producer warpgroup
# loaded scales with row r's FFMAs written before row r + 8's
names += ["ffma_grp", "ffma_grp_b", "ffma_grp_arriveonly"]
PLAIN.add("ffma_grp")
threads = {n: 256 if n in PLAIN else 384 for n in names}
if len(sys.argv) > 2:
    names = [n for n in names if n in ("none", "none_b") or n.endswith(tuple("_" + x for x in sys.argv[2:]))]
fns = {n: mod.get_function(n) for n in names}
sink = cp.zeros(132 * 256, dtype=cp.float32)
scales = cp.asarray([0.5 + 0.01 * i for i in range(64)], dtype=cp.float32)
smem = 256 * 128 + 8 * 128 * 4 + 1024
for iters in (600,):
    times = {n: [] for n in names}
    for rnd in range(6):
        order = names if rnd % 2 == 0 else names[::-1]
        for n in order:
            s, e = cp.cuda.Event(), cp.cuda.Event()
            fns[n]((132,), (threads[n],), (cp.int32(iters), sink, scales), shared_mem=smem)  # warm
            s.record()
            for _ in range(3):
                fns[n]((132,), (threads[n],), (cp.int32(iters), sink, scales), shared_mem=smem)
            e.record(); e.synchronize()
            times[n].append(cp.cuda.get_elapsed_time(s, e) / 3)
    base = statistics.median(times["none"])
    base_b = statistics.median(times["none_b"])
    for n in names:
        t = statistics.median(times[n])
        print(f"iters {iters}: {n:18s} {t * 1e3:9.1f} us per call, {t * 1e6 / (2 * iters) / 1e3:.4f} us per block, x{t / base:.3f} of none, x{t / base_b:.3f} of none_b, spread {min(times[n]) * 1e3:.1f}-{max(times[n]) * 1e3:.1f}")
