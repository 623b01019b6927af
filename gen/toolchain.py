"""Finds the compiler and the SASS tools, and fingerprints them.

Order for nvcc: FP8GEN_NVCC, then CUDA_HOME/bin/nvcc (explicit overrides),
then the pinned pip toolkit (cuda-toolkit==13.0.2, nvidia/cu13/bin), then PATH.
"""
from __future__ import annotations

import dataclasses
import functools
import re
import shutil
import subprocess
from pathlib import Path
from typing import Optional

from runtime.env import knobs
from runtime.errors import CompileError


def _pip_bin(tool: str) -> Optional[Path]:
    try:
        import nvidia  # namespace package of NVIDIA's pip wheels
    except ImportError:
        return None
    for root in getattr(nvidia, "__path__", []):
        candidate = Path(root) / "cu13" / "bin" / tool
        if candidate.is_file():
            return candidate
    return None


@dataclasses.dataclass(frozen=True)
class Toolchain:
    nvcc: Path
    version: str   # e.g. "13.0.88"
    origin: str    # which rule found it

    def describe(self) -> str:
        return f"nvcc {self.version} ({self.origin}: {self.nvcc})"


def _locate_nvcc():
    k = knobs()
    if k.nvcc:
        return k.nvcc, "FP8GEN_NVCC"
    if k.cuda_home:
        return k.cuda_home / "bin" / "nvcc", "CUDA_HOME"
    pip = _pip_bin("nvcc")
    if pip:
        return pip, "pinned pip cuda-toolkit"
    found = shutil.which("nvcc")
    if found:
        return Path(found), "PATH"
    raise CompileError("no nvcc found: install the project (`pip install -e .` brings cuda-toolkit 13.0.2), "
                       "or set FP8GEN_NVCC / CUDA_HOME")


@functools.lru_cache(maxsize=None)
def _nvcc_version(nvcc: Path) -> str:
    try:
        out = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise CompileError(f"{nvcc} --version failed: {e}", command=[str(nvcc), "--version"]) from None
    m = re.search(r"\bV(\d+\.\d+\.\d+)", out)
    if not m:
        raise CompileError(f"cannot read a version from `{nvcc} --version`", stderr=out)
    return m.group(1)


def toolchain() -> Toolchain:
    nvcc, origin = _locate_nvcc()
    if not nvcc.is_file():
        raise CompileError(f"nvcc from {origin} does not exist: {nvcc}")
    return Toolchain(nvcc=nvcc.resolve(), version=_nvcc_version(nvcc.resolve()), origin=origin)


def sass_tool(tool: str) -> Optional[Path]:
    """cuobjdump / nvdisasm: pip (test extra) first, then beside nvcc, then PATH."""
    pip = _pip_bin(tool)
    if pip:
        return pip
    try:
        beside = toolchain().nvcc.parent / tool
        if beside.is_file():
            return beside
    except CompileError:
        pass
    found = shutil.which(tool)
    return Path(found) if found else None


@functools.lru_cache(maxsize=1)
def cutlass() -> "Cutlass":
    """CUTLASS headers from the nvidia-cutlass package (never a fixed path)."""
    try:
        import cutlass_library
        from importlib.metadata import version
    except ImportError:
        raise CompileError("nvidia-cutlass is not installed: `pip install -e .` brings it") from None
    root = Path(cutlass_library.__file__).resolve().parent / "source"
    include = root / "include"
    if not (include / "cutlass" / "cutlass.h").is_file():
        raise CompileError(f"the nvidia-cutlass package has no CUTLASS headers under {include}")
    return Cutlass(version=version("nvidia-cutlass"), include_dirs=(include, root / "tools" / "util" / "include"))


@dataclasses.dataclass(frozen=True)
class Cutlass:
    version: str
    include_dirs: tuple
