"""From a routing decision to the launch plan of one projection's GEMM.
The activation quantization is planned by the caller, which may share it
between projections (the FFN's gate and up)."""
from __future__ import annotations

from typing import List, Optional

from runtime import ops
from runtime.select import ARM_W8A8_FAST, ARM_W8A8_ROW, ARM_W8A8_TENSOR, ARM_W8A16_GEMV, Decision
from runtime.weights import BLOCK, Fp8Weight


def activation_scales(workspace, d: Decision, M: int, K: int):
    """The scale view a W8A8 arm reads, and whether it is MN-major: the fast
    (wgmma / CUTLASS) arm reads [K/128, M_pad], the in-tree one [M, K/128].
    quant_group writes either; the layout is passed to it, never guessed."""
    if d.arm == ARM_W8A8_FAST:
        return workspace.scales_mn_major(M, K), True
    return workspace.scales(M, K), False


def quantize_plans(entries, d: Decision, x, workspace, device: Optional[int], weight: Fp8Weight):
    """The activation quantization a W8A8 arm reads: (plans, q, scale). Block
    arms: quant_group (scale layout per arm); per-tensor: the three device
    steps into the workspace's resident state (scale = its output scale);
    per-row: per-token scales."""
    M, K = x.shape
    q = workspace.quantized(M, K)
    if d.arm == ARM_W8A8_TENSOR:
        plans = ops.quant_tensor(entries, x, q, workspace.tensor_state(), w_scale=weight.scale, device=device)
        return plans, q, workspace.tensor_scale()
    if d.arm == ARM_W8A8_ROW:
        s = workspace.token_scales(M, K)
        return [ops.quant_token(entries, x, q, s, device=device)], q, s
    s, mn_major = activation_scales(workspace, d, M, K)
    # (the pad tokens' scales are left as they are: the GEMMs never store those rows)
    return [ops.quant_group(entries, x, q, s, device=device, mn_major=mn_major, pad_scales=False)], q, s


# A W8A8 projection's GEMM runs right after a kernel of the same composite
# (its activation quantizer, or the FFN's previous projection), which writes
# no weight: the wgmma GEMMs may read their weights before they wait for it
# (ops.w8a8_wgmma, early_weights).
EARLY_WEIGHTS = True


def projection_plans(entries, d: Decision, *, x, q, scale, weight: Fp8Weight, out,
                     device: Optional[int], workspace=None) -> List[ops.Launch]:
    """The GEMM launch of decision `d` (a split-K fast instance takes its
    counters and partial tiles from `workspace`). A W8A8 `d` must come after
    its quantization in the same composite (see EARLY_WEIGHTS)."""
    # the Params-launched GEMMs take the workspace's padding rows past M (see ops.w8a8_wgmma)
    a = workspace.gemm_operand(q) if workspace is not None and q is not None else q
    if d.arm == ARM_W8A8_TENSOR:
        weight.expect("tensor", d.arm)
        if d.family == "w8a8_tensor":
            return [ops.w8a8_tensor(entries, a, scale, weight.weight, out, device=device, instance=d.instance,
                                    early_weights=EARLY_WEIGHTS, m=q.shape[0])]
        return [ops.w8a8_mma_tensor(entries, q, scale, weight.weight, out, device=device, instance=d.instance)]
    if d.arm == ARM_W8A8_ROW:
        weight.expect("row", d.arm)
        w_scale = weight.scale if weight.scale.shape == (weight.n,) else \
            type(weight.scale).raw(weight.scale.ptr, (weight.n,), "f32", device=weight.scale.device)
        if d.family == "w8a8_row":
            return [ops.w8a8_row(entries, a, scale, weight.weight, w_scale, out, device=device, instance=d.instance,
                                 early_weights=EARLY_WEIGHTS, m=q.shape[0])]
        return [ops.w8a8_mma_row(entries, q, scale, weight.weight, w_scale, out, device=device,
                                 instance=d.instance)]
    if d.arm == ARM_W8A8_FAST:
        plan = ops.FAST_PLANS[d.family]
        return [plan(entries, a, scale, weight.weight, weight.scale, out, device=device, instance=d.instance,
                     workspace=workspace, early_weights=EARLY_WEIGHTS, m=q.shape[0])]
    if d.w8a8:
        return [ops.w8a8_mma(entries, q, scale, weight.weight, weight.scale, out, device=device,
                             instance=d.instance)]
    # The W8A16 kernels read 128x128 block scales too: any other format stops here.
    weight.expect(BLOCK, d.arm)
    plan = ops.w8a16_gemv if d.arm == ARM_W8A16_GEMV else ops.w8a16_gemm
    return [plan(entries, x, weight.weight, weight.scale, out, device=device, instance=d.instance)]
