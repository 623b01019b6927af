"""Launch plans for each kernel family: validate the arguments, choose the
instance, compute the grid. Pure functions of shapes, pointers and manifest
entries -- no GPU needed, so every refusal is testable anywhere."""
from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Tuple

from runtime import splitk
from runtime import validate as v
from runtime.errors import LoadError, ValidationError
from runtime.manifest import KernelEntry
from runtime.tensors import DeviceArray
from runtime.dispatch import choose, fits_shape

DEFAULT_EPS = 1e-10


@dataclasses.dataclass(frozen=True)
class Launch:
    kernel: KernelEntry
    grid: Tuple[int, int, int]
    args: Dict[str, object]


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _only(entries: Dict[str, List[KernelEntry]], family: str) -> List[KernelEntry]:
    found = entries.get(family)
    if not found:
        raise LoadError(f"no {family} kernel is built for this arch; run `python -m gen build`")
    return found


def _scales(op: str, scale, M: int, K: int, device, mn_major: Optional[bool],
            pad_scales: bool = True) -> Tuple[object, int, int, bool]:
    """Token-major [M, K/128] or MN-major [K/128, M_pad] scales -> (array,
    leading dimension, rows the launch covers, mn_major). The layout is read
    off the shape only where the shape says it; when M == K/128 (and M % 4
    == 0) both layouts have one shape and the caller must say which. The
    launch covers the MN-major pad tokens (their scales written as 0) unless
    pad_scales is False."""
    G = K // v.BLOCK
    s_shape = scale.shape
    if mn_major is None:
        # MN-major needs M_pad % 4 == 0, so only then can [M, G] also be [G, M_pad]
        if M == G and M % 4 == 0 and s_shape == (M, G):
            v.fail(op, f"scale {s_shape} could be token-major [M, K/128] or MN-major [K/128, M_pad] "
                       f"(M == K/128 == {M}); pass mn_major=True or False")
        mn_major = s_shape[0] == G and s_shape != (M, G)
    if mn_major:
        v.require(op, len(s_shape) == 2 and s_shape[0] == G,
                  f"MN-major scale must be [K/128={G}, M_pad], got {s_shape}")
        m_pad = s_shape[1]
        v.require(op, m_pad >= M and m_pad % 4 == 0,
                  f"MN-major scale [{G}, M_pad] needs M_pad >= M={M} and a multiple of 4 (16-byte rows), got {m_pad}")
        return (v.array(op, "scale", scale, dtypes=v.F32, shape=(G, m_pad), device=device, output=True), m_pad,
                m_pad if pad_scales else M, True)
    return (v.array(op, "scale", scale, dtypes=v.F32, shape=(M, G), align=4, device=device, output=True), G, M,
            False)


# s = max(amax, eps) / 448 must stay a normal, finite float32 (its reciprocal is taken).
_EPS_MIN, _EPS_MAX = 448 * 2.0**-126, 1e30


def _quant_common(op: str, M: int, K: int, eps: float) -> None:
    v.require(op, M >= 1, f"M must be >= 1, got {M}")
    v.require(op, K >= 1, f"K must be >= 1, got {K}")
    v.require(op, K % v.BLOCK == 0, f"K must be a multiple of {v.BLOCK} (one scale per 128-K group), got {K}")
    v.require(op, v.is_real(eps) and _EPS_MIN <= eps <= _EPS_MAX,
              f"eps must be finite and in [{_EPS_MIN:.3g}, {_EPS_MAX:.0e}] (eps/448 a normal float32), got {eps!r}")


def quant_group(entries, x, q, scale, *, ue8m0: bool = False, eps: float = DEFAULT_EPS,
                device: Optional[int] = None, mn_major: Optional[bool] = None, pad_scales: bool = True) -> Launch:
    """bf16 x[M,K] -> e4m3 q[M,K] + f32 scales, token-major [M, K/128] or
    MN-major [K/128, M_pad] (M_pad >= M, a multiple of 4; pad tokens get 0,
    or with pad_scales=False keep what they hold: the runtime's workspace
    pads M_pad to 128 rows for GEMMs that never store the rows past M, and
    zeroing them cost quant_silu_mul 9-13 % at M = 600 and 1193 on the H200)."""
    op = "quant_group"
    x, q, scale = v.matrix(op, "x", x), v.matrix(op, "q", q), v.matrix(op, "scale", scale)
    M, K = x.shape
    _quant_common(op, M, K, eps)
    xs = v.array(op, "x", x, dtypes=v.BF16, shape=(M, K), device=device)
    qs = v.array(op, "q", q, dtypes=v.E4M3, shape=(M, K), device=device, output=True)
    ss, ld, rows, mn_major = _scales(op, scale, M, K, device, mn_major, pad_scales)
    k = _only(entries, "quant_group")[0]
    chunks = rows * (K // k.constraints["elems_per_thread"])
    return Launch(k, (_ceil(chunks, k.threads), 1, 1),
                  dict(x=xs.ptr, q=qs.ptr, scale=ss.ptr, M=M, K=K, ld_scale=ld, mn_major=int(mn_major),
                       ue8m0=int(bool(ue8m0)), eps=float(eps)))


def quant_silu_mul(entries, gate, up, *, h=None, q=None, scale=None, ue8m0: bool = False,
                   eps: float = DEFAULT_EPS, device: Optional[int] = None, mn_major: Optional[bool] = None,
                   pad_scales: bool = True) -> Launch:
    """h = bf16(SiLU(gate) * up), and/or h quantized like quant_group (q and
    scale together, pad_scales as there). h may be `gate` itself (in place)."""
    op = "quant_silu_mul"
    gate, up = v.matrix(op, "gate", gate), v.matrix(op, "up", up)
    M, K = gate.shape
    _quant_common(op, M, K, eps)
    v.require(op, h is not None or q is not None, "nothing to write: pass h, or q and scale, or both")
    v.require(op, (q is None) == (scale is None), "q and scale go together")
    gs = v.array(op, "gate", gate, dtypes=v.BF16, shape=(M, K), device=device)
    us = v.array(op, "up", up, dtypes=v.BF16, shape=(M, K), device=device)
    hs = (v.array(op, "h", v.matrix(op, "h", h), dtypes=v.BF16, shape=(M, K), device=device, output=True)
          if h is not None else None)
    rows, ld, qs, ss = M, K // v.BLOCK, None, None
    if q is not None:
        qs = v.array(op, "q", v.matrix(op, "q", q), dtypes=v.E4M3, shape=(M, K), device=device, output=True)
        ss, ld, rows, mn_major = _scales(op, v.matrix(op, "scale", scale), M, K, device, mn_major, pad_scales)
    k = _only(entries, "quant_silu_mul")[0]
    chunks = rows * (K // k.constraints["elems_per_thread"])
    return Launch(k, (_ceil(chunks, k.threads), 1, 1),
                  dict(gate=gs.ptr, up=us.ptr, h=hs.ptr if hs else 0, q=qs.ptr if qs else 0,
                       scale=ss.ptr if ss else 0, M=M, K=K, ld_scale=ld, mn_major=int(bool(mn_major)),
                       ue8m0=int(bool(ue8m0)), eps=float(eps)))


def scale_mn_major(entries, src, dst, *, device: Optional[int] = None) -> Launch:
    """Token-major [M, G] -> MN-major [G, M_pad]; pad tokens are written as 0."""
    op = "scale_mn_major"
    src, dst = v.matrix(op, "src", src), v.matrix(op, "dst", dst)
    M, G = src.shape
    G2, m_pad = dst.shape
    v.require(op, M >= 1 and G >= 1, f"src must be [M >= 1, G >= 1], got {src.shape}")
    v.require(op, G2 == G, f"dst has {G2} groups, src has {G}")
    v.require(op, m_pad >= M and m_pad % 4 == 0,
              f"dst needs room for the {M} tokens in rows that are a multiple of 4 (16 bytes), got M_pad={m_pad}")
    s = v.array(op, "src", src, dtypes=v.F32, shape=(M, G), align=4, device=device)
    d = v.array(op, "dst", dst, dtypes=v.F32, shape=(G, m_pad), align=4, device=device, output=True)
    k = _only(entries, "scale_mn_major")[0]
    return Launch(k, (_ceil(G * m_pad, k.threads), 1, 1), dict(src=s.ptr, dst=d.ptr, M=M, G=G, M_pad=m_pad))


def _weight(op, w, w_scale, N, K, device):
    ws = v.array(op, "weight", w, dtypes=v.E4M3, shape=(N, K), device=device)
    ss = v.array(op, "weight_scale", w_scale, dtypes=v.F32, shape=v.weight_scale_shape(N, K), align=4,
                 device=device)
    return ws, ss


def _tile_grid(k: KernelEntry, M: int, N: int) -> Tuple[int, int, int]:
    grid = (_ceil(N, k.constraints["bn"]), _ceil(M, k.constraints["bm"]), 1)
    if grid[1] > 65535:  # (CUDA's limit on a grid's y; the tile rows run there)
        raise ValidationError(f"{k.family}: M={M} needs {grid[1]} rows of {k.constraints['bm']}-row tiles, "
                              "more than a grid's 65535")
    return grid


def _instance(found: List[KernelEntry], M: int, instance: Optional[str], N: int = 0, K: int = 0) -> KernelEntry:
    """The named instance (a routing decision's), else the tile rule's among
    those that run (N, K) (a shape-specialized instance runs only its own)."""
    if instance is None:
        return choose(found, {}, M, N, K)  # no table: the family's tile rule
    for e in found:
        if e.name == instance:
            if N and not fits_shape(e, N, K):
                if K % e.constraints.get("scale_k_multiple", 1):
                    raise ValidationError(f"{e.name} copies its weight scales by TMA (rows of K / 128 floats, "
                                          f"16-byte multiples) and needs K a multiple of "
                                          f"{e.constraints['scale_k_multiple']}; this call has K={K}")
                if "min_k" in e.constraints and K < e.constraints["min_k"]:
                    raise ValidationError(f"{e.name} splits K over a cluster and needs K >= "
                                          f"{e.constraints['min_k']}; this call has K={K}")
                raise ValidationError(f"{e.name} is built for N={e.constraints['fixed_n']}, "
                                      f"K={e.constraints['fixed_k']} only; this call has N={N}, K={K}")
            return e
    raise LoadError(f"instance {instance} is not loaded (family {found[0].family})")


def w8a8_mma(entries, a, a_scale, w, w_scale, out, *, device: Optional[int] = None,
             instance: Optional[str] = None) -> Launch:
    """out[M,N] bf16 = block-scaled a[M,K] e4m3 (token-major scales [M,K/128])
    x w[N,K] e4m3 (scales [ceil(N/128), K/128])."""
    op = "w8a8_mma"
    a, a_scale, w = v.matrix(op, "a", a), v.matrix(op, "a_scale", a_scale), v.matrix(op, "weight", w)
    w_scale, out = v.matrix(op, "weight_scale", w_scale), v.matrix(op, "out", out)
    M, N, K = v.gemm_dims(op, a, w)
    As = v.array(op, "a", a, dtypes=v.E4M3, shape=(M, K), device=device)
    Ss = v.array(op, "a_scale", a_scale, dtypes=v.F32, shape=(M, K // v.BLOCK), align=4, device=device)
    Ws, WSs = _weight(op, w, w_scale, N, K, device)
    Os = v.array(op, "out", out, dtypes=v.BF16, shape=(M, N), device=device, output=True)
    k = _instance(_only(entries, "w8a8_mma"), M, instance)
    return Launch(k, _tile_grid(k, M, N), dict(a=As.ptr, a_scale=Ss.ptr, w=Ws.ptr, w_scale=WSs.ptr, out=Os.ptr,
                                                M=M, N=N, K=K))


def _w8a16(op, family, entries, x, w, w_scale, out, device, max_m=None, instance=None) -> Launch:
    x, w, w_scale = v.matrix(op, "x", x), v.matrix(op, "weight", w), v.matrix(op, "weight_scale", w_scale)
    out = v.matrix(op, "out", out)
    M, N, K = v.gemm_dims(op, x, w)
    if max_m is not None:
        v.require(op, M <= max_m, f"M must be <= {max_m} (the decode GEMV), got {M}")
    Xs = v.array(op, "x", x, dtypes=v.BF16, shape=(M, K), device=device)
    Ws, WSs = _weight(op, w, w_scale, N, K, device)
    Os = v.array(op, "out", out, dtypes=v.BF16, shape=(M, N), device=device, output=True)
    k = _instance(_only(entries, family), M, instance)
    grid = _tile_grid(k, M, N) if family == "w8a16_gemm" else (_ceil(N, k.constraints["rows_per_block"]), 1, 1)
    return Launch(k, grid, dict(x=Xs.ptr, w=Ws.ptr, w_scale=WSs.ptr, out=Os.ptr, M=M, N=N, K=K))


def w8a16_gemm(entries, x, w, w_scale, out, *, device: Optional[int] = None,
               instance: Optional[str] = None) -> Launch:
    """out[M,N] bf16 = x[M,K] bf16 x w[N,K] e4m3 with 128x128 weight scales."""
    return _w8a16("w8a16_gemm", "w8a16_gemm", entries, x, w, w_scale, out, device, instance=instance)


def w8a16_gemv(entries, x, w, w_scale, out, *, device: Optional[int] = None,
               instance: Optional[str] = None) -> Launch:
    """Decode: the same product for M <= 4, streaming each weight byte once."""
    k = _only(entries, "w8a16_gemv")[0]
    return _w8a16("w8a16_gemv", "w8a16_gemv", entries, x, w, w_scale, out, device,
                  max_m=k.constraints["max_m"], instance=instance)


def _computed_rows(op: str, rows: int, m: Optional[int]) -> int:
    """The rows a GEMM computes: `m` of a's `rows` (default all); the rest
    are padding the Params-launched kernels may read (see w8a8_wgmma)."""
    v.require(op, m is None or (isinstance(m, int) and not isinstance(m, bool) and 1 <= m <= rows),
              f"m must be an int in 1..{rows} (a's rows), got {m!r}")
    return rows if m is None else m


def _mn_major_gemm(op: str, entries, a, a_scale, w, w_scale, out, device, instance, workspace=None,
                   early_weights: bool = False, m: Optional[int] = None) -> Launch:
    """The Params-launched W8A8 GEMMs (a host shim builds Params and the
    grid): MN-major activation scales [K/128, M_pad] (token index
    contiguous, M_pad >= M a multiple of 4), as quant_group writes them.
    A split-K instance takes its counters and partial tiles from
    `workspace` (a runtime.Workspace made with max_n). `early_weights`: see
    w8a8_wgmma. `m`: the rows to compute when `a` has more (see
    w8a8_wgmma); default all of a's rows."""
    a, a_scale, w = v.matrix(op, "a", a), v.matrix(op, "a_scale", a_scale), v.matrix(op, "weight", w)
    w_scale, out = v.matrix(op, "weight_scale", w_scale), v.matrix(op, "out", out)
    rows, N, K = v.gemm_dims(op, a, w, n_multiple=8)
    M = _computed_rows(op, rows, m)
    G, m_pad = a_scale.shape
    v.require(op, G == K // v.BLOCK, f"a_scale must be MN-major [K/128={K // v.BLOCK}, M_pad], got {a_scale.shape}")
    v.require(op, m_pad >= M and m_pad % 4 == 0,
              f"a_scale's M_pad must be >= M={M} and a multiple of 4 (16-byte rows), got {m_pad}")
    As = v.array(op, "a", a, dtypes=v.E4M3, shape=(rows, K), device=device)
    Ss = v.array(op, "a_scale", a_scale, dtypes=v.F32, shape=(G, m_pad), device=device)
    Ws, WSs = _weight(op, w, w_scale, N, K, device)
    Os = v.array(op, "out", out, dtypes=v.BF16, shape=(M, N), device=device, output=True)
    found = _only(entries, op)
    if instance is None and workspace is None:  # the tile rule, among instances that need no workspace
        found = splitk.unsplit(found)
    k = _instance(found, M, instance, N, K)
    if k.constraints.get("scale_k_multiple", 1) > v.BLOCK:
        # (its weight scales come by TMA, whose global base must be 16-byte aligned)
        v.require(op, WSs.ptr % 16 == 0, f"{k.name} copies the weight scales by TMA: weight_scale must be "
                                         f"16-byte aligned, its address is {WSs.ptr:#x}")
    split = {}
    if splitk.needs(k, M, N, K)[0]:
        v.require(op, workspace is not None,
                  f"{k.name} splits K across CTAs and needs a workspace (rt.workspace(..., max_n=N))")
        split = workspace.split_args(k, M, N, K)
    return Launch(k, (1, 1, 1), dict(a=As.ptr, a_rows=rows, a_scale=Ss.ptr, ld_scale=m_pad, w=Ws.ptr,
                                     w_scale=WSs.ptr, out=Os.ptr, M=M, N=N, K=K,
                                     early_weights=bool(early_weights), **split))


def w8a8_cutlass(entries, a, a_scale, w, w_scale, out, *, device: Optional[int] = None,
                 instance: Optional[str] = None, workspace=None, early_weights: bool = False,
                 m: Optional[int] = None) -> Launch:
    """The CUTLASS sm90 blockwise GEMM: like w8a8_mma, but the activation
    scales are MN-major [K/128, M_pad], as quant_group writes them.
    (`early_weights` and `m` as for w8a8_wgmma; CUTLASS ignores
    early_weights and reads no row of `a` past m.)"""
    return _mn_major_gemm("w8a8_cutlass", entries, a, a_scale, w, w_scale, out, device, instance, workspace,
                          early_weights, m)


def w8a8_wgmma(entries, a, a_scale, w, w_scale, out, *, device: Optional[int] = None,
               instance: Optional[str] = None, workspace=None, early_weights: bool = False,
               m: Optional[int] = None) -> Launch:
    """The raw-PTX sm_90a GEMM (TMA, wgmma, persistent): the same operands
    as w8a8_cutlass; split-K instances need `workspace`.

    early_weights: the caller promises that the kernel just before this one
    on the stream writes neither `w` nor `w_scale`. The GEMM may then start
    copying its first weight boxes before it waits for that kernel
    (programmatic dependent launch), which hides most of the first loads'
    DRAM latency at small M. Without the promise it waits first.

    m: compute the first m rows of `a` (out is [m, N]; a_scale's M_pad >= m).
    The kernel may read a's rows past m (their results are never stored), so
    an `a` padded to a multiple of 128 rows, with a_scale's M_pad likewise,
    keeps a partial last tile row's copies inside the buffers: the copy engine
    fills rows past the operand's end with zeros, slowly (the runtime's
    workspace pads both for rt.linear and the FFN)."""
    return _mn_major_gemm("w8a8_wgmma", entries, a, a_scale, w, w_scale, out, device, instance, workspace,
                          early_weights, m)


# The fast (MN-major, Params-launched) families' plans, by family.
FAST_PLANS = {"w8a8_cutlass": w8a8_cutlass, "w8a8_wgmma": w8a8_wgmma}


def fp8_dequant(entries, w, w_scale, out, *, device: Optional[int] = None) -> Launch:
    """bf16 out[N,K] = w[N,K] (e4m3) x its 128x128 block scales, rounded once."""
    op = "fp8_dequant"
    w, w_scale, out = v.matrix(op, "weight", w), v.matrix(op, "weight_scale", w_scale), v.matrix(op, "out", out)
    N, K = w.shape
    v.require(op, N >= 1 and K >= 1, f"N and K must be >= 1, got N={N}, K={K}")
    v.require(op, K % v.BLOCK == 0, f"K must be a multiple of {v.BLOCK} (the weight-scale grid), got {K}")
    Ws, WSs = _weight(op, w, w_scale, N, K, device)
    Os = v.array(op, "out", out, dtypes=v.BF16, shape=(N, K), device=device, output=True)
    k = _only(entries, "fp8_dequant")[0]
    chunks = N * (K // k.constraints["elems_per_thread"])
    return Launch(k, (_ceil(chunks, k.threads), 1, 1), dict(w=Ws.ptr, w_scale=WSs.ptr, out=Os.ptr, N=N, K=K))


# -- single-scale formats: per tensor, per row, NVFP4 predequant ---------------------
STATE_FLOATS = 4  # quant_tensor / nvfp4_to_fp8 state: amax bits, scale, output scale, spare


def _scalar(op: str, name: str, arr, device) -> DeviceArray:
    """A device f32 scalar: shape () or (1,)."""
    a = _as(op, name, arr)
    v.require(op, a.shape in ((), (1,)), f"{name} must be a device float32 scalar (shape () or (1,)), got {a.shape}")
    return v.array(op, name, a, dtypes=v.F32, shape=a.shape, align=4, device=device)


def _as(op: str, name: str, obj) -> DeviceArray:
    from runtime.tensors import as_device_array

    return as_device_array(obj, f"{op}: {name}")


def _state(op: str, state, device) -> DeviceArray:
    return v.array(op, "state", _as(op, "state", state), dtypes=v.F32, shape=(STATE_FLOATS,), device=device,
                   output=True)


def _stream_grid(k: KernelEntry, elements: int) -> Tuple[int, int, int]:
    """Blocks of a grid-stride kernel over `elements` (16 per thread), capped:
    past a few waves more blocks only add atomics."""
    per_block = k.threads * k.constraints["elems_per_thread"]
    return (max(1, min(_ceil(elements, per_block), 4096)), 1, 1)


def _single_scale_operands(op: str, x, q, eps: float, device) -> Tuple[DeviceArray, DeviceArray]:
    """bf16 x [M, K] and e4m3 q [M, K] (K % 16: 16-byte rows), eps checked."""
    x, q = v.matrix(op, "x", x), v.matrix(op, "q", q)
    M, K = x.shape
    v.require(op, M >= 1 and K >= 1, f"M and K must be >= 1, got M={M}, K={K}")
    v.require(op, K % 16 == 0, f"K must be a multiple of 16 (16-byte rows of e4m3), got {K}")
    v.require(op, v.is_real(eps) and _EPS_MIN <= eps <= _EPS_MAX,
              f"eps must be finite and in [{_EPS_MIN:.3g}, {_EPS_MAX:.0e}], got {eps!r}")
    return (v.array(op, "x", x, dtypes=v.BF16, shape=(M, K), device=device),
            v.array(op, "q", q, dtypes=v.E4M3, shape=(M, K), device=device, output=True))


def quant_tensor(entries, x, q, state, *, w_scale=None, eps: float = DEFAULT_EPS,
                 device: Optional[int] = None) -> List[Launch]:
    """bf16 x[M,K] -> e4m3 q[M,K] under one scale, in three launches on one
    stream (device amax, scale finalize, quantize): no host sync, CUDA-graph
    capturable. `state` is the caller's resident f32[4] (zeros before the
    first call; the finalize step leaves state[0] at 0 again): state[1] gets
    the activation scale, state[2] that times `w_scale` (a device scalar, the
    weight's per-tensor scale; 1 when omitted) -- the GEMM's output scale."""
    op = "quant_tensor"
    xs, qs = _single_scale_operands(op, x, q, eps, device)
    M, K = xs.shape
    st = _state(op, state, device)
    ws = _scalar(op, "w_scale", w_scale, device).ptr if w_scale is not None else 0
    k = _only(entries, op)[0]
    args = dict(x=xs.ptr, q=qs.ptr, state=st.ptr, w_scale=ws, M=M, K=K, eps=float(eps))
    grid = _stream_grid(k, M * K)
    return [Launch(k, grid, dict(args, stage=0)), Launch(k, (1, 1, 1), dict(args, stage=1)),
            Launch(k, grid, dict(args, stage=2))]


def quant_token(entries, x, q, scale, *, eps: float = DEFAULT_EPS, device: Optional[int] = None) -> Launch:
    """bf16 x[M,K] -> e4m3 q[M,K] with one f32 scale per token, scale[M]."""
    op = "quant_token"
    xs, qs = _single_scale_operands(op, x, q, eps, device)
    M, K = xs.shape
    scale = _as(op, "scale", scale)
    ss = v.array(op, "scale", scale, dtypes=v.F32, shape=(M,), align=4, device=device, output=True)
    k = _only(entries, op)[0]
    return Launch(k, (M, 1, 1), dict(x=xs.ptr, q=qs.ptr, scale=ss.ptr, M=M, K=K, eps=float(eps)))


def nvfp4_to_fp8(entries, packed, block_scale, global_scale, q, state, *,
                 device: Optional[int] = None) -> List[Launch]:
    """NVFP4 weight -> e4m3 q[N,K] under one scale chosen from the data
    (amax/448: nothing overflows), reported in state[1] (the new weight's
    per-tensor scale). packed [N, K/2] u8 (element 2j in the low nibble),
    block_scale [N, K/16] e4m3, global_scale a device f32 scalar."""
    op = "nvfp4_to_fp8"
    packed, block_scale, q = v.matrix(op, "packed", packed), v.matrix(op, "block_scale", block_scale), \
        v.matrix(op, "q", q)
    N, K = q.shape
    v.require(op, N >= 1 and K >= 16 and K % 16 == 0, f"q must be [N >= 1, K] with K a multiple of 16, got {q.shape}")
    ps = v.array(op, "packed", packed, dtypes=("u8",), shape=(N, K // 2), align=8, device=device)
    bs = v.array(op, "block_scale", block_scale, dtypes=v.E4M3, shape=(N, K // 16), align=1, device=device)
    gs = _scalar(op, "global_scale", global_scale, device)
    qs = v.array(op, "q", q, dtypes=v.E4M3, shape=(N, K), device=device, output=True)
    st = _state(op, state, device)
    k = _only(entries, op)[0]
    args = dict(packed=ps.ptr, block_scale=bs.ptr, global_scale=gs.ptr, q=qs.ptr, state=st.ptr, N=N, K=K)
    grid = _stream_grid(k, N * K)
    return [Launch(k, grid, dict(args, stage=0)), Launch(k, (1, 1, 1), dict(args, stage=1)),
            Launch(k, grid, dict(args, stage=2))]


def _single_scale_gemm(op: str, entries, a, a_scale, w, w_scale, out, device, instance,
                       early_weights: bool = False, m: Optional[int] = None) -> Launch:
    """The single-scale GEMMs: per row (a_scale [M], w_scale [N]) or per
    tensor (a_scale a device scalar). The wgmma families launch through their
    host shim (Params), the mma.sync ones with explicit pointers, a block per
    tile. `early_weights` and `m` (the wgmma families): see w8a8_wgmma."""
    found = _only(entries, op)
    a, w, out = v.matrix(op, "a", a), v.matrix(op, "weight", w), v.matrix(op, "out", out)
    rows, N, K = v.gemm_dims(op, a, w, n_multiple=found[0].constraints.get("n_multiple", 16))
    M = _computed_rows(op, rows, m)
    As = v.array(op, "a", a, dtypes=v.E4M3, shape=(rows, K), device=device)
    Ws = v.array(op, "weight", w, dtypes=v.E4M3, shape=(N, K), device=device)
    Os = v.array(op, "out", out, dtypes=v.BF16, shape=(M, N), device=device, output=True)
    per_row = op in ("w8a8_row", "w8a8_mma_row")
    if per_row:
        a_ptr = v.array(op, "a_scale", _as(op, "a_scale", a_scale), dtypes=v.F32, shape=(M,), align=4,
                        device=device).ptr
        w_ptr = v.array(op, "weight_scale", _as(op, "weight_scale", w_scale), dtypes=v.F32, shape=(N,), align=4,
                        device=device).ptr
    else:
        a_ptr, w_ptr = _scalar(op, "scale", a_scale, device).ptr, 0
    k = _instance(found, M, instance)
    if k.shim:
        return Launch(k, (1, 1, 1), dict(a=As.ptr, a_rows=rows, a_scale=a_ptr, ld_scale=M, w=Ws.ptr, w_scale=w_ptr,
                                         out=Os.ptr, M=M, N=N, K=K, early_weights=bool(early_weights)))
    args = dict(a=As.ptr, w=Ws.ptr, out=Os.ptr, M=M, N=N, K=K)
    args.update(dict(a_scale=a_ptr, w_scale=w_ptr) if per_row else dict(scale=a_ptr))
    return Launch(k, _tile_grid(k, M, N), args)


def w8a8_row(entries, a, a_scale, w, w_scale, out, *, device: Optional[int] = None,
             instance: Optional[str] = None, early_weights: bool = False, m: Optional[int] = None) -> Launch:
    """out[M,N] bf16 = (a[M,K] e4m3 . w[N,K] e4m3) * a_scale[M] (per token) *
    w_scale[N] (per channel), FP32 accumulation, scaled once. `m`: of a's
    rows, the first m are computed (a_scale [m]; see w8a8_wgmma)."""
    return _single_scale_gemm("w8a8_row", entries, a, a_scale, w, w_scale, out, device, instance, early_weights,
                              m)


def w8a8_tensor(entries, a, scale, w, out, *, device: Optional[int] = None,
                instance: Optional[str] = None, early_weights: bool = False, m: Optional[int] = None) -> Launch:
    """out[M,N] bf16 = (a . w) * scale, `scale` a device f32 scalar (e.g.
    quant_tensor's state[2]: activation x weight scale), read on the device.
    `m` as for w8a8_row."""
    return _single_scale_gemm("w8a8_tensor", entries, a, scale, w, None, out, device, instance, early_weights, m)


def w8a8_mma_row(entries, a, a_scale, w, w_scale, out, *, device: Optional[int] = None,
                 instance: Optional[str] = None) -> Launch:
    """w8a8_row on mma.sync (the arches without wgmma); N % 16."""
    return _single_scale_gemm("w8a8_mma_row", entries, a, a_scale, w, w_scale, out, device, instance)


def w8a8_mma_tensor(entries, a, scale, w, out, *, device: Optional[int] = None,
                    instance: Optional[str] = None) -> Launch:
    """w8a8_tensor on mma.sync (the arches without wgmma); N % 16."""
    return _single_scale_gemm("w8a8_mma_tensor", entries, a, scale, w, None, out, device, instance)
