"""The one launch helper: named arguments packed by the manifest's ABI, then
cuLaunchKernelEx. No allocation on the device, no synchronization."""
from __future__ import annotations

import ctypes
from typing import Dict

from runtime.driver import check, driver
from runtime.env import knobs
from runtime.errors import LaunchError
from runtime.loader import LoadedKernel
from runtime.validate import INT32_MAX

_PACK = {"ptr": ctypes.c_uint64, "i32": ctypes.c_int32, "f32": ctypes.c_float}


def stream_handle(stream) -> int:
    """None (legacy default stream), an int handle, a `__cuda_stream__`
    object, or a torch/cupy stream."""
    if stream is None:
        return 0
    if isinstance(stream, int):
        return stream
    if hasattr(stream, "__cuda_stream__"):
        return int(stream.__cuda_stream__()[1])
    for attr in ("cuda_stream", "ptr", "handle"):
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    try:
        return int(stream)  # a CUstream
    except TypeError:
        raise LaunchError(f"cannot take a CUDA stream from a {type(stream).__name__}") from None


def pack(kernel: LoadedKernel, args: Dict[str, object]):
    abi = kernel.entry.abi
    names = [n for n, _ in abi]
    if set(args) != set(names):
        raise LaunchError(f"{kernel.name}: launch arguments {sorted(args)} do not match its ABI {names}")
    values = []
    for name, kind in abi:
        v = args[name]
        if kind == "blob":  # a ctypes buffer the host shim filled: passed by value
            values.append(v)
            continue
        if kind == "i32" and not -INT32_MAX - 1 <= int(v) <= INT32_MAX:
            raise LaunchError(f"{kernel.name}: {name}={v} does not fit the kernel's 32-bit parameter")
        values.append(_PACK[kind](v))
    pointers = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
    return values, pointers


def launch(ctx, kernel: LoadedKernel, grid, args: Dict[str, object], stream) -> None:
    if kernel.shim is not None:  # CUTLASS: the shim turns the plan's arguments into Params and a grid
        with kernel.shim.lock:
            params, grid = kernel.shim.prepare(args, kernel.resident_ctas or ctx.sm_count)
            _launch(ctx, kernel, grid, {"params": params}, stream)
        return
    _launch(ctx, kernel, grid, args, stream)


def launch_config(kernel: LoadedKernel, grid, stream=None):
    """The driver's launch configuration: grid, block, dynamic shared memory
    and, for cluster kernels, the cluster shape."""
    cfg = driver.CUlaunchConfig()
    cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid
    cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = kernel.entry.threads, 1, 1
    cfg.sharedMemBytes = kernel.entry.dynamic_smem
    cfg.hStream = driver.CUstream(stream_handle(stream))
    attrs = []
    cluster = kernel.entry.cluster
    if tuple(cluster) != (1, 1, 1):
        attr = driver.CUlaunchAttribute()
        attr.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = cluster
        attrs.append(attr)
    if kernel.entry.pdl and not knobs().no_pdl:
        # The kernel may launch while the previous one on the stream runs
        # (its CTAs take SMs as they free up, its prologue overlaps that
        # kernel's tail); it waits for that kernel's memory itself.
        attr = driver.CUlaunchAttribute()
        attr.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
        attr.value.programmaticStreamSerializationAllowed = 1
        attrs.append(attr)
    if attrs:
        cfg.attrs = attrs
    cfg.numAttrs = len(attrs)
    return cfg


# Launch configurations remembered per (instance, grid, stream, PDL knob):
# building the driver's structures took about 10 us of host time per call
# (H200 host, cProfile). A config is only read by the driver, so one object
# serves every launch with its key; the memo starts over when full.
CONFIGS_REMEMBERED = 1024
_configs: Dict[tuple, object] = {}


def cached_config(kernel: LoadedKernel, grid, stream=None):
    key = (kernel.name, tuple(grid), stream_handle(stream), knobs().no_pdl)
    cfg = _configs.get(key)
    if cfg is None:
        cfg = launch_config(kernel, grid, stream)
        if len(_configs) >= CONFIGS_REMEMBERED:
            _configs.clear()
        _configs[key] = cfg
    return cfg


def _launch(ctx, kernel: LoadedKernel, grid, args: Dict[str, object], stream) -> None:
    if min(grid) < 1:
        raise LaunchError(f"{kernel.name}: empty grid {grid}")
    values, pointers = pack(kernel, args)
    cfg = cached_config(kernel, grid, stream)
    with ctx.current():
        check(driver.cuLaunchKernelEx(cfg, kernel.function, ctypes.addressof(pointers), 0), "cuLaunchKernelEx",
              kernel=kernel.name)
    del values  # kept alive until the driver has copied the arguments
