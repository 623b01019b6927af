"""Round counts of the persistent GEMM instances: how many rounds of one
tile per SM (in units of a whole tile's K) a call takes. gen tune predicts
its buckets between the measured M with them (gen/bench/waves.py), and the
dispatch table ranks instances with them for a shape it has no rule for
(runtime/dispatch.py): between two M, a tile costs the same whether M
fills it or not, so an instance's time moves with its round count.
"""
from __future__ import annotations

from typing import Callable, Optional

from runtime.errors import LaunchError, LoadError
from runtime.manifest import KernelEntry

# A split tail's cost in K blocks: the host shim's own estimate
# (w8a8_wgmma.cuh Shim::split_for, kSplitUnitCostBlocks), plus one block per
# extra slice for the sum.
SPLIT_TAIL_BLOCKS = 12


def persistent(entry: KernelEntry) -> bool:
    """Instances the model describes: Params-launched (a host shim sets a
    persistent grid of at most one CTA per SM) with a tile shape."""
    return bool(entry.shim) and "tile_m" in entry.constraints and "tile_n" in entry.constraints


def rounds(entry: KernelEntry, m: int, n: int, k: int, sm_count: int,
           k_split: Optional[Callable[[int, int, int, int], tuple]] = None) -> float:
    """Rounds of whole tiles a call at (m, n, k) takes, in units of one
    tile's full K: e.g. 2 full rounds and a last round cut into 4 K slices
    of 56 K blocks count 2 + (14 + 12 + 3) / 56. k_split(m, n, k, sms) ->
    (slices, whole) is the instance's host-shim rule (HostShim.k_split)."""
    c = entry.constraints
    tiles_m, tiles_n = -(-m // int(c["tile_m"])), -(-n // int(c["tile_n"]))
    cluster_k = int(c.get("cluster_k", 1))
    if cluster_k > 1:  # each tile on cluster_k CTAs, each 1/cluster_k of its K
        per_round = max(sm_count // cluster_k, 1)
        return -(-tiles_m * tiles_n // per_round) / cluster_k
    pair_m, pair_n = entry.cluster[0], entry.cluster[1]
    tiles_m += tiles_m % pair_m  # a pair's second CTA idles past the last tile row / column
    tiles_n += tiles_n % pair_n
    tiles = tiles_m * tiles_n
    full, rest = divmod(tiles, sm_count)
    if rest == 0:
        return float(full)
    kblocks = k // 128
    slices = 1
    if int(c.get("k_slices", 1)) > 1 and k_split is not None:
        slices, _ = k_split(m, n, k, sm_count)
    if slices <= 1:
        return float(full + 1)
    return full + min(1.0, (-(-kblocks // slices) + SPLIT_TAIL_BLOCKS + slices - 1) / kblocks)


class Ranker:
    """Ranks instances at a call by predicted time: c0 + rate x rounds x K
    blocks, with each instance's rate (us per tile round per 128-K block,
    HARDWARE.toml [rates]) measured on other shapes of the same class.
    k_split(entry) -> the instance's host-shim split rule, or None."""

    def __init__(self, entries, sm_count: int, call_cost_us: float,
                 k_split: Callable[[KernelEntry], Optional[Callable]]):
        self.entries = entries  # name -> KernelEntry
        self.sm_count, self.call_cost_us, self.k_split = sm_count, call_cost_us, k_split

    def estimate(self, rates, m: int, n: int, k: int, runs: Callable[[KernelEntry], bool]):
        """{instance: predicted us} for the rated instances that are loaded and run (n, k)."""
        out = {}
        for name, rate in rates.items():
            e = self.entries.get(name)
            if e is None or not persistent(e) or not runs(e):
                continue
            try:
                r = rounds(e, m, n, k, self.sm_count, self.k_split(e))
            except (LaunchError, LoadError):  # (a split rule that cannot plan this call, or is not built)
                continue
            out[name] = self.call_cost_us + rate * r * (k // 128)
        return out
