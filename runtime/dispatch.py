"""The measured dispatch table: which instance of a family serves (n, k, m).

`gen tune` writes HARDWARE.toml [dispatch] rules (a list per family) of two kinds:
exact shapes {n, k, m_max, instance} and shape classes {shape_class, m_max,
instance} ("widening" n > k, "narrowing" n <= k). A rule serves m <= m_max;
past the largest m_max the largest bucket's rule serves. Exact shapes win
over classes; with no rule the family's tile rule decides. A table with
[rates] (the fast arm's) ranks the rated instances by predicted time for a
shape without exact rules before it falls back on the class rule
(`DispatchTable.ranked`, runtime/waves.py).

The runtime asks on every call, so it holds its table as a `DispatchTable`:
the rules indexed once by family and shape, and each pick remembered (a
plain dict works everywhere too, scanned on each call).
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from runtime.errors import ValidationError
from runtime.manifest import KernelEntry


def shape_class(n: int, k: int) -> str:
    return "widening" if n > k else "narrowing"


def _bucket(rules: List[Dict[str, Any]], m: int) -> Optional[str]:
    if not rules:
        return None
    rules = sorted(rules, key=lambda r: r["m_max"])
    for r in rules:
        if m <= r["m_max"]:
            return r["instance"]
    return rules[-1]["instance"]


# The suffix of a family's second table (gen tune): the fastest instance
# among those that need no split-K workspace.
UNSPLIT = "_unsplit"


def lookup(dispatch: Dict[str, List[Dict[str, Any]]], family: str, m: int, n: int, k: int) -> Optional[str]:
    if isinstance(dispatch, DispatchTable):
        return dispatch.lookup(family, m, n, k)
    rules = dispatch.get(family, [])
    exact = [r for r in rules if r.get("n") == n and r.get("k") == k]
    if exact:
        return _bucket(exact, m)
    return _bucket([r for r in rules if r.get("shape_class") == shape_class(n, k)], m)


def tile_rows(e: KernelEntry) -> int:
    """A GEMM instance's tile height (the in-tree families say bm, the
    Params-launched ones tile_m)."""
    return e.constraints.get("bm") or e.constraints["tile_m"]


def tile_cols(e: KernelEntry) -> int:
    return e.constraints.get("bn") or e.constraints["tile_n"]


def fits_shape(e: KernelEntry, n: int, k: int) -> bool:
    """Whether the instance runs an (n, k) projection: a shape-specialized one
    (N and K fixed at compile time) only its own; a cluster K split only K of
    at least one 128-K block per CTA (`min_k`); one that copies its weight
    scales by TMA (_wsb) only K that is a multiple of its `scale_k_multiple`
    (512); the others any (K a multiple of 128, as every call checks)."""
    fixed = e.constraints.get("fixed_n"), e.constraints.get("fixed_k")
    return ((fixed == (None, None) or fixed == (n, k)) and k >= e.constraints.get("min_k", 0)
            and k % e.constraints.get("scale_k_multiple", 1) == 0)


def pick_tile(candidates: Sequence[KernelEntry], m: int) -> KernelEntry:
    """Smallest tile height that covers m in one tile row, else the largest;
    among equal heights the widest tile (fewer, longer weight streams); among
    equal tiles a generic one before a shape-specialized twin and an
    unsplit one before a K-slicing twin (only a measurement, through the
    table, prefers those), then the one without a CTA cluster (a 2-CTA pair
    along M leaves one CTA idle when a single tile row covers m, and the
    rule cannot tell); last the name, so that twins the rule cannot tell
    apart (a walk order, where the weight scales are read) give one pick
    whatever the candidates' order."""
    by_bm = sorted(candidates, key=lambda e: (tile_rows(e), -tile_cols(e), bool(e.constraints.get("fixed_n")),
                                              int(e.constraints.get("k_slices", 1)), math.prod(e.cluster),
                                              e.name))
    for e in by_bm:
        if tile_rows(e) >= m:
            return e
    largest = tile_rows(by_bm[-1])
    return next(e for e in by_bm if tile_rows(e) == largest)


def choose(candidates: Sequence[KernelEntry], dispatch: Dict[str, List[Dict[str, Any]]], m: int, n: int,
           k: int) -> KernelEntry:
    """The dispatch table's instance when it names a loaded one that runs
    (n, k), else its `_unsplit` twin's (the caller left the split-K
    instances out), else the tile rule among those that do."""
    if isinstance(dispatch, DispatchTable):
        return dispatch.choose(candidates, m, n, k)
    return _choose(candidates, dispatch, m, n, k)


def _choose(candidates: Sequence[KernelEntry], dispatch, m: int, n: int, k: int) -> KernelEntry:
    family = candidates[0].family
    candidates = [e for e in candidates if fits_shape(e, n, k)]
    if not candidates:
        raise ValidationError(f"no {family} instance runs n={n}, k={k} (only shape-specialized ones for other "
                              "shapes, or cluster K splits for larger K, are built)")
    # the family's table; when its pick is not a candidate (a split-K
    # instance, and the caller has no workspace room for it), the table
    # measured among the instances that need none
    for table in (family, family + UNSPLIT):
        name = lookup(dispatch, table, m, n, k)
        for e in candidates:
            if e.name == name:
                return e
    if "bm" in candidates[0].constraints or "tile_m" in candidates[0].constraints:
        return pick_tile(candidates, m)
    return candidates[0]


class DispatchTable(Mapping):
    """A read-only dispatch table (family -> rules, as HARDWARE.toml has it)
    that answers `lookup` from an index built once and `choose` from a memo
    keyed by the candidates' names and (m, n, k). Scanning the rules and
    sorting the candidates cost a validated call tens of microseconds of
    host time, more than a small-M GEMM takes on the GPU. A candidate list
    passed to `choose` must not be changed afterwards (the runtime's never
    are): the memo also remembers lists by identity."""

    MEMO_LIMIT = 4096  # distinct (candidates, m, n, k) remembered; then it starts over

    def __init__(self, rules: Dict[str, List[Dict[str, Any]]], rates: Optional[Dict[str, List[Dict]]] = None,
                 ranker=None):
        """rates ([rates], gen tune) and ranker (a runtime.waves.Ranker bound
        to this device's instances and SM count): for a shape without rules
        of its own, those tables rank the rated instances by predicted time
        instead of taking the class rule."""
        self._rules = {family: [dict(r) for r in rs] for family, rs in rules.items()}
        self._rates: Dict[Tuple[str, str], List[Tuple[int, Dict[str, float]]]] = {}
        for table, levels in (rates or {}).items():
            for r in levels:
                self._rates.setdefault((table, r["shape_class"]), []).append((int(r["m"]), dict(r["us"])))
        for levels in self._rates.values():
            levels.sort(key=lambda x: x[0])
        self._ranker = ranker if self._rates else None
        self._ranked: Dict[Tuple[str, int, int, int], Optional[str]] = {}
        self._exact: Dict[Tuple[str, Any, Any], List[Dict[str, Any]]] = {}
        self._classes: Dict[Tuple[str, Any], List[Dict[str, Any]]] = {}
        for family, rs in self._rules.items():
            for r in rs:  # (the same rules lookup() would gather, in the same order)
                if r.get("n") is not None and r.get("k") is not None:
                    self._exact.setdefault((family, r["n"], r["k"]), []).append(r)
                self._classes.setdefault((family, r.get("shape_class")), []).append(r)
        for group in (*self._exact.values(), *self._classes.values()):
            group.sort(key=lambda r: r["m_max"])  # stable, as _bucket's sort
        self._memo: Dict[Tuple[Tuple[str, ...], int, int, int], int] = {}
        self._by_list: Dict[Tuple[int, int, int, int], Tuple[Sequence[KernelEntry], int, int]] = {}

    def __getitem__(self, family: str) -> List[Dict[str, Any]]:
        return [dict(r) for r in self._rules[family]]  # copies: the index holds the originals

    def __iter__(self) -> Iterator[str]:
        return iter(self._rules)

    def __len__(self) -> int:
        return len(self._rules)

    def lookup(self, family: str, m: int, n: int, k: int) -> Optional[str]:
        rules = self._exact.get((family, n, k))
        if not rules and self._ranker is not None and (family, shape_class(n, k)) in self._rates:
            ranked = self.ranked(family, m, n, k)
            if ranked is not None:
                return ranked
        rules = rules or self._classes.get((family, shape_class(n, k)))
        if not rules:
            return None
        for r in rules:
            if m <= r["m_max"]:
                return r["instance"]
        return rules[-1]["instance"]

    def ranked(self, table: str, m: int, n: int, k: int) -> Optional[str]:
        """The rated instance predicted fastest at (m, n, k): rates from the
        nearest measured M at or above (the largest past the end); None if
        none of them is loaded and runs (n, k)."""
        key = (table, m, n, k)
        if key not in self._ranked:
            est = self.estimates(table, m, n, k)
            if len(self._ranked) >= self.MEMO_LIMIT:
                self._ranked.clear()
            self._ranked[key] = min(est, key=lambda i: (est[i], i)) if est else None
        return self._ranked[key]

    def estimates(self, table: str, m: int, n: int, k: int) -> Dict[str, float]:
        """{instance: predicted us} behind `ranked` ({} where the table has no
        rates for the shape's class or there is no ranker)."""
        level = self._rate_level(table, m, n, k)
        if self._ranker is None or level is None:
            return {}
        return self._ranker.estimate(level[1], m, n, k, lambda e: fits_shape(e, n, k))

    def _rate_level(self, table: str, m: int, n: int, k: int) -> Optional[Tuple[int, Dict[str, float]]]:
        """(measured M, rates) of the shape's class: the nearest at or above m, the largest past the end."""
        levels = self._rates.get((table, shape_class(n, k)))
        return next((x for x in levels if x[0] >= m), levels[-1]) if levels else None

    def has_rules(self, table: str, n: int, k: int) -> bool:
        """Whether the table has rules of its own for the shape (n, k)."""
        return bool(self._exact.get((table, n, k)))

    def basis(self, table: str, m: int, n: int, k: int) -> str:
        """Where lookup's answer comes from, in words (gen explain)."""
        exact = self._exact.get((table, n, k))
        if exact:
            bucket = next((r for r in exact if m <= r["m_max"]), exact[-1])
            return f"{table}: the rule for n={n} k={k}, m <= {bucket['m_max']} (measured, or between measured M " \
                   "predicted by gen tune's wave model)"
        cls = shape_class(n, k)
        if self._ranker is not None and (table, cls) in self._rates and self.ranked(table, m, n, k) is not None:
            m_ref = self._rate_level(table, m, n, k)[0]
            return (f"{table}: no rule for n={n} k={k}; the {cls} instances' rates measured at M={m_ref}, scaled "
                    f"by each one's rounds at this call on {self._ranker.sm_count} SMs: the least predicted time")
        if self._classes.get((table, cls)):
            return f"{table}: no rule for n={n} k={k}; the {cls} class rule"
        return f"{table}: no rule"

    def choose(self, candidates: Sequence[KernelEntry], m: int, n: int, k: int) -> KernelEntry:
        # First by the list object itself (the runtime passes the same lists
        # every call, and spelling out ~60 names cost a few us per call); the
        # entry holds the list, so its id cannot be reused while remembered.
        seen = self._by_list.get((id(candidates), m, n, k))
        if seen is not None and seen[0] is candidates and len(candidates) == seen[1]:
            return candidates[seen[2]]
        key = (tuple(e.name for e in candidates), m, n, k)
        at = self._memo.get(key)
        if at is None:
            picked = _choose(candidates, self, m, n, k)  # raises (and remembers nothing) if none runs (n, k)
            if len(self._memo) >= self.MEMO_LIMIT:
                self._memo.clear()
            at = self._memo[key] = next(i for i, e in enumerate(candidates) if e is picked)
        if len(self._by_list) >= self.MEMO_LIMIT:
            self._by_list.clear()
        self._by_list[(id(candidates), m, n, k)] = (candidates, len(candidates), at)
        return candidates[at]
