"""Route visibility: each route logged once at INFO, and a ledger that counts
why calls went where. A missing W8A8 line is then never ambiguous: the W8A16
route is logged too, with the clause that sent it there."""
from __future__ import annotations

import collections
import logging
import threading
from typing import Dict, Set, Tuple

from runtime.select import NUMERICS, Decision

log = logging.getLogger("fp8gen.route")

# The seed engine's counters, plus the two routing outcomes it lacked.
COUNTERS = ("entries", "gate_off", "no_operand", "bad_shape", "bad_scale", "nan_refused", "small_m",
            "above_max_m")


class RouteLedger:
    """Counts entries (before any guard), hits per arm, and refusals per
    failed clause and per seed counter. Thread-safe; read with snapshot()."""

    def __init__(self):
        self._lock = threading.Lock()
        self._logged: Set[Tuple[str, str, str]] = set()
        self.reset()

    def reset(self) -> None:
        """Zero the counters and forget which routes were logged."""
        with self._lock:
            self._logged.clear()
            self.counts: Dict[str, int] = {c: 0 for c in COUNTERS}
            self.hits: Dict[str, int] = collections.Counter()
            self.refusals: Dict[str, int] = collections.Counter()

    def count(self, counter: str, n: int = 1) -> None:
        with self._lock:
            self.counts[counter] += n

    def entry(self) -> None:
        self.count("entries")

    def record(self, d: Decision, what: str = "projection") -> None:
        failed = d.failed
        with self._lock:
            self.hits[d.arm] += 1
            if failed is not None:
                self.refusals[failed.name] += 1
                self.counts[failed.ledger] += 1
            key = (d.arm, d.instance or "", failed.name if failed else "")
            first = key not in self._logged
            self._logged.add(key)
        if first:
            if failed is None:
                log.info("fp8gen route: %s via %s [%s] for %s n=%d k=%d (m=%d)", d.arm, d.instance,
                         NUMERICS[d.arm], what, d.shard.n, d.shard.k, d.m)
            else:
                log.info("fp8gen route: %s via %s [%s] for %s n=%d k=%d (m=%d): %s failed: %s", d.arm,
                         d.instance or "no instance", NUMERICS[d.arm], what, d.shard.n, d.shard.k, d.m,
                         failed.name, failed.reason)

    def snapshot(self) -> Dict[str, object]:
        with self._lock:
            return {**self.counts, "hits": dict(self.hits), "refusals": dict(self.refusals)}
