"""Launch-time checks. Each failure names the op, the argument and the broken
requirement, and raises before anything is launched."""
from __future__ import annotations

import math
from typing import Optional, Sequence, Tuple

from runtime.errors import ValidationError
from runtime.tensors import DeviceArray, as_device_array

# e4m3 operands: a float8_e4m3fn array, or its raw bytes (a uint8 view), for
# producers that cannot export float8 through DLPack.
E4M3 = ("e4m3", "u8")
BF16 = ("bf16",)
F32 = ("f32",)

BLOCK = 128
# The kernels and host shims take sizes and leading dimensions as 32-bit ints.
INT32_MAX = 2**31 - 1


def is_real(x) -> bool:
    """A finite int or float (not a bool, a string or None)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return False
    try:
        return math.isfinite(x)
    except OverflowError:  # an int past float's range
        return False


def fail(op: str, message: str) -> None:
    raise ValidationError(f"{op}: {message}")


def require(op: str, condition: bool, message: str) -> None:
    if not condition:
        fail(op, message)


def array(op: str, name: str, obj, *, dtypes: Sequence[str], shape: Tuple[int, ...], align: int = 16,
          device: Optional[int] = None, output: bool = False) -> DeviceArray:
    """Adapts `obj` and checks dtype, exact shape, row-major contiguity,
    alignment and device. (Messages are formatted only on failure: this runs
    on every launch.)"""
    arr = as_device_array(obj, f"{op}: {name}")
    if arr.dtype not in dtypes:
        fail(op, f"{name} must be {' or '.join(dtypes)}, got {arr.dtype}")
    if arr.shape != tuple(shape):
        fail(op, f"{name} must have shape {tuple(shape)}, got {arr.shape}")
    if not arr.is_contiguous():
        fail(op, f"{name} must be contiguous row-major, got strides {arr.strides} for shape {arr.shape}")
    if arr.ptr == 0 and arr.numel:
        fail(op, f"{name} is a null pointer")
    if arr.ptr % align:
        fail(op, f"{name} must be {align}-byte aligned, its address is {arr.ptr:#x}")
    if device is not None and arr.device is not None and arr.device != device:
        fail(op, f"{name} is on cuda:{arr.device}, this runtime runs on cuda:{device}")
    if output and arr.readonly:
        fail(op, f"{name} is written by the kernel but its producer marked it read-only")
    return arr


def matrix(op: str, name: str, obj, ndim: int = 2) -> DeviceArray:
    """Adapts `obj` once (DLPack export is the costly part of a launch) and
    checks its rank; exact checks follow on the returned DeviceArray."""
    arr = obj if isinstance(obj, DeviceArray) else as_device_array(obj, f"{op}: {name}")
    if len(arr.shape) != ndim:
        fail(op, f"{name} must be {ndim}-D, got shape {arr.shape}")
    for size in arr.shape:  # (a loop: a third of all()'s cost on every launch)
        if not 0 <= size <= INT32_MAX:
            fail(op, f"{name}'s sizes must be in 0..{INT32_MAX} (the kernels take 32-bit sizes), got {arr.shape}")
    return arr


def gemm_dims(op: str, x: DeviceArray, w: DeviceArray, *, k_multiple: int = BLOCK,
              n_multiple: int = 16) -> Tuple[int, int, int]:
    M, K = x.shape
    N, Kw = w.shape
    require(op, K == Kw, f"activation has K={K} but weight has K={Kw}")
    require(op, M >= 1, f"M must be >= 1, got {M}")
    require(op, N >= 1 and K >= 1, f"N and K must be >= 1, got N={N}, K={K}")
    require(op, K % k_multiple == 0, f"K must be a multiple of {k_multiple}, got {K}")
    require(op, N % n_multiple == 0, f"N must be a multiple of {n_multiple}, got {N}")
    return M, N, K


def weight_scale_shape(N: int, K: int) -> Tuple[int, int]:
    """The checkpoint's 128x128 block grid: [ceil(N/128), K/128]."""
    return (-(-N // BLOCK), K // BLOCK)
