"""Per-device kernel loading: one module cache per device's primary context.

Each cubin's sha256 is checked against the manifest, its shared memory
against the device's limit, and the dynamic-smem attribute set, all before
the first launch. The loader never compiles: a missing cubin is a LoadError
that names the `python -m gen build` command to run.
"""
from __future__ import annotations

import dataclasses
import hashlib
import threading
from typing import Dict, List, Optional, Tuple

from runtime import manifest
from runtime.driver import check, driver, init
from runtime.errors import LoadError
from runtime.paths import ARCHES, build_dir, manifest_path

# wgmma_gemm::ParamFlags (templates/include/fp8gen/w8a8_wgmma.cuh)
EARLY_WEIGHTS = 1


@dataclasses.dataclass
class LoadedKernel:
    entry: manifest.KernelEntry
    function: object  # CUfunction in the device's primary context
    shim: Optional["HostShim"] = None  # CUTLASS / wgmma instances: builds Params and the grid
    # Cluster kernels: how many CTAs the device runs at once (whole clusters,
    # from the driver's occupancy query); a persistent grid is sized to it.
    resident_ctas: int = 0

    @property
    def name(self) -> str:
        return self.entry.name


class HostShim:
    """An instance's host library (CUTLASS, wgmma): fills the kernel's Params
    (TMA descriptors included) into a buffer allocated once, and says the grid."""

    def __init__(self, path, entry: manifest.KernelEntry):
        import ctypes

        # split-K instances take their workspace through a second entry point;
        # the wgmma shims (w8a8_wgmma.cuh) also take A's readable rows
        # (prepare_rows: a partial last tile row then copies rows that exist
        # instead of zero-filling), the CUTLASS ones do not
        self.split = int(entry.constraints.get("k_slices", 1)) > 1
        try:
            lib = ctypes.CDLL(str(path))
            self.takes_rows = hasattr(lib, f"{entry.symbol}_prepare_rows")
            symbol = f"{entry.symbol}_prepare{'_rows' if self.takes_rows else ''}{'_split' if self.split else ''}"
            self._prepare = getattr(lib, symbol)
        except (OSError, AttributeError) as e:
            raise LoadError(f"host shim {path} of {entry.name} does not load: {e}") from None
        self._prepare.restype = ctypes.c_int
        self._prepare.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                                  ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                                  ctypes.c_int] + [ctypes.c_int] * self.takes_rows + [ctypes.c_int, ctypes.c_void_p]
        if self.split:  # counters, counter slots, partials, partial bytes
            self._prepare.argtypes += [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t]
        # which tiles a split call cuts, into how many K slices (the shim's rule)
        self._split = getattr(lib, f"{entry.symbol}_split", None)
        if self._split is not None:
            self._split.restype = ctypes.c_int
            self._split.argtypes = [ctypes.c_int] * 4 + [ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_long)]
        # Params flags (the wgmma shims): kEarlyWeights lets the kernel copy its
        # first W boxes before its grid-dependency wait (see prepare)
        self._set_flags = getattr(lib, f"{entry.symbol}_set_flags", None)
        if self._set_flags is not None:
            self._set_flags.restype = None
            self._set_flags.argtypes = [ctypes.c_void_p, ctypes.c_uint]
        self.entry = entry
        self.size = int(entry.constraints["params_bytes"])
        # 64-byte aligned storage for Params (it holds 64-byte aligned TMA descriptors)
        self._raw = (ctypes.c_uint8 * (self.size + 64))()
        offset = (-ctypes.addressof(self._raw)) % 64
        self.params = (ctypes.c_uint8 * self.size).from_buffer(self._raw, offset)
        self.grid = (ctypes.c_uint * 3)()
        self.name = entry.name
        # One Params buffer per instance: held from prepare() until the driver
        # has copied the arguments, so concurrent launches cannot mix them.
        self.lock = threading.Lock()

    def k_split(self, M: int, N: int, K: int, sm_count: int) -> Tuple[int, int]:
        """How a call at (M, N, K) on sm_count SMs (or resident CTAs) cuts K:
        (slices, whole), the tiles from `whole` on each in `slices` K slices
        (the last wave's); (1, tiles) for an instance that does not split.
        Raises LaunchError for a call the instance cannot run."""
        import ctypes

        from runtime.errors import LaunchError

        tiles = -(-M // int(self.entry.constraints["tile_m"])) * -(-N // int(self.entry.constraints["tile_n"]))
        if not self.split or self._split is None:
            return 1, tiles
        slices, whole = ctypes.c_int(), ctypes.c_long()
        if not self._split(M, N, K, sm_count, ctypes.byref(slices), ctypes.byref(whole)):
            raise LaunchError(f"{self.name}: cannot run M={M}, N={N}, K={K} on {sm_count} SMs")
        return slices.value, whole.value

    def prepare(self, args, sm_count: int):
        from runtime.errors import LaunchError

        import ctypes

        extra = ()
        if self.split:
            extra = (args.get("counters", 0), args.get("counter_slots", 0), args.get("partials", 0),
                     args.get("partial_bytes", 0))
        rows = (args.get("a_rows", args["M"]),) if self.takes_rows else ()
        rc = self._prepare(ctypes.addressof(self.params), self.size, args["a"], args["a_scale"], args["ld_scale"],
                           args["w"], args["w_scale"], args["out"], args["M"], args["N"], args["K"], *rows,
                           sm_count, ctypes.addressof(self.grid), *extra)
        if rc:
            why = {1: "the kernel cannot implement this problem (alignment or shape)",
                   2: "the Params buffer is too small", 3: "the instance asks for a device workspace",
                   4: "libcuda.so.1 (cuTensorMapEncodeTiled) could not be loaded",
                   5: "cuTensorMapEncodeTiled rejected an operand (address alignment or extents)",
                   6: "the split-K instance got no (or too small a) workspace for its counters and partial "
                      "tiles"}.get(rc, rc)
            raise LaunchError(f"{self.name}: host shim refused: {why}")
        if args.get("early_weights") and self._set_flags is not None:
            self._set_flags(ctypes.addressof(self.params), EARLY_WEIGHTS)
        return self.params, (self.grid[0], self.grid[1], self.grid[2])


def arch_for(cc: Tuple[int, int]) -> str:
    """The arch whose manifest records this compute capability."""
    for arch in ARCHES:
        path = manifest_path(arch)
        if path.exists():
            doc, _ = manifest.load(path)
            if tuple(doc.get("compute_capability", ())) == cc:
                return arch
    raise LoadError(f"no fp8gen manifest targets compute capability {cc[0]}.{cc[1]} "
                    f"(built arches: {', '.join(a for a in ARCHES if manifest_path(a).exists())})")


class DeviceContext:
    """A device, its retained primary context and its loaded kernels."""

    def __init__(self, ordinal: int):
        init()
        self.ordinal = ordinal
        self.device = check(driver.cuDeviceGet(ordinal), "cuDeviceGet", error=LoadError)
        attr = driver.CUdevice_attribute
        get = lambda a: check(driver.cuDeviceGetAttribute(a, self.device), "cuDeviceGetAttribute",  # noqa: E731
                              error=LoadError)
        self.compute_capability = (get(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                                   get(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR))
        self.max_smem = get(attr.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        self.sm_count = get(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        self.context = check(driver.cuDevicePrimaryCtxRetain(self.device), "cuDevicePrimaryCtxRetain",
                             error=LoadError)
        self.kernels: Dict[str, List[LoadedKernel]] = {}
        self._modules = []
        try:
            self.arch = arch_for(self.compute_capability)
            with self.current():
                self._load_all()
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        """Unload the modules and release the primary context (a failed load,
        or a host app that is done with this device)."""
        with self.current():
            for module in self._modules:
                driver.cuModuleUnload(module)
        self._modules = []
        self.kernels = {}
        driver.cuDevicePrimaryCtxRelease(self.device)

    def current(self):
        return _CurrentContext(self.context)

    def _load_all(self) -> None:
        doc, entries = manifest.load(manifest_path(self.arch))
        rebuild = f"python -m gen build --arch {self.arch}"
        for e in entries:
            path = build_dir() / e.cubin
            try:
                image = path.read_bytes()
            except FileNotFoundError:
                raise LoadError(f"cubin for {e.name} is missing at {path}; run `{rebuild}`") from None
            if hashlib.sha256(image).hexdigest() != e.cubin_sha256:
                raise LoadError(f"cubin {path} does not match the manifest's sha256 (stale or foreign build); "
                                f"run `{rebuild}`")
            smem = e.static_smem + e.dynamic_smem
            if smem > self.max_smem:
                raise LoadError(f"{e.name} needs {smem} B of shared memory; cuda:{self.ordinal} allows "
                                f"{self.max_smem}")
            module = check(driver.cuModuleLoadData(image), "cuModuleLoadData", kernel=e.name, error=LoadError)
            self._modules.append(module)
            fn = check(driver.cuModuleGetFunction(module, e.symbol.encode()), "cuModuleGetFunction",
                       kernel=e.name, error=LoadError)
            if e.dynamic_smem:
                check(driver.cuFuncSetAttribute(
                    fn, driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    e.dynamic_smem), "cuFuncSetAttribute", kernel=e.name, error=LoadError)
            shim = None
            if e.shim:
                shim_path = build_dir() / e.shim
                try:
                    shim_bytes = shim_path.read_bytes()
                except FileNotFoundError:
                    raise LoadError(f"host shim for {e.name} is missing at {shim_path}; run `{rebuild}`") from None
                if hashlib.sha256(shim_bytes).hexdigest() != e.shim_sha256:
                    raise LoadError(f"host shim {shim_path} does not match the manifest's sha256; run `{rebuild}`")
                shim = HostShim(shim_path, e)
            loaded = LoadedKernel(e, fn, shim)
            if tuple(e.cluster) != (1, 1, 1):
                loaded.resident_ctas = self._resident_ctas(loaded)
            self.kernels.setdefault(e.family, []).append(loaded)

    def _resident_ctas(self, kernel: LoadedKernel) -> int:
        """CTAs of a cluster kernel that run at once on this device: max
        active clusters x cluster size (0, meaning the SM count, if the driver
        cannot say)."""
        from runtime.launch import launch_config

        size = kernel.entry.cluster[0] * kernel.entry.cluster[1] * kernel.entry.cluster[2]
        cfg = launch_config(kernel, (kernel.entry.cluster[0], kernel.entry.cluster[1], kernel.entry.cluster[2]))
        err, clusters = driver.cuOccupancyMaxActiveClusters(kernel.function, cfg)
        if err != driver.CUresult.CUDA_SUCCESS or clusters < 1:
            return 0
        return int(clusters) * size


class _CurrentContext:
    """Makes `ctx` current for a block, restoring the caller's context after
    (a host app's framework may have another one current)."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.pushed = False

    def __enter__(self):
        cur = check(driver.cuCtxGetCurrent(), "cuCtxGetCurrent")
        if int(cur) != int(self.ctx):
            check(driver.cuCtxPushCurrent(self.ctx), "cuCtxPushCurrent")
            self.pushed = True
        return self

    def __exit__(self, *exc):
        if self.pushed:
            check(driver.cuCtxPopCurrent(), "cuCtxPopCurrent")
        return False
