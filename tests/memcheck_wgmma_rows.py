"""A small problem for compute-sanitizer memcheck: every generic wgmma-
template instance (block, per-row and per-tensor scaling) given A padded to
exactly padded_rows(M) rows, as runtime.Workspace hands it (the host shim's
map then spans them: prepare_rows), at M values whose last tile row is
partial, checked against the same call on exactly M rows. Each tensor must be
its own allocation for the tool to see a read past it:
Run: PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer --tool memcheck --report-api-errors no \
     python3 tests/memcheck_wgmma_rows.py [NAME-PART ...]
(with NAME-PARTs, only the instances whose names contain one of them)
(cuda-bindings probes driver entry points that do not exist at load: API
errors, not memory ones.)"""
import sys

import torch

import runtime
from gen.bench.torch_ref import quantize_act, quantize_weight
from gen.catalog import specs_for
from runtime.workspace import padded_rows

FAMILIES = ("w8a8_wgmma", "w8a8_row", "w8a8_tensor")


def _padded(t: torch.Tensor, rows: int) -> torch.Tensor:
    out = torch.zeros((rows,) + tuple(t.shape[1:]), dtype=t.dtype, device=t.device)
    out[: t.shape[0]] = t
    return out


def main() -> int:
    rt = runtime.load(torch.cuda.current_device())
    gen = torch.Generator(device="cuda").manual_seed(0)
    N, K = 256, 1024
    w_q, w_s = quantize_weight(torch.randn(N, K, device="cuda", generator=gen) * 0.02)
    bad = 0
    for spec in specs_for("sm_90a"):
        if spec.family not in FAMILIES or getattr(spec, "fixed_n", 0):
            continue
        if sys.argv[1:] and not any(part in spec.name for part in sys.argv[1:]):
            continue
        for M in (160, 200):
            rows = padded_rows(M)
            a_q, a_s = quantize_act(torch.randn(M, K, device="cuda", generator=gen).to(torch.bfloat16))
            outs = [torch.full((M, N), float("nan"), dtype=torch.bfloat16, device="cuda") for _ in range(2)]
            ws = rt.workspace(M, K, max_n=N)
            for a, out, m in ((a_q, outs[0], None), (_padded(a_q, rows), outs[1], M)):
                if spec.family == "w8a8_wgmma":
                    s = torch.zeros(K // 128, rows if m else -(-M // 4) * 4, device="cuda")
                    s[:, :M] = a_s.t()
                    rt.w8a8_wgmma(a, s, w_q, w_s, out, instance=spec.name, workspace=ws, m=m)
                elif spec.family == "w8a8_row":
                    rt.w8a8_row(a, a_s[:, 0].contiguous(), w_q, w_s[:, 0].repeat_interleave(128)[:N].contiguous(),
                                out, instance=spec.name, m=m)
                else:
                    rt.w8a8_tensor(a, a_s[0, :1].reshape(()).contiguous(), w_q, out, instance=spec.name, m=m)
            torch.cuda.synchronize()
            ws.close()
            same = torch.equal(outs[0], outs[1]) and not torch.isnan(outs[1]).any()
            bad += not same
            print(f"{spec.name} M={M}: {'same bits' if same else 'DIFFERENT'}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
