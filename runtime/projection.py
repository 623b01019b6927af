"""From a routing decision to the launch plan of one projection's GEMM.
The activation quantization is planned by the caller, which may share it
between projections (the FFN's gate and up)."""
from __future__ import annotations

from typing import List, Optional

from runtime import ops
from runtime.select import ARM_W8A8_FAST, ARM_W8A16_GEMV, Decision
from runtime.weights import BLOCK, Fp8Weight


def activation_scales(workspace, d: Decision, M: int, K: int):
    """The scale view a W8A8 arm reads, and whether it is MN-major: the fast
    (wgmma / CUTLASS) arm reads [K/128, M_pad], the in-tree one [M, K/128].
    quant_group writes either; the layout is passed to it, never guessed."""
    if d.arm == ARM_W8A8_FAST:
        return workspace.scales_mn_major(M, K), True
    return workspace.scales(M, K), False


def projection_plans(entries, d: Decision, *, x, q, scale, weight: Fp8Weight, out,
                     device: Optional[int]) -> List[ops.Launch]:
    if d.arm == ARM_W8A8_FAST:
        plan = ops.FAST_PLANS[d.family]
        return [plan(entries, q, scale, weight.weight, weight.scale, out, device=device, instance=d.instance)]
    if d.w8a8:
        return [ops.w8a8_mma(entries, q, scale, weight.weight, weight.scale, out, device=device,
                             instance=d.instance)]
    # The W8A16 kernels read 128x128 block scales too: any other format stops here.
    weight.expect(BLOCK, d.arm)
    plan = ops.w8a16_gemv if d.arm == ARM_W8A16_GEMV else ops.w8a16_gemm
    return [plan(entries, x, weight.weight, weight.scale, out, device=device, instance=d.instance)]
