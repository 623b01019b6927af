"""What a split-K or stream-K GEMM instance needs from the workspace: one
counter per output tile and FP32 partial tiles (split K: one per tile and
slice; stream-K: two per CTA, its first and last run). The host shim checks
the same sizes (templates/include/fp8gen/w8a8_wgmma.cuh, Shim::prepare) and
refuses a launch that gets less, so a disagreement cannot corrupt memory."""
from __future__ import annotations

from typing import List, Tuple

from runtime.manifest import KernelEntry

BLOCK_K = 128
# A K long enough that every instance uses all of its slices (for sizing).
ANY_K = 1 << 30


def slices(entry: KernelEntry, K: int) -> int:
    """K slices a call actually uses: the instance's most, at most one per K block."""
    return max(1, min(int(entry.constraints.get("k_slices", 1)), K // BLOCK_K))


def is_stream(entry: KernelEntry) -> bool:
    return bool(entry.constraints.get("stream_k"))


def needs(entry: KernelEntry, M: int, N: int, K: int, sm_count: int) -> Tuple[int, int]:
    """(counter slots, partial-tile bytes) for a call at (M, N, K) on
    sm_count SMs; (0, 0) when the call cannot cut K. Split K: room for the
    instance's most slices (the shim may use fewer)."""
    bm, bn = int(entry.constraints["tile_m"]), int(entry.constraints["tile_n"])
    tiles = -(-M // bm) * -(-N // bn)
    if not cuts_k(entry, K):
        return 0, 0
    if is_stream(entry):
        ctas = min(sm_count, tiles * max(1, K // BLOCK_K))
        return tiles, 2 * ctas * bm * bn * 4
    return tiles, tiles * slices(entry, K) * bm * bn * 4


def cuts_k(entry: KernelEntry, K: int) -> bool:
    """Whether a call with this K takes counters and partials (a stream-K
    instance always does; a split-K one when K has 2 blocks or more)."""
    return is_stream(entry) or slices(entry, K) > 1


def is_split(entry: KernelEntry) -> bool:
    """Whether the instance cuts K across CTAs (and so needs a workspace)."""
    return int(entry.constraints.get("k_slices", 1)) > 1 or is_stream(entry)


def unsplit(entries: List[KernelEntry]) -> List[KernelEntry]:
    """The instances that need no split-K workspace (all of them if none is)."""
    return [e for e in entries if not is_split(e)] or list(entries)
