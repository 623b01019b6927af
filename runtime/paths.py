"""Where the committed outputs and the build outputs live."""
from __future__ import annotations

from pathlib import Path

from runtime.env import knobs

REPO_ROOT = Path(__file__).resolve().parent.parent
EMITTED_DIR = REPO_ROOT / "emitted"
HARDWARE_DIR = REPO_ROOT / "hardware"
TEMPLATES_DIR = REPO_ROOT / "templates"

ARCHES = ("sm_89", "sm_90a", "sm_100a", "sm_120a", "sm_121a")


def build_dir() -> Path:
    return knobs().build_dir or (REPO_ROOT / "build")


def manifest_path(arch: str) -> Path:
    return EMITTED_DIR / arch / "manifest.json"


def hardware_toml(arch: str) -> Path:
    return HARDWARE_DIR / arch / "HARDWARE.toml"
