"""The bench's outputs: the JSON record, a Markdown ratio table, a PNG."""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from gen.bench.grid import validate_record

BASELINE = "cublaslt_block"
# Arms measured against another peer than BASELINE (same numerics family).
PEER_OF = {"w8a8_tensor": "cublaslt_tensor", "w8a8_row": "cublaslt_row"}
# The block-scaled W8A8 fast path: the faster of these two at each point.
FAST_ARMS = ("w8a8_wgmma", "w8a8_cutlass")
# The small-M bar: this share of the memory roofline at M <= 128.
ROOFLINE_SHARE, ROOFLINE_MAX_M = 0.75, 128


def write_json(doc: Dict, path: Path) -> None:
    from gen.fsutil import record_text, write_atomic

    validate_record(doc)
    write_atomic(path, record_text(doc).encode())


def _gemm_index(rows: List[Dict]) -> Dict[Tuple[int, int, int], Dict[str, Dict]]:
    """(N, K, M) -> impl -> its fastest row (gen tune records every instance)."""
    index: Dict[Tuple[int, int, int], Dict[str, Dict]] = {}
    for r in rows:
        if r["op"] == "gemm":
            point = index.setdefault((r["N"], r["K"], r["M"]), {})
            if r["impl"] not in point or r["us"] < point[r["impl"]]["us"]:
                point[r["impl"]] = r
    return index


def ratio_table(doc: Dict) -> str:
    """TFLOP/s per arm and its ratio to its peer (cuBLASLt block scaling,
    cuBLASLt per-tensor for the per-tensor arm,
    cuBLASLt row-wise for the per-row arm), per point."""
    index = _gemm_index(doc["rows"])
    impls = sorted({i for point in index.values() for i in point if i != BASELINE})
    head = ["N×K", "M", "roofline", BASELINE] + [f"{i} (×)" for i in impls]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (N, K, M), point in sorted(index.items()):
        base = point.get(BASELINE)
        any_row = next(iter(point.values()))
        cells = [f"{N}×{K}", str(M), f"{any_row['roofline_tflops']:.0f}",
                 f"{base['tflops']:.0f}" if base else "—"]
        for impl in impls:
            r = point.get(impl)
            if r is None:
                cells.append("—")
            elif impl in PEER_OF and point.get(PEER_OF[impl]):
                cells.append(f"{r['tflops']:.0f} ({r['tflops'] / point[PEER_OF[impl]]['tflops']:.2f} "
                             f"vs {PEER_OF[impl]})")
            elif base:
                cells.append(f"{r['tflops']:.0f} ({r['tflops'] / base['tflops']:.2f})")
            else:
                cells.append(f"{r['tflops']:.0f}")
        lines.append("| " + " | ".join(cells) + " |")
    other = [r for r in doc["rows"] if r["op"] != "gemm"]
    if other:
        lines += ["", "| op | impl | M | N | K | µs | TB/s |", "|---|---|---|---|---|---|---|"]
        lines += [f"| {r['op']} | {r['impl']} | {r['M']} | {r['N']} | {r['K']} | {r['us']:.1f} | {r['tbps']:.2f} |"
                  for r in other]
    return "\n".join(lines) + "\n"


def geomean(xs: Sequence[float]) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs))


def markdown(doc: Dict, published: Optional[Dict] = None) -> str:
    """What `gen bench --md` and `gen merge --md` write: the ratio table, then the summary."""
    return ratio_table(doc) + "\n" + summary(doc, published)


def _fastest(point: Dict[str, Dict], impls: Sequence[str]) -> Optional[Dict]:
    rows = [point[i] for i in impls if i in point]
    return min(rows, key=lambda r: r["us"]) if rows else None


def _roofline_source(doc: Dict) -> str:
    """Which memory ceiling the roofline shares are against, and a warning
    where HARDWARE.toml measured it on another GPU than the record's (an
    arch's ceilings serve every card of that arch: an H100 read against the
    H200's bandwidth gets shares that are not its own)."""
    roof = doc.get("roofline") or {}
    if "memory_tbps" not in roof:
        return ""
    note = roof.get("memory_tbps_note", "")
    text = f" Memory ceiling {roof['memory_tbps']} TB/s" + (f" ({note})" if note else "") + "."
    where = re.search(r"measured: ([^,]+)", note)
    if where and doc.get("gpu") and where.group(1).strip() not in doc["gpu"]:
        text += f" Not this record's GPU ({doc['gpu']}): its shares are not against its own bandwidth."
    return text


def summary(doc: Dict, published: Optional[Dict] = None) -> str:
    """The targets in one place: the fast path's ratio to cuBLASLt block
    scaling (geometric mean, the points below 1.0), its share of the memory
    roofline at small M, and, where the record has their points, DeepGEMM's
    published figures (`published` is HARDWARE.toml's [published])."""
    index = _gemm_index(doc["rows"])
    timing = doc.get("timing", "events")
    lines = [f"Timing: {timing} ("
             + {"kernel": "profiler kernel durations, L2 flushed before each call",
                "resident": "CUDA events around back-to-back calls on one input set: operands that fit stay in "
                            "L2, so the memory roofline does not bound these times"}.get(
                 timing, "CUDA events around back-to-back calls, launch gaps included") + ")."]
    if doc.get("arm_order"):  # (records before the field ran fp8gen's arms first and do not say so)
        lines.append(f"Arm order at each point: {doc['arm_order']}"
                     + (" (listed, then reversed, from alternate ends at alternate points; each arm's time the mean)"
                        if doc["arm_order"] == "abba" else "") + ".")
    ratios, below, wgmma_only = [], [], []
    roof_hits, roof_points = [], 0
    for (N, K, M), point in sorted(index.items()):
        fast, base = _fastest(point, FAST_ARMS), point.get(BASELINE)
        if fast and base:
            ratios.append(fast["tflops"] / base["tflops"])
            if ratios[-1] < 1.0:
                below.append(f"{N}×{K} M={M} {ratios[-1]:.3f} ({fast['kernel']})")
            if "w8a8_wgmma" in point:
                wgmma_only.append(point["w8a8_wgmma"]["tflops"] / base["tflops"])
        if fast and M <= ROOFLINE_MAX_M:
            roof_points += 1
            share = fast["tflops"] / fast["roofline_tflops"]
            if share >= ROOFLINE_SHARE:
                roof_hits.append(f"{N}×{K} M={M} {share:.0%}")
    if ratios:
        lines.append(f"Fast path ({' or '.join(FAST_ARMS)}, the faster per point) against {BASELINE}: "
                     f"geometric mean {geomean(ratios):.3f}x over {len(ratios)} points, "
                     f"{min(ratios):.3f}-{max(ratios):.3f}x; {len(below)} below 1.0"
                     + (": " + "; ".join(below) if below else "") + ".")
    if wgmma_only:
        lines.append(f"w8a8_wgmma alone: geometric mean {geomean(wgmma_only):.3f}x over {len(wgmma_only)} points.")
    if roof_points and timing != "resident":  # (resident times are not bounded by it: no share to claim)
        lines.append(f"At M <= {ROOFLINE_MAX_M}: {len(roof_hits)} of {roof_points} points at >= "
                     f"{ROOFLINE_SHARE:.0%} of the memory roofline" + (": " + "; ".join(roof_hits) if roof_hits
                                                                          else "") + "."
                     + _roofline_source(doc))
    lines += _measured_peer(index, MEASURED_DEEPGEMM)
    rows = [r for r in (published or {}).get("deepgemm", []) if (r[1], r[2], r[0]) in index]
    if rows:
        here = any(MEASURED_DEEPGEMM in index[(N, K, M)] for M, N, K, _ in rows)
        lines += ["", f"DeepGEMM's published figures ({published.get('deepgemm_note', 'published')}), "
                      f"TFLOP/s" + (", and DeepGEMM's kernels timed in this run" if here else "") + ":", "",
                  "| M | N×K | fast path | DeepGEMM | |" + (" DeepGEMM here |" if here else ""),
                  "|---|---|---|---|---|" + ("---|" if here else "")]
        met = 0
        for M, N, K, theirs in rows:
            fast = _fastest(index[(N, K, M)], FAST_ARMS)
            if fast is None:
                continue
            ok = fast["tflops"] >= theirs
            met += ok
            verdict = "met" if ok else f"short by {1 - fast['tflops'] / theirs:.1%}"
            mine = index[(N, K, M)].get(MEASURED_DEEPGEMM)
            extra = (f" {mine['tflops']:.0f} |" if mine else " — |") if here else ""
            lines.append(f"| {M} | {N}×{K} | {fast['tflops']:.0f} | {theirs:g} | {verdict} |{extra}")
        lines.append(f"\nMet at {met} of {len(rows)} rows.")
    return "\n".join(lines) + "\n"


# DeepGEMM's kernels timed in the run itself (gen bench --families ...,deepgemm)
MEASURED_DEEPGEMM = "deepgemm"


def _measured_peer(index: Dict[Tuple[int, int, int], Dict[str, Dict]], peer: str) -> List[str]:
    """The fast path against a peer timed in the same run, where the record
    has one: the geometric mean of the speed ratio and the points below 1.0."""
    ratios, below = [], []
    for (N, K, M), point in sorted(index.items()):
        fast, theirs = _fastest(point, FAST_ARMS), point.get(peer)
        if fast and theirs:
            ratios.append(theirs["us"] / fast["us"])
            if ratios[-1] < 1.0:
                below.append(f"{N}×{K} M={M} {ratios[-1]:.3f}")
    if not ratios:
        return []
    return [f"Fast path against {peer} timed in this run: geometric mean {geomean(ratios):.3f}x over "
            f"{len(ratios)} points, {min(ratios):.3f}-{max(ratios):.3f}x; {len(below)} below 1.0"
            + (": " + "; ".join(below) if below else "") + "."]


def plot(doc: Dict, path: Path) -> Optional[str]:
    """TFLOP/s against M, one panel per shape, peers and roofline drawn.
    Returns why no PNG was written, or None."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed"
    index = _gemm_index(doc["rows"])
    shapes = sorted({(n, k) for n, k, _ in index})
    if not shapes:
        return "no GEMM rows"
    cols = min(4, len(shapes))
    rows = -(-len(shapes) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.4 * rows), squeeze=False)
    impls = sorted({i for p in index.values() for i in p})
    for ax, (N, K) in zip(axes.flat, shapes):
        ms = sorted(m for n, k, m in index if (n, k) == (N, K))
        roof = [next(iter(index[(N, K, m)].values()))["roofline_tflops"] for m in ms]
        ax.plot(ms, roof, "k--", label="roofline")
        for impl in impls:
            pts = [(m, index[(N, K, m)][impl]["tflops"]) for m in ms if impl in index[(N, K, m)]]
            if pts:
                ax.plot(*zip(*pts), marker="o", ms=3, label=impl)
        ax.set_xscale("log", base=2)
        ax.set_title(f"N={N} K={K}", fontsize=9)
        ax.set_xlabel("M")
        ax.set_ylabel("TFLOP/s")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(shapes):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.suptitle(f"{doc['gpu']} {doc['arch']} {doc['date']} ({doc['git_sha'][:10]})", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None
