"""torch-side data makers and float64 references, independent of fp8gen's
kernels; shared by the bench's correctness checks and the GPU tests."""
from __future__ import annotations

import torch

BLOCK = 128

# Rounding to e4m3 (3 mantissa bits, RNE) leaves an error uniform in +-D/2,
# D = 2^(e-3) for |x| in [2^e, 2^(e+1)): its energy is at most 2^-6/12 of
# x^2 (the bottom of a binade is the worst case), a relative RMS of at most
# 2^-3/sqrt(12) ~ 3.6 % per quantization stage; the log-uniform average is
# ~2.5 % (tests/test_reference.py measures 2.55 % on Gaussian data). A GEMM
# against independent weights carries its input's relative RMS error to its
# output, and independent stages add in quadrature. DESIGN.md's 2 % gate
# therefore holds only where outliers dominate the norm; on outlier-free data
# no per-128 e4m3 W8A8 meets it, so those cases are gated on this bound.
E4M3_STAGE_REL_RMS = 2.0**-3 / 12**0.5


def quantize_weight(w: torch.Tensor):
    """Checkpoint-style block quantization: e4m3 bytes [N,K] (as uint8) and
    f32 scales [ceil(N/128), K/128]."""
    N, K = w.shape
    nb = -(-N // BLOCK)
    padded = torch.zeros(nb * BLOCK, K, device=w.device, dtype=torch.float32)
    padded[:N] = w.float()
    blocks = padded.view(nb, BLOCK, K // BLOCK, BLOCK)
    s = blocks.abs().amax(dim=(1, 3)).clamp_min(1e-10) / 448.0
    q = (blocks / s[:, None, :, None]).clamp(-448, 448).to(torch.float8_e4m3fn)
    return q.view(nb * BLOCK, K)[:N].contiguous().view(torch.uint8), s.contiguous()


def quantize_act(x: torch.Tensor):
    """Per-token 1x128 quantization: e4m3 bytes [M,K] and f32 scales [M,K/128]."""
    M, K = x.shape
    g = x.float().view(M, K // BLOCK, BLOCK)
    s = g.abs().amax(-1).clamp_min(1e-10) / 448.0
    q = (g / s[..., None]).clamp(-448, 448).to(torch.float8_e4m3fn)
    return q.view(M, K).view(torch.uint8), s.contiguous()


def e4m3_f64(q_u8: torch.Tensor) -> torch.Tensor:
    return q_u8.view(torch.float8_e4m3fn).to(torch.float64)


def dequant_weight(q_u8: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    N, _ = q_u8.shape
    full = s.double().repeat_interleave(BLOCK, 0)[:N].repeat_interleave(BLOCK, 1)
    return e4m3_f64(q_u8) * full


def dequant_act(q_u8: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    return e4m3_f64(q_u8) * s.double().repeat_interleave(BLOCK, 1)


def with_outliers(shape, gen: torch.Generator, frac: float = 1e-3, factor: float = 100.0) -> torch.Tensor:
    """Gaussian data with a sprinkling of large entries (activation outliers)."""
    x = torch.randn(*shape, device="cuda", generator=gen)
    mask = torch.rand(*shape, device="cuda", generator=gen) < frac
    return torch.where(mask, x * factor, x)


def rel_rms(got: torch.Tensor, want: torch.Tensor) -> float:
    return ((got.double() - want).norm() / want.norm().clamp_min(1e-300)).item()
