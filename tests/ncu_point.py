"""One block-scaled GEMM call per named arm inside an NVTX range "prof", for
Nsight Compute to profile alone: fp8gen instances (w8a8_wgmma or
w8a8_cutlass, full names) and cublaslt_block (torch._scaled_mm with 1x128 /
128x128 scales), on the same inputs, each checked against float64 after its
profiled call. Activations are padded to 128 rows as gen bench's default
(--a-rows padded) hands them; wgmma instances copy their first weight boxes
early, as rt.linear launches them.

Run (GPU, repo root, PYTHONPATH=.):
  ncu --clock-control none --cache-control all --nvtx --nvtx-include "prof/" \\
      --section SpeedOfLight --metrics dram__bytes_read.sum,lts__t_bytes.sum,\\
lts__ltcfabric2ltc_cycles_active.avg.pct_of_peak_sustained_elapsed,\\
l1tex__m_xbar2l1tex_read_bytes.sum,sm__cycles_active.avg,gpc__cycles_elapsed.max \\
      --csv --page details python3 tests/ncu_point.py N K M ARM [ARM ...]
Without ncu it runs the calls and the checks (exit 1 if any is wrong).
"""
import sys

import torch

import runtime
from gen.bench.torch_ref import dequant_act, dequant_weight, quantize_act, quantize_weight, rel_rms
from runtime.workspace import padded_rows

CUBLASLT = "cublaslt_block"


def main(argv) -> int:
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    N, K, M = (int(v) for v in argv[:3])
    arms = argv[3:]
    rt = runtime.load(torch.cuda.current_device())
    families = {e.name: e.family for fam in ("w8a8_wgmma", "w8a8_cutlass") for e in rt.entries.get(fam, [])}
    unknown = [a for a in arms if a != CUBLASLT and a not in families]
    if unknown:
        print(f"not built here (full w8a8_wgmma / w8a8_cutlass names, or {CUBLASLT}): {unknown}", file=sys.stderr)
        return 2
    gen = torch.Generator(device="cuda").manual_seed(0)
    w_q, w_s = quantize_weight(torch.randn(N, K, device="cuda", generator=gen) * 0.02)
    a_q, a_s = quantize_act(torch.randn(M, K, device="cuda", generator=gen).to(torch.bfloat16))
    rows = padded_rows(M)
    a_rows = torch.zeros(rows, K, dtype=torch.uint8, device="cuda")
    a_rows[:M] = a_q
    s_rows = torch.zeros(K // 128, rows, dtype=torch.float32, device="cuda")  # MN-major, padded
    s_rows[:, :M] = a_s.t()
    ws = rt.workspace(max_m=rows, max_k=K, max_n=N)
    want = dequant_act(a_q, a_s) @ dequant_weight(w_q, w_s).T
    out = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")

    def call(arm: str) -> None:
        if arm == CUBLASLT:
            torch._scaled_mm(a_q.view(torch.float8_e4m3fn), w_q.view(torch.float8_e4m3fn).t(),
                             scale_a=s_rows[:, :M].t(), scale_b=w_s.t(), out_dtype=torch.bfloat16, out=out)
        elif families[arm] == "w8a8_wgmma":
            rt.w8a8_wgmma(a_rows, s_rows, w_q, w_s, out, instance=arm, workspace=ws, early_weights=True, m=M)
        else:
            rt.w8a8_cutlass(a_rows, s_rows, w_q, w_s, out, instance=arm, m=M)

    bad = 0
    for arm in arms:
        for _ in range(2):  # warm-up: module load, first launch
            call(arm)
        torch.cuda.synchronize()
        out.fill_(float("nan"))
        torch.cuda.synchronize()
        # (one range name for all: ncu's report names each profiled kernel,
        # in the order of the arms)
        torch.cuda.nvtx.range_push("prof")
        call(arm)
        torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
        err = rel_rms(out, want)
        bad += not err < 2.0**-7
        print(f"{arm} at {N}x{K} M={M}: rel RMS {err:.2e}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
