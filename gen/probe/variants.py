"""The probe builds: preprocessor switches of templates/include/fp8gen/
w8a8_wgmma.cuh that `gen build` never defines, one part of the K loop left
out per switch; and builds that leave everything in: with another count of
early weight boxes, or stamping each CTA's phases (trace)."""
from __future__ import annotations

import dataclasses
import re
from typing import Dict, List, Tuple

from runtime.errors import CatalogError

# The header whose switches these are, and the only family built from it
# that `probe run` can time (rt.w8a8_wgmma).
HEADER = "fp8gen/w8a8_wgmma.cuh"
FAMILY = "w8a8_wgmma"


@dataclasses.dataclass(frozen=True)
class Variant:
    name: str
    defines: Tuple[str, ...]
    keeps: str  # what the build still does: its time is what that part costs alone
    # its output must equal the built cubin's (it leaves nothing out); the
    # others' must differ (else their switch did not take effect)
    same_output: bool = False
    traced: bool = False  # it writes the phase stamps that gen/probe/trace.py reads


VARIANTS: Dict[str, Variant] = {v.name: v for v in (
    Variant("no-copies", ("FP8GEN_PROBE_NO_COPIES",),
            "MMAs, promotion, barriers and stores; no TMA copy (each stage completes at the producer's arrive)"),
    Variant("no-mma", ("FP8GEN_PROBE_NO_MMA",),
            "copies, barriers, scale reads, promotion and stores; no wgmma"),
    Variant("no-promotion", ("FP8GEN_PROBE_NO_PROMOTION",),
            "copies, MMAs and stores; a block's temporary is not scaled into the total (one add keeps it live)"),
    Variant("bare", ("FP8GEN_PROBE_NO_COPIES", "FP8GEN_PROBE_NO_PROMOTION"),
            "the MMA chain, barriers and stores: no copies, no promotion"),
    Variant("trace", ("FP8GEN_PROBE_TRACE",),
            "everything, plus %globaltimer stamps of each CTA's phases, summarized per call by `probe run`",
            same_output=True, traced=True),
)}


EARLY = re.compile(r"early-(\d+)")
EARLY_MAX = 16
EARLY_KEEPS = "everything, with at most N W boxes copied before the grid-dependency wait"


def early(n: int) -> Variant:
    """The build with at most n W boxes (as many as it has stages) copied
    before the grid-dependency wait, in place of the header's count."""
    if not 0 <= n <= EARLY_MAX:
        raise CatalogError(f"early-{n}: the count of early weight boxes must be 0-{EARLY_MAX}")
    return Variant(f"early-{n}", (f"FP8GEN_PROBE_EARLY_STAGES={n}",),
                   EARLY_KEEPS.replace(" N ", f" {n} "), same_output=True)


def parse(names: str) -> List[Variant]:
    """Comma-separated variant names (VARIANTS' or early-N), in order, each once."""
    out: List[Variant] = []
    for name in (n.strip() for n in names.split(",") if n.strip()):
        m = EARLY.fullmatch(name)
        if m:
            v = early(int(m.group(1)))
        elif name in VARIANTS:
            v = VARIANTS[name]
        else:
            raise CatalogError(f"unknown probe variant {name!r}; choose from {', '.join(VARIANTS)} or early-N")
        if v not in out:
            out.append(v)
    if not out:
        raise CatalogError("no probe variant named")
    return out
