"""What gets timed: fp8gen's arms through the runtime, and the peers, on the
same rotated inputs. Every timed GEMM is checked against a float64 reference
first; a wrong result is reported and its timing is dropped."""
from __future__ import annotations

import dataclasses
import datetime
import random
import statistics
from typing import Callable, Dict, List, Optional, Tuple

from gen.bench import grid
from runtime.dispatch import fits_shape
from gen.bench.timing import rotation, time_us

QUANT_ARMS = ("quant_group", "quant_token", "quant_tensor", "scale_mn_major")
# Peers timed only where --families names them: libraries that fp8gen does
# not depend on and that the README does not install (gen bench's default,
# every arm, leaves them out).
OPTIONAL_PEERS = ("deepgemm",)
# DeepGEMM's block-scaled GEMM as its own API calls it on sm_90: per-token
# 1x128 activation scales, 128x128 weight scales, both FP32 (no UE8M0 cast)
DEEPGEMM_RECIPE = (1, 128, 128)
WEIGHT_ARMS = ("nvfp4_to_fp8", "fp8_dequant")

# The order of a point's arm timings (arm_order; a record's "arm_order"):
# fp8gen's arms first, each before the peer it is measured against; the
# peers' first; or "abba": both directions, one after the other (from the
# other end at every other point), each arm's time the mean of its two.
# Under the power cap the order moves the ratios: on the H200 (HARDWARE.toml
# [bench]) the fast path's ratio to cuBLASLt at M > 1024 was about 2 %
# higher with fp8gen's arm first than with the peer first.
ARM_ORDERS = ("fp8gen first", "peers first", "abba")

# rel RMS a correct kernel stays far below (bf16 output rounding is ~2^-9)
CORRECT_REL_RMS = 2.0**-7


@dataclasses.dataclass
class Context:
    torch: object
    rt: object
    gen: object
    l2_bytes: int
    peak_tflops: float
    memory_tbps: float
    families: List[str]
    # HARDWARE.toml's [roofline] as read (ceilings and where each was
    # measured), kept in the record: the shares are against these
    roofline: Dict = dataclasses.field(default_factory=dict)
    all_instances: bool = False  # gen tune: time every instance, not only the dispatched one
    # with all_instances: time only the instances whose names contain one of
    # these (and the dispatched one, the reference); empty: every instance
    only: Tuple[str, ...] = ()
    workspace: object = None  # a runtime.Workspace with room for the split-K instances at every point
    rows: List[grid.Row] = dataclasses.field(default_factory=list)
    failures: List[str] = dataclasses.field(default_factory=list)
    # points a peer library refused (its limits, not a wrong result: reported, not failed)
    refusals: List[str] = dataclasses.field(default_factory=list)
    progress: Callable[[str], None] = print
    # how a call is timed: time_us (events around back-to-back calls, launch
    # gaps included) or timing.kernel_us (the profiler's kernel durations)
    timer: Callable = time_us
    # rotate the inputs over several sets, a few times the L2 (the default:
    # each call reads its operands from DRAM, as a model's projections do);
    # False (--timing resident): one set, so that operands that fit stay in
    # L2 and a kernel's time is what its on-chip work allows
    rotate: bool = True
    # the fast arms' activation operands: "padded" (rows and MN-major scales
    # to a multiple of 128, as runtime.Workspace hands them to rt.linear) or
    # "exact" (M rows; a partial last tile row is then zero-filled by TMA)
    a_rows: str = "padded"
    # with all_instances: each point times the instances in an order drawn
    # from this seed and the point (None: the manifest's order), so that
    # where one run's time drifts along its sequence (the power cap at large
    # M), records combined by gen tune do not all favour the same instances
    order_seed: Optional[int] = None
    # the order of each point's arm timings (ARM_ORDERS), and how many GEMM
    # points this run has timed (abba starts from alternate ends)
    arm_order: str = "fp8gen first"
    points: int = 0

    # DeepGEMM's Python package, where the deepgemm arm is timed (load_deep_gemm)
    deep_gemm: object = None

    def want(self, impl: str) -> bool:
        return impl in self.families


def load_deep_gemm(pdl: bool):
    """DeepGEMM's package for the deepgemm arm, its launches set to PDL as
    fp8gen's are in the same run (so that neither side alone overlaps the
    call before it). DeepGEMM is a peer measured, not a dependency: without
    it the arm cannot run and the run stops before timing anything."""
    try:
        import deep_gemm
    except ImportError as e:
        raise SystemExit("--families deepgemm times DeepGEMM's own kernels, which needs its Python package "
                         f"(deep_gemm) on this machine: {e}")
    deep_gemm.set_pdl(bool(pdl))
    return deep_gemm


def deep_gemm_fields(module) -> dict:
    """What a record says about the DeepGEMM it timed."""
    return {"version": str(getattr(module, "__version__", "unknown")), "pdl": bool(module.get_pdl()),
            "recipe": list(DEEPGEMM_RECIPE)}


def device_context(torch, arch: str, *, seed: int, families, **fields) -> Context:
    """A Context on the current GPU's runtime, which must run `arch`: inputs
    drawn from `seed`, the roofline's ceilings from HARDWARE.toml; `fields`
    set the rest (the workspace, once the runtime is there, as ctx.workspace)."""
    import runtime
    from runtime.hardware import load_hardware

    rt = runtime.load(torch.cuda.current_device())
    if rt.arch != arch:
        raise SystemExit(f"this GPU runs {rt.arch}, not {arch}")
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    roof = grid.ceilings_for(load_hardware(arch).roofline, props.name)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    return Context(torch=torch, rt=rt, gen=gen, l2_bytes=props.L2_cache_size,
                   peak_tflops=float(roof["fp8_dense_tflops"]), memory_tbps=float(roof["memory_tbps"]),
                   roofline=dict(roof), families=list(families), **fields)


def setup_fields(torch, arch: str, git_sha: str) -> dict:
    """What a record says about where it was measured: GPU, arch, date,
    commit, the manifest's nvcc, the driver and torch."""
    from runtime import manifest
    from runtime.driver import check, driver
    from runtime.paths import manifest_path

    doc_manifest, _ = manifest.load(manifest_path(arch))
    drv = check(driver.cuDriverGetVersion(), "cuDriverGetVersion")
    return {"gpu": torch.cuda.get_device_properties(torch.cuda.current_device()).name, "arch": arch,
            "date": datetime.date.today().isoformat(), "git_sha": git_sha, "nvcc": doc_manifest["toolchain"]["nvcc"],
            "driver": f"{drv // 1000}.{drv % 1000 // 10}", "torch": torch.__version__}


def _gemm_row(ctx: Context, impl: str, kernel: str, M: int, N: int, K: int, us: float) -> None:
    flops = 2.0 * M * N * K
    ctx.rows.append(grid.Row("gemm", impl, kernel, M, N, K, round(us, 3), round(flops / us / 1e6, 2),
                             round(grid.gemm_bytes(M, N, K) / us / 1e6, 4),
                             round(grid.roofline_tflops(M, N, K, peak_tflops=ctx.peak_tflops,
                                                        memory_tbps=ctx.memory_tbps), 2)))


def _checked(ctx: Context, impl: str, M: int, N: int, K: int, got, want) -> bool:
    from gen.bench.torch_ref import rel_rms

    err = rel_rms(got, want)
    if not err <= CORRECT_REL_RMS:
        ctx.failures.append(f"{impl} M={M} N={N} K={K}: rel RMS {err:.3e} against float64; timing dropped")
        return False
    return True


def _kernel_name(ctx: Context, family: str, M: int, N: int = 0, K: int = 0) -> str:
    """The instance the runtime dispatches to for this point (what users get)."""
    return ctx.rt.pick(family, M, N, K) if ctx.rt.entries.get(family) else ""


def unmatched_parts(only, names) -> List[str]:
    """The parts of `only` (gen bench --instances) that no name contains."""
    return [part for part in only if not any(part in n for n in names)]


def point_order(names: List[str], seed: Optional[int], M: int, N: int, K: int) -> List[str]:
    """The order in which a point's instances are timed: a permutation drawn
    from the seed and the point (the same every run with that seed), or the
    given order without a seed."""
    if seed is None:
        return list(names)
    order = list(names)
    random.Random(f"{seed}:{M}:{N}:{K}").shuffle(order)
    return order


def input_sets(ctx: Context, set_bytes: int) -> int:
    """How many input sets a point rotates over (one without ctx.rotate)."""
    return rotation(set_bytes, ctx.l2_bytes) if ctx.rotate else 1


def _instances(ctx: Context, family: str, M: int, N: int, K: int) -> List[str]:
    if family not in ctx.rt.entries:
        return []
    if ctx.all_instances:  # (a shape-specialized instance only at its own shape)
        names = [e.name for e in ctx.rt.entries[family] if fits_shape(e, N, K)]
        if ctx.only:
            picked = _kernel_name(ctx, family, M, N, K)
            names = [n for n in names if n == picked or any(part in n for part in ctx.only)]
        return point_order(names, ctx.order_seed, M, N, K)
    return [_kernel_name(ctx, family, M, N, K)]


class ShapeInputs:
    """The weight sets for one (N, K), rotated over (input_sets)."""

    def __init__(self, ctx: Context, N: int, K: int):
        from gen.bench.torch_ref import dequant_weight, quantize_weight

        torch = ctx.torch
        self.N, self.K = N, K
        self.sets = []
        for i in range(input_sets(ctx, 3 * N * K)):
            w_q, w_s = quantize_weight(torch.randn(N, K, device="cuda", generator=ctx.gen) * 0.02)
            w_deq = dequant_weight(w_q, w_s)
            if i == 0:
                self.w_deq0 = w_deq  # float64 reference operand of the first set
            # the same weight quantized per tensor (one scale), for the per-tensor arms
            w_t_s = (w_deq.abs().max() / 448.0).float().reshape(())
            w_t_q = (w_deq / w_t_s.double()).clamp(-448, 448).to(torch.float8_e4m3fn)
            if i == 0:
                self.w_t_deq0 = w_t_q.double() * w_t_s.double()
            # and per output channel (one scale per row), for the per-row arms
            w_r_s = (w_deq.abs().amax(dim=1) / 448.0).clamp_min(1e-12).float()
            w_r_q = (w_deq / w_r_s.double()[:, None]).clamp(-448, 448).to(torch.float8_e4m3fn)
            if i == 0:
                self.w_r_deq0 = w_r_q.double() * w_r_s.double()[:, None]
            self.sets.append(dict(w_q=w_q, w_s=w_s, w_fp8=w_q.view(torch.float8_e4m3fn),
                                  w_bf16=w_deq.to(torch.bfloat16), w_t_fp8=w_t_q, w_t_q=w_t_q.view(torch.uint8),
                                  w_t_s=w_t_s, w_r_fp8=w_r_q, w_r_q=w_r_q.view(torch.uint8), w_r_s=w_r_s))


A_ROWS = ("padded", "exact")


def _padded(ctx: Context, a):
    """The e4m3 activation [M, K] fp8gen's Params-launched GEMMs get: with
    zero rows up to a multiple of 128 under --a-rows padded (they take m=M),
    as runtime.Workspace hands it to them; else `a` itself."""
    from runtime.workspace import padded_rows

    if ctx.a_rows != "padded":
        return a
    M, K = a.shape
    rows = ctx.torch.zeros(padded_rows(M), K, dtype=a.dtype, device=a.device)
    rows[:M] = a
    return rows


def activations(ctx: Context, M: int, K: int, count: int):
    """`count` rotated activation sets of [M, K]: bf16, its 1x128 quantization
    in every layout the arms take, and the per-tensor and per-token forms."""
    from gen.bench.torch_ref import quantize_act, with_outliers
    from runtime.workspace import padded_rows

    torch = ctx.torch
    out = []
    for _ in range(count):
        x = with_outliers((M, K), ctx.gen).to(torch.bfloat16)
        a_q, a_s = quantize_act(x)
        # MN-major [K/128, M_pad]: token index contiguous, rows padded to 4
        # floats (16 bytes, what TMA and cuBLASLt need) with zero scales
        m_pad = -(-M // 4) * 4
        a_s_gm = torch.zeros(K // 128, m_pad, dtype=torch.float32, device="cuda")
        a_s_gm[:, :M] = a_s.t()
        # the block-scaled fast arms' operands (Context.a_rows): padding rows of zeros
        a_q_rows, a_s_rows = _padded(ctx, a_q), a_s_gm
        if ctx.a_rows == "padded":
            a_s_rows = torch.zeros(K // 128, padded_rows(M), dtype=torch.float32, device="cuda")
            a_s_rows[:, :M] = a_s.t()
        # per tensor: one scale for the whole activation
        a_t_s = (x.float().abs().max() / 448.0).reshape(())
        a_t_q = (x.float() / a_t_s).clamp(-448, 448).to(torch.float8_e4m3fn)
        # per token: one scale per row
        a_r_s = (x.float().abs().amax(dim=1) / 448.0).clamp_min(1e-12)
        a_r_q = (x.float() / a_r_s[:, None]).clamp(-448, 448).to(torch.float8_e4m3fn)
        out.append(dict(x=x, a_q=a_q, a_s=a_s, a_fp8=a_q.view(torch.float8_e4m3fn), a_s_gm=a_s_gm,
                        a_q_rows=a_q_rows, a_s_rows=a_s_rows,
                        a_s_mn=a_s_gm[:, :M].t(), a_t_fp8=a_t_q, a_t_q=_padded(ctx, a_t_q.view(torch.uint8)),
                        a_t_s=a_t_s, a_r_fp8=a_r_q, a_r_q=_padded(ctx, a_r_q.view(torch.uint8)), a_r_s=a_r_s))
    return out


def gemm_point(ctx: Context, shape: ShapeInputs, M: int) -> None:
    """Every GEMM arm at (M, N, K) on the same rotated inputs."""
    from gen.bench.torch_ref import dequant_act

    torch = ctx.torch
    N, K = shape.N, shape.K
    ws = shape.sets
    acts = activations(ctx, M, K, len(ws))
    outs = [torch.empty(M, N, dtype=torch.bfloat16, device="cuda") for _ in ws]
    pairs = list(zip(acts, ws, outs))
    ref_w8a8 = dequant_act(acts[0]["a_q"], acts[0]["a_s"]) @ shape.w_deq0.T
    ref_w8a16 = acts[0]["x"].double() @ shape.w_deq0.T

    timed: Dict[Tuple[str, str], List[float]] = {}  # each arm's timings at this point, in first-timed order

    def run(impl: str, kernel: str, call, ref) -> None:
        outs[0].fill_(float("nan"))
        call(*pairs[0])
        torch.cuda.synchronize()
        if ref is not None and not _checked(ctx, impl, M, N, K, outs[0], ref):
            return
        try:
            us = ctx.timer(torch, [lambda p=p: call(*p) for p in pairs])
        except Exception:
            # a fault is sticky (the context is lost): say where it surfaced, then stop
            ctx.progress(f"\nfault while timing {impl} {kernel} at M={M} N={N} K={K}")
            raise
        timed.setdefault((impl, kernel), []).append(us)

    rt = ctx.rt
    # (peer, step): each arm's timing, in the order arm_order runs them
    steps: List[Tuple[bool, Callable[[], None]]] = []
    if ctx.want("w8a8_mma"):
        def mma() -> None:
            for inst in _instances(ctx, "w8a8_mma", M, N, K):
                run("w8a8_mma", inst, lambda a, w, o, i=inst: rt.w8a8_mma(a["a_q"], a["a_s"], w["w_q"], w["w_s"], o,
                                                                           instance=i), ref_w8a8)
        steps.append((False, mma))
    for family in ("w8a8_wgmma", "w8a8_cutlass"):
        if not ctx.want(family):
            continue

        def fast(family=family) -> None:
            call = getattr(rt, family)
            # early_weights: the weights are static here, as rt.linear's are (the
            # wgmma kernel may read them before it waits for the call before it)
            extra = {"workspace": ctx.workspace, "early_weights": True} if family == "w8a8_wgmma" else {}
            for inst in _instances(ctx, family, M, N, K):
                run(family, inst, lambda a, w, o, i=inst, c=call: c(a["a_q_rows"], a["a_s_rows"], w["w_q"],
                                                                     w["w_s"], o, instance=i, m=M, **extra), ref_w8a8)
        steps.append((False, fast))
    if ctx.want("w8a16_gemm") and M > 4:
        def w8a16() -> None:
            for inst in _instances(ctx, "w8a16_gemm", M, N, K):
                run("w8a16_gemm", inst, lambda a, w, o, i=inst: rt.w8a16_gemm(a["x"], w["w_q"], w["w_s"], o,
                                                                               instance=i), ref_w8a16)
        steps.append((False, w8a16))
    if ctx.want("w8a16_gemv") and M <= 4:
        steps.append((False, lambda: run("w8a16_gemv", _kernel_name(ctx, "w8a16_gemv", M),
                                         lambda a, w, o: rt.w8a16_gemv(a["x"], w["w_q"], w["w_s"], o), ref_w8a16)))
    if ctx.want("cublaslt_block"):
        def scaled_mm(a, w, o):
            torch._scaled_mm(a["a_fp8"], w["w_fp8"].t(), scale_a=a["a_s_mn"], scale_b=w["w_s"].t(),
                             out_dtype=torch.bfloat16, out=o)

        steps.append((True, lambda: _peer(ctx, "cublaslt_block", M, N, K, lambda: run(
            "cublaslt_block", "torch._scaled_mm VEC128x BLK128x128", scaled_mm, ref_w8a8))))
    if ctx.want("deepgemm"):
        dg = ctx.deep_gemm

        def deepgemm(a, w, o):
            # (a_s_mn: [M, K/128] with the token index contiguous and rows
            # 16-byte aligned, the layout DeepGEMM takes without a transpose)
            dg.fp8_gemm_nt((a["a_fp8"], a["a_s_mn"]), (w["w_fp8"], w["w_s"]), o, recipe=DEEPGEMM_RECIPE,
                           disable_ue8m0_cast=True)

        steps.append((True, lambda: _peer(ctx, "deepgemm", M, N, K, lambda: run(
            "deepgemm", "deep_gemm.fp8_gemm_nt 1D2D", deepgemm, ref_w8a8))))
    if ctx.want("w8a8_tensor") or ctx.want("cublaslt_tensor"):
        # per-tensor arms on the same per-tensor inputs (GEMM only: the
        # quantization is the caller's in both)
        ref_tensor = (acts[0]["a_t_fp8"].double() * acts[0]["a_t_s"].double()) @ shape.w_t_deq0.T
        for a, w in zip(acts, ws):
            a["t_scale"] = (a["a_t_s"] * w["w_t_s"]).reshape(())  # our kernel's one output scale
    if ctx.want("w8a8_tensor"):
        def tensor() -> None:
            for inst in _instances(ctx, "w8a8_tensor", M, N, K):
                run("w8a8_tensor", inst, lambda a, w, o, i=inst: rt.w8a8_tensor(a["a_t_q"], a["t_scale"], w["w_t_q"],
                                                                                 o, instance=i, early_weights=True,
                                                                                 m=M), ref_tensor)
        steps.append((False, tensor))
    if ctx.want("cublaslt_tensor"):
        def scaled_mm_tensor(a, w, o):
            torch._scaled_mm(a["a_t_fp8"], w["w_t_fp8"].t(), scale_a=a["a_t_s"], scale_b=w["w_t_s"],
                             out_dtype=torch.bfloat16, out=o)

        steps.append((True, lambda: _peer(ctx, "cublaslt_tensor", M, N, K, lambda: run(
            "cublaslt_tensor", "torch._scaled_mm per-tensor", scaled_mm_tensor, ref_tensor))))
    if ctx.want("w8a8_row") or ctx.want("cublaslt_row"):
        ref_row = (acts[0]["a_r_fp8"].double() * acts[0]["a_r_s"].double()[:, None]) @ shape.w_r_deq0.T
    if ctx.want("w8a8_row"):
        def row() -> None:
            for inst in _instances(ctx, "w8a8_row", M, N, K):
                run("w8a8_row", inst, lambda a, w, o, i=inst: rt.w8a8_row(a["a_r_q"], a["a_r_s"], w["w_r_q"],
                                                                           w["w_r_s"], o, instance=i,
                                                                           early_weights=True, m=M), ref_row)
        steps.append((False, row))
    if ctx.want("cublaslt_row"):
        def scaled_mm_row(a, w, o):
            torch._scaled_mm(a["a_r_fp8"], w["w_r_fp8"].t(), scale_a=a["a_r_s"][:, None],
                             scale_b=w["w_r_s"][None, :], out_dtype=torch.bfloat16, out=o)

        steps.append((True, lambda: _peer(ctx, "cublaslt_row", M, N, K, lambda: run(
            "cublaslt_row", "torch._scaled_mm row-wise", scaled_mm_row, ref_row))))
    if ctx.want("torch_bf16"):
        steps.append((True, lambda: run("torch_bf16", "torch.matmul bf16",
                                        lambda a, w, o: torch.matmul(a["x"], w["w_bf16"].t(), out=o), None)))
    for _, step in arm_order(steps, ctx.arm_order, ctx.points):
        step()
    ctx.points += 1
    for (impl, kernel), uss in timed.items():
        _gemm_row(ctx, impl, kernel, M, N, K, statistics.fmean(uss))


def arm_order(steps: List[Tuple[bool, Callable[[], None]]], order: str,
              point: int = 0) -> List[Tuple[bool, Callable]]:
    """A point's arm timings in the order they run (ARM_ORDERS): as listed
    (fp8gen's arm before the peer it is measured against), every peer's
    first (each group in its listed order), or "abba": the listed order and
    then its reverse, so that each arm is timed once early and once late,
    starting from the other end at every other point (`point`, the point's
    index in the run), so that over a grid each arm is timed first as often.
    (A step is a family: with all instances, its instances keep their drawn
    order in both directions.)
    The H200's records say why the start matters: an arm timed first at a
    large point runs on a GPU the point before heated less, and the one
    timed right after it inherits its heat (HARDWARE.toml [bench])."""
    if order not in ARM_ORDERS:
        raise ValueError(f"arm order is one of {', '.join(ARM_ORDERS)}, not {order!r}")
    if order == "peers first":
        return sorted(steps, key=lambda s: not s[0])
    if order == "abba":
        out, back = (list(steps), list(reversed(steps)))[::1 if point % 2 == 0 else -1]
        return out + back
    return list(steps)


def _peer(ctx: Context, impl: str, M: int, N: int, K: int, timed: Callable[[], None]) -> None:
    """A peer library's timing; a shape it refuses is reported, not failed."""
    try:
        timed()
    except RuntimeError as e:
        refusal = f"{impl} M={M} N={N} K={K}: refused: {str(e).splitlines()[0]}"
        if refusal not in ctx.refusals:  # (abba asks twice)
            ctx.refusals.append(refusal)


def _stream_row(ctx: Context, op: str, impl: str, M: int, N: int, K: int, nbytes: int, calls) -> None:
    """A bandwidth-bound op's row: median microseconds and the TB/s of its
    fewest bytes (each input read once, each output written once)."""
    us = ctx.timer(ctx.torch, calls)
    ctx.rows.append(grid.Row(op, impl, _kernel_name(ctx, impl, M or N, N, K), M, N, K, round(us, 3), None,
                             round(nbytes / us / 1e6, 4), None))


def _reconstructs(ctx: Context, impl: str, where: str, got, want, bound: float = 2.0**-4) -> bool:
    """A quantizer's output times its scales against what it quantized
    (e4m3 rounding alone stays near 2^-5.5 relative RMS)."""
    from gen.bench.torch_ref import rel_rms

    err = rel_rms(got, want.double())
    if not err <= bound:
        ctx.failures.append(f"{impl} {where}: reconstruction rel RMS {err:.3e}; timing dropped")
        return False
    return True


def quant_point(ctx: Context, M: int, K: int) -> None:
    """The activation quantizers (and the scale adapter) at (M, K)."""
    from gen.bench.torch_ref import dequant_act, e4m3_f64

    torch = ctx.torch
    rt = ctx.rt
    n = input_sets(ctx, 3 * M * K)
    where = f"M={M} K={K}"
    xs = [ctx.torch.randn(M, K, device="cuda", generator=ctx.gen).to(torch.bfloat16) for _ in range(n)]
    qs = [torch.empty(M, K, dtype=torch.uint8, device="cuda") for _ in range(n)]
    ss = [torch.empty(M, K // 128, dtype=torch.float32, device="cuda") for _ in range(n)]
    if ctx.want("quant_group"):
        rt.quant_group(xs[0], qs[0], ss[0], mn_major=False)
        torch.cuda.synchronize()
        if _reconstructs(ctx, "quant_group", where, dequant_act(qs[0], ss[0]), xs[0]):
            _stream_row(ctx, "quant", "quant_group", M, 0, K, grid.quant_bytes(M, K),
                        [lambda i=i: rt.quant_group(xs[i], qs[i], ss[i], mn_major=False) for i in range(n)])
    if ctx.want("quant_token"):
        tok = [torch.empty(M, dtype=torch.float32, device="cuda") for _ in range(n)]
        rt.quant_token(xs[0], qs[0], tok[0])
        torch.cuda.synchronize()
        if _reconstructs(ctx, "quant_token", where, e4m3_f64(qs[0]) * tok[0].double()[:, None], xs[0]):
            _stream_row(ctx, "quant", "quant_token", M, 0, K, 3 * M * K + 4 * M,
                        [lambda i=i: rt.quant_token(xs[i], qs[i], tok[i]) for i in range(n)])
    if ctx.want("quant_tensor"):
        # all three device steps (amax, finalize, quantize) per call
        state = torch.zeros(4, dtype=torch.float32, device="cuda")
        rt.quant_tensor(xs[0], qs[0], state)
        torch.cuda.synchronize()
        if _reconstructs(ctx, "quant_tensor", where, e4m3_f64(qs[0]) * state[1].double(), xs[0]):
            _stream_row(ctx, "quant", "quant_tensor", M, 0, K, 3 * M * K,
                        [lambda i=i: rt.quant_tensor(xs[i], qs[i], state) for i in range(n)])
    if ctx.want("scale_mn_major"):
        m_pad = -(-M // 4) * 4
        dst = [torch.empty(K // 128, m_pad, dtype=torch.float32, device="cuda") for _ in range(n)]
        _stream_row(ctx, "scale", "scale_mn_major", M, 0, K, 4 * (M + m_pad) * (K // 128),
                    [lambda i=i: rt.scale_mn_major(ss[i], dst[i]) for i in range(n)])


def _nvfp4_weight(ctx: Context, N: int, K: int):
    """A random NVFP4 weight (every e2m1 code is a value) and its float64 decode."""
    torch = ctx.torch
    packed = torch.randint(0, 256, (N, K // 2), dtype=torch.uint8, device="cuda", generator=ctx.gen)
    block = (torch.rand(N, K // 16, device="cuda", generator=ctx.gen) * 4 + 0.25).to(torch.float8_e4m3fn)
    g = torch.tensor(0.01, dtype=torch.float32, device="cuda")
    lut = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=torch.float64, device="cuda")
    codes = torch.stack([packed & 15, packed >> 4], dim=-1).view(N, K).long()
    values = torch.where(codes >= 8, -1.0, 1.0).double() * lut[codes & 7]
    decoded = values * block.double().repeat_interleave(16, 1) * g.double()
    return packed, block.view(torch.uint8), g, decoded


def weight_point(ctx: Context, N: int, K: int) -> None:
    """The weight converters at (N, K): NVFP4 -> e4m3 (all three device
    steps) and e4m3 block-scaled -> bf16."""
    from gen.bench.torch_ref import dequant_weight, e4m3_f64, quantize_weight

    torch = ctx.torch
    rt = ctx.rt
    n = input_sets(ctx, 3 * N * K)
    where = f"N={N} K={K}"
    if ctx.want("nvfp4_to_fp8"):
        srcs = [_nvfp4_weight(ctx, N, K) for _ in range(n)]
        qs = [torch.empty(N, K, dtype=torch.uint8, device="cuda") for _ in range(n)]
        state = torch.zeros(4, dtype=torch.float32, device="cuda")
        packed, block, g, decoded = srcs[0]
        rt.nvfp4_to_fp8(packed, block, g, qs[0], state)
        torch.cuda.synchronize()
        if _reconstructs(ctx, "nvfp4_to_fp8", where, e4m3_f64(qs[0]) * state[1].double(), decoded):
            _stream_row(ctx, "weight", "nvfp4_to_fp8", 0, N, K, N * K // 2 + N * K // 16 + N * K,
                        [lambda i=i: rt.nvfp4_to_fp8(*srcs[i][:3], qs[i], state) for i in range(n)])
        del srcs, qs
    if ctx.want("fp8_dequant"):
        import runtime

        tensors = [quantize_weight(torch.randn(N, K, device="cuda", generator=ctx.gen)) for _ in range(n)]
        ws = [runtime.Fp8Weight.from_checkpoint(q, s, check_values=False) for q, s in tensors]
        outs = [torch.empty(N, K, dtype=torch.bfloat16, device="cuda") for _ in range(n)]
        rt.fp8_dequant(ws[0], outs[0])
        torch.cuda.synchronize()
        # bf16 rounding once: at most 2^-9 relative per element
        if _reconstructs(ctx, "fp8_dequant", where, outs[0], dequant_weight(*tensors[0]), 2.0**-8):
            nbytes = 3 * N * K + 4 * (-(-N // 128)) * (K // 128)
            _stream_row(ctx, "weight", "fp8_dequant", 0, N, K, nbytes,
                        [lambda i=i: rt.fp8_dequant(ws[i], outs[i]) for i in range(n)])


def copy_point(ctx: Context, nbytes: int = 1 << 30) -> None:
    torch = ctx.torch
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda").random_(0, 255, generator=ctx.gen)
    dst = torch.empty_like(src)
    us = time_us(torch, [lambda: dst.copy_(src)], batch=5, batches=5)
    ctx.rows.append(grid.Row("copy", "copy", "torch copy_ 1 GiB", 0, 0, 0, round(us, 3), None,
                             round(2 * nbytes / us / 1e6, 4), None))
