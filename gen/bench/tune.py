"""`python -m gen tune`: from a bench record that times every instance, the
dispatch table (fastest instance per shape and M bucket) and the two W8A8
ceilings (the W8A8-vs-W8A16 crossover, quantization counted), written into
HARDWARE.toml below its tune marker with their provenance."""
from __future__ import annotations

import collections
import math
import re
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

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
# the families rt.linear hands activations padded to 128 rows (binaries_timed)
PADDED_FAMILIES = (*FAST_FAMILIES, "w8a8_row", "w8a8_tensor")
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


def combine(docs: List[Dict], timed_today: Optional[Callable[[int, Dict], bool]] = None) -> Tuple[List[Dict], int]:
    """One row list from several all-instance records of the same setup, so
    that a pick rests on every run instead of one run's noise (the best
    instances at a point often differ by less than the run-to-run spread).

    A whole run can be slower or faster (clock, power); that factor scales
    every row of the run at a point alike. So at each point the records
    that timed it get a factor each, fitted together with the rows' times
    (point_times), and a row's time is its times with their records'
    factors taken out. Where every record timed every row this is the plain
    geometric mean of each row's times; a row some records lack (an
    instance added or rebuilt since) still compares fairly, and records of
    other M or shapes have no say at the point.

    timed_today(i, row) says whether record i timed the binary built today
    (see binaries_timed); a time on an older binary is not used. A row no
    record timed today's binary of is left out. Returns the rows (each
    row's first timing, its time replaced) and how many rows were left out.
    One record with no timed_today comes back unchanged."""
    if not docs:
        raise ValueError("combining needs one or more records")
    if len(docs) == 1 and timed_today is None:
        return list(docs[0]["rows"]), 0
    from gen.bench.merge import setup_differences

    for i, doc in enumerate(docs[1:], start=2):
        differ = setup_differences(docs[0], doc)
        if differ:  # (another GPU or software: the times would not compare)
            raise ValueError(f"record {i} differs from record 1 in {', '.join(differ)}")
    key = lambda r: (r["op"], r["impl"], r["kernel"], r["M"], r["N"], r["K"])
    point = lambda k: (k[0], k[3], k[4], k[5])
    today = timed_today or (lambda i, r: True)
    tables = [{key(r): r for r in doc["rows"] if today(i, r)} for i, doc in enumerate(docs)]
    at: Dict[Tuple, Dict[Tuple, Dict[int, float]]] = collections.defaultdict(dict)  # point -> row -> {record: us}
    for i, t in enumerate(tables):
        for k, r in t.items():
            at[point(k)].setdefault(k, {})[i] = r["us"]
    combined_us: Dict[Tuple, float] = {}
    for times in at.values():
        combined_us.update(point_times(times))
    rows, seen = [], set()
    for t in tables:
        for k, r in t.items():
            if k not in seen:
                seen.add(k)
                rows.append(dict(r, us=combined_us[k]))
    everything = {key(r) for doc in docs for r in doc["rows"]}
    return rows, len(everything - seen)


def beside_full(docs: List[Dict]) -> Tuple[List[Dict], int]:
    """Partial records (gen bench --instances: some instances, the
    dispatched one and the peers) add timings beside full all-instance
    records: each keeps only the GEMM points some full record timed, so
    that at every point a table picks from, every instance was timed; the
    fitted factors (point_times) put their rows on the full records' scale
    through the rows they share. Returns the records (partial ones narrowed)
    and how many rows were left out; refuses when every record is partial."""
    full = [d for d in docs if not d.get("only_instances")]
    if not full:
        raise ValueError("every record timed only some instances (gen bench --instances): a table from them would "
                         "never see the others; give one or more full all-instance records beside them")
    at = {(r["op"], r["M"], r["N"], r["K"]) for d in full for r in d["rows"] if r["op"] == "gemm"}
    out, dropped = [], 0
    for d in docs:
        if d.get("only_instances"):
            keep = [r for r in d["rows"] if r["op"] != "gemm" or (r["op"], r["M"], r["N"], r["K"]) in at]
            dropped += len(d["rows"]) - len(keep)
            d = dict(d, rows=keep)
        out.append(d)
    return out, dropped


def point_times(times: Dict[Tuple, Dict[int, float]], *, sweeps: int = 500) -> Dict[Tuple, float]:
    """{row: {record: us}} at one point -> {row: us}: log us = record's
    factor + row's time, least squares over every time given (each record's
    factor set by all the rows it shares with the others, not only by the
    rows every record timed, which records of older binaries cut to the
    peers), factors centred on 0. Block coordinate descent: each sweep sets
    every row's time, then every factor, to the mean of what the other side
    leaves; records that share no row keep factor 0 between them."""
    logs = {k: {i: math.log(us) for i, us in by.items()} for k, by in times.items()}
    records = sorted({i for by in logs.values() for i in by})
    factor = {i: 0.0 for i in records}
    row = {k: 0.0 for k in logs}
    of_record: Dict[int, List[Tuple]] = {i: [k for k, by in logs.items() if i in by] for i in records}
    for _ in range(sweeps):
        for k, by in logs.items():
            row[k] = sum(v - factor[i] for i, v in by.items()) / len(by)
        moved = 0.0
        for i in records:
            new = sum(logs[k][i] - row[k] for k in of_record[i]) / len(of_record[i])
            moved = max(moved, abs(new - factor[i]))
            factor[i] = new
        centre = sum(factor.values()) / len(records)
        for i in records:
            factor[i] -= centre
        if moved < 1e-10:
            break
    return {k: math.exp(sum(v - factor[i] for i, v in by.items()) / len(by)) for k, by in logs.items()}


def manifest_at(sha: str, arch: str) -> Dict[str, str]:
    """{instance: cubin and host-shim digests} of emitted/<arch>/manifest.json
    as committed at `sha` (git)."""
    import json
    import subprocess

    from runtime.paths import REPO_ROOT

    path = f"emitted/{arch}/manifest.json"
    try:
        done = subprocess.run(["git", "-C", str(REPO_ROOT), "show", f"{sha}:{path}"], capture_output=True, text=True)
    except OSError as e:  # (no git here)
        raise ValueError(f"cannot read {path} at commit {sha}: {e}") from None
    if done.returncode:
        raise ValueError(f"cannot read {path} at commit {sha} (records are matched to today's binaries through "
                         f"git history): {done.stderr.strip()}")
    return {k["name"]: digest(k["cubin_sha256"], k.get("shim_sha256", "")) for k in json.loads(done.stdout)["kernels"]}


def digest(cubin_sha256: str, shim_sha256: str) -> str:
    return f"{cubin_sha256}:{shim_sha256}"


def todays_binaries(docs: List[Dict], arch: str, entries) -> Optional[Callable[[int, Dict], bool]]:
    """combine's timed_today for several records of `arch`, against the
    manifest entries built today; None for one record (what was just
    measured is taken as it is)."""
    if len(docs) < 2:
        return None
    return binaries_timed(docs, {e.name: digest(e.cubin_sha256, e.shim_sha256) for e in entries},
                          lambda sha: manifest_at(sha, arch))


def binaries_timed(docs: List[Dict], today: Dict[str, str],
                   read_manifest: Callable[[str], Dict[str, str]]) -> Callable[[int, Dict], bool]:
    """timed_today for combine: record i's row of an fp8gen instance counts
    only if the instance's cubin and host shim at the commit that timed it
    (read_manifest(sha) -> {name: digest}, from git) are today's (`today`),
    and a PADDED_FAMILIES row only if its activations were padded to 128
    rows as rt.linear's are (the record's "a_rows"; a record without it gave
    exactly M rows, which costs a partial last tile row more). A record
    merged from several runs names each run's commit and shapes. Peers
    (cuBLASLt, torch) always count."""
    ours = set(TUNED_FAMILIES) | set(FAST_FAMILIES)
    at: Dict[str, Dict[str, str]] = {}

    def binaries(sha: str) -> Dict[str, str]:
        if sha not in at:
            at[sha] = read_manifest(sha)
        return at[sha]

    shas = []
    for doc in docs:
        by_shape = {shape: run["git_sha"] for run in doc.get("runs", []) for shape in run.get("shapes", [])}
        shas.append((by_shape, doc["git_sha"]))

    padded = [doc.get("a_rows", "exact") == "padded" for doc in docs]

    def timed_today(i: int, row: Dict) -> bool:
        if row["op"] != "gemm" or row["impl"] not in ours:
            return True
        if row["impl"] in PADDED_FAMILIES and not padded[i]:
            return False
        by_shape, sha = shas[i]
        then = binaries(by_shape.get(f"{row['N']}x{row['K']}", sha)).get(row["kernel"])
        return then is not None and then == today.get(row["kernel"])
    return timed_today


# fill_in(measured {M: {instance: us}}, n, k) -> {M: instance} at unmeasured M
# (gen.bench.waves, bound to the manifest, the SM count and the host shims)
FillIn = Callable[[Dict[int, Dict[str, float]], int, int], Dict[int, str]]


def derive_dispatch(rows: List[Dict], fill_in: Optional[FillIn] = None) -> Dict[str, List[Dict]]:
    """Each tuned family's table, and for the families with split-K
    instances a second one, `<family>_unsplit`, among the instances that
    need no split-K workspace: what the runtime routes to when the caller's
    workspace has no room for a split (runtime.dispatch.choose). With
    fill_in, each exact shape's buckets also get the instance it predicts
    between the measured M (gen.bench.waves)."""
    table: Dict[str, List[Dict]] = {}
    for family in TUNED_FAMILIES:
        times = _times(rows, family)
        if not times:
            continue
        table[family] = _rules(times, fill_in)
        if any(SPLIT_TAG.search(i) for t in times.values() for i in t):
            table[family + UNSPLIT] = _rules(_unsplit(times), fill_in)
    return table


# The tables whose class-level fallback is the wave model's ranking: the
# selection rule's fast arm, with and without split-K room, and the per-row
# and per-tensor arms: [rates]. (Each anchor shape left out of the records
# in turn, the ranking routed its points to 1.0005x / 1.0026x the best
# per-row / per-tensor instance, the class rule to 1.0219x / 1.0209x, worst
# 1.99x: H200 records of 2026-11-30, hardware/sm_90a/HISTORY.md,
# "Shapes the table has no rule for".)
RATE_TABLES = (FAST_TABLE, FAST_TABLE + UNSPLIT, "w8a8_row", "w8a8_tensor")


def _unsplit(times: Dict[Point, Dict[str, float]]) -> Dict[Point, Dict[str, float]]:
    """The times of the instances that need no split-K workspace (points left with none dropped)."""
    whole = {p: {i: us for i, us in t.items() if not SPLIT_TAG.search(i)} for p, t in times.items()}
    return {p: t for p, t in whole.items() if t}


def derive_rates(rows: List[Dict], model) -> Dict[str, List[Dict]]:
    """[rates] for RATE_TABLES (gen.bench.waves.class_rates): what the runtime
    ranks instances by for a shape with no rule of its own."""
    out: Dict[str, List[Dict]] = {}
    for table in RATE_TABLES:
        unsplit = table.endswith(UNSPLIT)
        times = _times(rows, table[:-len(UNSPLIT)] if unsplit else table)
        rates = model.rates(_unsplit(times) if unsplit else times, shape_class)
        if rates:
            out[table] = rates
    return out


def _rules(times: Dict[Point, Dict[str, float]], fill_in: Optional[FillIn] = None) -> List[Dict]:
    """Per shape, the fastest instance per M bucket (measured, and between
    the measured M what fill_in predicts); per shape class, the instance
    with the smallest geometric-mean slowdown at each measured M."""
    rules: List[Dict] = []
    shapes = sorted({(n, k) for n, k, _ in times})
    for n, k in shapes:
        measured = {m: t for (nn, kk, m), t in times.items() if (nn, kk) == (n, k)}
        picks = {m: min(t, key=t.get) for m, t in measured.items()}
        if fill_in is not None:
            picks = {**fill_in(measured, n, k), **picks}  # (a measured M keeps its measured winner)
        rules += [{"n": n, "k": k, **r} for r in _runs(sorted(picks.items()))]
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
               provenance: str, records: Sequence[str] = (), rates: Optional[Dict[str, List[Dict]]] = None) -> str:
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
    lines += ["", f"# Fastest instance per shape and M bucket (m <= m_max); {provenance}.",
              "# One rule per line (an array of inline tables: the same rules as [[dispatch.<family>]] blocks).",
              "[dispatch]"]
    for family, rules in sorted(dispatch.items()):
        lines.append(f"{family} = [")
        for r in rules:
            fields = ", ".join(f"{key} = {_toml_value(r[key])}" for key in ("n", "k", "shape_class", "m_max",
                                                                             "instance") if key in r)
            lines.append(f"  {{ {fields} }},")
        lines.append("]")
    if rates:
        lines += ["", "# [rates]: for a shape with no rule of its own, per shape class and measured M, the "
                      "instances' time per tile",
                  "# round per 128-K block (us; gen/bench/waves.py class_rates), which the runtime scales by "
                  "each instance's rounds",
                  f"# at the call (runtime/dispatch.py); {provenance}.", "[rates]"]
        for table, entries in sorted(rates.items()):
            lines.append(f"{table} = [")
            for r in entries:
                us = ", ".join(f'"{i}" = {v}' for i, v in r["us"].items())
                lines.append(f'  {{ shape_class = "{r["shape_class"]}", m = {r["m"]}, us = {{ {us} }} }},')
            lines.append("]")
    return "\n".join(lines) + "\n"


def write_tuned(path: Path, text: str) -> None:
    from gen.fsutil import write_if_different

    current = path.read_text()
    if MARKER not in current:
        raise ValueError(f"{path} has no tune marker line; add it before [defaults]")
    write_if_different(path, current.split(MARKER)[0] + text)
