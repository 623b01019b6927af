"""FP8 weights with their format: BlockScaled128, PerRow or PerTensor.

The format is read off the checkpoint's scale shape; crossing formats never
reaches a kernel (a smaller scale buffer read as a larger one is in bounds,
so only a check catches it)."""
from __future__ import annotations

import dataclasses
from typing import List, Optional, Tuple

import numpy as np

from runtime.errors import ValidationError
from runtime.select import FORMATS
from runtime.tensors import DeviceArray, as_device_array

BLOCK = "block"
ROW = "row"
TENSOR = "tensor"


class FormatError(ValidationError):
    """An op that takes one weight format was given another."""


def scale_formats(n: int, k: int, scale_shape: Tuple[int, ...]) -> List[str]:
    """Every format whose checkpoint scale has this shape."""
    found = []
    if k % 128 == 0 and tuple(scale_shape) == (-(-n // 128), k // 128):
        found.append(BLOCK)
    if tuple(scale_shape) in ((n,), (n, 1)):
        found.append(ROW)
    if tuple(scale_shape) in ((), (1,)):
        found.append(TENSOR)
    return found


def classify(n: int, k: int, scale_shape: Tuple[int, ...], declared: Optional[str] = None) -> str:
    found = scale_formats(n, k, scale_shape)
    if declared is not None:
        if declared not in FORMATS:
            raise ValidationError(f"format must be one of {sorted(FORMATS)}, got {declared!r}")
        if declared not in found:
            raise FormatError(f"weight [{n}, {k}] with scale shape {tuple(scale_shape)} is not "
                              f"{FORMATS[declared]}")
        return declared
    if not found:
        raise ValidationError(f"scale shape {tuple(scale_shape)} fits no format for a [{n}, {k}] weight: "
                              f"BlockScaled128 [{-(-n // 128)}, {k // 128}], PerRow [{n}], PerTensor []")
    if len(found) > 1:
        raise ValidationError(f"scale shape {tuple(scale_shape)} is ambiguous for a [{n}, {k}] weight "
                              f"({' or '.join(FORMATS[f] for f in found)}); pass format=")
    return found[0]


def bad_scale_values(values: np.ndarray) -> Optional[str]:
    """Why these scales are unusable (NaN, Inf, <= 0), or None."""
    v = np.asarray(values, dtype=np.float32)
    if np.isnan(v).any():
        return f"{int(np.isnan(v).sum())} NaN scale(s)"
    if np.isinf(v).any():
        return f"{int(np.isinf(v).sum())} infinite scale(s)"
    if (v <= 0).any():
        return f"{int((v <= 0).sum())} non-positive scale(s) (smallest {float(v.min())})"
    return None


@dataclasses.dataclass(frozen=True)
class Fp8Weight:
    """e4m3 weight bytes [N, K], their f32 scales and the scales' format."""
    weight: DeviceArray
    scale: DeviceArray
    format: str
    owners: Tuple[object, ...] = ()  # the caller's tensors, kept alive with this view

    @property
    def n(self) -> int:
        return self.weight.shape[0]

    @property
    def k(self) -> int:
        return self.weight.shape[1]

    @property
    def format_name(self) -> str:
        return FORMATS[self.format]

    def expect(self, fmt: str, op: str) -> "Fp8Weight":
        """Refuse any other format, naming both."""
        if self.format != fmt:
            raise FormatError(f"{op} takes {FORMATS[fmt]} weights; this weight is {self.format_name}")
        return self

    @classmethod
    def from_checkpoint(cls, weight, weight_scale_inv, *, rt=None, format: Optional[str] = None,
                        check_values: bool = True) -> "Fp8Weight":
        """Builds from checkpoint tensors; with `rt`, the scales are copied to
        the host once (a load-time sync, never on the launch path) and NaN,
        Inf or non-positive ones are refused and counted in rt.ledger."""
        w = as_device_array(weight, "weight")
        s = as_device_array(weight_scale_inv, "weight_scale_inv")
        if len(w.shape) != 2 or w.dtype not in ("e4m3", "u8"):
            raise ValidationError(f"weight must be a 2-D e4m3 (or uint8 bytes) array, got {w.dtype} {w.shape}")
        if s.dtype != "f32":
            raise ValidationError(f"weight_scale_inv must be float32, got {s.dtype}")
        if not (w.is_contiguous() and s.is_contiguous()):
            raise ValidationError("weight and weight_scale_inv must be contiguous")
        fmt = classify(w.shape[0], w.shape[1], s.shape, format)
        if check_values:
            if rt is None:
                raise ValidationError("from_checkpoint needs rt= to check the scale values "
                                      "(or check_values=False when they were checked elsewhere)")
            why = bad_scale_values(rt.copy_to_host(s))
            if why:
                rt.ledger.count("nan_refused")
                raise ValidationError(f"weight_scale_inv is unusable: {why}")
        return cls(w, s, fmt, (weight, weight_scale_inv))
