"""The measurement grid and the roofline arithmetic (no GPU needed)."""
from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Tuple

from runtime.validate import is_real

# The 8 anchor projections of shared/ANCHORS.md, as (N, K): Qwen3-27B gate/up
# and down, then the six DeepSeek-V3 shapes.
ANCHOR_SHAPES: List[Tuple[int, int]] = [(17408, 5120), (5120, 17408), (2112, 7168), (24576, 1536),
                                        (32768, 512), (7168, 16384), (4096, 7168), (7168, 2048)]
ANCHOR_MS: List[int] = [16, 64, 128, 256, 512, 1024, 2048, 4096, 8192]
PEERS = ("cublaslt_block", "cublaslt_tensor", "cublaslt_row", "torch_bf16", "copy", "deepgemm")

ROW_FIELDS = ("op", "impl", "kernel", "M", "N", "K", "us", "tflops", "tbps", "roofline_tflops")
RECORD_FIELDS = ("gpu", "arch", "date", "git_sha", "nvcc", "driver", "rows")


@dataclasses.dataclass(frozen=True)
class Row:
    op: str                 # "gemm", "quant", "scale", "weight", "copy"
    impl: str               # a family name or one of PEERS
    kernel: str             # instance name, or a description of the peer
    M: int
    N: int
    K: int
    us: float
    tflops: Optional[float]
    tbps: Optional[float]
    roofline_tflops: Optional[float]


def parse_shapes(text: str) -> List[Tuple[int, int]]:
    """'17408x5120,5120x17408' (x or ×) -> [(N, K), ...]."""
    shapes = []
    for part in text.replace("×", "x").split(","):
        try:
            n, k = (int(v) for v in part.strip().lower().split("x"))
        except ValueError:
            raise ValueError(f"shape {part!r} is not NxK") from None
        if n <= 0 or k <= 0:
            raise ValueError(f"shape {part!r} must be positive")
        shapes.append((n, k))
    return shapes


def gemm_bytes(M: int, N: int, K: int) -> int:
    """Fewest bytes a block-scaled W8A8 GEMM moves: e4m3 A and W once, bf16
    out once, f32 scales once."""
    scales = 4 * (M * (K // 128) + -(-N // 128) * (K // 128))
    return M * K + N * K + 2 * M * N + scales


def ceilings_for(roofline: Dict, gpu: str) -> Dict:
    """HARDWARE.toml's [roofline] for one GPU: the arch's ceilings with that
    GPU's own measured ones ([roofline.by_gpu."<device name>"]) over them.
    One arch serves cards of different memory (the H100's HBM3 and the
    H200's HBM3e share sm_90a), so a share of the roofline is only the card's
    own where its bandwidth was measured on that card."""
    flat = {k: v for k, v in roofline.items() if k != "by_gpu"}
    flat.update(roofline.get("by_gpu", {}).get(gpu, {}))
    return flat


def roofline_tflops(M: int, N: int, K: int, *, peak_tflops: float, memory_tbps: float) -> float:
    flops = 2.0 * M * N * K
    memory_bound = flops / (gemm_bytes(M, N, K) / (memory_tbps * 1e12)) / 1e12
    return min(peak_tflops, memory_bound)


def quant_bytes(M: int, K: int) -> int:
    """bf16 in, e4m3 out, f32 scales out."""
    return 2 * M * K + M * K + 4 * M * (K // 128)


def validate_record(doc: Dict) -> None:
    """Raise ValueError naming the first thing that makes doc no bench
    record: its fields and each row's, with their types and ranges (a
    record's reader divides by times and indexes rows by these fields)."""
    if not isinstance(doc, dict):
        raise ValueError(f"a bench record is a JSON object, not {type(doc).__name__}")
    missing = [f for f in RECORD_FIELDS if f not in doc]
    if missing:
        raise ValueError(f"bench record lacks {missing}")
    wrong = [f for f in RECORD_FIELDS[:-1] if not isinstance(doc[f], str)]
    if wrong:
        raise ValueError(f"bench record fields {wrong} must be strings")
    if not isinstance(doc["rows"], list):
        raise ValueError(f"bench record rows must be a list, not {type(doc['rows']).__name__}")
    for i, row in enumerate(doc["rows"]):
        if not isinstance(row, dict) or tuple(sorted(row)) != tuple(sorted(ROW_FIELDS)):
            got = sorted(row) if isinstance(row, dict) else type(row).__name__
            raise ValueError(f"row {i} has fields {got}, expected {sorted(ROW_FIELDS)}")
        _check_row(i, row)


def _check_row(i: int, row: Dict) -> None:
    if not all(isinstance(row[f], str) for f in ("op", "impl", "kernel")):
        raise ValueError(f"row {i}: op, impl and kernel must be strings")
    # (the copy row and the quantizers' rows carry 0 for the sizes they lack)
    least = 1 if row["op"] == "gemm" else 0
    for f in ("M", "N", "K"):
        if not isinstance(row[f], int) or isinstance(row[f], bool) or row[f] < least:
            raise ValueError(f"row {i}: {f} = {row[f]!r}, expected an integer >= {least}")
    if not is_real(row["us"]) or row["us"] <= 0:
        raise ValueError(f"row {i}: us = {row['us']!r}, expected a time > 0")
    for f in ("tflops", "tbps", "roofline_tflops"):
        if row[f] is not None and (not is_real(row[f]) or row[f] < 0):
            raise ValueError(f"row {i}: {f} = {row[f]!r}, expected null or a number >= 0")
