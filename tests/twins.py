"""Which instance a twin is checked beside (no torch: the SASS tests use it
as well as the GPU tests)."""
from __future__ import annotations

import re
from typing import Callable, Container, Dict, Iterable, List, Optional, Tuple


def _other_stages(names: List[str]) -> List[str]:
    """The same tiles with another ring depth (the stage count changes when
    a copy arrives, not what a block computes)."""
    return [re.sub(r"_s\d+_", f"_s{s}_", n) for n in names for s in range(2, 17)]


def _unique(names: List[str]) -> List[str]:
    return list(dict.fromkeys(names))


def first_of(candidates: Iterable[str], present: Container[str]) -> Optional[str]:
    """The first candidate base that is built (in `present`), or None."""
    return next((n for n in candidates if n in present), None)


def _two_temporary_twin(name: str) -> str:
    """The same tile with two temporaries (_t2 after the walk's group): the
    same promotion of the same blocks in the same order as one temporary,
    so the same bits."""
    return re.sub(r"(_gm?\d+)(?![\d])(?!_t\d)", r"\1_t2", name, count=1)


def _base_then_other_stages(name: str, base: str) -> List[str]:
    """`base` then its other ring depths, or nothing where `name` is no twin
    (the name did not change)."""
    return [] if base == name else _unique([base] + _other_stages([base]))


def pair_base_candidates(name: str) -> List[str]:
    """A 2-CTA pair's (_c2x1, _c1x2) bases, best first: the same tile in one
    CTA, then at another stage count. A pair only splits the copy of the box
    it shares and multicasts each half to both CTAs; each CTA's blocks, MMAs
    and promotion are its 1-CTA twin's."""
    return _base_then_other_stages(name, re.sub(r"_c\d+x\d+(?=_)", "", name))


def bulk_base_candidates(name: str) -> List[str]:
    """A _wsb twin's bases, best first: the twin with the weight scales in
    the stage by cp.async (_ws), else the one loading them from L2; for a
    twin walking down M without either, the walk-along-N twin's (the walk
    changes which CTA takes a tile, not a tile's arithmetic); then, for a
    twin that also stores through half boxes (_hb) or unrolls its K loop
    (_u<n>), the same without those; then any of them at another stage
    count; last, for a one-temporary twin, the two-temporary tile's (the
    same promotion of the same blocks in the same order, so the same bits);
    for a 2-CTA pair with none of those, the bases of its 1-CTA twin."""
    plain = re.sub(r"_(hb|u\d)(?=_)", "", name)
    named = [n.replace("_wsb", suffix) for n in (name, name.replace("_gm16_", "_g16_"), plain,
                                                  plain.replace("_gm16_", "_g16_")) for suffix in ("_ws", "")]
    named += _other_stages(named)
    two_temps = [_two_temporary_twin(n) for n in named]
    unpaired = [b for p in pair_base_candidates(name)[:1] for b in bulk_base_candidates(p)]
    return _unique(named + two_temps + unpaired)


def half_box_base_candidates(name: str) -> List[str]:
    """A half-box twin's (_hb) bases, best first: the same instance storing
    from registers, then at another stage count (a staged tile can leave
    room for one stage fewer); for a 2-CTA pair, then its 1-CTA twin's
    bases."""
    base = name.replace("_hb", "")
    unpaired = [b for p in pair_base_candidates(name)[:1] for b in half_box_base_candidates(p)]
    return _unique([base] + _other_stages([base]) + unpaired)


def carried_base(name: str) -> str:
    """A twin carrying its unit coordinates over from the unit before (_cc):
    the same instance computing them at each unit's top (the same units,
    blocks and FFMAs; only where the divisions run moves)."""
    return re.sub(r"_cc(?=_)", "", name)


def ring_base_candidates(name: str) -> List[str]:
    """A ring-unrolled twin's (_ru) bases, best first: the same instance with
    the rolled K loop, then at another stage count (the ring depth the
    unrolling follows changes when a copy arrives, not what a block
    computes); for a twin holding the weight scales in its lanes (_wl, _wla),
    then the same loading them from L2 (the same values either way). A
    twin carrying its coordinates (_cc) has its base's bases (carrying
    moves where the divisions run, not what a block computes)."""
    name = carried_base(name)
    rolled = _base_then_other_stages(name, name.replace("_ru", ""))
    from_l2 = _base_then_other_stages(name, re.sub(r"_wla?(?=_)", "", name.replace("_ru", "")))
    return _unique(rolled + from_l2)


def lane_ahead_base(name: str) -> str:
    """A twin whose lanes load the next unit's weight scales ahead (_wla):
    the same instance loading them at the unit's start (_wl), the same
    values in the same FFMAs (for a _cc twin, its base's base)."""
    return carried_base(name).replace("_wla_", "_wl_")


def scales_first_base_candidates(name: str) -> List[str]:
    """A scales-first twin's (_sf) bases, best first: the same instance
    reading the activation scales after the MMAs; for a twin unrolled four
    or eight K blocks (no base of that unroll), the tile's two-block _sf
    twin (unrolling repeats the loop body, it does not reorder a block's
    FFMAs); then the two-temporary tile loading the weight scales from L2
    (where the weight scales come from changes no value)."""
    plain = re.sub(r"_(wla?|u\d|sf)(?=_)", "", name)
    return _unique([name.replace("_sf_", "_"), re.sub(r"_u[48]_sf_", "_u2_sf_", name), _two_temporary_twin(plain)])


def half_box_base(name: str, present: Container[str]) -> str:
    return first_of(half_box_base_candidates(name), present) or name.replace("_hb", "")


def bulk_base(name: str, present: Container[str]) -> str:
    return first_of(bulk_base_candidates(name), present) or name.replace("_wsb", "")


def scales_first_base(name: str, present: Container[str]) -> str:
    return first_of(scales_first_base_candidates(name), present) or name.replace("_sf_", "_")


# The twin options whose GPU test gives each twin's bits beside a base's, and
# how that base is found among the built names; a twin without its base
# fails there, so tests/test_catalog.py checks the catalog for it first (no
# GPU needed).
BASES: Dict[str, Callable[[str, Container[str]], str]] = {
    "ws_bulk": bulk_base,
    "half_box": half_box_base,
    "scales_first": scales_first_base,
    "ws_lanes_ahead": lambda name, present: lane_ahead_base(name),
    "carry_coords": lambda name, present: carried_base(name),
}


def twins_with_bases(specs: Dict[str, object], option: str) -> List[Tuple[str, str]]:
    """(twin, base) for each spec (name -> spec) with `option` set."""
    find = BASES[option]
    return [(n, find(n, specs)) for n, s in specs.items() if getattr(s, option, False)]
