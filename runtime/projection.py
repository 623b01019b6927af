"""From a routing decision to the launch plan of one projection's GEMM.
The activation quantization is planned by the caller, which may share it
between projections (the FFN's gate and up)."""
from __future__ import annotations

from typing import List, Optional

from runtime import ops
from runtime.select import ARM_W8A16_GEMV, Decision
from runtime.weights import BLOCK, Fp8Weight


def projection_plans(entries, d: Decision, *, x, q, scale, weight: Fp8Weight, out,
                     device: Optional[int]) -> List[ops.Launch]:
    if d.w8a8:
        return [ops.w8a8_mma(entries, q, scale, weight.weight, weight.scale, out, device=device,
                             instance=d.instance)]
    # The W8A16 kernels read 128x128 block scales too: any other format stops here.
    weight.expect(BLOCK, d.arm)
    plan = ops.w8a16_gemv if d.arm == ARM_W8A16_GEMV else ops.w8a16_gemm
    return [plan(entries, x, weight.weight, weight.scale, out, device=device, instance=d.instance)]
