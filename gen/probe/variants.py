"""The probe builds: preprocessor switches of templates/include/fp8gen/
w8a8_wgmma.cuh that `gen build` never defines, one part of the K loop left
out per switch."""
from __future__ import annotations

import dataclasses
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


VARIANTS: Dict[str, Variant] = {v.name: v for v in (
    Variant("no-copies", ("FP8GEN_PROBE_NO_COPIES",),
            "MMAs, promotion, barriers and stores; no TMA copy (each stage completes at the producer's arrive)"),
    Variant("no-mma", ("FP8GEN_PROBE_NO_MMA",),
            "copies, barriers, scale reads, promotion and stores; no wgmma"),
    Variant("no-promotion", ("FP8GEN_PROBE_NO_PROMOTION",),
            "copies, MMAs and stores; a block's temporary is not scaled into the total (one add keeps it live)"),
    Variant("bare", ("FP8GEN_PROBE_NO_COPIES", "FP8GEN_PROBE_NO_PROMOTION"),
            "the MMA chain, barriers and stores: no copies, no promotion"),
)}


def parse(names: str) -> List[Variant]:
    """Comma-separated variant names, in order, each once."""
    out: List[Variant] = []
    for name in (n.strip() for n in names.split(",") if n.strip()):
        if name not in VARIANTS:
            raise CatalogError(f"unknown probe variant {name!r}; choose from {', '.join(VARIANTS)}")
        if VARIANTS[name] not in out:
            out.append(VARIANTS[name])
    if not out:
        raise CatalogError("no probe variant named")
    return out
