"""Drives one bench run: the grid, progress, and the three outputs."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional, Tuple

from gen.bench import arms, report
from gen.bench.timing import kernel_us, needs_rest, rest, time_us

# --timing: "events" (what a caller sees back to back; the record the
# dispatch tables come from) or "kernel" (device time per call, the way
# DeepGEMM's published figures were measured)
# resident: events timing on one input set (arms.Context.rotate False)
TIMERS = {"events": time_us, "kernel": kernel_us, "resident": time_us}


def _progress(done: int, total: int, what: str) -> None:
    width = 30
    filled = width * done // max(total, 1)
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {what:<40.40}")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def bench(*, arch: str, shapes: List[Tuple[int, int]], ms: List[int], families: List[str],
          out: Path, md: Optional[Path], png: Optional[Path], git_sha: str, seed: int,
          all_instances: bool = False, timing: str = "events", pdl: str = "auto", a_rows: str = "padded",
          only: Tuple[str, ...] = (), arm_order: Optional[str] = None) -> int:
    """Times the grid; returns 1 if any arm was wrong. only (with
    all_instances): time the instances whose names contain one of these
    strings, and the dispatched one; the record says so. pdl: "on", "off" or
    "auto" (on for events timing, off for kernel timing: each kernel-timed
    call follows an L2 flush kernel, and with PDL the GEMM would start during
    that kernel and its measured duration would include the wait for it).
    arm_order: the order of each point's arm timings (arms.ARM_ORDERS);
    by default "abba" (each arm timed early and late), or with
    all_instances "fp8gen first" (the instances already run in a drawn
    order, and timing each twice would double a long run)."""
    from runtime.env import knobs, override

    if pdl not in ("auto", "on", "off"):
        raise ValueError(f"pdl is auto, on or off, not {pdl!r}")
    if a_rows not in arms.A_ROWS:
        raise ValueError(f"a_rows is one of {', '.join(arms.A_ROWS)}, not {a_rows!r}")
    if arm_order is None:
        arm_order = "fp8gen first" if all_instances else "abba"
    if arm_order not in arms.ARM_ORDERS:
        raise ValueError(f"arm_order is one of {', '.join(arms.ARM_ORDERS)}, not {arm_order!r}")
    if only and not all_instances:
        raise ValueError("only narrows all_instances (without it the dispatched instance alone is timed)")
    if any(not part for part in only):
        raise ValueError("only takes non-empty parts of instance names")
    no_pdl = knobs().no_pdl or pdl == "off" or (pdl == "auto" and timing == "kernel")
    with override(no_pdl=no_pdl):
        return _bench(arch=arch, shapes=shapes, ms=ms, families=families, out=out, md=md, png=png,
                      git_sha=git_sha, seed=seed, all_instances=all_instances, timing=timing, a_rows=a_rows,
                      only=tuple(only), arm_order=arm_order)


def _bench(*, arch: str, shapes: List[Tuple[int, int]], ms: List[int], families: List[str],
           out: Path, md: Optional[Path], png: Optional[Path], git_sha: str, seed: int,
           all_instances: bool, timing: str, a_rows: str, only: Tuple[str, ...], arm_order: str) -> int:
    import torch

    from runtime.hardware import load_hardware
    from runtime.env import knobs

    hw = load_hardware(arch)
    ctx = arms.device_context(torch, arch, seed=seed, families=families, all_instances=all_instances, only=only,
                              timer=TIMERS[timing], rotate=timing != "resident", a_rows=a_rows,
                              order_seed=seed if all_instances else None, arm_order=arm_order)
    rt = ctx.rt
    if "deepgemm" in families:  # (before any timing: a machine without it stops here)
        ctx.deep_gemm = arms.load_deep_gemm(pdl=not knobs().no_pdl)
    unmatched = arms.unmatched_parts(only, [e.name for f in families for e in rt.entries.get(f, [])])
    if unmatched:
        raise SystemExit(f"--instances: no built instance of the timed families contains {', '.join(unmatched)}")
    if "w8a8_wgmma" in families:  # room for the split-K instances at the largest point (only they use it)
        ctx.workspace = rt.workspace(max(ms), 128, max_n=max(n for n, _ in shapes))
    steps = [("copy", None, None)] + [("quant", None, (m, k)) for k in sorted({k for _, k in shapes})
                                      for m in ms] + [("weight", s, None) for s in shapes] \
        + [("gemm", s, m) for s in shapes for m in ms]
    shape_inputs = None
    last_gemm = None  # the previous GEMM point (N, K, M)
    rest_s = float(hw.bench.get("rest_s", 0.0))
    for i, (kind, shape, m) in enumerate(steps):
        _progress(i, len(steps), f"{kind} {shape or ''} {m or ''}")
        if kind == "copy" and ctx.want("copy"):
            arms.copy_point(ctx)
        elif kind == "quant" and any(map(ctx.want, arms.QUANT_ARMS)):
            arms.quant_point(ctx, *m)
        elif kind == "weight" and any(map(ctx.want, arms.WEIGHT_ARMS)):
            arms.weight_point(ctx, *shape)
        elif kind == "gemm":
            if shape_inputs is None or (shape_inputs.N, shape_inputs.K) != shape:
                shape_inputs = None
                torch.cuda.empty_cache()
                shape_inputs = arms.ShapeInputs(ctx, *shape)
            if rest_s > 0 and needs_rest(last_gemm, (*shape, m)):
                rest(torch, rest_s)
            last_gemm = (*shape, m)
            arms.gemm_point(ctx, shape_inputs, m)
    _progress(len(steps), len(steps), "done")
    doc = {**arms.setup_fields(torch, arch, git_sha), "seed": seed,
           # whether fp8gen's kernels launched with programmatic dependent
           # launch (back-to-back calls overlap launch and prologue; the peers
           # do not): FP8GEN_NO_PDL turns it off for an A/B record
           "pdl": not knobs().no_pdl, "timing": timing,
           # the fast arms' activation rows (arms.Context.a_rows)
           "a_rows": a_rows,
           # seconds the GPU idled before a GEMM point after a shape switch or
           # a step down in M (timing.needs_rest); records without it did not
           "rest_s": rest_s,
           # the order of each point's arm timings (arms.ARM_ORDERS: "abba",
           # each arm's time the mean of an early and a late one); records
           # without it ran fp8gen's first
           "arm_order": arm_order,
           # all instances: timed at each point in an order drawn from the
           # seed and the point (arms.point_order); records without it, in
           # the manifest's order
           **({"instance_order": "shuffled per point"} if all_instances else {}),
           # the ceilings each row's roofline_tflops came from (records
           # without it: HARDWARE.toml's [roofline] of their commit)
           "roofline": ctx.roofline,
           "rows": [r.__dict__ for r in ctx.rows]}
    if ctx.deep_gemm is not None:  # the peer's version and how it launched
        doc["deepgemm"] = arms.deep_gemm_fields(ctx.deep_gemm)
    if only:  # a partial all-instance record: gen tune takes it only beside full ones
        doc["only_instances"] = list(only)
    report.write_json(doc, out)
    table = report.markdown(doc, hw.published)
    if md:
        md.write_text(table)
    if png:
        why = report.plot(doc, png)
        if why:
            print(f"no PNG: {why}", file=sys.stderr)
    print(table)
    for r in ctx.refusals:
        print(f"peer refused (not counted as a failure): {r}", file=sys.stderr)
    for f in ctx.failures:
        print(f"FAILED: {f}", file=sys.stderr)
    return 1 if ctx.failures else 0
