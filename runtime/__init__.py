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
from typing import Dict, Optional

from runtime import ops
from runtime.errors import (CatalogError, CompileError, Fp8genError, LaunchError, LoadError, RenderError,
                            ValidationError)
from runtime.tensors import DeviceArray
from runtime.workspace import Workspace

__all__ = ["load", "Runtime", "Workspace", "DeviceArray", "Fp8genError", "CatalogError", "RenderError",
           "CompileError", "LoadError", "LaunchError", "ValidationError"]


class Runtime:
    """The kernels of one device. Every op validates, then launches on
    `stream` without allocating or synchronizing (CUDA-graph capturable)."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.device = ctx.ordinal
        self.arch = ctx.arch
        self._loaded = {k.name: k for ks in ctx.kernels.values() for k in ks}
        self.entries = {fam: [k.entry for k in ks] for fam, ks in ctx.kernels.items()}

    def _run(self, plan: "ops.Launch", stream) -> None:
        from runtime.launch import launch

        launch(self.ctx, self._loaded[plan.kernel.name], plan.grid, plan.args, stream)

    def quant_group(self, x, q, scale, *, ue8m0: bool = False, eps: float = ops.DEFAULT_EPS, stream=None):
        self._run(ops.quant_group(self.entries, x, q, scale, ue8m0=ue8m0, eps=eps, device=self.device), stream)

    def scale_mn_major(self, src, dst, *, stream=None):
        self._run(ops.scale_mn_major(self.entries, src, dst, device=self.device), stream)

    def w8a8_mma(self, a, a_scale, w, w_scale, out, *, stream=None):
        self._run(ops.w8a8_mma(self.entries, a, a_scale, w, w_scale, out, device=self.device), stream)

    def w8a16_gemm(self, x, w, w_scale, out, *, stream=None):
        self._run(ops.w8a16_gemm(self.entries, x, w, w_scale, out, device=self.device), stream)

    def w8a16_gemv(self, x, w, w_scale, out, *, stream=None):
        self._run(ops.w8a16_gemv(self.entries, x, w, w_scale, out, device=self.device), stream)

    def linear_w8a8(self, x, w, w_scale, out, workspace: Workspace, *, stream=None):
        """Quantize bf16 x into the workspace, then the in-tree W8A8 GEMM."""
        x = ops.v.matrix("linear_w8a8", "x", x)
        M, K = x.shape
        q, s = workspace.quantized(M, K), workspace.scales(M, K)
        # Plan both launches before running either: a bad weight must not
        # leave a half-done op behind.
        quant = ops.quant_group(self.entries, x, q, s, device=self.device)
        gemm = ops.w8a8_mma(self.entries, q, s, w, w_scale, out, device=self.device)
        self._run(quant, stream)
        self._run(gemm, stream)

    def workspace(self, max_m: int, max_k: int) -> Workspace:
        return Workspace(self, max_m, max_k)


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
