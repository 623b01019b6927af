"""`python -m gen tune`: from a bench record that times every instance, the
dispatch table (fastest instance per shape and M bucket) and the two W8A8
ceilings (the W8A8-vs-W8A16 crossover, quantization counted), written into
HARDWARE.toml below its tune marker with their provenance."""
from __future__ import annotations

import collections
import math
import re
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set, Tuple

from gen.bench.report import geomean
from runtime.dispatch import UNSPLIT, shape_class
from runtime.select import LEVER_NARROWING, LEVER_WIDENING

MARKER = "# ---- Below: written by `python -m gen tune` (levers and dispatch, with provenance). ----\n"
from runtime.select import FAST_FAMILIES, FAST_TABLE

# Tables per family, plus one across the fast families (the selection rule's
# W8A8 fast arm routes each point to the fastest of either).
TUNED_FAMILIES = ("w8a8_mma", "w8a8_wgmma", "w8a8_cutlass", "w8a16_gemm", "w8a8_tensor", "w8a8_row", FAST_TABLE)
TABLE_IMPLS = {FAST_TABLE: FAST_FAMILIES}
W8A8_FAMILIES = ("w8a8_mma", "w8a8_wgmma", "w8a8_cutlass")
LAST_BUCKET = 2**31 - 1
# the name tags of a shape-specialized and of a split-K instance (gen/catalog.py W8A8WgmmaSpec.tag)
FIXED_SHAPE = re.compile(r"_for\d+x\d+_")
SPLIT_TAG = re.compile(r"_x\d+_")

Point = Tuple[int, int, int]  # (N, K, M)


def _times(rows: List[Dict], family: str) -> Dict[Point, Dict[str, float]]:
    """(N, K, M) -> {instance: us} for one family's (or table's) GEMM rows."""
    impls = TABLE_IMPLS.get(family, (family,))
    out: Dict[Point, Dict[str, float]] = collections.defaultdict(dict)
    for r in rows:
        if r["op"] == "gemm" and r["impl"] in impls:
            out[(r["N"], r["K"], r["M"])][r["kernel"]] = r["us"]
    return out


def _runs(winners: List[Tuple[int, str]]) -> List[Dict]:
    """[(M, instance)] ascending -> bucket rules: one per run of equal winners."""
    rules: List[Dict] = []
    for i, (m, inst) in enumerate(winners):
        last = i == len(winners) - 1
        if last or winners[i + 1][1] != inst:
            rules.append({"m_max": LAST_BUCKET if last else m, "instance": inst})
    return rules


def built_only(rows: List[Dict], built: Set[str]) -> Tuple[List[Dict], List[str]]:
    """The record's rows without those of fp8gen instances that are no longer
    built (a record can outlive a dropped instance; a table must not route to
    it), and the names left out."""
    ours = set(TUNED_FAMILIES) | set(FAST_FAMILIES)
    gone = sorted({r["kernel"] for r in rows if r["op"] == "gemm" and r["impl"] in ours and r["kernel"] not in built})
    return [r for r in rows if not (r["op"] == "gemm" and r["impl"] in ours and r["kernel"] not in built)], gone


def combine(docs: List[Dict]) -> Tuple[List[Dict], int]:
    """One row list from several all-instance records of the same setup, so
    that a pick rests on every run instead of one run's noise (the best
    instances at a point often differ by less than the run-to-run spread).
    Each row's time is the geometric mean of its times over the records: a
    factor that slows a whole run (clock, power) scales every instance at a
    point alike and leaves their order as it was. A row missing from any
    record is left out, so every instance is judged on the same runs.
    Returns the rows (the first record's, times replaced) and how many were
    left out. One record comes back unchanged."""
    if not docs:
        raise ValueError("combining needs one or more records")
    if len(docs) == 1:
        return list(docs[0]["rows"]), 0
    from gen.bench.merge import setup_differences

    for i, doc in enumerate(docs[1:], start=2):
        differ = setup_differences(docs[0], doc)
        if differ:  # (another GPU or software: the times would not compare)
            raise ValueError(f"record {i} differs from record 1 in {', '.join(differ)}")
    key = lambda r: (r["op"], r["impl"], r["kernel"], r["M"], r["N"], r["K"])
    tables = [{key(r): r for r in doc["rows"]} for doc in docs]
    rows = [dict(r, us=geomean([t[k]["us"] for t in tables])) for k, r in tables[0].items()
            if all(k in t for t in tables)]
    return rows, len(set().union(*tables)) - len(rows)


def derive_dispatch(rows: List[Dict]) -> Dict[str, List[Dict]]:
    """Each tuned family's table, and for the families with split-K
    instances a second one, `<family>_unsplit`, among the instances that
    need no split-K workspace: what the runtime routes to when the caller's
    workspace has no room for a split (runtime.dispatch.choose)."""
    table: Dict[str, List[Dict]] = {}
    for family in TUNED_FAMILIES:
        times = _times(rows, family)
        if not times:
            continue
        table[family] = _rules(times)
        if any(SPLIT_TAG.search(i) for t in times.values() for i in t):
            whole = {p: {i: us for i, us in t.items() if not SPLIT_TAG.search(i)} for p, t in times.items()}
            table[family + UNSPLIT] = _rules({p: t for p, t in whole.items() if t})
    return table


def _rules(times: Dict[Point, Dict[str, float]]) -> List[Dict]:
    """Per shape, the fastest instance per M bucket; per shape class, the
    instance with the smallest geometric-mean slowdown at each M."""
    rules: List[Dict] = []
    shapes = sorted({(n, k) for n, k, _ in times})
    for n, k in shapes:
        winners = [(m, min(t, key=t.get)) for (nn, kk, m), t in sorted(times.items(), key=lambda i: i[0][2])
                   if (nn, kk) == (n, k)]
        rules += [{"n": n, "k": k, **r} for r in _runs(winners)]
    for cls in ("widening", "narrowing"):
        by_m: Dict[int, List[Dict[str, float]]] = collections.defaultdict(list)
        for (n, k, m), t in times.items():
            if shape_class(n, k) == cls:
                by_m[m].append(t)
        winners = []
        for m in sorted(by_m):
            # (a shape-specialized instance runs one shape: never a class's pick)
            common = {i for i in set.intersection(*(set(t) for t in by_m[m])) if not FIXED_SHAPE.search(i)}
            # geometric mean of each instance's slowdown against the best at each shape
            score = {i: sum(math.log(t[i] / min(t.values())) for t in by_m[m]) for i in common}
            if score:
                winners.append((m, min(score, key=score.get)))
        rules += [{"shape_class": cls, **r} for r in _runs(winners)]
    return rules


def derive_levers(rows: List[Dict]) -> Dict[str, Tuple[Optional[int], str]]:
    """lever -> (max_m or None for no cap, the measured ratios behind it).
    W8A8 time = quant_group(M, K) + the fastest W8A8 instance; W8A16 time =
    the fastest w8a16_gemm instance; per class, the geometric mean of their
    ratio over the class's shapes at each M. The ceiling is the last M of the
    run of wins that starts at the smallest M (0 if W8A8 loses there)."""
    quant = {(r["M"], r["K"]): r["us"] for r in rows if r["op"] == "quant" and r["impl"] == "quant_group"}
    w8a16 = _times(rows, "w8a16_gemm")
    w8a8: Dict[Point, float] = {}
    for fam in W8A8_FAMILIES:
        for p, t in _times(rows, fam).items():
            w8a8[p] = min(w8a8.get(p, math.inf), min(t.values()))
    levers: Dict[str, Tuple[Optional[int], str]] = {}
    for lever, cls in ((LEVER_WIDENING, "widening"), (LEVER_NARROWING, "narrowing")):
        by_m: Dict[int, List[float]] = collections.defaultdict(list)
        for (n, k, m), t8 in w8a8.items():
            if shape_class(n, k) == cls and (n, k, m) in w8a16 and (m, k) in quant:
                by_m[m].append((t8 + quant[(m, k)]) / min(w8a16[(n, k, m)].values()))
        if not by_m:
            continue
        ratios = [(m, geomean(v)) for m, v in sorted(by_m.items())]
        detail = " ".join(f"{m}:{r:.2f}" for m, r in ratios)
        cap: Optional[int] = None
        for i, (m, r) in enumerate(ratios):
            if r >= 1.0:
                cap = ratios[i - 1][0] if i else 0
                break
        levers[lever] = (cap, detail)
    return levers


def _toml_value(v) -> str:
    return f'"{v}"' if isinstance(v, str) else str(v)


def tuned_text(levers: Dict[str, Tuple[Optional[int], str]], dispatch: Dict[str, List[Dict]],
               provenance: str, records: Sequence[str] = ()) -> str:
    lines = [MARKER.rstrip("\n")]
    if records:  # (the committed-table test combines the same records)
        lines += ["# [tuned]: the bench records the table below was derived from (combined by gen tune).",
                  "[tuned]", "records = [" + ", ".join(f'"{r}"' for r in records) + "]", ""]
    lines += ["# [defaults]: the selection rule's W8A8 ceilings; an absent lever means no cap.",
              "[defaults]"]
    for lever, (cap, detail) in sorted(levers.items()):
        if cap is None:
            lines.append(f'{lever}_note = "no cap: W8A8 (quantization counted) beat W8A16 at every measured M; '
                         f'{provenance}; W8A8/W8A16 time by M: {detail}"')
        else:
            lines.append(f"{lever} = {cap}")
            lines.append(f'{lever}_note = "{provenance}; W8A8/W8A16 time by M: {detail}"')
    lines += ["", f"# Fastest instance per shape and M bucket (m <= m_max); {provenance}."]
    for family, rules in sorted(dispatch.items()):
        for r in rules:
            lines.append(f"[[dispatch.{family}]]")
            lines += [f"{key} = {_toml_value(r[key])}" for key in ("n", "k", "shape_class", "m_max", "instance")
                      if key in r]
    return "\n".join(lines) + "\n"


def write_tuned(path: Path, text: str) -> None:
    from gen.fsutil import write_if_different

    current = path.read_text()
    if MARKER not in current:
        raise ValueError(f"{path} has no tune marker line; add it before [defaults]")
    write_if_different(path, current.split(MARKER)[0] + text)
