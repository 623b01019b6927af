"""Build one arch: render -> ninja/nvcc -> ptxas rules -> manifest."""
from __future__ import annotations

import contextlib
import fcntl
import fnmatch
import hashlib
import subprocess
import sys
from pathlib import Path
from typing import Callable, Dict, List, Optional

from gen import GENERATOR_VERSION
from gen.cachekey import INCLUDE_DIR, cache_key
from gen.catalog import KernelSpec, specs_for
from gen.fsutil import write_if_different
from runtime.hardware import load_hardware
from gen.ninja_file import CUTLASS_FLAGS, COMMON_FLAGS, NinjaTarget, ninja_binary, ninja_text, relative
from gen.ptxas import parse
from gen.render import display, render_all, source_path, write_sources
from gen.toolchain import Toolchain, cutlass, toolchain
from runtime import manifest
from runtime.errors import CatalogError, CompileError
from runtime.paths import REPO_ROOT, build_dir, manifest_path


@contextlib.contextmanager
def build_lock(directory: Path):
    """One build per arch directory at a time; ninja re-checks staleness
    after we hold the lock, so a waiter never redoes finished work."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def select(specs: List[KernelSpec], patterns: Optional[List[str]]) -> List[KernelSpec]:
    if not patterns:
        return specs
    chosen = [s for s in specs if any(fnmatch.fnmatch(s.name, p) or s.family == p for p in patterns)]
    if not chosen:
        # An empty filter is an error, never a silent "built nothing".
        raise CatalogError(f"no kernel matches {patterns}")
    return chosen


def _run_ninja(directory: Path, targets: List[str], jobs: int, echo: Callable[[str], None]) -> None:
    try:
        cmd = [ninja_binary(), "-C", str(directory), f"-j{jobs}", *targets]
    except FileNotFoundError as e:
        raise CompileError(str(e)) from None
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    captured = []
    for line in proc.stdout or ():
        captured.append(line)
        if line.startswith("[") or line.startswith("ninja: no work"):
            echo(line.rstrip())
    if proc.wait() != 0:
        text = "".join(captured)
        failed = [line.split("FAILED:", 1)[1].strip() for line in captured if line.startswith("FAILED:")]
        raise CompileError(f"nvcc failed for {', '.join(failed) or 'some kernel'}", command=cmd, stderr=text)


def shim_info(path: Path, symbol: str) -> Dict[str, object]:
    """Launch resources an instance's host shim reports (host code
    only: no GPU is needed to ask)."""
    import ctypes

    lib = ctypes.CDLL(str(path))
    size_fn = getattr(lib, f"{symbol}_params_size")
    size_fn.restype = ctypes.c_size_t
    threads, smem, cluster = ctypes.c_int(), ctypes.c_int(), (ctypes.c_int * 3)()
    getattr(lib, f"{symbol}_info")(ctypes.byref(threads), ctypes.byref(smem), cluster)
    return {"params_bytes": int(size_fn()), "threads": threads.value, "smem": smem.value,
            "cluster": tuple(cluster)}


def _entry(spec: KernelSpec, source_text: str, bdir: Path, arch: str) -> manifest.KernelEntry:
    cubin = bdir / f"{spec.name}.cubin"
    log = (bdir / f"{spec.name}.ptxas.log").read_text()
    try:
        res = parse(log)
    except ValueError as e:
        raise CompileError(f"{spec.name}: {e}", source=str(source_path(spec)), stderr=log) from None
    bad = res.violations()
    if bad:
        raise CompileError(f"{spec.name} breaks the build rules: {'; '.join(bad)}",
                           source=str(source_path(spec)), stderr=log)
    threads, smem, cluster, constraints, shim, shim_sha = spec.threads, spec.dynamic_smem, (1, 1, 1), \
        spec.constraints(), "", ""
    if spec.host_shim:
        lib = bdir / f"{spec.name}.so"
        info = shim_info(lib, spec.symbol)
        threads, smem, cluster = info["threads"], info["smem"], info["cluster"]
        constraints = dict(constraints, params_bytes=info["params_bytes"])
        shim, shim_sha = f"{arch}/{lib.name}", _sha256(lib)
    return manifest.KernelEntry(
        family=spec.family, name=spec.name, symbol=spec.symbol, abi=spec.abi, threads=threads,
        cluster=cluster, static_smem=res.static_smem, dynamic_smem=smem,
        registers=res.registers, spill_bytes=res.spill_bytes, stack_bytes=res.stack_bytes,
        params=spec.params(), constraints=constraints,
        source=display(source_path(spec)),
        source_sha256=hashlib.sha256(source_text.encode()).hexdigest(),
        cubin=f"{arch}/{cubin.name}", cubin_sha256=_sha256(cubin), shim=shim, shim_sha256=shim_sha,
        pdl=spec.pdl)


def _targets(spec: KernelSpec, source: str, arch: str, flags: List[str], tc: Toolchain,
             bdir: Path) -> List[NinjaTarget]:
    extra: List[str] = []
    key_extra: List[str] = []
    if spec.uses_cutlass:
        ct = cutlass()
        extra = [*CUTLASS_FLAGS, *(f"-I{relative(d, bdir)}" for d in ct.include_dirs)]
        key_extra = [f"cutlass {ct.version}", *extra]
    key = cache_key(source=source, arch=arch, flags=flags, tc=tc, extra=key_extra)
    base = dict(name=spec.name, source=source_path(spec), key=key, extra=" ".join(extra))
    targets = [NinjaTarget(cubin=f"{spec.name}.cubin", log=f"{spec.name}.ptxas.log", **base)]
    if spec.host_shim:
        targets.append(NinjaTarget(cubin=f"{spec.name}.so", log=f"{spec.name}.shim.log", rule="shim", **base))
    return targets


def _remove_stale_outputs(bdir: Path, targets: Dict[str, List[NinjaTarget]]) -> None:
    """Cubins, shims and logs of instances HARDWARE.toml no longer lists."""
    keep = {name for ts in targets.values() for t in ts for name in (t.cubin, t.log)}
    for pattern in ("*.cubin", "*.so", "*.log"):
        for path in bdir.glob(pattern):
            if path.name not in keep:
                path.unlink()


def build_arch(arch: str, *, jobs: int = 2, patterns: Optional[List[str]] = None,
               echo: Callable[[str], None] = print, tc: Optional[Toolchain] = None) -> Dict[str, object]:
    hw = load_hardware(arch)
    specs = specs_for(arch)
    chosen = select(specs, patterns)
    rendered = render_all(specs)
    written = write_sources(rendered)
    for path in written:
        echo(f"rendered {display(path)}")
    tc = tc or toolchain()
    bdir = build_dir() / arch
    flags = [*COMMON_FLAGS, *hw.gencode]
    targets = {s.name: _targets(s, rendered[s], arch, flags, tc, bdir) for s in specs}
    with build_lock(bdir):
        write_if_different(bdir / "build.ninja",
                           ninja_text(nvcc=tc.nvcc, include_dirs=[INCLUDE_DIR], gencode=hw.gencode,
                                      targets=[t for ts in targets.values() for t in ts], base=bdir))
        _run_ninja(bdir, [t.cubin for s in chosen for t in targets[s.name]], jobs, echo)
        entries = [_entry(s, rendered[s], bdir, arch) for s in chosen]
        wrote_manifest = False
        if len(chosen) == len(specs):
            toolchain_record = {"nvcc": tc.version, "generator": GENERATOR_VERSION}
            wrote_manifest = write_if_different(manifest_path(arch),
                                                manifest.dumps(arch, hw.compute_capability, toolchain_record, entries))
            _remove_stale_outputs(bdir, targets)
        else:
            echo(f"{arch}: built {len(chosen)} of {len(specs)} kernels; manifest left unchanged")
    return {"arch": arch, "kernels": len(chosen), "sources_written": len(written),
            "manifest_written": wrote_manifest}


def stale_manifest(arch: str, rendered: Dict[KernelSpec, str]) -> List[str]:
    """The committed manifest must list exactly the rendered kernels, with the
    rendered sources' hashes; otherwise it describes cubins of other code."""
    path = manifest_path(arch)
    rel = path.relative_to(REPO_ROOT)
    if not path.exists():
        return [f"{rel}: missing (run `python -m gen build --arch {arch}`)"]
    try:
        _, entries = manifest.load(path)
    except Exception as e:  # noqa: BLE001 - reported, not raised
        return [f"{rel}: unreadable: {e}"]
    recorded = {e.name: e.source_sha256 for e in entries}
    expected = {s.name: hashlib.sha256(t.encode()).hexdigest() for s, t in rendered.items()}
    problems = [f"{rel}: lacks {n}" for n in sorted(expected.keys() - recorded.keys())]
    problems += [f"{rel}: lists {n}, which no spec renders" for n in sorted(recorded.keys() - expected.keys())]
    problems += [f"{rel}: {n} was built from another source" for n in sorted(expected.keys() & recorded.keys())
                 if expected[n] != recorded[n]]
    return problems


def echo_stderr(line: str) -> None:
    print(line, file=sys.stderr)
