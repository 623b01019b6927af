"""Caller-owned scratch: allocated once, up front, never on the launch path."""
from __future__ import annotations

from runtime.driver import check, driver
from runtime.errors import ValidationError
from runtime.tensors import DeviceArray

_BLOCK = 128


class Workspace:
    """Room for the activation quantization of up to `max_m` tokens of
    `max_k` channels: e4m3 bytes plus token-major f32 scales."""

    def __init__(self, rt, max_m: int, max_k: int):
        if max_m < 1 or max_k < _BLOCK or max_k % _BLOCK:
            raise ValidationError(f"Workspace needs max_m >= 1 and max_k a positive multiple of {_BLOCK}; "
                                  f"got max_m={max_m}, max_k={max_k}")
        self.rt, self.max_m, self.max_k = rt, max_m, max_k
        q_bytes = max_m * max_k
        s_bytes = max_m * (max_k // _BLOCK) * 4
        self._q_offset = 0
        self._s_offset = -(-q_bytes // 256) * 256
        self.nbytes = self._s_offset + s_bytes
        with rt.ctx.current():
            self._ptr = int(check(driver.cuMemAlloc(self.nbytes), "cuMemAlloc"))

    def _room(self, M: int, K: int) -> None:
        if M > self.max_m or K > self.max_k:
            raise ValidationError(f"workspace holds {self.max_m}x{self.max_k}, the call needs {M}x{K}")

    def quantized(self, M: int, K: int) -> DeviceArray:
        self._room(M, K)
        return DeviceArray.raw(self._ptr + self._q_offset, (M, K), "e4m3", device=self.rt.device)

    def scales(self, M: int, K: int) -> DeviceArray:
        self._room(M, K)
        return DeviceArray.raw(self._ptr + self._s_offset, (M, K // _BLOCK), "f32", device=self.rt.device)

    def close(self) -> None:
        if self._ptr:
            with self.rt.ctx.current():
                check(driver.cuMemFree(self._ptr), "cuMemFree")
            self._ptr = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
