"""Independent numpy references for the kernels' numerics (DESIGN.md).

Written from the contract, not from the kernels: float32 where the contract
says FP32 (so the quantizer is reproducible bit for bit), float64 for GEMMs.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

E4M3 = ml_dtypes.float8_e4m3fn
BF16 = ml_dtypes.bfloat16
E4M3_MAX = np.float32(448.0)
GROUP = 128


def pow2_ceil(v: np.ndarray) -> np.ndarray:
    """Exact smallest power of two >= v (v > 0): frexp gives v = m * 2^e with
    m in [0.5, 1); v is a power of two exactly when m == 0.5."""
    m, e = np.frexp(v.astype(np.float32))
    return np.where(m == 0.5, v, np.ldexp(np.float32(1.0), e)).astype(np.float32)


def quant_group(x: np.ndarray, eps: float = 1e-10, ue8m0: bool = False):
    """x [M,K] (bf16 values, any float dtype) -> (q e4m3 [M,K], scale f32 [M,K/128])."""
    x = np.asarray(x, dtype=np.float32)
    M, K = x.shape
    g = x.reshape(M, K // GROUP, GROUP)
    amax = np.abs(g).max(axis=-1)
    s = np.maximum(amax, np.float32(eps)).astype(np.float32) / E4M3_MAX
    if ue8m0:
        s = pow2_ceil(s)
    q = (g / s[..., None]).astype(np.float32)
    # cvt.rn.satfinite: round to nearest even, clamp to +-448 (e4m3fn has no inf).
    q = np.clip(q, -E4M3_MAX, E4M3_MAX).astype(E4M3)
    return q.reshape(M, K), s.astype(np.float32)


def dequant_weight(w_q: np.ndarray, w_s: np.ndarray) -> np.ndarray:
    """e4m3 [N,K] with [ceil(N/128), K/128] scales -> float64 [N,K]."""
    N, K = w_q.shape
    rows = np.repeat(w_s.astype(np.float64), GROUP, axis=0)[:N]
    return w_q.astype(np.float64) * np.repeat(rows, GROUP, axis=1)


def dequant_act(a_q: np.ndarray, a_s: np.ndarray) -> np.ndarray:
    return a_q.astype(np.float64) * np.repeat(a_s.astype(np.float64), GROUP, axis=1)


def w8a8(a_q, a_s, w_q, w_s) -> np.ndarray:
    """out = sum_kb (sum_k a w) * a_s[m,kb] * w_s[n/128,kb], float64."""
    M, K = a_q.shape
    out = np.zeros((M, w_q.shape[0]))
    for kb in range(K // GROUP):
        sl = slice(kb * GROUP, (kb + 1) * GROUP)
        part = a_q[:, sl].astype(np.float64) @ w_q[:, sl].astype(np.float64).T
        ws = np.repeat(w_s[:, kb].astype(np.float64), GROUP)[: w_q.shape[0]]
        out += part * a_s[:, kb, None] * ws[None, :]
    return out


def w8a16(x, w_q, w_s) -> np.ndarray:
    return np.asarray(x, dtype=np.float64) @ dequant_weight(w_q, w_s).T


def quantize_weight(w: np.ndarray):
    """A float weight -> checkpoint-style e4m3 + [ceil(N/128), K/128] scales."""
    N, K = w.shape
    nb = -(-N // GROUP)
    padded = np.zeros((nb * GROUP, K), np.float32)
    padded[:N] = w
    blocks = padded.reshape(nb, GROUP, K // GROUP, GROUP)
    amax = np.abs(blocks).max(axis=(1, 3))
    s = (np.maximum(amax, 1e-10) / E4M3_MAX).astype(np.float32)
    q = np.clip(blocks / s[:, None, :, None], -E4M3_MAX, E4M3_MAX).astype(E4M3)
    return q.reshape(nb * GROUP, K)[:N], s


def with_outliers(rng: np.random.Generator, shape, scale=1.0, frac=1e-3, factor=100.0) -> np.ndarray:
    """Gaussian data with a sprinkling of large entries (activation outliers)."""
    x = rng.standard_normal(shape).astype(np.float32) * scale
    mask = rng.random(shape) < frac
    x[mask] *= factor
    return x


def fp8_dequant(w_q: np.ndarray, w_s: np.ndarray) -> np.ndarray:
    """bf16(float32(w) * float32(scale)): one FP32 multiply, one rounding."""
    N, K = w_q.shape
    s = np.repeat(np.repeat(w_s.astype(np.float32), GROUP, axis=0)[:N], GROUP, axis=1)
    return (w_q.astype(np.float32) * s).astype(BF16)


def _single_scale(amax, eps) -> np.float32:
    return np.float32(np.maximum(np.float32(amax), np.float32(eps))) / E4M3_MAX


def _to_e4m3(v: np.ndarray, s) -> np.ndarray:
    q = (v.astype(np.float32) / np.float32(s)).astype(np.float32)
    return np.clip(q, -E4M3_MAX, E4M3_MAX).astype(E4M3)


def quant_tensor(x: np.ndarray, eps: float = 1e-10):
    """One scale for the tensor: s = max(amax, eps)/448, q = sat_e4m3(x/s)."""
    x = np.asarray(x, dtype=np.float32)
    s = _single_scale(np.abs(x).max(), eps)
    return _to_e4m3(x, s), np.float32(s)


def quant_token(x: np.ndarray, eps: float = 1e-10):
    """One scale per row: s[m] = max(amax_m, eps)/448."""
    x = np.asarray(x, dtype=np.float32)
    s = (np.maximum(np.abs(x).max(axis=1), np.float32(eps)).astype(np.float32) / E4M3_MAX).astype(np.float32)
    return _to_e4m3(x, s[:, None]), s


E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], np.float32)


def nvfp4_decode(packed: np.ndarray, block_scale: np.ndarray, global_scale) -> np.ndarray:
    """packed [N, K/2] u8 (element 2j in the low nibble), e4m3 block scales
    [N, K/16] (as u8 bytes), f32 global scale -> float32 [N, K] values:
    (e2m1 * block scale), exact in float32, times the global scale (rounded once)."""
    N, half = packed.shape
    codes = np.empty((N, 2 * half), np.uint8)
    codes[:, 0::2] = packed & 0xF
    codes[:, 1::2] = packed >> 4
    v = np.where(codes & 8, -1.0, 1.0).astype(np.float32) * E2M1[codes & 7]
    sf = np.repeat(block_scale.view(E4M3).astype(np.float32), 16, axis=1)
    return ((v * sf).astype(np.float32) * np.float32(global_scale)).astype(np.float32)


def nvfp4_to_fp8(packed, block_scale, global_scale):
    """-> (e4m3 [N,K], its single scale amax/448: nothing overflows)."""
    v = nvfp4_decode(packed, block_scale, global_scale)
    s = _single_scale(np.abs(v).max(), 1e-30)
    return _to_e4m3(v, s), np.float32(s)
