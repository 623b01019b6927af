"""Renders specs through one strict jinja2 Environment into emitted/<arch>/."""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Dict, List

import jinja2

from gen.catalog import KernelSpec
from gen.fsutil import write_if_different
from runtime.errors import RenderError
from runtime.paths import EMITTED_DIR, REPO_ROOT, TEMPLATES_DIR


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)),
                              undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                              trim_blocks=True, lstrip_blocks=True, autoescape=False)


def source_path(spec: KernelSpec) -> Path:
    return EMITTED_DIR / spec.arch / f"{spec.name}.cu"


def render(spec: KernelSpec) -> str:
    try:
        return environment().get_template(spec.template).render(**spec.template_vars())
    except jinja2.TemplateError as e:
        raise RenderError(f"{spec.name}: rendering {spec.template} failed: {e}") from e


def render_all(specs: List[KernelSpec]) -> Dict[KernelSpec, str]:
    return {spec: render(spec) for spec in specs}


def write_sources(rendered: Dict[KernelSpec, str]) -> List[Path]:
    """Writes changed sources only, and removes sources of the rendered
    arches that no spec renders any more (an instance dropped from
    HARDWARE.toml); returns the paths written."""
    expected = {source_path(s) for s in rendered}
    for arch_dir in {p.parent for p in expected}:
        for path in arch_dir.glob("*.cu"):
            if path not in expected:
                path.unlink()
    return [source_path(s) for s, text in rendered.items() if write_if_different(source_path(s), text)]


def display(path: Path) -> str:
    try:
        return str(path.relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def stale_sources(arch: str, rendered: Dict[KernelSpec, str]) -> List[str]:
    """Files under emitted/<arch>/ that differ from what the templates render,
    are missing, or have no spec behind them (relative to the repo root)."""
    problems = []
    expected = {source_path(s): text for s, text in rendered.items()}
    for path, text in sorted(expected.items()):
        rel = display(path)
        if not path.exists():
            problems.append(f"{rel}: missing")
        elif path.read_text() != text:
            problems.append(f"{rel}: differs from its template")
    arch_dir = EMITTED_DIR / arch
    if arch_dir.exists():
        for path in sorted(arch_dir.glob("*.cu")):
            if path not in expected:
                problems.append(f"{display(path)}: no spec in HARDWARE.toml renders it")
    return problems
