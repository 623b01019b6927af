"""Probe builds swapped into a loaded runtime: the instance keeps its
manifest entry, host shim and launch shape (a probe build changes none of
them); only the function its launches run changes."""
from __future__ import annotations

from pathlib import Path
from typing import Dict

from runtime.driver import check, driver
from runtime.errors import LoadError

BUILT = "built"  # the name of the manifest's own cubin among the swappable functions


class Swapper:
    """Loads each probe cubin of one instance once; `use(name)` makes the
    instance's launches run that build (or BUILT). Leaving the block
    restores the built function and unloads the probe modules."""

    def __init__(self, rt, kernel: str, cubins: Dict[str, Path]):
        self.rt = rt
        self.kernel = rt.loaded(kernel)
        self.functions = {BUILT: self.kernel.function}
        self.modules = {}  # probe name -> its module (the trace probe's globals are read through it)
        self._modules = []
        try:
            with rt.ctx.current():
                for name, path in cubins.items():
                    self.functions[name] = self._load(name, path)
        except BaseException:
            self.close()
            raise

    def _load(self, name: str, path: Path):
        entry = self.kernel.entry
        try:
            image = path.read_bytes()
        except FileNotFoundError:
            raise LoadError(f"probe build {name} of {entry.name} is missing at {path}; run "
                            f"`python -m gen probe build --variants {name} --kernel {entry.name}`") from None
        module = check(driver.cuModuleLoadData(image), "cuModuleLoadData", kernel=f"{entry.name} ({name})",
                       error=LoadError)
        self._modules.append(module)
        self.modules[name] = module
        fn = check(driver.cuModuleGetFunction(module, entry.symbol.encode()), "cuModuleGetFunction",
                   kernel=f"{entry.name} ({name})", error=LoadError)
        if entry.dynamic_smem:
            check(driver.cuFuncSetAttribute(
                fn, driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, entry.dynamic_smem),
                "cuFuncSetAttribute", kernel=f"{entry.name} ({name})", error=LoadError)
        return fn

    def use(self, name: str) -> None:
        self.kernel.function = self.functions[name]

    def close(self) -> None:
        self.kernel.function = self.functions[BUILT]
        if self._modules:
            with self.rt.ctx.current():
                check(driver.cuCtxSynchronize(), "cuCtxSynchronize")  # no launch of a probe module is in flight
                for module in self._modules:
                    driver.cuModuleUnload(module)
            self._modules = []
            self.modules = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
