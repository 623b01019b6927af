"""The runtime never compiles and never imports gen (DESIGN.md data flow)."""
import re
import subprocess
import sys
from pathlib import Path

RUNTIME = Path(__file__).resolve().parent.parent / "runtime"


def test_runtime_source_has_no_compiler_path():
    banned = re.compile(r"^\s*(from gen\b|import gen\b)|\bsubprocess\b|\bnvrtc\b|cuLinkCreate", re.M)
    offenders = [p.name for p in RUNTIME.glob("*.py") if banned.search(p.read_text())]
    assert offenders == []


def test_importing_every_runtime_module_leaves_gen_unloaded():
    mods = [f"runtime.{p.stem}" for p in RUNTIME.glob("*.py") if p.stem != "__init__"]
    code = ("import sys, importlib\n" + "".join(f"importlib.import_module({m!r})\n" for m in mods) +
            "bad = [m for m in sys.modules if m == 'gen' or m.startswith('gen.') or m in ('jinja2', 'ninja')]\n"
            "print(bad)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=RUNTIME.parent, check=True)
    assert out.stdout.strip() == "[]"


def test_a_machine_without_the_driver_gets_a_load_error(monkeypatch):
    """cuda-python raises its own RuntimeError when it finds no libcuda: the
    runtime turns it into the LoadError its callers catch."""
    import pytest

    import runtime
    from runtime import driver

    def no_libcuda(flags):
        raise RuntimeError('"cuda" is an NVIDIA driver library and can only be found via system search')

    monkeypatch.setattr(driver.driver, "cuInit", no_libcuda)
    with pytest.raises(runtime.LoadError, match="CUDA driver library could not be loaded"):
        driver.init()
