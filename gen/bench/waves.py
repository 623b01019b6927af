"""The dispatch table between measured M (gen tune): which instance a
persistent GEMM should run at an M no record timed.

A persistent instance runs its tiles in rounds of one tile per SM (a 2-CTA
pair takes two neighbouring tiles; a cluster K split puts one tile on
several CTAs; a K-slicing instance cuts the last round's tiles into slices).
A tile costs the same whether M fills it or not, so between two measured M
an instance's time moves with its round count, not with M. At an unmeasured
M the table takes the instance with the least predicted time,
    t(M) = c0 + (t(M_ref) - c0) * rounds(M) / rounds(M_ref),
from its time at M_ref, the nearest measured M at or above (the last
measured M past the end); c0 is a call's fixed cost ([wave_model] in
HARDWARE.toml). Predicted points sit on every multiple of 64 between the
measured ones: for tiles 64 or 128 rows high, an M in (64 j - 64, 64 j]
has the round count of 64 j, so the bucket rule (m <= m_max) needs no
finer grid.

Checked against held-out all-instance records (README, "Between the
measured M"): the routed instance's time over the best instance's there.
"""
from __future__ import annotations

from typing import Callable, Dict, Optional, Sequence

from runtime.manifest import KernelEntry

STEP = 64  # predicted buckets: every multiple of the smallest tile height
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


def predict(times_at_ref: Dict[str, float], m_ref: int, m: int, n: int, k: int,
            entries: Dict[str, KernelEntry], sm_count: int, call_cost_us: float,
            k_split: Callable[[KernelEntry], Optional[Callable]]) -> Dict[str, float]:
    """Predicted time at m of each instance timed at m_ref (persistent ones only)."""
    out = {}
    for name, us in times_at_ref.items():
        e = entries.get(name)
        if e is None or not persistent(e):
            continue
        split = k_split(e)
        r_ref, r = rounds(e, m_ref, n, k, sm_count, split), rounds(e, m, n, k, sm_count, split)
        out[name] = call_cost_us + max(us - call_cost_us, 0.0) * r / r_ref
    return out


def fill_in(measured: Dict[int, Dict[str, float]], n: int, k: int, entries: Dict[str, KernelEntry],
            sm_count: int, call_cost_us: float,
            k_split: Callable[[KernelEntry], Optional[Callable]]) -> Dict[int, str]:
    """{M: instance} at every multiple of STEP between the measured M (and
    below the first), predicted; the measured M themselves are left to the
    caller. An M where no timed instance is persistent gets no entry."""
    ms = sorted(measured)
    picks: Dict[int, str] = {}
    for m in range(STEP, ms[-1], STEP):
        if m in measured:
            continue
        m_ref = next(x for x in ms if x >= m)
        est = predict(measured[m_ref], m_ref, m, n, k, entries, sm_count, call_cost_us, k_split)
        if est:
            picks[m] = min(est, key=est.get)
    return picks


def shim_splits(build_dir, entries: Sequence[KernelEntry]) -> Callable[[KernelEntry], Optional[Callable]]:
    """k_split for fill_in: each K-slicing instance's host-shim rule, loaded
    from the build once (None for the instances that do not slice)."""
    from runtime.loader import HostShim

    loaded: Dict[str, Optional[Callable]] = {}

    def of(entry: KernelEntry) -> Optional[Callable]:
        if entry.name not in loaded:
            split = int(entry.constraints.get("k_slices", 1)) > 1 and entry.shim
            loaded[entry.name] = HostShim(build_dir / entry.shim, entry).k_split if split else None
        return loaded[entry.name]
    return of


def for_arch(arch: str, entries: Sequence[KernelEntry], build_dir) -> Optional[Callable]:
    """gen tune's fill_in for `arch` ([wave_model] of its HARDWARE.toml), or
    None where the arch has no [wave_model]."""
    from runtime.hardware import load_hardware

    model = load_hardware(arch).wave_model
    if not model:
        return None
    by_name = {e.name: e for e in entries}
    splits = shim_splits(build_dir, entries)
    sm_count, call_cost_us = int(model["sm_count"]), float(model["call_cost_us"])

    def fill(measured: Dict[int, Dict[str, float]], n: int, k: int) -> Dict[int, str]:
        return fill_in(measured, n, k, by_name, sm_count, call_cost_us, splits)
    return fill
