"""Which instance a twin is checked beside (no torch: the SASS tests use it
as well as the GPU tests)."""
from __future__ import annotations

from typing import List


def bulk_base_candidates(name: str) -> List[str]:
    """A _wsb twin's bases, best first: the twin with the weight scales in
    the stage by cp.async (_ws), else the one loading them from L2; for a
    twin walking down M without either, the walk-along-N twin's (the walk
    changes which CTA takes a tile, not a tile's arithmetic)."""
    walk_n = name.replace("_gm16_", "_g16_")
    return [n.replace("_wsb", suffix) for n in (name, walk_n) for suffix in ("_ws", "")]
