"""fp8gen's runtime: loads the cubins gen built, validates every launch, runs.

    import runtime
    rt = runtime.load()                      # current (or given) CUDA device
    rt.quant_group(x, q, scale)              # bf16 -> e4m3 + per-128 scales
    rt.w8a8_mma(q, scale, w, w_scale, out)   # block-scaled W8A8 GEMM, bf16 out

Needs only cuda-python and numpy; never compiles (a missing cubin raises
LoadError naming the `python -m gen build` command).
"""
from __future__ import annotations

import threading
from typing import Dict, List, Optional

from runtime import ops, select, splitk
from runtime import validate as v
from runtime.dispatch import DispatchTable, choose
from runtime.waves import Ranker
from runtime.env import knobs
from runtime.errors import (CatalogError, CompileError, Fp8genError, LaunchError, LoadError, RenderError,
                            ValidationError)
from runtime.ffn import dense_ffn_prefill
from runtime.hardware import cached_hardware
from runtime.launch import launch as launch_kernel
from runtime.manifest import KernelEntry
from runtime.projection import projection_plans, quantize_plans
from runtime.route import RouteLedger
from runtime.select import Availability, Decision, Levers
from runtime.tensors import DeviceArray
from runtime.weights import FormatError, Fp8Weight
from runtime.workspace import Workspace

__all__ = ["load", "Runtime", "Workspace", "DeviceArray", "Fp8Weight", "Decision", "dense_ffn_prefill",
           "Fp8genError", "CatalogError", "RenderError", "CompileError", "LoadError", "LaunchError",
           "ValidationError", "FormatError"]


# distinct decide() questions remembered per runtime; then the memo starts over
DECISIONS_REMEMBERED = 4096


class Runtime:
    """The kernels of one device. Every op validates, then launches on
    `stream` without allocating or synchronizing (CUDA-graph capturable)."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.device = ctx.ordinal
        self.arch = ctx.arch
        self._loaded = {k.name: k for ks in ctx.kernels.values() for k in ks}
        self.entries = {fam: [k.entry for k in ks] for fam, ks in ctx.kernels.items()}
        self.ledger = RouteLedger()
        hardware = cached_hardware(self.arch)
        self.dispatch = DispatchTable(hardware.dispatch, hardware.rates, self._ranker(hardware))
        self._unsplit: Dict[str, List[KernelEntry]] = {}  # per family: the instances that need no workspace
        self._decisions: Dict[tuple, Decision] = {}
        self._decided_with = self.dispatch
        self.levers = Levers.from_defaults(hardware.defaults)

    def _ranker(self, hardware) -> Optional[Ranker]:
        """Ranks the rated instances for shapes without rules ([rates]): on
        this device's SM count, with each split instance's host-shim rule."""
        if not hardware.wave_model:
            return None

        def k_split(entry: KernelEntry):
            shim = self._loaded[entry.name].shim
            return shim.k_split if shim is not None and shim.split else None
        return Ranker({name: k.entry for name, k in self._loaded.items()}, self.ctx.sm_count,
                      float(hardware.wave_model["call_cost_us"]), k_split)

    def loaded(self, name: str):
        """The loaded kernel `name` (its manifest entry, function and host
        shim), for tools that inspect it or swap its function (gen probe)."""
        try:
            return self._loaded[name]
        except KeyError:
            raise LoadError(f"no kernel named {name!r} is built for {self.arch}") from None

    def pick(self, family: str, m: int, n: int, k: int) -> str:
        """The instance the measured dispatch table (else the tile rule) picks."""
        return choose(self.entries[family], self.dispatch, m, n, k).name

    def _gemm_instance(self, family: str, a, w, workspace: Optional[Workspace] = None,
                       m: Optional[int] = None) -> Optional[str]:
        """Dispatch for direct GEMM calls (m: the rows computed, default
        a's); shape errors are left to validation. A split-K pick needs room
        in `workspace`; without it, the pick among the instances that need
        none."""
        try:
            m, n, k = a.shape[0] if m is None else int(m), w.shape[0], w.shape[1]
            found = self.entries[family]
            picked = choose(found, self.dispatch, m, n, k)
            if splitk.is_split(picked) and not (workspace is not None and workspace.fits_split(m, n, picked)):
                if family not in self._unsplit:
                    self._unsplit[family] = splitk.unsplit(found)
                picked = choose(self._unsplit[family], self.dispatch, m, n, k)
            return picked.name
        except (AttributeError, IndexError, KeyError, TypeError, ValueError, OverflowError):
            return None

    def run_plan(self, plan: "ops.Launch", stream) -> None:
        launch_kernel(self.ctx, self._loaded[plan.kernel.name], plan.grid, plan.args, stream)

    # -- routing -------------------------------------------------------------
    def decide(self, m: int, n: int, k: int, weight_format: str = "block", *, tp: int = 1,
               parallel: str = "column", workspace: Optional[Workspace] = None,
               out_rows: Optional[int] = None) -> Decision:
        """The selection rule for a projection [n, k] at m tokens on this device.
        Remembered per distinct question: the rule is pure, and working it out
        costs a call over 100 us of host time (a small-M GEMM takes less on
        the GPU)."""
        if self.dispatch is not self._decided_with:  # the table was swapped (tests do): start over
            self._decisions.clear()
            self._decided_with = self.dispatch
        key = (m, n, k, weight_format, tp, parallel, out_rows, knobs(),
               workspace.capacity() if workspace is not None else None)
        found = self._decisions.get(key)
        if found is None:
            found = self._decide(m, n, k, weight_format, tp=tp, parallel=parallel, workspace=workspace,
                                 out_rows=out_rows)
            if len(self._decisions) >= DECISIONS_REMEMBERED:
                self._decisions.clear()
            self._decisions[key] = found
        return found

    def _decide(self, m: int, n: int, k: int, weight_format: str, *, tp: int, parallel: str,
                workspace: Optional[Workspace], out_rows: Optional[int]) -> Decision:
        return select.decide(m, n, k, weight_format=weight_format, knobs=knobs(), levers=self.levers,
                             available=Availability(quantizer=bool(self.entries.get("quant_group")),
                                                    scratch=workspace is not None and workspace.fits(m, k),
                                                    split_room=lambda e, m_, n_: workspace is not None
                                                    and workspace.fits_split(m_, n_, e)),
                             entries=self.entries, arch=self.arch, tp=tp, parallel=parallel, out_rows=out_rows,
                             dispatch=self.dispatch)

    def linear(self, x, weight: Fp8Weight, out, workspace: Optional[Workspace] = None, *,
               stream=None) -> Decision:
        """out = x @ weight^T through the arm the selection rule picks (logged
        once per route, counted in self.ledger). Returns the decision."""
        self.ledger.entry()
        op = "linear"
        if not isinstance(weight, Fp8Weight):
            v.fail(op, f"weight must be a runtime.Fp8Weight (Fp8Weight.from_checkpoint), got {type(weight).__name__}")
        x = v.matrix(op, "x", x)
        M, K = x.shape
        if K != weight.k:
            self.ledger.count("bad_shape")
            v.fail(op, f"x has K={K}, the weight has K={weight.k}")
        out_rows = v.matrix(op, "out", out).shape[0]
        d = self.decide(M, weight.n, weight.k, weight.format, workspace=workspace, out_rows=out_rows)
        self.ledger.record(d)
        plans = []
        q = s = None
        if d.w8a8:
            plans, q, s = quantize_plans(self.entries, d, x, workspace, self.device, weight)
        plans += projection_plans(self.entries, d, x=x, q=q, scale=s, weight=weight, out=out, device=self.device,
                                  workspace=workspace)
        for p in plans:
            self.run_plan(p, stream)
        return d

    def copy_to_host(self, arr: DeviceArray):
        """A device array's values on the host (a synchronizing copy: load
        time only, never on a launch path)."""
        import numpy as np

        from runtime.driver import check, driver
        from runtime.tensors import ITEMSIZE

        np_dtype = {"f32": np.float32, "u8": np.uint8, "e4m3": np.uint8, "i32": np.int32}[arr.dtype]
        host = np.empty(arr.shape, dtype=np_dtype)
        if not arr.is_contiguous():
            raise ValidationError("copy_to_host needs a contiguous array")
        with self.ctx.current():
            check(driver.cuMemcpyDtoH(host.ctypes.data, arr.ptr, arr.numel * ITEMSIZE[arr.dtype]), "cuMemcpyDtoH")
        return host

    def quant_group(self, x, q, scale, *, ue8m0: bool = False, eps: float = ops.DEFAULT_EPS,
                    mn_major: Optional[bool] = None, pad_scales: bool = True, stream=None):
        """mn_major: scale is [K/128, M_pad] (True) or [M, K/128] (False); read
        off the shape when omitted, and required when M == K/128. MN-major
        pad tokens' scales are written as 0 unless pad_scales is False."""
        self.run_plan(ops.quant_group(self.entries, x, q, scale, ue8m0=ue8m0, eps=eps, device=self.device,
                                      mn_major=mn_major, pad_scales=pad_scales), stream)

    def scale_mn_major(self, src, dst, *, stream=None):
        self.run_plan(ops.scale_mn_major(self.entries, src, dst, device=self.device), stream)

    def w8a8_mma(self, a, a_scale, w, w_scale, out, *, stream=None, instance: Optional[str] = None):
        a, w = v.matrix("w8a8_mma", "a", a), v.matrix("w8a8_mma", "weight", w)
        self.run_plan(ops.w8a8_mma(self.entries, a, a_scale, w, w_scale, out, device=self.device,
                               instance=instance or self._gemm_instance("w8a8_mma", a, w)), stream)

    def w8a8_cutlass(self, a, a_scale, w, w_scale, out, *, stream=None, instance: Optional[str] = None,
                     m: Optional[int] = None):
        """CUTLASS sm90 blockwise GEMM; a_scale is MN-major [K/128, M_pad];
        m as for w8a8_wgmma."""
        a, w = v.matrix("w8a8_cutlass", "a", a), v.matrix("w8a8_cutlass", "weight", w)
        self.run_plan(ops.w8a8_cutlass(self.entries, a, a_scale, w, w_scale, out, device=self.device,
                                       instance=instance or self._gemm_instance("w8a8_cutlass", a, w, m=m), m=m),
                      stream)

    def w8a8_wgmma(self, a, a_scale, w, w_scale, out, *, stream=None, instance: Optional[str] = None,
                   workspace: Optional[Workspace] = None, early_weights: bool = False, m: Optional[int] = None):
        """The raw-PTX sm_90a GEMM (TMA, wgmma, persistent); a_scale is
        MN-major [K/128, M_pad] like w8a8_cutlass's. Given a workspace made
        with max_n, the split-K instances (small M) may run. early_weights:
        the kernel just before this call on `stream` writes neither w nor
        w_scale, so the GEMM may start reading them before it waits for that
        kernel (see ops.w8a8_wgmma); rt.linear sets it itself. m: compute
        only a's first m rows, the rest being padding the kernel may read (a
        and a_scale padded to 128 rows run a partial last tile row faster;
        see ops.w8a8_wgmma)."""
        a, w = v.matrix("w8a8_wgmma", "a", a), v.matrix("w8a8_wgmma", "weight", w)
        self.run_plan(ops.w8a8_wgmma(self.entries, a, a_scale, w, w_scale, out, device=self.device,
                                     instance=instance or self._gemm_instance("w8a8_wgmma", a, w, workspace, m),
                                     workspace=workspace, early_weights=early_weights, m=m), stream)

    def quant_tensor(self, x, q, state, *, w_scale=None, eps: float = ops.DEFAULT_EPS, stream=None):
        """Per-tensor quantization in three device steps (no host sync); see ops.quant_tensor."""
        for plan in ops.quant_tensor(self.entries, x, q, state, w_scale=w_scale, eps=eps, device=self.device):
            self.run_plan(plan, stream)

    def quant_token(self, x, q, scale, *, eps: float = ops.DEFAULT_EPS, stream=None):
        """Per-token quantization: scale[M], one per row."""
        self.run_plan(ops.quant_token(self.entries, x, q, scale, eps=eps, device=self.device), stream)

    def nvfp4_to_fp8(self, packed, block_scale, global_scale, q, state, *, stream=None):
        """NVFP4 weight -> single-scale e4m3; the chosen scale lands in state[1]."""
        for plan in ops.nvfp4_to_fp8(self.entries, packed, block_scale, global_scale, q, state, device=self.device):
            self.run_plan(plan, stream)

    def w8a8_row(self, a, a_scale, w, w_scale, out, *, stream=None, instance: Optional[str] = None,
                 early_weights: bool = False, m: Optional[int] = None):
        """Per-row W8A8: per-token a_scale[M] x per-channel w_scale[N]
        (early_weights and m: as for w8a8_wgmma)."""
        a, w = v.matrix("w8a8_row", "a", a), v.matrix("w8a8_row", "weight", w)
        self.run_plan(ops.w8a8_row(self.entries, a, a_scale, w, w_scale, out, device=self.device,
                                   instance=instance or self._gemm_instance("w8a8_row", a, w, m=m),
                                   early_weights=early_weights, m=m), stream)

    def w8a8_tensor(self, a, scale, w, out, *, stream=None, instance: Optional[str] = None,
                    early_weights: bool = False, m: Optional[int] = None):
        """Per-tensor W8A8: out = (a . w) * scale, scale a device f32 scalar
        (early_weights and m: as for w8a8_wgmma)."""
        a, w = v.matrix("w8a8_tensor", "a", a), v.matrix("w8a8_tensor", "weight", w)
        self.run_plan(ops.w8a8_tensor(self.entries, a, scale, w, out, device=self.device,
                                      instance=instance or self._gemm_instance("w8a8_tensor", a, w, m=m),
                                      early_weights=early_weights, m=m), stream)

    def w8a16_gemm(self, x, w, w_scale, out, *, stream=None, instance: Optional[str] = None):
        x, w = v.matrix("w8a16_gemm", "x", x), v.matrix("w8a16_gemm", "weight", w)
        self.run_plan(ops.w8a16_gemm(self.entries, x, w, w_scale, out, device=self.device,
                                 instance=instance or self._gemm_instance("w8a16_gemm", x, w)), stream)

    def w8a16_gemv(self, x, w, w_scale, out, *, stream=None):
        self.run_plan(ops.w8a16_gemv(self.entries, x, w, w_scale, out, device=self.device), stream)

    def fp8_dequant(self, weight: Fp8Weight, out, *, stream=None):
        """A BlockScaled128 weight as bf16 [N, K] (a bf16 fallback's weights);
        any other format is refused, naming both."""
        if not isinstance(weight, Fp8Weight):
            v.fail("fp8_dequant", f"weight must be a runtime.Fp8Weight, got {type(weight).__name__}")
        weight.expect("block", "fp8_dequant")
        self.run_plan(ops.fp8_dequant(self.entries, weight.weight, weight.scale, out, device=self.device), stream)

    def quant_silu_mul(self, gate, up, *, h=None, q=None, scale=None, ue8m0: bool = False,
                       eps: float = ops.DEFAULT_EPS, mn_major: Optional[bool] = None, pad_scales: bool = True,
                       stream=None):
        self.run_plan(ops.quant_silu_mul(self.entries, gate, up, h=h, q=q, scale=scale, ue8m0=ue8m0, eps=eps,
                                         device=self.device, mn_major=mn_major, pad_scales=pad_scales), stream)

    def linear_w8a8(self, x, w, w_scale, out, workspace: Workspace, *, stream=None):
        """Quantize bf16 x into the workspace, then the in-tree W8A8 GEMM."""
        x = ops.v.matrix("linear_w8a8", "x", x)
        M, K = x.shape
        q, s = workspace.quantized(M, K), workspace.scales(M, K)
        # Plan both launches before running either: a bad weight must not
        # leave a half-done op behind.
        quant = ops.quant_group(self.entries, x, q, s, device=self.device, mn_major=False)
        gemm = ops.w8a8_mma(self.entries, q, s, w, w_scale, out, device=self.device)
        self.run_plan(quant, stream)
        self.run_plan(gemm, stream)

    def workspace(self, max_m: int, max_k: int, ffn_intermediate: int = 0, max_n: int = 0) -> Workspace:
        """Scratch for up to max_m tokens (see runtime.Workspace); max_n > 0
        also sizes it for the split-K GEMMs of projections up to max_n wide."""
        return Workspace(self, max_m, max_k, ffn_intermediate, max_n)


_lock = threading.Lock()
_runtimes: Dict[int, Runtime] = {}


def load(device: Optional[int] = None) -> Runtime:
    """The runtime of CUDA device `device` (default: the current context's
    device, else 0), loading its kernels on first use; cached per device."""
    from runtime.driver import check, driver, init
    from runtime.loader import DeviceContext

    init()
    if device is None:
        ctx = check(driver.cuCtxGetCurrent(), "cuCtxGetCurrent", error=LoadError)
        device = int(check(driver.cuCtxGetDevice(), "cuCtxGetDevice", error=LoadError)) if int(ctx) else 0
    with _lock:
        if device not in _runtimes:
            _runtimes[device] = Runtime(DeviceContext(device))
        return _runtimes[device]
