"""Caller-owned scratch: allocated once, up front, never on the launch path."""
from __future__ import annotations

import weakref

from runtime import splitk
from runtime.driver import check, driver
from runtime.errors import ValidationError
from runtime.tensors import DeviceArray

_BLOCK = 128
_ALIGN = 256


def _up(n: int) -> int:
    return -(-n // _ALIGN) * _ALIGN


# The fast GEMMs' operands have room for M rounded up to the tallest tile:
# a partial last tile row then copies rows that exist instead of having the
# copy engine fill them with zeros, which is slow (ops.w8a8_wgmma).
ROW_PAD = 128


def padded_rows(m: int) -> int:
    return -(-m // ROW_PAD) * ROW_PAD


def _free(ctx, ptr: int) -> None:
    with ctx.current():
        check(driver.cuMemFree(ptr), "cuMemFree")


class Workspace:
    """Scratch for up to `max_m` tokens: the activation quantization of up to
    `max_k` channels (e4m3 bytes + token-major f32 scales) and, when
    `ffn_intermediate` is given, the dense FFN's gate and up outputs (bf16).
    The FFN's down projection quantizes into the same quantization region,
    after the gate/up GEMMs have read it (stream order).

    With `max_n`, it also holds what the split-K GEMM instances need for
    projections up to `max_n` wide: per-tile counters (zeroed here, once;
    every launch leaves them zero) and the K slices' FP32 partial tiles.
    Without it, those instances are not chosen. GEMMs sharing a workspace
    must run in one stream's order (as for every region here)."""

    def __init__(self, rt, max_m: int, max_k: int, ffn_intermediate: int = 0, max_n: int = 0):
        if max_m < 1 or max_k < _BLOCK or max_k % _BLOCK or ffn_intermediate % _BLOCK or ffn_intermediate < 0 \
                or max_n < 0:
            raise ValidationError(f"Workspace needs max_m >= 1, max_k and ffn_intermediate multiples of {_BLOCK} "
                                  f"and max_n >= 0; got max_m={max_m}, max_k={max_k}, "
                                  f"ffn_intermediate={ffn_intermediate}, max_n={max_n}")
        self.rt, self.max_m, self.max_k, self.ffn_intermediate = rt, max_m, max_k, ffn_intermediate
        self.max_n = max_n
        # the largest split-K need of any built instance at (max_m, max_n)
        split = [splitk.needs(e, max_m, max_n, splitk.ANY_K) for es in rt.entries.values() for e in es
                 if max_n and splitk.is_split(e)]
        self.counter_slots = max((c for c, _ in split), default=0)
        self.partial_bytes = max((b for _, b in split), default=0)
        self.quant_k = max(max_k, ffn_intermediate)
        rows = padded_rows(max_m)
        q_bytes = _up(rows * self.quant_k)
        # room for MN-major scales too: [K/128, M_pad], M padded to ROW_PAD tokens
        s_bytes = _up(rows * (self.quant_k // _BLOCK) * 4)
        ffn_bytes = _up(max_m * ffn_intermediate * 2)
        state = q_bytes + s_bytes + 2 * ffn_bytes
        counters = state + _ALIGN
        partials = counters + _up(4 * self.counter_slots)
        self._offsets = {"q": 0, "scale": q_bytes, "gate": q_bytes + s_bytes, "up": q_bytes + s_bytes + ffn_bytes,
                         "state": state, "counters": counters, "partials": partials}
        self.nbytes = partials + _up(self.partial_bytes)
        with rt.ctx.current():
            self._ptr = int(check(driver.cuMemAlloc(self.nbytes), "cuMemAlloc"))
            # the per-tensor state and the split-K counters start at zero (the
            # amax slot and the counts must), and the quantization's padding
            # rows, which the fast GEMMs read but never store from, start as
            # defined values; set once, here
            check(driver.cuMemsetD8(self._ptr, 0, partials), "cuMemsetD8")
        # Freed by close(), or when the workspace is garbage-collected.
        self._finalizer = weakref.finalize(self, _free, rt.ctx, self._ptr)

    def capacity(self) -> tuple:
        """Everything fits() and fits_split() read: equal capacities answer
        them alike (the runtime keys its remembered decisions on this)."""
        return bool(self._ptr), self.max_m, self.quant_k, self.counter_slots, self.partial_bytes

    def fits(self, M: int, K: int) -> bool:
        """Whether a call with M tokens of K channels has room here."""
        return bool(self._ptr) and M <= self.max_m and K <= self.quant_k

    def fits_split(self, M: int, N: int, entry) -> bool:
        """Whether this workspace holds what `entry` (a split-K instance) needs at (M, N)."""
        slots, nbytes = splitk.needs(entry, M, N, splitk.ANY_K)
        return bool(self._ptr) and slots <= self.counter_slots and nbytes <= self.partial_bytes

    def split_args(self, entry, M: int, N: int, K: int) -> dict:
        """The split-K launch arguments of `entry` at (M, N, K) (none when it does not split)."""
        slots, nbytes = splitk.needs(entry, M, N, K)
        if not slots:
            return {}
        if not self._ptr:
            raise ValidationError("workspace was closed")
        if slots > self.counter_slots or nbytes > self.partial_bytes:
            raise ValidationError(f"{entry.name} at M={M}, N={N} needs {slots} tile counters and {nbytes} bytes of "
                                  f"partial tiles; this workspace (max_m={self.max_m}, max_n={self.max_n}) holds "
                                  f"{self.counter_slots} and {self.partial_bytes}")
        return dict(counters=self._ptr + self._offsets["counters"], counter_slots=self.counter_slots,
                    partials=self._ptr + self._offsets["partials"], partial_bytes=self.partial_bytes)

    def _view(self, region: str, M: int, K: int, limit_k: int, shape, dtype: str) -> DeviceArray:
        if not self._ptr:
            raise ValidationError("workspace was closed")
        if M > self.max_m or K > limit_k:
            raise ValidationError(f"workspace {region} region holds {self.max_m}x{limit_k}, the call needs {M}x{K}")
        return DeviceArray.raw(self._ptr + self._offsets[region], shape, dtype, device=self.rt.device)

    def quantized(self, M: int, K: int) -> DeviceArray:
        return self._view("q", M, K, self.quant_k, (M, K), "e4m3")

    def gemm_operand(self, q: DeviceArray) -> DeviceArray:
        """`q`, if it is this workspace's quantization [M, K], with the
        padding rows its region holds past M ([padded_rows(M), K]; the fast
        GEMMs take it with m=M); any other array unchanged."""
        if not isinstance(q, DeviceArray) or len(q.shape) != 2 or q.ptr != self._ptr + self._offsets["q"]:
            return q
        M, K = q.shape
        return self._view("q", M, K, self.quant_k, (padded_rows(M), K), "e4m3")

    def scales(self, M: int, K: int) -> DeviceArray:
        return self._view("scale", M, K, self.quant_k, (M, K // _BLOCK), "f32")

    def scales_mn_major(self, M: int, K: int) -> DeviceArray:
        """The same region as MN-major [K/128, M_pad] (M_pad = padded_rows(M))."""
        return self._view("scale", M, K, self.quant_k, (K // _BLOCK, padded_rows(M)), "f32")

    def token_scales(self, M: int, K: int) -> DeviceArray:
        """The scale region as per-token scales [M] (the per-row W8A8 arm)."""
        return self._view("scale", M, K, self.quant_k, (M,), "f32")

    def tensor_state(self) -> DeviceArray:
        """The per-tensor quantizer's resident state, f32[4] (ops.quant_tensor)."""
        return self._view("state", 1, 0, 0, (4,), "f32")

    def tensor_scale(self) -> DeviceArray:
        """state[2], the per-tensor GEMM's output scale, as a device scalar."""
        return DeviceArray.raw(self.tensor_state().ptr + 8, (), "f32", device=self.rt.device)

    def ffn_gate(self, M: int, intermediate: int) -> DeviceArray:
        return self._view("gate", M, intermediate, self.ffn_intermediate, (M, intermediate), "bf16")

    def ffn_up(self, M: int, intermediate: int) -> DeviceArray:
        return self._view("up", M, intermediate, self.ffn_intermediate, (M, intermediate), "bf16")

    def close(self) -> None:
        if self._ptr:
            self._finalizer()
            self._ptr = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
