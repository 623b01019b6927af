"""The trace probe's records (FP8GEN_PROBE_TRACE in w8a8_wgmma.cuh): read
back from the probe module after a burst of calls, and summarized as the
phases of a call, in microseconds, medians over the calls of the burst."""
from __future__ import annotations

import statistics
from typing import Dict, List, Sequence

import numpy as np

from runtime.driver import check, driver

ROLES = ("producer", "math")  # record roles 0 and 1
WORDS = 8
# words 1-7 of a record (word 0: SM id << 32 | blockIdx.x); the header says what each stamps
ENTRY, BEFORE_WAIT, AFTER_WAIT, FOURTH, FIRST_K_DONE, LAST_K_DONE, END = range(1, 8)
SKIP_CALLS = 2  # the burst's first calls follow a synchronize, not a call of their own kind


def _global(module, name: str):
    ptr, size = check(driver.cuModuleGetGlobal(module, name.encode()), "cuModuleGetGlobal")
    return ptr, size


def reset(module) -> None:
    """Zeroes both roles' ticket counters (the records are overwritten)."""
    ptr, size = _global(module, "fp8gen_probe_tickets")
    check(driver.cuMemsetD32(ptr, 0, size // 4), "cuMemsetD32")
    check(driver.cuCtxSynchronize(), "cuCtxSynchronize")


def tickets(module) -> List[int]:
    """Records taken per role since the last reset."""
    ptr, size = _global(module, "fp8gen_probe_tickets")
    out = np.zeros(size // 4, dtype=np.uint32)
    check(driver.cuCtxSynchronize(), "cuCtxSynchronize")
    check(driver.cuMemcpyDtoH(out.ctypes.data, ptr, size), "cuMemcpyDtoH")
    return [int(x) for x in out]


def ring_records(module) -> int:
    return _global(module, "fp8gen_probe_trace")[1] // 8 // WORDS // len(ROLES)


def read(module) -> List[np.ndarray]:
    """Each role's records since the last reset, in ticket order, [tickets,
    8] uint64. Raises ValueError when more were taken than the ring holds."""
    taken = tickets(module)
    rptr, rsize = _global(module, "fp8gen_probe_trace")
    ring = np.zeros(rsize // 8, dtype=np.uint64).reshape(len(ROLES), -1, WORDS)
    check(driver.cuMemcpyDtoH(ring.ctypes.data, rptr, rsize), "cuMemcpyDtoH")
    if max(taken) > ring.shape[1]:
        raise ValueError(f"trace: {max(taken)} records taken, more than the ring's {ring.shape[1]}")
    return [ring[role][:taken[role]] for role in range(len(ROLES))]


def capture(module, call, sync, hold, *, calls: int = 40) -> Dict[str, object]:
    """Runs `call(i)` back to back and summarizes the stamps: one call sizes
    the grid, then `calls` calls are queued behind `hold()` (a device-side
    sleep that outlasts the queuing, as gen bench's timing does: else the
    host's launch rate, not the GPU, would space the calls). `sync` waits
    for the device."""
    reset(module)
    call(0)
    sync()
    grid = max(tickets(module))
    calls = max(SKIP_CALLS + 2, min(calls, ring_records(module) // max(grid, 1)))
    reset(module)
    hold()
    for i in range(calls):
        call(i)
    sync()
    return summarize(*read(module))


def _median_us(values: Sequence[float]) -> float:
    return round(statistics.median(values) / 1e3, 3)


def summarize(producer: np.ndarray, math: np.ndarray) -> Dict[str, object]:
    """Per call (grid = the CTAs one call has, from the math records' block
    indices), then medians over calls, in microseconds; "prev end" is the
    last stamp of the call before (its last CTA's end)."""
    if len(math) == 0 or len(producer) != len(math):
        raise ValueError(f"trace: {len(producer)} producer and {len(math)} math records (expected equal, > 0)")
    blocks = (math[:, 0] & 0xFFFFFFFF).astype(np.int64)
    grid = int(blocks.max()) + 1
    calls = len(math) // grid
    if len(math) % grid or calls < SKIP_CALLS + 2:
        raise ValueError(f"trace: {len(math)} records are not whole calls of {grid} CTAs, or too few calls")
    stamps = np.concatenate([producer[:, 1:], math[:, 1:]])
    distinct = np.unique(stamps[stamps > 0])
    steps = np.diff(distinct)
    t = {r: a.astype(np.int64).reshape(calls, grid, WORDS) for r, a in (("p", producer), ("m", math))}
    for r, a in t.items():
        for c in range(calls):
            got = np.sort(a[c, :, 0] & 0xFFFFFFFF)
            if not np.array_equal(got, np.arange(grid)):
                raise ValueError(f"trace: call {c}'s {r} records do not name each of {grid} CTAs once")
    rows = {k: [] for k in ("period", "first_entry", "release", "release_spread", "first_stage",
                            "first_stage_max", "k_loop", "k_loop_max", "first_unit_k_loop", "tail",
                            "last_end_after_median", "copies_issued")}
    for c in range(SKIP_CALLS, calls):
        m, p, pm, pp = t["m"][c], t["p"][c], t["m"][c - 1], t["p"][c - 1]
        prev_end = max(pm[:, END].max(), pp[:, END].max())
        end = max(m[:, END].max(), p[:, END].max())
        rows["period"].append(end - prev_end)
        rows["first_entry"].append(min(m[:, ENTRY].min(), p[:, ENTRY].min()) - prev_end)
        rows["release"].append(m[:, AFTER_WAIT].min() - prev_end)
        rows["release_spread"].append(m[:, AFTER_WAIT].max() - m[:, AFTER_WAIT].min())
        first = m[:, FOURTH] - m[:, AFTER_WAIT]
        rows["first_stage"].append(np.median(first))
        rows["first_stage_max"].append(first.max())
        loop = m[:, LAST_K_DONE] - m[:, FOURTH]
        rows["k_loop"].append(np.median(loop))
        rows["k_loop_max"].append(loop.max())
        rows["first_unit_k_loop"].append(np.median(m[:, FIRST_K_DONE] - m[:, FOURTH]))
        rows["tail"].append(np.median(m[:, END] - m[:, LAST_K_DONE]))
        rows["last_end_after_median"].append(end - np.median(m[:, END]))
        rows["copies_issued"].append(np.median(p[:, FOURTH] - p[:, AFTER_WAIT]))
    # Per SM (the math records' SM ids): whether the slow CTAs are slow
    # because of where they run (the same SMs every call) or by chance.
    sms = t["m"][SKIP_CALLS:, :, 0] >> 32  # [call, CTA]
    loops = t["m"][SKIP_CALLS:, :, LAST_K_DONE] - t["m"][SKIP_CALLS:, :, FOURTH]
    by_sm: Dict[int, List[float]] = {}
    for s_id, x in zip(sms.ravel().tolist(), loops.ravel().tolist()):
        by_sm.setdefault(s_id, []).append(x)
    slowest = [int(row[np.argmax(lp)]) for row, lp in zip(sms, loops)]
    top = max(set(slowest), key=slowest.count)
    return {"grid": grid, "calls": calls, "skipped": SKIP_CALLS,
            "timer_step_ns": int(steps[steps > 0].min()) if len(steps) else None,
            "us": {k: _median_us(v) for k, v in rows.items()},
            "k_loop_by_sm_us": {str(k): _median_us(v) for k, v in sorted(by_sm.items())},
            "slowest_sm": {"sm": top, "share_of_calls": round(slowest.count(top) / len(slowest), 3)}}


# What each summary figure is, for the echo line and the record's readers.
MEANING = {
    "period": "last CTA end to the next call's last CTA end",
    "first_entry": "first CTA entry after the previous call's last end (negative: resident before it ended)",
    "release": "first CTA past the grid-dependency wait, after the previous call's last end",
    "release_spread": "last minus first CTA past the wait",
    "first_stage": "wait to the first full stage (median CTA; _max: slowest)",
    "k_loop": "first full stage to the end of the last unit's K loop (median CTA; _max: slowest)",
    "first_unit_k_loop": "first full stage to the end of the first unit's K loop",
    "tail": "end of the K loop to the CTA's end (split reduction, epilogue, store reads)",
    "last_end_after_median": "the last CTA's end after the median CTA's",
    "copies_issued": "producer: wait to the last copy issued (median CTA)",
}
