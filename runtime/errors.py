"""One exception type per stage: render, compile, load, launch.

gen raises the first two, the runtime the last two; all share a base so a
host app can catch fp8gen's failures in one clause.
"""
from __future__ import annotations

from typing import Optional, Sequence


class Fp8genError(Exception):
    """Base of every error fp8gen raises on purpose."""


class CatalogError(Fp8genError):
    """HARDWARE.toml asks for an instance that cannot exist (bad tile, smem)."""


class RenderError(Fp8genError):
    """A template failed to render (undefined variable, syntax)."""


class CompileError(Fp8genError):
    """nvcc/ptxas failed, or the kernel broke a build rule (spills, lmem)."""

    def __init__(self, message: str, *, command: Optional[Sequence[str]] = None,
                 stderr: str = "", source: Optional[str] = None):
        parts = [message]
        if source:
            parts.append(f"source: {source}")
        if command:
            parts.append("command: " + " ".join(str(c) for c in command))
        if stderr:
            parts.append("output:\n" + stderr.rstrip())
        super().__init__("\n".join(parts))
        self.command = list(command) if command else None
        self.stderr = stderr
        self.source = source


class LoadError(Fp8genError):
    """Manifest or cubin missing, stale, corrupt, or too big for the device."""


class LaunchError(Fp8genError):
    """A driver call failed around a launch."""


class ValidationError(LaunchError, ValueError):
    """An argument broke a kernel's requirement; nothing was launched."""
