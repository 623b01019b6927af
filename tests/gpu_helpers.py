"""torch helpers for the GPU tests: guarded (poisoned, canaried) buffers and
independent float64 references computed on the device."""
from __future__ import annotations

import torch

from gen.bench.torch_ref import (E4M3_STAGE_REL_RMS, dequant_act, dequant_weight,  # noqa: F401
                                  quantize_act, quantize_weight, with_outliers)

PAD_BYTES = 256  # canary bytes on each side; keeps the view 16-byte aligned


class Guarded:
    """A tensor view with poisoned canaries on both sides; the view itself
    is poisoned too, so an unwritten element cannot pass for a result."""

    def __init__(self, shape, dtype, poison):
        n = 1
        for s in shape:
            n *= s
        item = torch.empty((), dtype=dtype).element_size()
        self.pad = PAD_BYTES // item
        self.buf = torch.full((n + 2 * self.pad,), poison, dtype=dtype, device="cuda")
        self.poison = poison
        self.view = self.buf[self.pad:self.pad + n].view(*shape)

    def canaries_intact(self) -> bool:
        def same(t):
            return bool((t.view(torch.uint8) == torch.full_like(t, self.poison).view(torch.uint8)).all())
        return same(self.buf[:self.pad]) and same(self.buf[-self.pad:])


def gemm_error_ok(out: torch.Tensor, ref: torch.Tensor, abs_sum: torch.Tensor, acc_bits: int = 12):
    """Error model: within each 128-K block the tensor core accumulates in
    FP32 but may drop low bits when it aligns products; with `acc_bits`
    kept, a block's partial is off by at most 2^-acc_bits of sum|a w s s|.
    Partials are then promoted with FP32 FMAs (2^-24 each, negligible) and
    rounded once to bf16 (2^-8 relative). So
        |out - ref| <= 2^-8 |ref| + 2^-acc_bits sum|a w s s|.
    mma.sync (FP16 HMMA emulation on sm_90a, QMMA elsewhere) meets 12 bits;
    Hopper's FP8 wgmma (QGMMA) keeps fewer (its accumulation precision is the
    reason for the per-128 promotion at all): measured up to 2.1x the 12-bit
    bound on the H200, so QGMMA paths are checked at 10. A wrong index, scale
    or tile moves outputs by O(|ref|), far above either."""
    err = (out.double() - ref).abs()
    bound = 2.0**-8 * ref.abs() + 2.0**-acc_bits * abs_sum + 1e-30
    worst = (err / bound).max().item()
    rel_rms = (err.norm() / ref.norm().clamp_min(1e-30)).item()
    return worst <= 1.0 and rel_rms <= 2.0**-7, f"worst err/bound {worst:.3f}, rel rms {rel_rms:.2e}"


def capture_graph(run):
    """`run(stream)` once on a side stream (the warm-up, outside any
    capture), then captured into a CUDA graph on the current stream: the
    capture fails on any host synchronization. Returns the graph."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        run(side)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        run(torch.cuda.current_stream())
    return graph
