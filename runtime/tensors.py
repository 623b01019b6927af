"""Device arrays from torch (its accessors), cupy, jax and any other producer
(DLPack or __cuda_array_interface__), or from a raw pointer with an explicit
shape.

Nothing here copies, allocates or synchronizes: it reads the pointer, shape,
strides and dtype that the producer already has.
"""
from __future__ import annotations

import ctypes
import dataclasses
from typing import Optional, Sequence, Tuple

from runtime.errors import ValidationError

# Element sizes of the dtype names the runtime speaks.
ITEMSIZE = {"bf16": 2, "f16": 2, "f32": 4, "e4m3": 1, "u8": 1, "i8": 1, "u16": 2, "i32": 4, "i64": 8}


@dataclasses.dataclass(frozen=True)
class DeviceArray:
    """A view of device memory: pointer, shape and strides in elements."""
    ptr: int
    shape: Tuple[int, ...]
    strides: Tuple[int, ...]
    dtype: str
    device: Optional[int] = None  # CUDA ordinal when the producer says
    readonly: bool = False        # the producer's read-only flag (CUDA array interface)

    @classmethod
    def raw(cls, ptr: int, shape: Sequence[int], dtype: str, strides: Optional[Sequence[int]] = None,
            device: Optional[int] = None) -> "DeviceArray":
        """Wrap a raw device pointer; strides default to C-contiguous."""
        if dtype not in ITEMSIZE:
            raise ValidationError(f"unknown dtype {dtype!r}; one of {sorted(ITEMSIZE)}")
        shape = tuple(int(s) for s in shape)
        if not 0 <= int(ptr) < 2**64:
            raise ValidationError(f"a device pointer is a 64-bit address, got {int(ptr):#x}")
        if strides is not None and len(strides) != len(shape):
            raise ValidationError(f"strides {tuple(strides)} do not match the {len(shape)}-D shape {shape}")
        return cls(int(ptr), shape, tuple(strides) if strides is not None else contiguous_strides(shape),
                   dtype, device)

    @property
    def itemsize(self) -> int:
        return ITEMSIZE[self.dtype]

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def is_contiguous(self) -> bool:
        if len(self.strides) != len(self.shape):
            return False
        expected = 1
        for size, stride in zip(reversed(self.shape), reversed(self.strides)):
            if size == 0:
                return True
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True


def contiguous_strides(shape: Sequence[int]) -> Tuple[int, ...]:
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= s
    return tuple(reversed(strides))


# --- DLPack ----------------------------------------------------------------
class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class _DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensor)]


_DL_CUDA, _DL_CUDA_MANAGED = 2, 13
# (type code, bits) -> dtype name; codes from dlpack.h (kDLFloat8_e4m3fn = 10).
_DL_DTYPES = {(4, 16): "bf16", (2, 16): "f16", (2, 32): "f32", (1, 8): "u8", (0, 8): "i8", (1, 16): "u16",
              (0, 32): "i32", (0, 64): "i64", (10, 8): "e4m3"}

_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype = ctypes.c_char_p
_get_name.argtypes = [ctypes.py_object]


def _from_dlpack(obj, name: str) -> DeviceArray:
    try:
        capsule = obj.__dlpack__(stream=-1)  # -1: the consumer orders work itself; no sync
    except TypeError:
        capsule = obj.__dlpack__()
    cap_name = _get_name(capsule)
    # The capsule is never renamed "used_...": its destructor releases the
    # producer's handle when we drop it; the caller's object keeps the memory.
    if cap_name == b"dltensor_versioned":
        t = _DLManagedTensorVersioned.from_address(_get_pointer(capsule, cap_name)).dl_tensor
    elif cap_name == b"dltensor":
        t = _DLManagedTensor.from_address(_get_pointer(capsule, cap_name)).dl_tensor
    else:
        raise ValidationError(f"{name}: unknown DLPack capsule {cap_name!r}")
    if t.device.device_type not in (_DL_CUDA, _DL_CUDA_MANAGED):
        raise ValidationError(f"{name}: must be on a CUDA device (DLPack device type {t.device.device_type})")
    key = (t.dtype.code, t.dtype.bits)
    if key not in _DL_DTYPES or t.dtype.lanes != 1:
        raise ValidationError(f"{name}: unsupported dtype (DLPack code {key[0]}, {key[1]} bits)")
    dtype = _DL_DTYPES[key]
    shape = tuple(t.shape[i] for i in range(t.ndim))
    strides = tuple(t.strides[i] for i in range(t.ndim)) if t.strides else contiguous_strides(shape)
    return DeviceArray((t.data or 0) + t.byte_offset, shape, strides, dtype, t.device.device_id)


_CAI_DTYPES = {"<f4": "f32", "<f2": "f16", "|u1": "u8", "<u1": "u8", "|i1": "i8", "<i1": "i8", "<u2": "u16",
               "<i4": "i32", "<i8": "i64"}


def _from_cai(obj, name: str) -> DeviceArray:
    cai = obj.__cuda_array_interface__
    dtype = _CAI_DTYPES.get(cai["typestr"])
    if dtype is None:
        raise ValidationError(f"{name}: unsupported __cuda_array_interface__ typestr {cai['typestr']!r}")
    shape = tuple(cai["shape"])
    item = ITEMSIZE[dtype]
    if cai.get("strides") is None:
        strides = contiguous_strides(shape)
    else:
        if any(s % item for s in cai["strides"]):
            raise ValidationError(f"{name}: strides {cai['strides']} are not whole elements")
        strides = tuple(s // item for s in cai["strides"])
    return DeviceArray(int(cai["data"][0]), shape, strides, dtype, None, bool(cai["data"][1]))


_TORCH_DTYPES = {"torch.bfloat16": "bf16", "torch.float16": "f16", "torch.float32": "f32", "torch.uint8": "u8",
                 "torch.int8": "i8", "torch.int32": "i32", "torch.int64": "i64", "torch.float8_e4m3fn": "e4m3",
                 "torch.uint16": "u16"}


def _from_torch(obj, name: str) -> DeviceArray:
    """torch.Tensor read through its own accessors: a few attribute reads
    instead of a DLPack export per launch. torch is never imported here."""
    if obj.device.type != "cuda":
        raise ValidationError(f"{name}: must be on a CUDA device, got {obj.device}")
    dtype = _TORCH_DTYPES.get(str(obj.dtype))
    if dtype is None:
        raise ValidationError(f"{name}: unsupported dtype {obj.dtype}")
    return DeviceArray(obj.data_ptr(), tuple(obj.shape), tuple(obj.stride()), dtype, obj.device.index)


def as_device_array(obj, name: str) -> DeviceArray:
    """Accepts a DeviceArray, any DLPack producer or any CUDA-array-interface
    object; raises ValidationError naming `name` otherwise."""
    if isinstance(obj, DeviceArray):
        return obj
    if type(obj).__module__.startswith("torch") and hasattr(obj, "data_ptr"):
        return _from_torch(obj, name)
    errors = []
    if hasattr(obj, "__dlpack__"):
        try:
            return _from_dlpack(obj, name)
        except ValidationError:
            raise
        except Exception as e:  # producer refused (e.g. a dtype it cannot export)
            errors.append(f"DLPack: {e}")
    if hasattr(obj, "__cuda_array_interface__"):
        try:
            return _from_cai(obj, name)
        except ValidationError:
            raise
        except Exception as e:
            errors.append(f"__cuda_array_interface__: {e}")
    detail = "; ".join(errors) or f"a {type(obj).__name__} has neither __dlpack__ nor __cuda_array_interface__"
    raise ValidationError(f"{name}: not a CUDA array ({detail}); pass a torch/cupy/jax array or "
                          f"runtime.DeviceArray.raw(ptr, shape, dtype)")
