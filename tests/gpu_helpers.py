"""torch helpers for the GPU tests: guarded (poisoned, canaried) buffers and
independent float64 references computed on the device."""
from __future__ import annotations

import torch

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


def quantize_weight(w: torch.Tensor):
    """Checkpoint-style block quantization, written independently of fp8gen."""
    N, K = w.shape
    nb = -(-N // 128)
    padded = torch.zeros(nb * 128, K, device=w.device, dtype=torch.float32)
    padded[:N] = w.float()
    blocks = padded.view(nb, 128, K // 128, 128)
    s = blocks.abs().amax(dim=(1, 3)).clamp_min(1e-10) / 448.0
    q = (blocks / s[:, None, :, None]).clamp(-448, 448).to(torch.float8_e4m3fn)
    return q.view(nb * 128, K)[:N].contiguous().view(torch.uint8), s.contiguous()


def quantize_act(x: torch.Tensor):
    M, K = x.shape
    g = x.float().view(M, K // 128, 128)
    s = g.abs().amax(-1).clamp_min(1e-10) / 448.0
    q = (g / s[..., None]).clamp(-448, 448).to(torch.float8_e4m3fn)
    return q.view(M, K).view(torch.uint8), s.contiguous()


def e4m3_f64(q_u8: torch.Tensor) -> torch.Tensor:
    return q_u8.view(torch.float8_e4m3fn).to(torch.float64)


def dequant_weight(q_u8, s):
    N, K = q_u8.shape
    full = s.double().repeat_interleave(128, 0)[:N].repeat_interleave(128, 1)
    return e4m3_f64(q_u8) * full


def dequant_act(q_u8, s):
    return e4m3_f64(q_u8) * s.double().repeat_interleave(128, 1)


def with_outliers(shape, gen, frac=1e-3, factor=100.0):
    x = torch.randn(*shape, device="cuda", generator=gen)
    mask = torch.rand(*shape, device="cuda", generator=gen) < frac
    return torch.where(mask, x * factor, x)


def gemm_error_ok(out: torch.Tensor, ref: torch.Tensor, abs_sum: torch.Tensor):
    """Error model: within each 128-K block the tensor core accumulates in
    FP32 with (conservatively) >= 13 bits kept per addition, then partials are
    promoted with FP32 FMAs (2^-24 each, negligible), then rounded once to
    bf16 (2^-8 relative). So |out - ref| <= 2^-8 |ref| + 2^-12 sum|a w s s|.
    A wrong index, scale or tile moves outputs by O(|ref|), far above this."""
    err = (out.double() - ref).abs()
    bound = 2.0**-8 * ref.abs() + 2.0**-12 * abs_sum + 1e-30
    worst = (err / bound).max().item()
    rel_rms = (err.norm() / ref.norm().clamp_min(1e-30)).item()
    return worst <= 1.0 and rel_rms <= 2.0**-7, f"worst err/bound {worst:.3f}, rel rms {rel_rms:.2e}"
