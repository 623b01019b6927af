"""Probe builds: an instance's emitted source compiled as `gen build` does
(the pinned nvcc, the same flags), plus a variant's defines, into
build/probe/<arch>/<variant>/. Nothing here touches the manifest."""
from __future__ import annotations

import concurrent.futures
import subprocess
from pathlib import Path
from typing import Callable, Dict, List, Sequence

from gen.cachekey import INCLUDE_DIR, included_headers
from gen.catalog import KernelSpec, specs_for
from gen.ninja_file import COMMON_FLAGS
from gen.probe.variants import FAMILY, HEADER, Variant
from gen.ptxas import parse
from gen.render import render_all, source_path
from gen.toolchain import toolchain
from runtime.errors import CatalogError, CompileError
from runtime.hardware import load_hardware
from runtime.paths import build_dir


def probe_cubin(arch: str, variant: str, kernel: str) -> Path:
    return build_dir() / "probe" / arch / variant / f"{kernel}.cubin"


def probe_specs(arch: str, names: Sequence[str]) -> List[KernelSpec]:
    """The named instances, each of the family the probe switches live in,
    its emitted source current (a probe of stale code would time other code)."""
    specs = {s.name: s for s in specs_for(arch)}
    chosen = []
    for name in names:
        spec = specs.get(name)
        if spec is None:
            raise CatalogError(f"no {arch} kernel is named {name!r} (`python -m gen list --arch {arch}`)")
        if spec.family != FAMILY:
            raise CatalogError(f"{name} is a {spec.family} kernel; probes exist for {FAMILY} only")
        chosen.append(spec)
    rendered = render_all(chosen)
    for spec in chosen:
        path = source_path(spec)
        if not path.exists() or path.read_text() != rendered[spec]:
            raise CompileError(f"{path} is not what the templates render; run `python -m gen build --arch {arch}`")
        if INCLUDE_DIR / HEADER not in included_headers(rendered[spec], INCLUDE_DIR):
            raise CatalogError(f"{name} is not built from {HEADER}, where the probe switches are")
    return chosen


def build_probes(arch: str, names: Sequence[str], variants: Sequence[Variant], *, jobs: int = 2,
                 echo: Callable[[str], None] = print) -> Dict[tuple, Path]:
    """Compiles every (variant, instance); returns their cubins by (variant
    name, instance name). Raises CompileError naming the first failure."""
    specs = probe_specs(arch, names)
    hw = load_hardware(arch)
    nvcc = toolchain().nvcc
    work = [(v, s) for v in variants for s in specs]

    def one(v: Variant, spec: KernelSpec) -> Path:
        out = probe_cubin(arch, v.name, spec.name)
        out.parent.mkdir(parents=True, exist_ok=True)
        log = out.with_suffix(".ptxas.log")
        cmd = [str(nvcc), "-cubin", *COMMON_FLAGS, *hw.gencode, f"-I{INCLUDE_DIR}",
               *(f"-D{d}" for d in v.defines), str(source_path(spec)), "-o", str(out)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        log.write_text(proc.stdout + proc.stderr)
        if proc.returncode != 0:
            raise CompileError(f"probe build {v.name} of {spec.name} failed", command=cmd, stderr=log.read_text())
        return out

    built: Dict[tuple, Path] = {}
    with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
        futures = {pool.submit(one, v, s): (v.name, s.name) for v, s in work}
        for i, fut in enumerate(concurrent.futures.as_completed(futures), 1):
            key = futures[fut]
            path = fut.result()
            built[key] = path
            res = parse(path.with_suffix(".ptxas.log").read_text())
            echo(f"[{i}/{len(work)}] {key[0]} {key[1]}: {res.registers} registers, "
                 f"{res.spill_bytes} B spilled")
    return built
