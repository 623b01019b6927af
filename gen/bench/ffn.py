"""The dense FFN prefill composite against two peers in one process: a torch
bf16 FFN, and an FFN of cuBLASLt block-scaled GEMMs with torch SiLU*mul
(activations quantized by fp8gen's quant_group, the fastest quantizer here)."""
from __future__ import annotations

import sys

from gen.bench.timing import time_us
from gen.bench.torch_ref import E4M3_STAGE_REL_RMS


def bench_ffn(*, M: int, hidden: int, intermediate: int, seed: int) -> int:
    import torch

    import runtime
    from gen.bench.torch_ref import dequant_weight, quantize_weight, with_outliers

    F = torch.nn.functional
    rt = runtime.load(torch.cuda.current_device())
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)

    def weight(n, k):
        q, s = quantize_weight(torch.randn(n, k, device="cuda", generator=gen) * 0.02)
        deq = dequant_weight(q, s)
        return dict(q=q, s=s, fp8=q.view(torch.float8_e4m3fn), deq=deq, bf16=deq.to(torch.bfloat16),
                    w=runtime.Fp8Weight.from_checkpoint(q, s, rt=rt))

    g, u, d = weight(intermediate, hidden), weight(intermediate, hidden), weight(hidden, intermediate)
    x = with_outliers((M, hidden), gen).to(torch.bfloat16)
    X = x.double()
    ref = (F.silu(X @ g["deq"].T) * (X @ u["deq"].T)) @ d["deq"].T
    ws = rt.workspace(M, hidden, ffn_intermediate=intermediate)
    out = {k: torch.empty(M, hidden, dtype=torch.bfloat16, device="cuda") for k in ("ours", "bf16", "cublaslt")}
    # cuBLASLt takes activation scales token-contiguous with strides (1, M)
    # and a 16-byte aligned leading dimension, so it runs on M padded to 4
    # (as an engine would): quant_group's MN-major output zero-fills the pad
    # tokens' scales, and the pad rows of the quantized activation are zero.
    m_pad = -(-M // 4) * 4
    qx = torch.zeros(m_pad, hidden, dtype=torch.uint8, device="cuda")
    sx = torch.empty(hidden // 128, m_pad, device="cuda")
    qh = torch.zeros(m_pad, intermediate, dtype=torch.uint8, device="cuda")
    sh = torch.empty(intermediate // 128, m_pad, device="cuda")

    def ours():
        runtime.dense_ffn_prefill(x, g["w"], u["w"], d["w"], ws, out=out["ours"])

    def bf16():
        torch.matmul(F.silu(x @ g["bf16"].T) * (x @ u["bf16"].T), d["bf16"].T, out=out["bf16"])

    def scaled(q, s, w):
        return torch._scaled_mm(q.view(torch.float8_e4m3fn), w["fp8"].t(), scale_a=s.t(),
                                scale_b=w["s"].t(), out_dtype=torch.bfloat16)

    def cublaslt():
        rt.quant_group(x, qx[:M], sx)
        h = F.silu(scaled(qx, sx, g)) * scaled(qx, sx, u)
        rt.quant_group(h, qh, sh)
        out["cublaslt"].copy_(scaled(qh, sh, d)[:M])

    rows = []
    for name, fn in (("fp8gen dense_ffn_prefill", ours), ("torch bf16 FFN", bf16),
                     ("cuBLASLt block FFN + torch SiLU", cublaslt)):
        fn()
        torch.cuda.synchronize()
        key = {"fp8gen dense_ffn_prefill": "ours", "torch bf16 FFN": "bf16"}.get(name, "cublaslt")
        a, b = out[key].double().flatten(), ref.flatten()
        cos = (a @ b / a.norm() / b.norm()).item()
        rel = ((a - b).norm() / b.norm()).item()
        us = time_us(torch, [fn], batch=10, batches=7)
        rows.append((name, us, cos, rel))
    ws.close()
    flops = 2.0 * M * hidden * intermediate * 3
    print(f"dense FFN prefill, M={M}, hidden={hidden}, intermediate={intermediate}, {torch.cuda.get_device_name()}")
    print("| arm | µs | TFLOP/s | vs fp8gen | cosine vs f64 | rel RMS |")
    print("|---|---|---|---|---|---|")
    for name, us, cos, rel in rows:
        print(f"| {name} | {us:.1f} | {flops / us / 1e6:.0f} | {us / rows[0][1]:.2f}× time | {cos:.6f} | {rel:.2e} |")
    # bf16: rounding only; FP8: two e4m3 stages (x and h) in quadrature (torch_ref's model)
    fp8_bound = 2**0.5 * E4M3_STAGE_REL_RMS
    bounds = {"fp8gen dense_ffn_prefill": fp8_bound, "torch bf16 FFN": 0.02,
              "cuBLASLt block FFN + torch SiLU": fp8_bound}
    bad = [name for name, _, cos, rel in rows if not (cos >= 0.999 and rel <= bounds[name])]
    for name in bad:
        print(f"FAILED: {name} misses cosine >= 0.999 or its relative-RMS bound", file=sys.stderr)
    return 1 if bad else 0
