"""`python -m gen ...`: build, check, list and inspect fp8gen's kernels."""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from typing import List, Optional

from runtime.errors import Fp8genError
from runtime.paths import ARCHES, REPO_ROOT, build_dir, manifest_path


def _arches(values: Optional[List[str]], default: List[str]) -> List[str]:
    if not values:
        return default
    out: List[str] = []
    for v in values:
        for a in (ARCHES if v == "all" else [v]):
            if a not in ARCHES:
                raise SystemExit(f"unknown arch {a!r}; choose from {', '.join(ARCHES)} or all")
            if a not in out:
                out.append(a)
    return out


def cmd_build(args) -> int:
    from gen.build import build_arch, stale_manifest
    from gen.catalog import specs_for
    from gen.render import render_all, stale_sources

    arches = _arches(args.arch, list(ARCHES) if args.check else ["sm_90a"])
    if args.check:
        problems = []
        for arch in arches:
            rendered = render_all(specs_for(arch))
            problems += stale_sources(arch, rendered) + stale_manifest(arch, rendered)
        for p in problems:
            print(p)
        if problems:
            print(f"emitted/ is out of step with the templates ({len(problems)} problems); "
                  f"run `python -m gen build --arch <arch>`", file=sys.stderr)
            return 1
        print(f"emitted/ matches the templates for {', '.join(arches)}")
        return 0
    from gen.toolchain import toolchain

    tc = toolchain()
    print(f"using {tc.describe()}; cubins under {build_dir()}")
    for arch in arches:
        t0 = time.monotonic()
        result = build_arch(arch, jobs=args.jobs, patterns=args.kernel, tc=tc)
        print(f"{arch}: {result['kernels']} kernels current"
              f"{', manifest updated' if result['manifest_written'] else ''} ({time.monotonic() - t0:.1f} s)")
    return 0


def cmd_list(args) -> int:
    from gen.catalog import specs_for

    for arch in _arches(args.arch, list(ARCHES)):
        for spec in specs_for(arch):
            print(f"{spec.family:16s} {spec.name}")
    return 0


def cmd_show(args) -> int:
    from gen.catalog import find_spec
    from gen.render import source_path
    from runtime import manifest

    spec = find_spec(args.name)
    info = {"name": spec.name, "family": spec.family, "arch": spec.arch, "params": spec.params(),
            "threads": spec.threads, "dynamic_smem": spec.dynamic_smem, "constraints": spec.constraints(),
            "abi": [list(p) for p in spec.abi],
            "source": str(source_path(spec).relative_to(REPO_ROOT))}
    try:
        _, entries = manifest.load(manifest_path(spec.arch))
        built = next((e for e in entries if e.name == spec.name), None)
    except Fp8genError:
        built = None
    if built is None:
        info["resources"] = f"not built: run `python -m gen build --arch {spec.arch}`"
    else:
        # the built record wins: CUTLASS instances learn threads and smem from their shim
        info.update(threads=built.threads, dynamic_smem=built.dynamic_smem, constraints=built.constraints)
        info["resources"] = {"registers": built.registers, "static_smem": built.static_smem,
                             "spill_bytes": built.spill_bytes, "stack_bytes": built.stack_bytes,
                             "cluster": list(built.cluster)}
        info["cubin"] = str(build_dir() / built.cubin)
        info["cubin_sha256"] = built.cubin_sha256
        if built.shim:
            info["shim"] = str(build_dir() / built.shim)
            info["shim_sha256"] = built.shim_sha256
    print(json.dumps(info, indent=2))
    return 0


def cmd_explain(args) -> int:
    from runtime import manifest, select, splitk
    from runtime.env import knobs
    from runtime.hardware import load_hardware

    _, kernels = manifest.load(manifest_path(args.arch))
    entries = {}
    for e in kernels:
        entries.setdefault(e.family, []).append(e)
    hardware = load_hardware(args.arch)
    table = _explain_table(hardware, kernels, args.sms)
    d = select.decide(args.m, args.n, args.k, weight_format=args.format, knobs=knobs(),
                      levers=select.Levers.from_defaults(hardware.defaults),
                      available=select.Availability(
                          quantizer=bool(entries.get("quant_group")), scratch=True,
                          note="explain assumes the caller allocated the workspace"),
                      entries=entries, arch=args.arch, tp=args.tp, parallel=args.parallel,
                      dispatch=table)
    print(f"arch {args.arch}: manifest {manifest_path(args.arch).relative_to(REPO_ROOT)}, "
          f"levers from hardware/{args.arch}/HARDWARE.toml [defaults]")
    print(d.explain(), end="")
    picked = next((e for e in kernels if e.name == d.instance), None)
    if picked is not None and picked.family in select.FAST_FAMILIES:
        print("table: " + table.basis(select.FAST_TABLE, d.m, d.shard.n, d.shard.k))
        if not table.has_rules(select.FAST_TABLE, d.shard.n, d.shard.k):
            est = table.estimates(select.FAST_TABLE, d.m, d.shard.n, d.shard.k)
            for name in sorted(est, key=lambda i: (est[i], i))[:5]:
                print(f"  predicted {est[name]:.1f} us: {name}")
    if picked is not None and splitk.is_split(picked):
        print(_split_plan(picked, d.m, d.shard.n, d.shard.k, args.sms))
    return 0


def _explain_table(hardware, kernels, sms: int):
    """The dispatch table as the runtime holds it on a device of `sms` SMs,
    split rules from the built host shims (a split instance whose shim is
    not built is left out of the ranking)."""
    from runtime.dispatch import DispatchTable
    from runtime.errors import LoadError
    from runtime.loader import HostShim
    from runtime.waves import Ranker

    if not hardware.wave_model:
        return DispatchTable(hardware.dispatch)

    def k_split(entry):
        if int(entry.constraints.get("k_slices", 1)) <= 1:
            return None
        try:
            return HostShim(build_dir() / entry.shim, entry).k_split
        except LoadError:
            def unknown(*_):
                raise LoadError(f"{entry.name}: host shim not built")
            return unknown
    return DispatchTable(hardware.dispatch, hardware.rates,
                         Ranker({e.name: e for e in kernels}, sms, float(hardware.wave_model["call_cost_us"]),
                                k_split))


def _split_plan(entry, m: int, n: int, k: int, sms: int) -> str:
    """How a split-K instance cuts K at this shard, from its host shim's rule."""
    from runtime.errors import LaunchError, LoadError
    from runtime.loader import HostShim

    try:
        slices, whole = HostShim(build_dir() / entry.shim, entry).k_split(m, n, k, sms)
    except LoadError as e:
        return f"K split: unknown ({e}; run `python -m gen build --arch {entry.arch}`)"
    except LaunchError as e:
        return f"K split: {e}"
    tiles = -(-m // entry.constraints["tile_m"]) * -(-n // entry.constraints["tile_n"])
    if slices == 1:
        return f"K split on {sms} SMs: none ({tiles} tiles run whole)"
    return (f"K split on {sms} SMs: {whole} of {tiles} tiles run whole, the last {tiles - whole} in {slices} "
            f"K slices each")


ALL_ARMS = ("quant_group", "quant_token", "quant_tensor", "scale_mn_major", "nvfp4_to_fp8", "fp8_dequant",
            "w8a8_mma", "w8a8_wgmma", "w8a8_cutlass", "w8a8_tensor", "cublaslt_tensor", "w8a8_row", "cublaslt_row",
            "w8a16_gemm", "w8a16_gemv", "cublaslt_block", "torch_bf16", "copy")


def _ints(text: str) -> List[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise SystemExit(f"--m takes comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise SystemExit(f"--m values must be >= 1, got {text!r}")
    return values


@contextlib.contextmanager
def _torch_needed(command: str):
    """The GPU commands time and check through torch, which fp8gen does not
    install (its runtime needs only cuda-python and numpy): its absence
    said in one line."""
    try:
        yield
    except ModuleNotFoundError as e:
        if e.name != "torch":
            raise
        raise SystemExit(f"{command} needs torch with CUDA and a GPU, and torch is not installed for "
                         f"{sys.executable} (fp8gen does not install it: pip install torch)") from None


def _check_outputs(*paths) -> None:
    """Before a run: the folders of the files it writes at the end, made as
    the record's writer would make them, or an exit saying why they can't be."""
    from pathlib import Path

    for path in (Path(p) for p in paths if p):
        if path.is_dir():
            raise SystemExit(f"{path} is a directory; give a file path")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise SystemExit(f"cannot write {path}: {e}") from None


def _run_bench(args, *, families, out, all_instances: bool = False) -> int:
    """One bench run from the options `bench` and `tune` share."""
    from pathlib import Path

    from gen.bench.grid import ANCHOR_MS, ANCHOR_SHAPES, parse_shapes
    try:
        shapes = parse_shapes(args.shapes) if args.shapes else ANCHOR_SHAPES
    except ValueError as e:
        raise SystemExit(f"--shapes: {e}") from None
    ms = _ints(args.m) if args.m else ANCHOR_MS
    only = _instance_parts(getattr(args, "instances", None), all_instances)
    if ROUTED in only:
        only = _routed_parts(args.arch, families, shapes, ms, only)
    _check_outputs(out, args.md, args.png)
    from gen.bench.run import bench

    with _torch_needed(f"gen {args.command}"):
        return bench(arch=args.arch, shapes=shapes, ms=ms, families=list(families),
                     out=Path(out), md=Path(args.md) if args.md else None, png=Path(args.png) if args.png else None,
                     git_sha=args.git_sha or _git_sha(), seed=args.seed, all_instances=all_instances,
                     timing=getattr(args, "timing", "events"), pdl=getattr(args, "pdl", "auto"),
                     a_rows=getattr(args, "a_rows", "padded"), only=only,
                     arm_order=_ARM_ORDER_CHOICES.get(getattr(args, "arm_order", None)))


# gen bench --arm-order: the choice as typed, the record's arm_order
_ARM_ORDER_CHOICES = {"abba": "abba", "fp8gen-first": "fp8gen first", "peers-first": "peers first"}


# gen bench --instances routed: the instances today's tables dispatch to at
# the bench's points (what an acceptance pair must time, so that `gen compare
# --routed` can read the committed table against it point by point)
ROUTED = "routed"


def _routed_parts(arch: str, families, shapes, ms, parts) -> tuple:
    """`parts` with the word `routed` replaced by the full names of the
    instances the dispatch tables of `families` pick at each (N, K) of
    `shapes` and each M of `ms` (on a device of 132 SMs, H100/H200 SXM)."""
    from runtime.hardware import load_hardware

    tabled = load_hardware(arch).dispatch  # family -> rules: the GEMM families a table routes
    route = _router(arch, [f for f in families if f in tabled], 132)
    names = sorted({name for n, k in shapes for m in ms for name in route(n, k, m)})
    if not names:
        raise SystemExit(f"--instances routed: no table of {', '.join(families)} routes any of these points")
    return tuple(p for p in parts if p != ROUTED) + tuple(names)


def _instance_parts(text, all_instances: bool) -> tuple:
    """gen bench --instances: comma-separated parts of instance names."""
    if text is None:
        return ()
    parts = tuple(p.strip() for p in text.split(","))
    if not all_instances:
        raise SystemExit("--instances narrows --all-instances; give both")
    if any(not p for p in parts):
        raise SystemExit(f"--instances takes comma-separated parts of instance names, got {text!r}")
    return parts


def cmd_bench(args) -> int:
    from gen.bench.arms import OPTIONAL_PEERS

    families = ALL_ARMS if not args.families else tuple(f.strip() for f in args.families.split(","))
    unknown = set(families) - set(ALL_ARMS) - set(OPTIONAL_PEERS)
    if unknown:
        raise SystemExit(f"unknown --families {sorted(unknown)}; choose from {', '.join(ALL_ARMS + OPTIONAL_PEERS)}")
    return _run_bench(args, families=families, out=args.out, all_instances=args.all_instances)


def cmd_soak(args) -> int:
    from gen.bench import soak

    with _torch_needed("gen soak"):
        if args.instance:
            return soak._one(args.instance, args.family, args.m, args.n, args.k, args.launches, args.seed)
        return soak.soak(args.family, args.m, args.n, args.k, args.launches, args.seed, args.timeout)


def cmd_tune(args) -> int:
    import datetime
    from pathlib import Path

    from gen.bench import tune
    from runtime.paths import hardware_toml

    if args.record:
        records = [Path(r) for r in args.record]
    elif args.from_record:
        # the records the committed table was derived from ([tuned]), so
        # that the command alone re-derives it
        from runtime.hardware import tomllib

        listed = tomllib.loads(hardware_toml(args.arch).read_text()).get("tuned", {}).get("records", [])
        records = [REPO_ROOT / r for r in listed] or [hardware_toml(args.arch).parent / "bench-h200.json"]
    else:
        records = [hardware_toml(args.arch).parent / "bench-h200.json"]
    if args.from_record and (args.m or args.shapes):
        raise SystemExit("--m and --shapes choose what to measure; --from-record measures nothing")
    if not args.from_record:
        if len(records) > 1:
            raise SystemExit("--record names one record to write when measuring (several only with --from-record)")
        rc = _run_bench(args, families=ALL_ARMS, out=records[0], all_instances=True)
        if rc:
            print("some arm was wrong; the dispatch table and levers were not written", file=sys.stderr)
            return rc
    rels = [_repo_relative(r) for r in records]  # (None: outside the repository)
    docs, names = [], []
    for record, rel, doc in zip(records, rels, _read_records(records)):
        if doc["arch"] != args.arch:
            raise SystemExit(f"{record} was measured on {doc['arch']}, not --arch {args.arch}")
        if doc.get("timing", "events") != "events":
            raise SystemExit(f"{record} was timed with --timing {doc['timing']}: the dispatch tables come from "
                             "events timing (what a caller sees back to back)")
        docs.append(doc)
        only = f", instances {', '.join(doc['only_instances'])}" if doc.get("only_instances") else ""
        names.append(f"{rel or record} (git {doc['git_sha'][:10]}, {doc['date']}{only})")
    try:
        docs, narrowed = tune.beside_full(docs)
    except ValueError as e:
        raise SystemExit(f"cannot tune from these records: {e}") from None
    if narrowed:
        print(f"left out {narrowed} row(s) of partial records at points no full record timed", file=sys.stderr)
    from runtime import manifest

    _, entries = manifest.load(manifest_path(args.arch))
    try:
        # several records: each one's times count only for the binaries built today
        today = tune.todays_binaries(docs, args.arch, entries)
        combined, left_out = tune.combine(docs, today)
    except ValueError as e:
        raise SystemExit(f"cannot combine the records: {e}") from None
    if today:
        for i, name in enumerate(names):
            older = sum(not today(i, r) for r in docs[i]["rows"])
            if older:
                print(f"{name}: {older} timing(s) of binaries rebuilt or dropped since, not used", file=sys.stderr)
    if left_out:
        print(f"left out {left_out} row(s) that no record timed on today's binaries", file=sys.stderr)
    how = "" if len(docs) == 1 else (f"{len(docs)} records combined (each row's times on today's binaries, "
                                     "over each record's factor at the point, fitted per point: tune.point_times): ")
    provenance = f"measured: {docs[0]['gpu']}, {how}{'; '.join(names)} (gen tune)"
    rows, gone = tune.built_only(combined, {e.name for e in entries})
    if gone:
        print(f"left out {len(gone)} measured instance(s) no longer built: {', '.join(gone)}", file=sys.stderr)
    # several records: their repository paths go into the table's [tuned] (the committed-table test combines them)
    listed = [str(r) for r in rels] if len(records) > 1 and None not in rels else []
    from gen.bench import waves

    model = waves.for_arch(args.arch, entries, build_dir())  # (loads the split instances' host shims)
    dispatch = tune.derive_dispatch(rows, model and model.fill)
    # (everything below HARDWARE.toml's tune marker is rewritten: a table
    # these records cannot derive would be lost, not kept)
    from runtime.hardware import load_hardware

    dropped = sorted(set(load_hardware(args.arch).dispatch) - set(dispatch))
    if dropped:
        raise SystemExit(f"these records time no instance for the dispatch table(s) {', '.join(dropped)} that "
                         f"{hardware_toml(args.arch).relative_to(REPO_ROOT)} has: tuning from them would drop "
                         "those tables, so nothing was written (time those families too)")
    text = tune.tuned_text(tune.derive_levers(rows), dispatch, provenance,
                           listed, tune.derive_rates(rows, model) if model else None)
    try:
        tune.write_tuned(hardware_toml(args.arch), text)
    except ValueError as e:
        raise SystemExit(str(e)) from None
    print(text)
    print(f"wrote the levers and dispatch table into {hardware_toml(args.arch).relative_to(REPO_ROOT)} "
          f"({datetime.date.today().isoformat()})")
    return 0


def _repo_relative(path):
    try:
        return path.resolve().relative_to(REPO_ROOT)
    except ValueError:
        return None


def _read_records(paths) -> list:
    """Bench records (JSON, or archived .json.xz) from their paths, or exit
    saying which one failed."""
    import lzma

    from gen.bench.grid import validate_record
    from gen.fsutil import read_record

    docs = []
    for path in paths:
        try:
            doc = read_record(path)
            validate_record(doc)
        except (OSError, ValueError, lzma.LZMAError) as e:
            raise SystemExit(f"cannot read the bench record {path}: {e}") from None
        docs.append(doc)
    return docs


def cmd_archive(args) -> int:
    from pathlib import Path

    from gen.bench import archive
    from runtime.paths import REPO_ROOT

    todo, refused = archive.plan([Path(p) for p in args.records], REPO_ROOT)
    for why in refused:
        print(f"refused: {why}", file=sys.stderr)
    if refused:
        print("nothing archived", file=sys.stderr)
        return 1
    for path, target, data in todo:
        print(f"{path} -> {target.name}: {path.stat().st_size} -> {len(data)} bytes"
              + (" (dry run)" if args.dry_run else ""))
    if args.dry_run:
        for toml, (_, count) in archive.toml_rewrites(todo).items():
            print(f"{toml}: {count} reference(s) would name the archives (dry run)")
    else:
        for toml, count in archive.apply(todo).items():
            print(f"{toml}: {count} reference(s) now name the archives")
    return 0


def _router(arch: str, families, sms: int):
    """route(n, k, m): the instance each family's dispatch table picks there,
    as the runtime's direct GEMM calls (and gen bench's dispatched arms)
    do, from this checkout's manifest and HARDWARE.toml (no GPU)."""
    from runtime import manifest
    from runtime.dispatch import choose, fits_shape
    from runtime.hardware import load_hardware

    _, kernels = manifest.load(manifest_path(arch))
    table = _explain_table(load_hardware(arch), kernels, sms)
    entries = {f: [e for e in kernels if e.family == f] for f in families}

    def route(n: int, k: int, m: int):
        return [choose(found, table, m, n, k).name for found in entries.values()
                if any(fits_shape(e, n, k) for e in found)]
    return route


def cmd_compare(args) -> int:
    from gen.bench.compare import ab_report, routed_report, runs_report
    from gen.bench.report import FAST_ARMS

    impls = tuple(i.strip() for i in args.impl.split(",")) if args.impl else FAST_ARMS
    from gen.bench.arms import OPTIONAL_PEERS

    unknown = sorted(set(impls) - set(ALL_ARMS) - set(OPTIONAL_PEERS))
    if unknown:
        raise SystemExit(f"unknown --impl {unknown}; choose from {', '.join(ALL_ARMS + OPTIONAL_PEERS)}")
    if args.per_instance and args.per_instance not in ALL_ARMS:
        raise SystemExit(f"unknown --per-instance family {args.per_instance!r}; choose from {', '.join(ALL_ARMS)}")
    try:
        if args.routed:
            if args.base or args.per_instance:
                raise SystemExit("--routed reads runs through today's tables: not with --base or --per-instance")
            docs = _read_records(args.records)
            arches = {d.get("arch") for d in docs}
            if len(arches) != 1 or None in arches:
                raise SystemExit(f"--routed needs records of one arch; they name {sorted(map(str, arches))}")
            text = routed_report(docs, args.records, _router(arches.pop(), impls, args.sms), impls)
        elif args.base:
            text = ab_report(_read_records(args.base), _read_records(args.records), impls, family=args.per_instance)
        else:
            if args.per_instance:
                raise SystemExit("--per-instance compares two sides: give --base too")
            text = runs_report(_read_records(args.records), args.records, impls)
    except ValueError as e:
        raise SystemExit(f"cannot compare: {e}") from None
    print(text, end="")
    return 0


def cmd_merge(args) -> int:
    from pathlib import Path

    from gen.bench.merge import merge
    from gen.bench.report import markdown, plot, write_json
    from runtime.hardware import load_hardware

    docs = _read_records(args.records)
    try:
        doc, repeated = merge(docs)
    except ValueError as e:
        raise SystemExit(f"cannot merge: {e}") from None
    _check_outputs(args.out, args.md, args.png)
    write_json(doc, Path(args.out))
    if args.md:
        Path(args.md).write_text(markdown(doc, load_hardware(doc["arch"]).published))
    if args.png:
        why = plot(doc, Path(args.png))
        if why:
            print(f"no PNG: {why}", file=sys.stderr)
    shapes = sum(len(r["shapes"]) for r in doc["runs"])
    print(f"wrote {args.out}: {len(doc['rows'])} rows from {len(doc['runs'])} runs ({shapes} shapes); "
          f"{repeated} repeated quantizer/scale/copy rows left out (the first measurement kept)")
    return 0


def cmd_bench_ffn(args) -> int:
    with _torch_needed("gen bench-ffn"):
        from gen.bench.ffn import bench_ffn

        return bench_ffn(M=args.m, hidden=args.hidden, intermediate=args.intermediate, seed=args.seed)


def _kernel_names(values: List[str]) -> List[str]:
    """--kernel values, each repeatable and comma-separated, in order, once each."""
    out: List[str] = []
    for v in values:
        for name in (n.strip() for n in v.split(",") if n.strip()):
            if name not in out:
                out.append(name)
    if not out:
        raise SystemExit(f"--kernel names no instance (got {values})")
    return out


def cmd_probe_build(args) -> int:
    from gen.probe.build import build_probes
    from gen.probe.variants import parse

    variants = parse(args.variants)
    names = _kernel_names(args.kernel)
    t0 = time.monotonic()
    built = build_probes(args.arch, names, variants, jobs=args.jobs)
    print(f"{len(built)} probe builds under build/probe/{args.arch}/ ({time.monotonic() - t0:.1f} s); "
          f"time them on the GPU with `python -m gen probe run`")
    return 0


def cmd_probe_run(args) -> int:
    from pathlib import Path

    from gen.fsutil import record_text, write_atomic
    from gen.probe.timing import parse_points, run
    from gen.probe.variants import parse

    try:
        points = parse_points(args.points)
    except ValueError as e:
        raise SystemExit(f"--points: {e}") from None
    if args.rounds < 1:
        raise SystemExit("--rounds must be at least 1")
    if args.sustained < 0:
        raise SystemExit("--sustained takes seconds >= 0")
    _check_outputs(args.out)
    with _torch_needed("gen probe run"):
        doc = run(arch=args.arch, kernels=_kernel_names(args.kernel), variants=parse(args.variants), points=points,
                  rounds=args.rounds, sustained_s=args.sustained, seed=args.seed,
                  git_sha=args.git_sha or _git_sha())
    write_atomic(Path(args.out), record_text(doc).encode())
    print(f"wrote {args.out}")
    failed = False
    if doc["unchanged_outputs"]:
        print("probe builds whose output equals the built cubin's (their switch did not take effect): "
              + "; ".join(doc["unchanged_outputs"]), file=sys.stderr)
        failed = True
    if doc["changed_outputs"]:
        print("probe builds that leave nothing out but whose output differs from the built cubin's: "
              + "; ".join(doc["changed_outputs"]), file=sys.stderr)
        failed = True
    return 1 if failed else 0


def _probe_parser(sub) -> None:
    from gen.probe.variants import EARLY_KEEPS, EARLY_MAX, VARIANTS

    listing = "; ".join(f"{v.name}: {v.keeps}" for v in VARIANTS.values())
    listing += f"; early-N (N = 0-{EARLY_MAX}, not in the default): {EARLY_KEEPS}"
    pr = sub.add_parser("probe", help="time a w8a8_wgmma instance with parts of its K loop left out",
                        description="What bounds an instance's K loop: `probe build` compiles it with one part left "
                                    "out (preprocessor switches of w8a8_wgmma.cuh that `gen build` never sets), "
                                    "`probe run` times the built cubin and those builds in turn at the same "
                                    "points on the GPU. Probe builds that leave a part out compute wrong outputs by "
                                    "design, and their times are bounds; trace and early-N leave nothing out: "
                                    "trace stamps each CTA's phases, which `probe run` summarizes per call, and "
                                    "early-N copies another count of weight boxes before the grid-dependency wait. "
                                    f"Variants: {listing}.")
    psub = pr.add_subparsers(dest="probe_cmd", metavar="{build,run}", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--arch", default="sm_90a", help="arch (default sm_90a)")
    common.add_argument("--variants", default=",".join(VARIANTS),
                        help=f"comma-separated variants (default all: {', '.join(VARIANTS)}; "
                             f"also early-N, N = 0-{EARLY_MAX})")
    common.add_argument("--kernel", action="append", required=True, metavar="NAME",
                        help="a w8a8_wgmma instance's full name; repeatable or comma-separated")
    pb = psub.add_parser("build", parents=[common], help="compile the probe builds (no GPU)",
                         description="Compiles each variant of each instance's emitted source with the pinned "
                                     "nvcc and gen build's flags into build/probe/<arch>/<variant>/; the manifest "
                                     "is not touched. The emitted sources must be current (`gen build`).")
    pb.add_argument("--jobs", "-j", type=int, default=2, help="parallel nvcc jobs (default 2)")
    pb.set_defaults(func=cmd_probe_build)
    pn = psub.add_parser("run", parents=[common], help="time the built cubin against its probe builds (GPU)",
                         description="At each point, checks the built cubin against float64 and that each probe "
                                     "build's output differs from it (trace's and early-N's must equal it; each probe "
                                     "runs on one input set right after "
                                     "the built cubin ran on another: a probe without copies computes on what the "
                                     "stages hold), then times them in turn for --rounds rounds "
                                     "(gen bench's events timing on rotated inputs; every other round reversed). "
                                     "With --sustained S, each is also run back to back for S seconds, twice, "
                                     "while nvidia-smi samples the SM clock and board power. Writes a JSON "
                                     "record; exits 1 if a probe build's output equals the built one's (or, for trace "
                                     "and early-N, differs from it).")
    pn.add_argument("--points", required=True, help="comma-separated NxKxM, e.g. 7168x16384x1024,7168x16384x256")
    pn.add_argument("--rounds", type=int, default=4, help="burst rounds per point (default 4)")
    pn.add_argument("--sustained", type=float, default=0.0, metavar="SECONDS",
                    help="also run each build back to back this long, sampling clock and power (default 0: off)")
    pn.add_argument("--seed", type=int, default=0, help="random seed of the inputs (default 0)")
    pn.add_argument("--git-sha", help="commit to record (default: git rev-parse HEAD)")
    pn.add_argument("--out", default="probe.json", help="JSON record path (default probe.json)")
    pn.set_defaults(func=cmd_probe_run)


def _positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _git_sha() -> str:
    """HEAD, marked "-dirty" when tracked files differ from it (a copied tree
    with a stale .git, e.g. on a lent GPU machine: pass --git-sha there)."""
    import subprocess

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()

    try:
        sha = git("rev-parse", "HEAD")
        return sha + ("-dirty" if git("status", "--porcelain", "--untracked-files=no") else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _measure_args(p: argparse.ArgumentParser) -> None:
    """The grid and output options `bench` and `tune` share."""
    p.add_argument("--arch", default="sm_90a", choices=ARCHES, help="the arch of the GPU (default sm_90a)")
    p.add_argument("--shapes", help="N×K list, e.g. 17408x5120,5120x17408 (default: the 8 anchor shapes)")
    p.add_argument("--m", help="comma-separated M values (default 16,64,...,8192)")
    p.add_argument("--md", help="also write the Markdown table here")
    p.add_argument("--png", help="also draw TFLOP/s against M here")
    p.add_argument("--git-sha", help="commit to record (default: git rev-parse HEAD)")
    p.add_argument("--seed", type=int, default=0,
                   help="random seed of the inputs and, with --all-instances, of each point's instance order")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m gen", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    b = sub.add_parser("build", help="render templates into emitted/<arch>/, compile cubins, write the manifest",
                       description="Render every kernel HARDWARE.toml lists for each arch into emitted/<arch>/ "
                                   "(only changed files are written), compile them with the pinned nvcc "
                                   "through ninja (only stale ones), enforce the ptxas rules (no spills, no "
                                   "local memory, no ptxas warnings) and write emitted/<arch>/manifest.json.")
    b.add_argument("--arch", action="append", metavar="ARCH",
                   help=f"arch to build, repeatable, or 'all' ({', '.join(ARCHES)}); default sm_90a "
                        f"(with --check: all)")
    b.add_argument("--jobs", "-j", type=int, default=2, help="parallel nvcc jobs (default 2)")
    b.add_argument("--kernel", action="append", metavar="PATTERN",
                   help="build only kernels whose name matches this glob or whose family is this "
                        "(repeatable); the manifest is then left unchanged")
    b.add_argument("--check", action="store_true",
                   help="render only; exit 1 listing the files of emitted/ that differ from the templates")
    b.set_defaults(func=cmd_build)

    ls = sub.add_parser("list", help="one kernel per line, family first")
    ls.add_argument("--arch", action="append", metavar="ARCH", help="arch, repeatable, or 'all' (default all)")
    ls.set_defaults(func=cmd_list)

    sh = sub.add_parser("show", help="a kernel's spec, source path and built resources")
    sh.add_argument("name", help="kernel name as `gen list` prints it")
    sh.set_defaults(func=cmd_show)

    ex = sub.add_parser("explain", help="which arithmetic a projection gets, clause by clause (no GPU)",
                        description="Applies the selection rule to one projection [n, k] at m tokens, as the "
                                    "runtime would on this arch: reads the manifest and HARDWARE.toml, honours "
                                    "the current FP8GEN_ environment, prints every clause with its verdict, then "
                                    "the arm and the kernel instance. Exits 0 whatever the route.")
    ex.add_argument("--arch", default="sm_90a", choices=ARCHES, help="target arch (default sm_90a)")
    ex.add_argument("--m", type=int, required=True, help="tokens")
    ex.add_argument("--n", type=int, required=True, help="output features of the whole projection")
    ex.add_argument("--k", type=int, required=True, help="input features of the whole projection")
    ex.add_argument("--format", default="block", choices=["block", "row", "tensor"],
                    help="weight scale format: block (128x128), row (per output row), tensor (one scalar)")
    ex.add_argument("--tp", type=int, default=1, help="tensor-parallel ranks: the rule sees one rank's shard")
    ex.add_argument("--parallel", default="column", choices=["column", "row"],
                    help="column-parallel shards n (n/tp), row-parallel shards k (k/tp); default column")
    ex.add_argument("--sms", type=_positive_int, default=132,
                    help="SMs the GPU runs CTAs on, for a split-K instance's plan (default 132: H100/H200 SXM)")
    ex.set_defaults(func=cmd_explain)

    be = sub.add_parser("bench", help="time every arm against cuBLASLt block scaling, torch bf16 and a copy (GPU)",
                        description="Times fp8gen's arms through the runtime and the peers in one process "
                                    "(CUDA events, warm-up, median of batches, inputs rotated past L2, each "
                                    "GEMM checked against float64 and each quantizer's reconstruction checked "
                                    "before its timing counts). Needs torch and a GPU. Writes a JSON record, "
                                    "prints a Markdown table of ratios against cublaslt_block (the per-tensor "
                                    "and per-row arms against cuBLASLt's per-tensor and row-wise scaling) and "
                                    "can draw a PNG, then a summary of the targets (the fast path's geometric "
                                    "mean and points below 1.0x, the roofline share at M <= 128, DeepGEMM's "
                                    "published rows from HARDWARE.toml [published]). Exits 1 if any arm was "
                                    "wrong.")
    _measure_args(be)
    be.add_argument("--families", help=f"comma-separated arms to time (default all: {', '.join(ALL_ARMS)}); "
                                       "also deepgemm, DeepGEMM's own block-scaled GEMM, timed only where named "
                                       "(it needs DeepGEMM's deep_gemm package, which fp8gen does not install)")
    be.add_argument("--out", default="bench.json", help="JSON record path (default bench.json)")
    be.add_argument("--all-instances", action="store_true",
                    help="time every built instance of each GEMM family, not only the one the runtime dispatches to")
    be.add_argument("--instances", metavar="PARTS",
                    help="with --all-instances, time only the instances whose names contain one of these "
                         "comma-separated parts (e.g. 128x256,_sp), and the dispatched one as the reference; the "
                         "word routed stands for every instance the committed dispatch tables pick at the "
                         "bench's shapes and M (an acceptance pair that gen compare --routed reads in full); the "
                         "record lists them; gen tune takes such a partial record only beside full ones")
    be.add_argument("--timing", choices=("events", "kernel", "resident"), default="events",
                    help="events (default): CUDA events around back-to-back calls, launch gaps included, what a "
                         "caller sees and what gen tune uses; kernel: the profiler's kernel durations per call, "
                         "L2 flushed before each (how DeepGEMM's published figures were measured); resident: "
                         "events timing on one input set instead of rotated ones, so that operands that fit in "
                         "L2 stay there: a kernel's on-chip bound, not a caller's time (gen tune refuses it)")
    be.add_argument("--pdl", choices=("auto", "on", "off"), default="auto",
                    help="launch fp8gen's kernels with programmatic dependent launch: auto (default) is on for "
                         "events timing and off for kernel timing, where a flush kernel precedes every call and "
                         "PDL would only start the kernel early, inside the flush, and count that wait in its "
                         "duration; FP8GEN_NO_PDL forces off")
    from gen.bench.arms import A_ROWS

    be.add_argument("--a-rows", choices=A_ROWS, default="padded",
                    help="the fast arms' activations: padded (default) to a multiple of 128 rows, scales too, as "
                         "the runtime's workspace hands them to rt.linear and the FFN (a partial last tile row "
                         "then copies rows that exist); exact: M rows, so the copy engine fills a partial last "
                         "tile row with zeros")
    be.add_argument("--arm-order", choices=tuple(_ARM_ORDER_CHOICES), default=None,
                    help="the order of each point's arm timings: abba (the default without --all-instances) times "
                         "them as listed and then in reverse, each arm's time the mean of its two; fp8gen-first "
                         "(the default with --all-instances, whose instances already run in a drawn order) times "
                         "fp8gen's arms before the peers (cuBLASLt, torch); peers-first the peers before. Under the "
                         "power cap the arm timed second at a large point runs on a GPU the first one heated; "
                         "the record's arm_order says which was used")
    be.set_defaults(func=cmd_bench)

    so = sub.add_parser("soak", help="launch every instance of a GEMM family many times, one process each (GPU)",
                        description="Launches each instance of a fast W8A8 family (MN-major scales) many times on "
                                    "two rotated input sets, each instance in its own process with a timeout, then "
                                    "checks the last output against float64. Catches faults one launch does not "
                                    "show (races, hangs). Exits 1 naming the instances that failed.")
    so.add_argument("--family", default="w8a8_wgmma", choices=("w8a8_wgmma", "w8a8_cutlass"))
    so.add_argument("--instance", help="soak this instance in this process (what each child runs)")
    so.add_argument("--m", type=int, default=8192)
    so.add_argument("--n", type=int, default=2112)
    so.add_argument("--k", type=int, default=7168)
    so.add_argument("--launches", type=int, default=500)
    so.add_argument("--seed", type=int, default=0)
    so.add_argument("--timeout", type=float, default=120.0, help="seconds per instance before it counts as hung")
    so.set_defaults(func=cmd_soak)

    me = sub.add_parser("merge", help="one bench record from records measured in separate processes (no GPU)",
                        description="Merges bench records of one machine and software setup (gpu, arch, nvcc, "
                                    "driver, torch must agree), e.g. a grid measured four shapes per process, "
                                    "into one record whose `runs` field lists which commit, date and seed "
                                    "measured which shapes. Refuses a point measured twice. Then `gen tune "
                                    "--from-record --record OUT` derives the dispatch tables from it.")
    me.add_argument("records", nargs="+", help="bench records (JSON, or archived .json.xz), in the order they "
                                               "were measured")
    me.add_argument("--out", required=True, help="the merged record's path")
    me.add_argument("--md", help="also write the Markdown ratio table here")
    me.add_argument("--png", help="also draw TFLOP/s against M here")
    me.set_defaults(func=cmd_merge)

    co = sub.add_parser("compare", help="bench records side by side: runs' spread, or an A/B (no GPU)",
                        description="Without --base: each record's geometric mean and lowest ratio against "
                                    "cuBLASLt block scaling, every point's time and ratio per record, and how "
                                    "far the records spread (our slowest over fastest time per point): for "
                                    "several runs of the same binaries. With --base: new over base time (each "
                                    "side's mean over its records) per M range and over all points they share, "
                                    "the points that moved most, and each run's geometric mean: for an A/B of "
                                    "two builds timed in alternating processes. Records of different machines "
                                    "or software setups are refused.")
    co.add_argument("records", nargs="+", help="bench records (JSON, or archived .json.xz): the runs, or "
                                               "the new side of an A/B")
    co.add_argument("--base", nargs="+", help="the base side of an A/B (bench records)")
    co.add_argument("--impl", help="compare this arm (comma-separated: the fastest of them per point) instead "
                                   "of the fast path (w8a8_wgmma or w8a8_cutlass)")
    co.add_argument("--per-instance", metavar="FAMILY",
                    help="with --base and all-instance records: also new over base per instance of FAMILY")
    co.add_argument("--routed", action="store_true",
                    help="all-instance records read through this checkout's dispatch tables: per run, the "
                         "ratio to cuBLASLt block of the instance each family's table picks (the faster of "
                         "them, as gen bench's dispatched arms), and its time over the record's fastest")
    co.add_argument("--sms", type=_positive_int, default=132,
                    help="with --routed: SMs for the wave model between measured M (default 132: H100/H200 SXM)")
    co.set_defaults(func=cmd_compare)

    ar = sub.add_parser("archive", help="keep bench records compressed (.json.xz; no GPU)",
                        description="Rewrites each RECORD.json as RECORD.json.xz (the same text, xz-compressed, "
                                    "read back and checked before the JSON is removed). gen compare, merge and "
                                    "tune read either form. Where the HARDWARE.toml beside a record names it "
                                    "(its [tuned] list, the levers' notes, comments), it names the archive "
                                    "afterwards. Refuses, and archives nothing, if any record is one of the "
                                    "acceptance pair (bench-h200.json, bench-h200-2.json), which stays plain "
                                    "JSON. The records' Markdown tables, and references in README.md and "
                                    "HISTORY.md, are left as they are.")
    ar.add_argument("records", nargs="+", help="bench records (.json) to archive")
    ar.add_argument("--dry-run", action="store_true", help="say what would be archived; write nothing")
    ar.set_defaults(func=cmd_archive)

    tu = sub.add_parser("tune", help="measure every instance; write the dispatch table and W8A8 levers (GPU)",
                        description="Runs the bench with every instance of each tuned family (and the peers), "
                                    "writes the record (default hardware/<arch>/bench-h200.json), then writes "
                                    "into HARDWARE.toml, below its tune marker: the fastest instance per shape "
                                    "and M bucket ([dispatch]; between the measured M, the instance the wave "
                                    "model of [wave_model] predicts fastest at each multiple of 64), the fast "
                                    "arm's per-class rates for shapes without rules ([rates]), and the "
                                    "W8A8-vs-W8A16 crossovers, quantization counted, for widening and narrowing "
                                    "shapes ([defaults]), with provenance. Needs the build (the split "
                                    "instances' host shims).")
    _measure_args(tu)
    tu.add_argument("--record", action="append",
                    help="bench record to write (or read with --from-record; repeat it to combine several "
                         "all-instance records of one setup, so that one run's noise does not pick the table: "
                         "per point each record's times over its factor there, geometric mean; only times of "
                         "the binaries built today count, matched through git's manifests at the records' "
                         "commits)")
    tu.add_argument("--from-record", action="store_true",
                    help="derive from existing records without measuring (no GPU needed); without --record, "
                         "from the records HARDWARE.toml's [tuned] lists, which re-derives the committed table")
    tu.set_defaults(func=cmd_tune)

    _probe_parser(sub)

    bf = sub.add_parser("bench-ffn", help="time the dense FFN prefill vs torch bf16 and cuBLASLt-block FFNs (GPU)",
                        description="Times runtime.dense_ffn_prefill against a torch bf16 FFN and an FFN of "
                                    "cuBLASLt block-scaled GEMMs with torch SiLU*mul, in one process, after "
                                    "checking each against a float64 reference (DESIGN.md gates).")
    bf.add_argument("--m", type=int, default=1193, help="tokens (default 1193)")
    bf.add_argument("--hidden", type=int, default=5120, help="hidden size (default 5120, Qwen3-27B)")
    bf.add_argument("--intermediate", type=int, default=17408, help="intermediate size (default 17408)")
    bf.add_argument("--seed", type=int, default=0, help="random seed")
    bf.set_defaults(func=cmd_bench_ffn)
    return p


def main(argv: Optional[List[str]] = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except Fp8genError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
