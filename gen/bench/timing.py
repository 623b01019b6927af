"""Timing with CUDA events: warm-up, rotated inputs, median of batches.

A batch is queued behind a device-side sleep, so the host has enqueued every
launch before the first one starts and Python launch overhead is not timed.
"""
from __future__ import annotations

import statistics
import time
from typing import Callable, Sequence

_SLEEP_CYCLES_PER_S = 2.0e9  # ~ the H200's boost clock; the sleep only needs to be long enough


def time_us(torch, calls: Sequence[Callable[[], None]], *, batch: int = 20, batches: int = 7,
            warmup: int = 3) -> float:
    """Median per-call microseconds; `calls` are rotated so that each launch
    reads a different input set (L2 does not flatter small shapes)."""
    for i in range(warmup * len(calls)):
        calls[i % len(calls)]()
    torch.cuda.synchronize()
    # How long the host takes to queue one batch; the sleep must outlast it.
    t0 = time.perf_counter()
    for i in range(batch):
        calls[i % len(calls)]()
    host_s = time.perf_counter() - t0
    torch.cuda.synchronize()
    sleep_cycles = int(min(1.0, 2.0 * host_s + 1e-3) * _SLEEP_CYCLES_PER_S)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(batches):
        torch.cuda._sleep(sleep_cycles)
        start.record()
        for i in range(batch):
            calls[i % len(calls)]()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e3 / batch)
    return statistics.median(samples)


def rotation(set_bytes: int, l2_bytes: int, *, cap: int = 16) -> int:
    """How many input sets make one rotation several times the L2."""
    return max(2, min(cap, -(-3 * l2_bytes // max(set_bytes, 1))))
