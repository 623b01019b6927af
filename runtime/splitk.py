"""What a split-K GEMM instance needs from the workspace: one counter per
output tile and each K slice's FP32 partial tile. The host shim checks the
same sizes (templates/include/fp8gen/w8a8_wgmma.cuh, Shim::prepare) and
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


def needs(entry: KernelEntry, M: int, N: int, K: int) -> Tuple[int, int]:
    """(counter slots, partial-tile bytes) for a call at (M, N, K); (0, 0)
    when the call does not split."""
    s = slices(entry, K)
    if s < 2:
        return 0, 0
    bm, bn = int(entry.constraints["tile_m"]), int(entry.constraints["tile_n"])
    tiles = -(-M // bm) * -(-N // bn)
    return tiles, tiles * s * bm * bn * 4


def is_split(entry: KernelEntry) -> bool:
    return int(entry.constraints.get("k_slices", 1)) > 1


def unsplit(entries: List[KernelEntry]) -> List[KernelEntry]:
    """The instances that need no split-K workspace (all of them if none is)."""
    return [e for e in entries if not is_split(e)] or list(entries)
