"""Timing with CUDA events: warm-up, rotated inputs, median of batches
(`time_us`); or kernel durations from the profiler (`kernel_us`).

A batch is queued behind a device-side sleep, so the host has enqueued every
launch before the first one starts and Python launch overhead is not timed.
"""
from __future__ import annotations

import statistics
import time
from typing import Callable, Sequence

SLEEP_CYCLES_PER_S = 2.0e9  # ~ the H200's boost clock; the sleep only needs to be long enough


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
    sleep_cycles = int(min(1.0, 2.0 * host_s + 1e-3) * SLEEP_CYCLES_PER_S)
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


# After a shape's largest points the power cap holds the SM clock down for
# a while, and whatever is timed first after that pays for it; gen bench
# rests the GPU before such points (HARDWARE.toml [bench] rest_s, measured
# per GPU: 0, no rest, where it is absent).


def needs_rest(previous, point) -> bool:
    """Whether to rest before a GEMM point ((N, K, M)) after `previous`
    (None at the first): at another shape, or at a smaller M of the same
    one, the work before it may have held the clock down. Not between
    ascending M of one shape, where every arm runs as hot as the last."""
    if previous is None:
        return False
    return previous[:2] != point[:2] or point[2] < previous[2]


def rest(torch, seconds: float) -> None:
    """Lets the GPU's clock recover: finish the queued work, then idle."""
    torch.cuda.synchronize()
    time.sleep(seconds)


def rotation(set_bytes: int, l2_bytes: int, *, cap: int = 16) -> int:
    """How many input sets make one rotation several times the L2."""
    return max(2, min(cap, -(-3 * l2_bytes // max(set_bytes, 1))))


# DeepGEMM's published figures are kernel durations from the profiler, each
# call after a 256 MB write that evicts L2; `kernel_us` measures the same way.
FLUSH_BYTES = 256 << 20


def kernel_us(torch, calls: Sequence[Callable[[], None]], *, reps: int = 30, warmup: int = 3) -> float:
    """Median device time per call: the durations the profiler (CUPTI)
    records for the kernels a call launches, summed per call, each call
    after an L2-evicting write. Launch gaps are not counted (the events
    timing of `time_us` counts them). Raises if the trace cannot be split
    into one group of kernels per call."""
    import json
    import os
    import tempfile

    from torch.profiler import ProfilerActivity, profile

    flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    for i in range(warmup * len(calls)):
        calls[i % len(calls)]()
    torch.cuda.synchronize()

    def traced(body) -> list:
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            body()
            torch.cuda.synchronize()
        fd, path = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        try:
            prof.export_chrome_trace(path)
            with open(path) as f:
                events = json.load(f)["traceEvents"]
        finally:
            os.unlink(path)
        return sorted((e for e in events if e.get("cat") == "kernel"), key=lambda e: e["ts"])

    # (a fill of 1s: a zero fill may become a memset, which is not a kernel)
    flush_names = {e["name"] for e in traced(lambda: flush.fill_(1))}
    if not flush_names:
        raise RuntimeError("kernel timing: the profiler recorded no kernel for the L2 flush")

    def body() -> None:
        for i in range(reps):
            flush.fill_(1)
            calls[i % len(calls)]()

    return statistics.median(per_call_us(traced(body), flush_names, reps))


def per_call_us(kernels: Sequence[dict], flush_names: set, calls: int) -> list:
    """Device microseconds per call from a trace's kernel events in start
    order: each flush starts a call; the kernels after it until the next
    flush are that call's (summed)."""
    groups: list = []
    for e in kernels:
        if e["name"] in flush_names:
            groups.append(0.0)
        elif groups:
            groups[-1] += float(e["dur"])
    if len(groups) != calls or min(groups, default=0.0) <= 0.0:
        raise RuntimeError(f"kernel timing: the trace split into {len(groups)} calls (expected {calls}), "
                           f"{sum(g <= 0.0 for g in groups)} without a kernel")
    return groups
