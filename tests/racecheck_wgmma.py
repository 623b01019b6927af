"""A small problem for compute-sanitizer racecheck (full-size tests are too
slow under it): every split-K (workspace or cluster), two-temporary,
column-chunked, 2-CTA cluster, weight-scales-in-the-stage or in-lanes, stmatrix-
epilogue, row-box-epilogue, ordered-issue, multi-block-stage, own-early-count,
unrolled-K-loop (by blocks or by a turn of the ring), scales-first and 256-row wgmma instance (shape-specialized ones only when
named, at their own N and K),
launched three times (the counters' reset path included; twice with
early_weights, the first W copies before the grid-dependency wait),
checked against float64, at M = 72 and 16; a 256-row tile also at M = 200,
so that its second wave holds rows that exist. At 72 x 256 a cluster's second
CTA along M lies past the last row, so that path runs too; M below a tile's
rows shrinks the A and A-scale boxes (Shim::prepare).
Run: compute-sanitizer --tool racecheck python3 tests/racecheck_wgmma.py [--k=K] [NAME-PART ...]
(--k: the generic instances' K, 1024 by default; lane-held weight scales
reload every 32 K blocks, so K > 4096 runs that path too; a ring-unrolled loop
runs unrolled only where STAGES divides the K blocks.)"""
import sys

import torch

import runtime
from gen.catalog import specs_for
from gen.bench.torch_ref import dequant_act, dequant_weight, quantize_act, quantize_weight, rel_rms


def main() -> int:
    rt = runtime.load(torch.cuda.current_device())
    gen = torch.Generator(device="cuda").manual_seed(0)
    specs = {s.name: s for s in specs_for("sm_90a") if s.family == "w8a8_wgmma"
             and (s.kslices > 1 or s.temps > 1 or s.n_chunks > 1 or s.cluster_m * s.cluster_n > 1
                  or s.cluster_k > 1 or s.ws_stage or s.stmatrix or s.ordered or s.row_box or s.half_box
                  or s.stage_blocks > 1 or s.early >= 0 or s.bm == 256 or s.ws_lanes or s.unroll > 1
                  or s.scales_first or s.ring_unroll)}
    k_generic = 1024
    parts = []
    for arg in sys.argv[1:]:
        if arg.startswith("--k="):
            k_generic = int(arg[4:])
        else:
            parts.append(arg)
    names = [n for n, s in specs.items() if not s.fixed_n]
    if parts:  # only the instances whose names contain one of these (shape-specialized ones too)
        names = [n for n in specs if any(part in n for part in parts)]
    bad = 0
    for name in names:
        # a shape-specialized instance runs at its own N and K (slower under the tool)
        N, K = (specs[name].fixed_n, specs[name].fixed_k) if specs[name].fixed_n else (256, k_generic)
        ws = rt.workspace(200, 128, max_n=N)
        # the last two with the first W copies before the grid-dependency wait (rt.linear's launch)
        runs = ((72, False), (16, True), (72, True)) + (((200, True),) if specs[name].bm == 256 else ())
        for M, early in runs:
            w_q, w_s = quantize_weight(torch.randn(N, K, device="cuda", generator=gen) * 0.02)
            a_q, a_s = quantize_act(torch.randn(M, K, device="cuda", generator=gen).to(torch.bfloat16))
            out = torch.full((M, N), float("nan"), dtype=torch.bfloat16, device="cuda")
            rt.w8a8_wgmma(a_q, a_s.t().contiguous(), w_q, w_s, out, instance=name, workspace=ws,
                          early_weights=early)
            torch.cuda.synchronize()
            err = rel_rms(out, dequant_act(a_q, a_s) @ dequant_weight(w_q, w_s).T)
            bad += not err < 2.0**-7
            print(f"{name} M={M} early_weights={early}: rel RMS {err:.2e}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
