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

Checked against held-out all-instance records (hardware/sm_90a/HISTORY.md,
"Between the measured M"): the routed instance's time over the best
instance's there.
"""
from __future__ import annotations

import math
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from runtime.manifest import KernelEntry
from runtime.waves import SPLIT_TAIL_BLOCKS, persistent, rounds  # noqa: F401 (re-exported for gen)

STEP = 64  # predicted buckets: every multiple of the smallest tile height


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


RATE_TOP = 12  # instances kept per (shape class, measured M): the rest rarely win a shape


def class_rates(times: Dict[Tuple[int, int, int], Dict[str, float]], shape_class: Callable[[int, int], str],
                entries: Dict[str, KernelEntry], sm_count: int, call_cost_us: float,
                k_split: Callable[[KernelEntry], Optional[Callable]], top: int = RATE_TOP) -> List[Dict]:
    """For a shape no rule covers (runtime/dispatch.py), per shape class and
    measured M: each persistent instance's time per tile round per 128-K
    block, (t - c0) / (rounds x K blocks), geometric mean over the class's
    measured shapes (only instances timed at all of them; shape-specialized
    ones run one shape and are left out), keeping the `top` with the least
    geometric-mean slowdown against each shape's fastest there.
    -> [{shape_class, m, us: {instance: us per round-block}}] by class, m."""
    by: Dict[Tuple[str, int], List[Tuple[int, int, Dict[str, float]]]] = {}
    for (n, k, m), t in times.items():
        t = {i: us for i, us in t.items() if i in entries and persistent(entries[i])
             and not entries[i].constraints.get("fixed_n")}
        if t:
            by.setdefault((shape_class(n, k), m), []).append((n, k, t))
    out = []
    for (cls, m), shapes in sorted(by.items()):
        common = set.intersection(*(set(t) for _, _, t in shapes))
        if not common:
            continue
        slowdown = {i: sum(math.log(t[i] / min(t.values())) for _, _, t in shapes) for i in common}
        kept = sorted(common, key=lambda i: (slowdown[i], i))[:top]
        rates = {}
        for i in kept:
            e, split = entries[i], k_split(entries[i])
            logs = [math.log(max(t[i] - call_cost_us, 1e-3) / (rounds(e, m, n, k, sm_count, split) * (k // 128)))
                    for n, k, t in shapes]
            rates[i] = float(f"{math.exp(sum(logs) / len(logs)):.4g}")
        out.append({"shape_class": cls, "m": m, "us": rates})
    return out


class WaveModel:
    """The model bound to one arch's [wave_model], its manifest entries and
    the split instances' host shims."""

    def __init__(self, entries: Sequence[KernelEntry], sm_count: int, call_cost_us: float, k_split):
        self.entries = {e.name: e for e in entries}
        self.sm_count, self.call_cost_us, self.k_split = sm_count, call_cost_us, k_split

    def fill(self, measured: Dict[int, Dict[str, float]], n: int, k: int) -> Dict[int, str]:
        return fill_in(measured, n, k, self.entries, self.sm_count, self.call_cost_us, self.k_split)

    def rates(self, times, shape_class) -> List[Dict]:
        return class_rates(times, shape_class, self.entries, self.sm_count, self.call_cost_us, self.k_split)


def for_arch(arch: str, entries: Sequence[KernelEntry], build_dir) -> Optional[WaveModel]:
    """gen tune's model for `arch` ([wave_model] of its HARDWARE.toml), or
    None where the arch has no [wave_model]."""
    from runtime.hardware import load_hardware

    model = load_hardware(arch).wave_model
    if not model:
        return None
    return WaveModel(entries, int(model["sm_count"]), float(model["call_cost_us"]), shim_splits(build_dir, entries))
