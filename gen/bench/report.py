"""The bench's outputs: the JSON record, a Markdown ratio table, a PNG."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from gen.bench.grid import validate_record

BASELINE = "cublaslt_block"
# Arms measured against another peer than BASELINE (same numerics family).
PEER_OF = {"w8a8_tensor": "cublaslt_tensor", "w8a8_row": "cublaslt_row"}


def write_json(doc: Dict, path: Path) -> None:
    from gen.fsutil import write_atomic

    validate_record(doc)
    write_atomic(path, (json.dumps(doc, indent=1) + "\n").encode())


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
