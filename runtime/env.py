"""Every environment variable fp8gen reads, declared once and typed.

Read once (first use), then frozen; tests inject values with `override()`
instead of touching `os.environ`. README.md lists these same variables.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
from pathlib import Path
from typing import Iterator, Optional


@dataclasses.dataclass(frozen=True)
class Knobs:
    # Presence semantics: set (any value, even "" or "0") means on. "=0"
    # meaning "on" is less of a trap than a kill switch that silently is not.
    w8a16_only: bool = False
    fp8_single_scale: bool = False
    no_pdl: bool = False
    # Paths for gen and the loader.
    nvcc: Optional[Path] = None
    cuda_home: Optional[Path] = None
    build_dir: Optional[Path] = None


DOCS = {
    "FP8GEN_W8A16_ONLY": "presence: route every block-scaled projection to W8A16 (operator kill switch)",
    "FP8GEN_FP8_SINGLE_SCALE": "presence: disable block-scaled W8A8 prefill",
    "FP8GEN_NO_PDL": "presence: launch every kernel without programmatic dependent launch (A/B timing, debugging)",
    "FP8GEN_NVCC": "path of the nvcc gen compiles with (overrides the pinned pip nvcc)",
    "CUDA_HOME": "toolkit root; its bin/nvcc overrides the pinned pip nvcc (after FP8GEN_NVCC)",
    "FP8GEN_BUILD_DIR": "where cubins are built and loaded from (default: <repo>/build)",
}


def _path(value: Optional[str]) -> Optional[Path]:
    return Path(value) if value else None


def read_environment(environ=os.environ) -> Knobs:
    return Knobs(
        w8a16_only="FP8GEN_W8A16_ONLY" in environ,
        fp8_single_scale="FP8GEN_FP8_SINGLE_SCALE" in environ,
        no_pdl="FP8GEN_NO_PDL" in environ,
        nvcc=_path(environ.get("FP8GEN_NVCC")),
        cuda_home=_path(environ.get("CUDA_HOME")),
        build_dir=_path(environ.get("FP8GEN_BUILD_DIR")),
    )


_current: Optional[Knobs] = None


def knobs() -> Knobs:
    global _current
    if _current is None:
        _current = read_environment()
    return _current


@contextlib.contextmanager
def override(**changes) -> Iterator[Knobs]:
    """Temporarily replace some knobs (tests); restores the previous set."""
    global _current
    previous = knobs()
    _current = dataclasses.replace(previous, **changes)
    try:
        yield _current
    finally:
        _current = previous
