"""Bench records side by side (no GPU): several runs of the same binaries
(each run's targets, every point's ratio per run, how far the runs spread),
or an A/B of two sets of runs (new over base time per M range, per point
and, for all-instance records, per instance). The issue's closing notes
ask for the first; every scratch-build experiment needs the second."""
from __future__ import annotations

import math
import statistics
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from gen.bench.merge import arm_order, check_records, setup_differences
from gen.bench.report import BASELINE, FAST_ARMS, _fastest, _gemm_index, geomean

Point = Tuple[int, int, int]  # (N, K, M)
# The M ranges an A/B reports apart: memory-bound, one wave or so, many waves.
M_RANGES = ((1, 128), (129, 1024), (1025, 1 << 30))


def fast_times(doc: Dict, impls: Sequence[str] = FAST_ARMS) -> Tuple[Dict[Point, float], Dict[Point, float]]:
    """Per point: the fastest of `impls` (the fast path by default) and
    cuBLASLt block scaling, in microseconds."""
    ours, peer = {}, {}
    for point, arms in _gemm_index(doc["rows"]).items():
        fast = _fastest(arms, impls)
        if fast is not None:
            ours[point] = fast["us"]
        if BASELINE in arms:
            peer[point] = arms[BASELINE]["us"]
    return ours, peer


def _check(docs: Sequence[Dict], what: str) -> None:
    if not docs:
        raise ValueError(f"no {what} records")
    try:
        check_records(list(docs))
    except ValueError as e:
        raise ValueError(f"{what}: {e}") from None


def _shared(maps: Sequence[Dict[Point, float]]) -> List[Point]:
    points = set(maps[0])
    for m in maps[1:]:
        points &= set(m)
    if not points:
        raise ValueError("the records share no GEMM point")
    return sorted(points)


def _percentile(xs: Sequence[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def runs_report(docs: Sequence[Dict], names: Sequence[str], impls: Sequence[str] = FAST_ARMS) -> str:
    """Each run's geometric mean and lowest ratio to cuBLASLt block, every
    point's ratio per run, and the runs' spread (slowest over fastest time
    of ours per point)."""
    _check(docs, "bench")
    times = [fast_times(d, impls) for d in docs]
    if not all(peer for _, peer in times):
        raise ValueError(f"a record has no cuBLASLt block rows ({BASELINE}) to compare against")
    with_peer = _shared([t[0] for t in times] + [t[1] for t in times])
    lines = [f"Arm: the fastest of {', '.join(impls)} per point, against {BASELINE}.", ""]
    lines += ["| run | record | geometric mean | lowest |", "|---|---|---|---|"]
    if len({arm_order(d) for d in docs}) > 1:  # runs timed in different arm orders (gen bench --arm-order): say which is which
        names = [f"{name} ({arm_order(d)})" for name, d in zip(names, docs)]
    for i, ((ours, peer), name) in enumerate(zip(times, names), start=1):
        ratios = [peer[p] / ours[p] for p in with_peer]
        low = min(with_peer, key=lambda p: peer[p] / ours[p])
        lines.append(f"| {i} | {name} | {geomean(ratios):.4f}x | {min(ratios):.3f}x "
                     f"({low[0]}×{low[1]} M={low[2]}) |")
    head = ["N×K", "M"] + [f"run {i} (µs, ×)" for i in range(1, len(docs) + 1)]
    if len(docs) > 1:
        head.append("spread")
    lines += ["", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    spreads, ratio_spreads = [], {}
    for p in with_peer:
        cells = [f"{p[0]}×{p[1]}", str(p[2])]
        us = [t[0][p] for t in times]
        cells += [f"{u:.2f} ({t[1][p] / u:.3f})" for u, t in zip(us, times)]
        if len(docs) > 1:
            spreads.append(max(us) / min(us))
            cells.append(f"{(spreads[-1] - 1) * 100:.1f} %")
            ratios = [t[1][p] / t[0][p] for t in times]
            ratio_spreads[p] = max(ratios) / min(ratios)
        lines.append("| " + " | ".join(cells) + " |")
    if spreads:
        widest = max(ratio_spreads, key=ratio_spreads.get)
        lines += ["", f"Spread of our time between runs over {len(spreads)} points: median "
                      f"{(statistics.median(spreads) - 1) * 100:.2f} %, 90th percentile "
                      f"{(_percentile(spreads, 0.9) - 1) * 100:.2f} %, largest {(max(spreads) - 1) * 100:.2f} %.",
                  # (the peer's own time moves too: a ratio can spread where ours did not)
                  f"Spread of the ratio to {BASELINE}: median {(statistics.median(ratio_spreads.values()) - 1) * 100:.2f} "
                  f"%, largest {(ratio_spreads[widest] - 1) * 100:.2f} % ({widest[0]}×{widest[1]} M={widest[2]})."]
    return "\n".join(lines) + "\n"


def routed_report(docs: Sequence[Dict], names: Sequence[str], route: Callable[[int, int, int], Sequence[str]],
                  impls: Sequence[str] = FAST_ARMS) -> str:
    """All-instance records read through dispatch tables: per run, the
    ratio to cuBLASLt block of the instances `route(n, k, m)` names at each
    point (the faster of them, timed in the same record), their time over
    the record's fastest of `impls` there, and the points where they are
    not the fastest. A record's own fastest per point is the best of many
    noisy timings; this is what the tables' callers got in that run."""
    _check(docs, "bench")
    lines = [f"Routed: the instances the dispatch tables pick at each point (the faster of them), against "
             f"{BASELINE}; their time over the fastest of {', '.join(impls)} in the same record.", ""]
    lines += ["| run | record | points | geometric mean | lowest | routed / fastest | not the fastest at |",
              "|---|---|---|---|---|---|---|"]
    for i, (doc, name) in enumerate(zip(docs, names), start=1):
        ours, peer = fast_times(doc, impls)
        timed = {key: us for impl in impls for key, us in _instance_times(doc, impl).items()}
        ratios, over, off, missing = {}, [], [], []
        for p in sorted(set(ours) & set(peer)):
            routed = route(*p)
            if not routed or any((r, p) not in timed for r in routed):
                # no route there, or the record did not time a routed instance
                # (not an all-instance record, or one from before it was built)
                missing.append(p)
                continue
            found = [timed[(r, p)] for r in routed]
            ratios[p] = peer[p] / min(found)
            over.append(min(found) / ours[p])
            if min(found) > ours[p]:
                off.append(p)
        if not ratios:
            raise ValueError(f"{name}: the record timed no routed instance (an all-instance record is needed)")
        low = min(ratios, key=ratios.get)
        lines.append(f"| {i} | {name} | {len(ratios)} | {geomean(list(ratios.values())):.4f}x | "
                     f"{ratios[low]:.3f}x ({low[0]}×{low[1]} M={low[2]}) | {geomean(over):.4f}x "
                     f"(at most {max(over):.3f}x) | {len(off)} points |")
        if missing:
            shown = ", ".join(f"{n}×{k} M={m}" for n, k, m in missing[:6])
            lines.append(f"|  | not routed or not timed at {len(missing)} points: {shown}"
                         f"{' ...' if len(missing) > 6 else ''} | | | | | |")
    return "\n".join(lines) + "\n"


def _mean_times(docs: Sequence[Dict], impls: Sequence[str]) -> Dict[Point, float]:
    maps = [fast_times(d, impls)[0] for d in docs]
    return {p: statistics.fmean(m[p] for m in maps) for p in _shared(maps)}


def _instance_times(doc: Dict, family: str) -> Dict[Tuple[str, Point], float]:
    return {(r["kernel"], (r["N"], r["K"], r["M"])): r["us"] for r in doc["rows"]
            if r["op"] == "gemm" and r["impl"] == family}


def ab_report(base: Sequence[Dict], new: Sequence[Dict], impls: Sequence[str] = FAST_ARMS,
              family: Optional[str] = None) -> str:
    """New over base time (each side's mean over its runs) per M range and
    over all shared points, the points that moved most, and each run's
    geometric mean against cuBLASLt block. With `family`, also every
    instance of it that both sides timed (all-instance records)."""
    _check(base, "base")
    _check(new, "new")
    differ = setup_differences(base[0], new[0])
    if differ:
        raise ValueError(f"base and new were measured on different setups ({', '.join(differ)})")
    b, n = _mean_times(base, impls), _mean_times(new, impls)
    points = _shared([b, n])
    ratio = {p: n[p] / b[p] for p in points}
    lines = [f"New over base time, the fastest of {', '.join(impls)} per point (mean over "
             f"{len(new)} new and {len(base)} base runs; below 1 is faster):", ""]
    lines += ["| M | points | geometric mean | range |", "|---|---|---|---|"]
    for lo, hi in M_RANGES:
        rs = [ratio[p] for p in points if lo <= p[2] <= hi]
        if rs:
            label = f"{lo}-{hi}" if hi < 1 << 30 else f">= {lo}"
            lines.append(f"| {label} | {len(rs)} | {geomean(rs):.4f}x | {min(rs):.3f}-{max(rs):.3f}x |")
    allr = list(ratio.values())
    lines.append(f"| all | {len(allr)} | {geomean(allr):.4f}x | {min(allr):.3f}-{max(allr):.3f}x |")
    moved = sorted(points, key=lambda p: abs(math.log(ratio[p])), reverse=True)[:5]
    lines += ["", "Moved most: " + "; ".join(f"{p[0]}×{p[1]} M={p[2]} {ratio[p]:.3f}x" for p in moved) + "."]
    runs = []
    for side, docs in (("base", base), ("new", new)):
        for i, doc in enumerate(docs, start=1):
            ours, peer = fast_times(doc, impls)
            shared = [p for p in ours if p in peer]
            if shared:  # (records timed without the peer have no ratio)
                rs = [peer[p] / ours[p] for p in shared]
                runs.append(f"| {side} | {i} | {geomean(rs):.4f}x | {min(rs):.3f}x |")
    if runs:
        lines += ["", "| side | run | geometric mean vs cuBLASLt block | lowest |", "|---|---|---|---|"] + runs
    if family:
        bi = [_instance_times(d, family) for d in base]
        ni = [_instance_times(d, family) for d in new]
        keys = set.intersection(*(set(m) for m in bi + ni))
        per: Dict[str, List[float]] = {}
        for k in keys:
            per.setdefault(k[0], []).append(statistics.fmean(m[k] for m in ni) / statistics.fmean(m[k] for m in bi))
        if per:
            lines += ["", f"Per {family} instance timed on both sides (geometric mean over its points):", "",
                      "| instance | points | new/base | range |", "|---|---|---|---|"]
            for name, rs in sorted(per.items(), key=lambda kv: geomean(kv[1])):
                lines.append(f"| {name} | {len(rs)} | {geomean(rs):.4f}x | {min(rs):.3f}-{max(rs):.3f}x |")
    return "\n".join(lines) + "\n"
