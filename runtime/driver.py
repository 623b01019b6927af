"""The CUDA driver, through cuda-python, behind one `check()`.

Every driver call goes through `check`, which names the call, the kernel and
the error, and raises the stage's exception type.
"""
from __future__ import annotations

from typing import Any, Optional, Type

from runtime.errors import Fp8genError, LaunchError, LoadError

try:  # cuda-python >= 12.6 layout
    from cuda.bindings import driver
except ImportError:  # pragma: no cover - older cuda-python
    from cuda import cuda as driver  # type: ignore[no-redef]


def error_text(err) -> str:
    _, name = driver.cuGetErrorName(err)
    _, desc = driver.cuGetErrorString(err)
    decode = lambda b: b.decode() if isinstance(b, (bytes, bytearray)) else str(b)  # noqa: E731
    return f"{decode(name)} ({decode(desc)})"


def check(result, call: str, *, kernel: Optional[str] = None, error: Type[Fp8genError] = LaunchError) -> Any:
    """Unwraps a cuda-python result tuple; raises `error` on failure."""
    err, *values = result if isinstance(result, tuple) else (result,)
    if err != driver.CUresult.CUDA_SUCCESS:
        where = f" for kernel {kernel}" if kernel else ""
        raise error(f"{call}{where} failed: {error_text(err)}")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def init() -> None:
    try:
        result = driver.cuInit(0)
    except RuntimeError as e:  # cuda-python finds no libcuda (no NVIDIA driver here)
        raise LoadError(f"cuInit failed: the CUDA driver library could not be loaded ({e})") from e
    check(result, "cuInit", error=LoadError)


def device_count() -> int:
    init()
    return check(driver.cuDeviceGetCount(), "cuDeviceGetCount", error=LoadError)
