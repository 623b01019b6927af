"""One bench record from several processes' records: a long grid is measured
in parts (e.g. four anchor shapes per process, which bounds one run's time
and keeps a fault in one part from losing the rest). The result says in its
`runs` field which process measured which shapes."""
from __future__ import annotations

from typing import Dict, List, Tuple

from gen.bench.grid import validate_record

# Fields that must agree: rows measured on different machines or software
# cannot share one record (the peers' ratios would not mean anything).
# (A record without "pdl" predates programmatic dependent launch: off; one
# without "timing" was timed with events.)
SAME_SETUP = ("gpu", "arch", "nvcc", "driver", "torch", "pdl", "timing")

_ABSENT = {"pdl": False, "timing": "events"}


def arm_order(doc: Dict) -> str:
    """The order a record timed each point's arms in (gen bench
    --arm-order); records without the field ran fp8gen's first."""
    return doc.get("arm_order", "fp8gen first")


def setup_differences(a: Dict, b: Dict) -> List[str]:
    """The SAME_SETUP fields in which two records disagree."""
    return [f for f in SAME_SETUP if a.get(f, _ABSENT.get(f)) != b.get(f, _ABSENT.get(f))]


def check_records(docs: List[Dict]) -> None:
    """Each record well formed, and all measured on the first one's setup."""
    for doc in docs:
        validate_record(doc)
    first = docs[0]
    for i, doc in enumerate(docs[1:], start=2):
        differ = setup_differences(first, doc)
        if differ:
            raise ValueError(f"record {i} was measured on another setup than record 1, differing in "
                             f"{', '.join(differ)}: {[(f, first.get(f), doc.get(f)) for f in differ]}")


def _runs(doc: Dict) -> List[Dict]:
    """A record's own `runs` (already merged), or one run describing it."""
    if doc.get("runs"):
        return list(doc["runs"])
    shapes = sorted({f"{r['N']}x{r['K']}" for r in doc["rows"] if r["op"] == "gemm"})
    run = {"git_sha": doc["git_sha"], "date": doc["date"], "shapes": shapes}
    if "seed" in doc:
        run["seed"] = doc["seed"]
    return [run]


def merge(docs: List[Dict]) -> Tuple[Dict, int]:
    """The records' rows in one record (the first's header, every part's
    `runs`) and how many repeated rows were left out. GEMM rows are per
    shape, so one measured twice means the parts overlap: refused. The
    quantizer, scale and copy rows depend on M and K only, so parts whose
    shapes share a K both measure them: the first measurement is kept.
    Records of different setups are refused."""
    if len(docs) < 2:
        raise ValueError("merging needs two or more records")
    check_records(docs)
    orders = sorted({arm_order(d) for d in docs})
    if len(orders) > 1:
        # (gen compare puts such records side by side: that is how the order's effect is measured)
        raise ValueError(f"the records timed their arms in different orders ({' and '.join(orders)}): one record "
                         "would mix two methods")
    first = docs[0]
    rows: List[Dict] = []
    seen: Dict[Tuple, int] = {}
    runs: List[Dict] = []
    repeated = 0
    for i, doc in enumerate(docs, start=1):
        for row in doc["rows"]:
            key = (row["op"], row["impl"], row["kernel"], row["M"], row["N"], row["K"])
            if key in seen:
                if row["op"] == "gemm":
                    raise ValueError(f"{key} is in record {seen[key]} and record {i}: measure each GEMM point once")
                repeated += 1
                continue
            seen[key] = i
            rows.append(row)
        runs += _runs(doc)
    merged = dict(first, rows=rows, runs=runs)
    # any part timed a subset of the instances (gen bench --instances): so does the whole
    only = sorted({part for doc in docs for part in doc.get("only_instances", [])})
    merged.pop("only_instances", None)
    if only:
        merged["only_instances"] = only
    validate_record(merged)
    return merged, repeated
