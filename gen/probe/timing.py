"""`gen probe run`: the built cubin and its probe builds timed in turn at
each point, on the same rotated inputs as gen bench."""
from __future__ import annotations

import statistics
import time
from typing import Callable, Dict, List, Sequence, Tuple

from gen.probe import trace
from gen.probe.build import probe_cubin
from gen.probe.swap import BUILT, Swapper
from gen.probe.variants import FAMILY, Variant

Point = Tuple[int, int, int]  # (N, K, M)


def parse_points(text: str) -> List[Point]:
    """"NxKxM,..." (e.g. 7168x16384x1024) into (N, K, M) triples."""
    points = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        try:
            n, k, m = (int(x) for x in part.lower().split("x"))
        except ValueError:
            raise ValueError(f"point {part!r} is not NxKxM (e.g. 7168x16384x1024)") from None
        if min(n, k, m) < 1 or k % 128:
            raise ValueError(f"point {part!r}: N, K and M must be positive and K a multiple of 128")
        points.append((n, k, m))
    if not points:
        raise ValueError("no point given")
    return points


def _orders(names: List[str], rounds: int) -> List[List[str]]:
    """The order of each round: as given, then reversed, alternating (so that
    drift along a round does not favour whichever runs first)."""
    return [names if r % 2 == 0 else names[::-1] for r in range(rounds)]


def _sustained(torch, calls, seconds: float) -> Tuple[float, float, float, int]:
    """Calls back to back for about `seconds`: (us per call, window start,
    window end, calls). The window skips the first 30 %, while the clock
    settles under the power cap."""
    calls[0]()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0 = time.time()
    n = 0
    start.record()
    while time.time() - t0 < seconds:
        for i in range(50):
            calls[(n + i) % len(calls)]()
        n += 50
    end.record()
    end.synchronize()
    t1 = time.time()
    return start.elapsed_time(end) * 1e3 / n, t0 + 0.3 * (t1 - t0), t1, n


def run(*, arch: str, kernels: Sequence[str], variants: Sequence[Variant], points: Sequence[Point], rounds: int,
        sustained_s: float, seed: int, git_sha: str, echo: Callable[[str], None] = print) -> Dict[str, object]:
    import torch

    from gen.bench import arms
    from gen.bench.timing import SLEEP_CYCLES_PER_S, time_us
    from gen.bench.torch_ref import dequant_act, rel_rms
    from gen.probe.sampler import PowerSampler, smi_target

    ctx = arms.device_context(torch, arch, seed=seed, families=[FAMILY])
    rt = ctx.rt
    for name in kernels:
        if rt.loaded(name).entry.family != FAMILY:
            raise SystemExit(f"{name} is not a {FAMILY} kernel")
    ctx.workspace = rt.workspace(max(m for _, _, m in points), 128, max_n=max(n for n, _, _ in points))
    names = [BUILT] + [v.name for v in variants]
    by_name = {v.name: v for v in variants}
    sampler = None
    if sustained_s > 0:
        ordinal = torch.cuda.current_device()
        sampler = PowerSampler(smi_target(getattr(torch.cuda.get_device_properties(ordinal), "uuid", None), ordinal))
    rows: List[Dict[str, object]] = []
    windows = []  # (row, start, end) of the sustained runs, matched to the samples at the end
    shape = None
    try:
        for (N, K, M) in points:
            if shape is None or (shape.N, shape.K) != (N, K):
                shape = None
                torch.cuda.empty_cache()
                shape = arms.ShapeInputs(ctx, N, K)
            acts = arms.activations(ctx, M, K, len(shape.sets))
            outs = [torch.empty(M, N, dtype=torch.bfloat16, device="cuda") for _ in shape.sets]
            assert len(outs) >= 2, "the output check needs two input sets (timing.rotation gives at least 2)"
            ref = dequant_act(acts[0]["a_q"], acts[0]["a_s"]) @ shape.w_deq0.T
            for name in kernels:
                calls = [lambda a=a, w=w, o=o, i=name: rt.w8a8_wgmma(a["a_q_rows"], a["a_s_rows"], w["w_q"], w["w_s"],
                                                                   o, instance=i, m=M, workspace=ctx.workspace,
                                                                   early_weights=True)
                         for a, w, o in zip(acts, shape.sets, outs)]
                cubins = {v.name: probe_cubin(arch, v.name, name) for v in variants}
                with Swapper(rt, name, cubins) as swap:
                    # The built cubin must be right, and each probe build that
                    # leaves a part out must compute something else (else its
                    # switch did not take effect); the trace build must not.
                    # Each probe runs on input set 1 right after the built
                    # cubin ran on set 0: a probe without copies computes on
                    # what the stages hold, which with no more K blocks than
                    # stages is the previous call's data, the right answer had
                    # that call had the same inputs.
                    swap.use(BUILT)
                    outs[0].fill_(float("nan"))
                    calls[0]()
                    torch.cuda.synchronize()
                    err = rel_rms(outs[0], ref)
                    if not err <= arms.CORRECT_REL_RMS:
                        raise SystemExit(f"{name} at N={N} K={K} M={M}: the built cubin is wrong "
                                         f"(rel RMS {err:.3e} against float64)")
                    calls[1]()
                    torch.cuda.synchronize()
                    built1 = outs[1].clone()
                    same = {}
                    for v in names[1:]:
                        swap.use(BUILT)
                        calls[0]()
                        swap.use(v)
                        outs[1].fill_(float("nan"))
                        calls[1]()
                        torch.cuda.synchronize()
                        same[v] = bool(torch.equal(outs[1], built1))
                    del built1
                    traces = {}
                    for v in variants:
                        if v.traced:  # its stamps, from a burst of its own (the timing below times it too)
                            swap.use(v.name)
                            with rt.ctx.current():
                                traces[v.name] = trace.capture(
                                    swap.modules[v.name], lambda i: calls[i % len(calls)](), torch.cuda.synchronize,
                                    lambda: torch.cuda._sleep(int(0.02 * SLEEP_CYCLES_PER_S)))
                    burst: Dict[str, List[float]] = {v: [] for v in names}
                    for order in _orders(names, rounds):
                        for v in order:
                            swap.use(v)
                            burst[v].append(time_us(torch, calls))
                    base = statistics.mean(burst[BUILT])
                    point_rows = {}
                    for v in names:
                        us = statistics.mean(burst[v])
                        row = {"kernel": name, "variant": v, "N": N, "K": K, "M": M, "burst_us": round(us, 3),
                               "burst_samples": [round(x, 3) for x in burst[v]],
                               "burst_ratio": round(us / base, 4)}
                        if v != BUILT:
                            row["output_equals_built"] = same[v]
                        if v in traces:
                            row["trace"] = traces[v]
                        point_rows[v] = row
                        rows.append(row)
                    if sampler is not None:
                        for r, order in enumerate(_orders(names, 2)):
                            for v in order:
                                swap.use(v)
                                time.sleep(1.0)  # the same start for every variant
                                us, a, b, n = _sustained(torch, calls, sustained_s)
                                point_rows[v].setdefault("sustained", []).append({"us": round(us, 3), "calls": n})
                                windows.append((point_rows[v]["sustained"][-1], a, b))
                    echo(f"{N}x{K} M={M} {name}: built {base:.2f} us; " + "; ".join(
                        f"{v} {point_rows[v]['burst_us']:.2f} us ({point_rows[v]['burst_ratio']:.3f}x"
                        f"{_output_note(by_name[v], same[v])})" for v in names[1:]))
                    for v, tr in traces.items():
                        echo(f"  {v} ({tr['calls']} calls of {tr['grid']} CTAs, timer step {tr['timer_step_ns']} ns), "
                             "us: " + ", ".join(f"{k} {x}" for k, x in tr["us"].items())
                             + f"; K loop per SM (median) {min(tr['k_loop_by_sm_us'].values())}-"
                             f"{max(tr['k_loop_by_sm_us'].values())} us, the slowest CTA on SM "
                             f"{tr['slowest_sm']['sm']} in {tr['slowest_sm']['share_of_calls']:.0%} of calls")
    finally:
        if sampler is not None:
            sampler.stop()
    if sampler is not None:
        for entry, a, b in windows:
            clock, power, count = sampler.window(a, b)
            entry.update(sm_mhz=clock, power_w=power, samples=count)
        for row in rows:
            for s in row.get("sustained", []):
                echo(f"sustained {row['N']}x{row['K']} M={row['M']} {row['kernel']} {row['variant']}: "
                     f"{s['us']:.2f} us per call, {s.get('sm_mhz')} MHz, {s.get('power_w')} W "
                     f"({s.get('samples')} samples)")
    def where(r):
        return f"{r['variant']} of {r['kernel']} at {r['N']}x{r['K']} M={r['M']}"

    unchanged = [where(r) for r in rows if r.get("output_equals_built") and not by_name[r["variant"]].same_output]
    changed = [where(r) for r in rows if r.get("output_equals_built") is False and by_name[r["variant"]].same_output]
    return {"kind": "probe", **arms.setup_fields(torch, arch, git_sha),
            "seed": seed, "rounds": rounds, "sustained_s": sustained_s,
            "variants": {v.name: {"defines": list(v.defines), "keeps": v.keeps} for v in variants},
            "unchanged_outputs": unchanged, "changed_outputs": changed,
            "trace_meaning": trace.MEANING if any(v.traced for v in variants) else None, "rows": rows}


def _output_note(variant: Variant, same: bool) -> str:
    if variant.same_output:
        return "" if same else ", output differs from the built cubin's!"
    return ", output unchanged!" if same else ""
