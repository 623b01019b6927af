"""The dense-FFN prefill composite: out = down(SiLU(gate(x)) * up(x)).

Each projection is routed by the selection rule. Gate and up share one
activation quantization; quant_silu_mul produces the down projection's input
(quantized into the same scratch, after gate/up have read it, in stream
order). Every launch is planned -- and so validated -- before the first runs.
"""
from __future__ import annotations

from typing import Tuple

from runtime import ops
from runtime import validate as v
from runtime.projection import activation_scales, projection_plans
from runtime.select import Decision
from runtime.weights import Fp8Weight


def dense_ffn_prefill(x, gate: Fp8Weight, up: Fp8Weight, down: Fp8Weight, workspace, *, out,
                      stream=None) -> Tuple[Decision, Decision, Decision]:
    rt = workspace.rt
    op = "dense_ffn_prefill"
    for _ in range(3):
        rt.ledger.entry()  # counted before any guard
    for name, w in (("gate", gate), ("up", up), ("down", down)):
        if not isinstance(w, Fp8Weight):
            v.fail(op, f"{name} must be a runtime.Fp8Weight (Fp8Weight.from_checkpoint), got {type(w).__name__}")
    x = v.matrix(op, "x", x)
    M, H = x.shape
    I = gate.n
    shapes_ok = gate.k == H and (up.n, up.k) == (I, H) and (down.n, down.k) == (H, I)
    if not shapes_ok:
        rt.ledger.count("bad_shape")
        v.fail(op, f"x [M, {H}] needs gate and up [I, {H}] and down [{H}, I]; got gate [{gate.n}, {gate.k}], "
                   f"up [{up.n}, {up.k}], down [{down.n}, {down.k}]")
    out_rows = v.matrix(op, "out", out).shape[0]
    for name, w in (("gate", gate), ("up", up), ("down", down)):
        # the composite shares one group quantization between projections;
        # single-scale weights go through rt.linear, one projection each
        w.expect("block", f"{op} ({name})")
    decisions = [rt.decide(M, w.n, w.k, w.format, workspace=workspace, out_rows=out_rows)
                 for w in (gate, up, down)]
    for d, what in zip(decisions, ("gate", "up", "down")):
        rt.ledger.record(d, what)
    dg, du, dd = decisions
    entries, dev = rt.entries, rt.device
    g, u = workspace.ffn_gate(M, I), workspace.ffn_up(M, I)
    plans = []
    qx = sx = None
    if dg.w8a8 or du.w8a8:
        qx = workspace.quantized(M, H)
        sx, mn_major = activation_scales(workspace, dg if dg.w8a8 else du, M, H)
        plans.append(ops.quant_group(entries, x, qx, sx, device=dev, mn_major=mn_major, pad_scales=False))
    plans += projection_plans(entries, dg, x=x, q=qx, scale=sx, weight=gate, out=g, device=dev,
                              workspace=workspace)
    plans += projection_plans(entries, du, x=x, q=qx, scale=sx, weight=up, out=u, device=dev,
                              workspace=workspace)
    if dd.w8a8:
        qh = workspace.quantized(M, I)
        sh, mn_major = activation_scales(workspace, dd, M, I)
        plans.append(ops.quant_silu_mul(entries, g, u, q=qh, scale=sh, device=dev, mn_major=mn_major,
                                        pad_scales=False))
        plans += projection_plans(entries, dd, x=None, q=qh, scale=sh, weight=down, out=out, device=dev,
                                  workspace=workspace)
    else:
        plans.append(ops.quant_silu_mul(entries, g, u, h=g, device=dev))  # h in place of gate's output
        plans += projection_plans(entries, dd, x=g, q=None, scale=None, weight=down, out=out, device=dev)
    for p in plans:
        rt.run_plan(p, stream)
    return dg, du, dd
