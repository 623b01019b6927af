"""Kernel specs: one frozen dataclass per family, enumerated from HARDWARE.toml.

A spec's `name` is its identity for people (readable, deterministic,
filename-safe); equality and hashing derive from it. The content hash that
decides rebuilds lives in gen.cachekey, not here.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Any, ClassVar, Dict, List, Tuple, Type

from gen.bench.grid import parse_shapes
from runtime.hardware import Hardware, load_hardware
from runtime.errors import CatalogError

# The one dtype -> short-name table every name is built from.
DTYPE_SHORT = {"bfloat16": "bf16", "float8_e4m3fn": "e4m3", "float32": "f32", "float4_e2m1fn_x2": "e2m1"}

BLOCK_K = 128
_NAME_OK = re.compile(r"^[a-z0-9_]+$")


def _ctype_kind(ctype: str) -> str:
    if ctype.endswith("*"):
        return "ptr"
    return {"int": "i32", "float": "f32", "blob": "blob"}[ctype]


@dataclasses.dataclass(frozen=True, eq=False)
class KernelSpec:
    arch: str

    family: ClassVar[str]
    header: ClassVar[str]
    in_dtypes: ClassVar[Tuple[str, ...]]
    out_dtype: ClassVar[str]
    # (parameter name, C type): rendered into the kernel signature and
    # recorded in the manifest as the launch ABI -- one list for both.
    abi_ctypes: ClassVar[Tuple[Tuple[str, str], ...]]
    # CUTLASS instances compile against the nvidia-cutlass headers.
    uses_cutlass: ClassVar[bool] = False
    # Instances launched through Params (TMA descriptors inside) also build a
    # host shim from the same source, which the runtime calls through ctypes
    # for Params and the grid, and which reports threads and shared memory.
    host_shim: ClassVar[bool] = False
    # Launched with programmatic dependent launch: the kernel calls
    # ptx::grid_dependency_wait() before any global access, so it may start
    # while the kernel before it on the stream finishes (runtime/launch.py).
    pdl: ClassVar[bool] = False

    # -- identity ---------------------------------------------------------
    def tag(self) -> str:
        raise NotImplementedError

    @property
    def name(self) -> str:
        dtypes = "".join(DTYPE_SHORT[d] for d in self.in_dtypes) + "_" + DTYPE_SHORT[self.out_dtype]
        name = f"{self.family}_{dtypes}_{self.tag()}_{self.arch.replace('_', '')}"
        if not _NAME_OK.match(name):
            raise CatalogError(f"spec name {name!r} is not filename-safe")
        return name

    @property
    def symbol(self) -> str:
        return self.name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KernelSpec) and self.name == other.name

    def __hash__(self) -> int:
        return hash(self.name)

    # -- what the template, manifest and runtime need ----------------------
    @property
    def abi(self) -> Tuple[Tuple[str, str], ...]:
        return tuple((n, _ctype_kind(c)) for n, c in self.abi_ctypes)

    @property
    def template(self) -> str:
        return f"kernels/{self.family}.cu.j2"

    @property
    def threads(self) -> int:
        raise NotImplementedError

    @property
    def dynamic_smem(self) -> int:
        return 0

    def params(self) -> Dict[str, Any]:
        """The tile parameters, as listed in HARDWARE.toml."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "arch"}

    def constraints(self) -> Dict[str, Any]:
        return {}

    def template_vars(self) -> Dict[str, Any]:
        return dict(self.params(), spec=self, header=self.header, symbol=self.symbol,
                    threads=self.threads, dynamic_smem=self.dynamic_smem,
                    signature=", ".join(f"{c} {n}" for n, c in self.abi_ctypes),
                    arguments=", ".join(n for n, _ in self.abi_ctypes))

    def check(self, hw: Hardware) -> None:
        if self.dynamic_smem > hw.max_dynamic_smem:
            raise CatalogError(f"{self.name}: needs {self.dynamic_smem} B of shared memory, "
                               f"{hw.arch} allows {hw.max_dynamic_smem}")


@dataclasses.dataclass(frozen=True, eq=False)
class _ThreadsSpec(KernelSpec):
    """A kernel whose only tile parameter is its block size (whole warps)."""
    threads_per_block: int = 256

    def tag(self) -> str:
        return f"t{self.threads_per_block}"

    @property
    def threads(self) -> int:
        return self.threads_per_block

    def check(self, hw: Hardware) -> None:
        super().check(hw)
        if self.threads_per_block % 32 or not 32 <= self.threads_per_block <= 1024:
            raise CatalogError(f"{self.name}: threads must be whole warps, at most 1024")


@dataclasses.dataclass(frozen=True, eq=False)
class QuantGroupSpec(_ThreadsSpec):
    family: ClassVar[str] = "quant_group"
    header: ClassVar[str] = "fp8gen/quant_group.cuh"
    in_dtypes: ClassVar[Tuple[str, ...]] = ("bfloat16",)
    out_dtype: ClassVar[str] = "float8_e4m3fn"
    abi_ctypes: ClassVar[Tuple[Tuple[str, str], ...]] = (
        ("x", "const __nv_bfloat16*"), ("q", "uint8_t*"), ("scale", "float*"), ("M", "int"), ("K", "int"),
        ("ld_scale", "int"), ("mn_major", "int"), ("ue8m0", "int"), ("eps", "float"))

    def tag(self) -> str:
        return f"g{BLOCK_K}_t{self.threads_per_block}"

    def constraints(self) -> Dict[str, Any]:
        return {"k_multiple": BLOCK_K, "elems_per_thread": 16}


@dataclasses.dataclass(frozen=True, eq=False)
class QuantSiluMulSpec(QuantGroupSpec):
    family: ClassVar[str] = "quant_silu_mul"
    header: ClassVar[str] = "fp8gen/quant_silu_mul.cuh"
    in_dtypes: ClassVar[Tuple[str, ...]] = ("bfloat16", "bfloat16")
    abi_ctypes: ClassVar[Tuple[Tuple[str, str], ...]] = (
        ("gate", "const __nv_bfloat16*"), ("up", "const __nv_bfloat16*"), ("h", "__nv_bfloat16*"), ("q", "uint8_t*"),
        ("scale", "float*"), ("M", "int"), ("K", "int"), ("ld_scale", "int"), ("mn_major", "int"), ("ue8m0", "int"),
        ("eps", "float"))


@dataclasses.dataclass(frozen=True, eq=False)
class ScaleMnMajorSpec(_ThreadsSpec):
    family: ClassVar[str] = "scale_mn_major"
    header: ClassVar[str] = "fp8gen/scale_mn_major.cuh"
    in_dtypes: ClassVar[Tuple[str, ...]] = ("float32",)
    out_dtype: ClassVar[str] = "float32"
    abi_ctypes: ClassVar[Tuple[Tuple[str, str], ...]] = (
        ("src", "const float*"), ("dst", "float*"), ("M", "int"), ("G", "int"), ("M_pad", "int"))


@dataclasses.dataclass(frozen=True, eq=False)
class Fp8DequantSpec(_ThreadsSpec):
    """BlockScaled128 e4m3 weight -> bf16 (the bf16 fallback's weights)."""

    family: ClassVar[str] = "fp8_dequant"
    header: ClassVar[str] = "fp8gen/fp8_dequant.cuh"
    in_dtypes: ClassVar[Tuple[str, ...]] = ("float8_e4m3fn",)
    out_dtype: ClassVar[str] = "bfloat16"
    abi_ctypes: ClassVar[Tuple[Tuple[str, str], ...]] = (
        ("w", "const uint8_t*"), ("w_scale", "const float*"), ("out", "__nv_bfloat16*"), ("N", "int"),
        ("K", "int"))

    def constraints(self) -> Dict[str, Any]:
        return {"k_multiple": BLOCK_K, "elems_per_thread": 16}


@dataclasses.dataclass(frozen=True, eq=False)
class _ScalarQuantSpec(_ThreadsSpec):
    """Single-scale quantizers (per tensor, per token) and the NVFP4 -> FP8
    predequant: THREADS-wide blocks, 16 elements per thread."""

    def constraints(self) -> Dict[str, Any]:
        return {"elems_per_thread": 16}

    def check(self, hw: Hardware) -> None:
        super().check(hw)
        if hw.compute_capability < (8, 9):
            raise CatalogError(f"{self.name}: e4m3 conversion needs sm_89 or newer")


@dataclasses.dataclass(frozen=True, eq=False)
class QuantTensorSpec(_ScalarQuantSpec):
    """bf16 -> e4m3 under one per-tensor scale: device amax (stage 0), scale
    finalize into a caller-owned state (stage 1), quantize (stage 2)."""
    family: ClassVar[str] = "quant_tensor"
    header: ClassVar[str] = "fp8gen/quant_scalar.cuh"
    in_dtypes: ClassVar[Tuple[str, ...]] = ("bfloat16",)
    out_dtype: ClassVar[str] = "float8_e4m3fn"
    abi_ctypes: ClassVar[Tuple[Tuple[str, str], ...]] = (
        ("x", "const __nv_bfloat16*"), ("q", "uint8_t*"), ("state", "float*"), ("w_scale", "const float*"),
        ("M", "int"), ("K", "int"), ("stage", "int"), ("eps", "float"))


@dataclasses.dataclass(frozen=True, eq=False)
class QuantTokenSpec(_ScalarQuantSpec):
    """bf16 -> e4m3 with one scale per token (the per-row W8A8 activation)."""
    family: ClassVar[str] = "quant_token"
    header: ClassVar[str] = "fp8gen/quant_scalar.cuh"
    in_dtypes: ClassVar[Tuple[str, ...]] = ("bfloat16",)
    out_dtype: ClassVar[str] = "float8_e4m3fn"
    abi_ctypes: ClassVar[Tuple[Tuple[str, str], ...]] = (
        ("x", "const __nv_bfloat16*"), ("q", "uint8_t*"), ("scale", "float*"), ("M", "int"), ("K", "int"),
        ("eps", "float"))


@dataclasses.dataclass(frozen=True, eq=False)
class Nvfp4ToFp8Spec(_ScalarQuantSpec):
    """NVFP4 weights (e2m1 pairs, e4m3 scales per 16, f32 global scale) ->
    e4m3 under one scale chosen from the data (amax / 448), in the quant_tensor
    stages."""
    family: ClassVar[str] = "nvfp4_to_fp8"
    header: ClassVar[str] = "fp8gen/quant_scalar.cuh"
    in_dtypes: ClassVar[Tuple[str, ...]] = ("float4_e2m1fn_x2", "float8_e4m3fn")  # values, block scales
    out_dtype: ClassVar[str] = "float8_e4m3fn"
    abi_ctypes: ClassVar[Tuple[Tuple[str, str], ...]] = (
        ("packed", "const uint8_t*"), ("block_scale", "const uint8_t*"), ("global_scale", "const float*"),
        ("q", "uint8_t*"), ("state", "float*"), ("N", "int"), ("K", "int"), ("stage", "int"))


@dataclasses.dataclass(frozen=True, eq=False)
class _MmaTileSpec(KernelSpec):
    """Block tile BM x BN x 128 of warps_m x warps_n warps, `stages` deep."""
    bm: int = 128
    bn: int = 128
    warps_m: int = 2
    warps_n: int = 4
    stages: int = 3

    a_elem_bytes: ClassVar[int]
    config: ClassVar[str]

    def tag(self) -> str:
        return f"{self.bm}x{self.bn}x{BLOCK_K}_w{self.warps_m}x{self.warps_n}_s{self.stages}"

    @property
    def threads(self) -> int:
        return 32 * self.warps_m * self.warps_n

    @property
    def dynamic_smem(self) -> int:
        return self.stages * (self.bm * BLOCK_K * self.a_elem_bytes + self.bn * BLOCK_K)

    def constraints(self) -> Dict[str, Any]:
        return {"bm": self.bm, "bn": self.bn, "k_multiple": BLOCK_K, "n_multiple": 16}

    def template_vars(self) -> Dict[str, Any]:
        return dict(super().template_vars(), config=self.config)

    def check(self, hw: Hardware) -> None:
        super().check(hw)
        if self.bm % (16 * self.warps_m) or self.bn % (16 * self.warps_n):
            raise CatalogError(f"{self.name}: warp tiles must be multiples of 16x16")
        if BLOCK_K % self.bn:
            raise CatalogError(f"{self.name}: bn must divide {BLOCK_K} (one weight-scale block per tile)")
        if not 2 <= self.stages <= 8:
            raise CatalogError(f"{self.name}: stages must be 2..8")


@dataclasses.dataclass(frozen=True, eq=False)
class W8A8MmaSpec(_MmaTileSpec):
    family: ClassVar[str] = "w8a8_mma"
    header: ClassVar[str] = "fp8gen/w8a8_mma.cuh"
    config: ClassVar[str] = "W8A8MmaConfig"
    a_elem_bytes: ClassVar[int] = 1
    in_dtypes: ClassVar[Tuple[str, ...]] = ("float8_e4m3fn", "float8_e4m3fn")
    out_dtype: ClassVar[str] = "bfloat16"
    abi_ctypes: ClassVar[Tuple[Tuple[str, str], ...]] = (
        ("a", "const uint8_t*"), ("a_scale", "const float*"), ("w", "const uint8_t*"),
        ("w_scale", "const float*"), ("out", "__nv_bfloat16*"), ("M", "int"), ("N", "int"), ("K", "int"))

    def check(self, hw: Hardware) -> None:
        super().check(hw)
        if hw.compute_capability < (8, 9):
            raise CatalogError(f"{self.name}: e4m3 mma.sync needs sm_89 or newer")


@dataclasses.dataclass(frozen=True, eq=False)
class W8A8MmaRowSpec(W8A8MmaSpec):
    """The in-tree mma.sync GEMM for per-row FP8 (per-token x per-channel
    scales, applied once before the store): the arches without wgmma."""
    family: ClassVar[str] = "w8a8_mma_row"


@dataclasses.dataclass(frozen=True, eq=False)
class W8A8MmaTensorSpec(W8A8MmaSpec):
    """The in-tree mma.sync GEMM for per-tensor FP8: one output scale read
    through a device pointer."""
    family: ClassVar[str] = "w8a8_mma_tensor"
    abi_ctypes: ClassVar[Tuple[Tuple[str, str], ...]] = (
        ("a", "const uint8_t*"), ("scale", "const float*"), ("w", "const uint8_t*"), ("out", "__nv_bfloat16*"),
        ("M", "int"), ("N", "int"), ("K", "int"))


@dataclasses.dataclass(frozen=True, eq=False)
class W8A16GemmSpec(_MmaTileSpec):
    family: ClassVar[str] = "w8a16_gemm"
    header: ClassVar[str] = "fp8gen/w8a16_gemm.cuh"
    config: ClassVar[str] = "W8A16GemmConfig"
    a_elem_bytes: ClassVar[int] = 2
    in_dtypes: ClassVar[Tuple[str, ...]] = ("bfloat16", "float8_e4m3fn")
    out_dtype: ClassVar[str] = "bfloat16"
    abi_ctypes: ClassVar[Tuple[Tuple[str, str], ...]] = (
        ("x", "const __nv_bfloat16*"), ("w", "const uint8_t*"), ("w_scale", "const float*"),
        ("out", "__nv_bfloat16*"), ("M", "int"), ("N", "int"), ("K", "int"))


@dataclasses.dataclass(frozen=True, eq=False)
class W8A16GemvSpec(_ThreadsSpec):
    unroll: int = 4

    family: ClassVar[str] = "w8a16_gemv"
    header: ClassVar[str] = "fp8gen/w8a16_gemv.cuh"
    in_dtypes: ClassVar[Tuple[str, ...]] = ("bfloat16", "float8_e4m3fn")
    out_dtype: ClassVar[str] = "bfloat16"
    abi_ctypes: ClassVar[Tuple[Tuple[str, str], ...]] = W8A16GemmSpec.abi_ctypes
    max_m: ClassVar[int] = 4

    def tag(self) -> str:
        return f"t{self.threads_per_block}_u{self.unroll}"

    def constraints(self) -> Dict[str, Any]:
        return {"max_m": self.max_m, "k_multiple": BLOCK_K, "rows_per_block": self.threads_per_block // 32}


@dataclasses.dataclass(frozen=True, eq=False)
class W8A8CutlassSpec(KernelSpec):
    """CUTLASS 4.2's FP8 blockwise GEMM (1x128 / 128x128 scales) for the
    arch's collective (HARDWARE.toml `cutlass_arch`: 90 wgmma, 100 tcgen05,
    120 GeForce/GB10), one tile/cluster/schedule per instance; built as a
    cubin plus a host shim that reports the launch resources."""
    tile_m: int = 128
    tile_n: int = 128
    cluster_m: int = 1
    cluster_n: int = 1
    schedule: str = "cooperative"
    cutlass_arch: int = 90  # injected from HARDWARE.toml, not listed per instance

    family: ClassVar[str] = "w8a8_cutlass"
    header: ClassVar[str] = "fp8gen/cutlass_blockwise.cuh"
    in_dtypes: ClassVar[Tuple[str, ...]] = ("float8_e4m3fn", "float8_e4m3fn")
    out_dtype: ClassVar[str] = "bfloat16"
    abi_ctypes: ClassVar[Tuple[Tuple[str, str], ...]] = (("params", "blob"),)
    uses_cutlass: ClassVar[bool] = True
    host_shim: ClassVar[bool] = True
    # schedule -> (name tag, C++ enumerator, the CUTLASS arches that have it)
    SCHEDULES: ClassVar[Dict[str, Tuple[str, str, Tuple[int, ...]]]] = {
        "cooperative": ("coop", "kCooperative", (90, 120)), "pingpong": ("pp", "kPingpong", (90, 120)),
        "1sm": ("1sm", "k1Sm", (100,)), "2sm": ("2sm", "k2Sm", (100,))}

    @property
    def pdl(self) -> bool:  # type: ignore[override]
        # CUTLASS's sm90 GEMM kernels wait on the previous grid when built with
        # CUTLASS_ENABLE_GDC_FOR_SM90 (the template defines it for them)
        return self.cutlass_arch == 90

    def tag(self) -> str:
        sched = self.SCHEDULES[self.schedule][0] if self.schedule in self.SCHEDULES else self.schedule
        return f"{self.tile_m}x{self.tile_n}x{BLOCK_K}_c{self.cluster_m}x{self.cluster_n}_{sched}"

    @property
    def threads(self) -> int:
        return 0  # the host shim reports it after the build (the manifest records it)

    def params(self) -> Dict[str, Any]:
        return {k: v for k, v in super().params().items() if k != "cutlass_arch"}

    def template_vars(self) -> Dict[str, Any]:
        return dict(super().template_vars(), cutlass_arch=self.cutlass_arch,
                    schedule_enum=self.SCHEDULES[self.schedule][1])

    def constraints(self) -> Dict[str, Any]:
        # MN-major activation scales with a 16-byte aligned leading dimension (M padded to 4),
        # bf16 output rows of whole 16-byte vectors (N % 8), K in whole scale blocks.
        return {"scale_mn_major": True, "m_align": 4, "n_multiple": 8, "k_multiple": BLOCK_K,
                "tile_m": self.tile_m, "tile_n": self.tile_n}

    def check(self, hw: Hardware) -> None:
        super().check(hw)
        if self.schedule not in self.SCHEDULES:
            raise CatalogError(f"{self.name}: schedule must be one of {sorted(self.SCHEDULES)}")
        if self.cutlass_arch not in self.SCHEDULES[self.schedule][2]:
            raise CatalogError(f"{self.name}: CUTLASS arch {self.cutlass_arch} has no {self.schedule} blockwise "
                               f"schedule")
        if self.cutlass_arch == 90 and not hw.features.get("wgmma"):
            raise CatalogError(f"{self.name}: the sm90 blockwise collective needs wgmma ({hw.arch} has none)")
        if self.cutlass_arch == 90 and self.schedule == "cooperative" and self.tile_m % 128:
            raise CatalogError(f"{self.name}: the cooperative schedule splits tile_m over two warpgroups (>= 128)")
        if 128 % self.tile_n:
            # CUTLASS 4.2's blockwise collectives hold one weight scale per tile in N
            raise CatalogError(f"{self.name}: tile_n must divide 128 (one weight-scale block per tile)")


@dataclasses.dataclass(frozen=True, eq=False)
class W8A8WgmmaSpec(KernelSpec):
    """The raw-PTX sm_90a block-scaled GEMM: BM x BN x 128 tiles (one math
    warpgroup per 64 rows, one TMA producer warpgroup), `stages` deep, a
    persistent grid walking tiles in column groups of `group_n`. With
    ksplit > 1 (bm 64), that many math warpgroups share each tile's K blocks
    (shorter serial chains for small M) and add up in shared memory. With
    temps 2, two per-block temporaries alternate so that the next block's
    MMAs run while the last one is promoted; with temps 4 (multi-block
    stages only) three blocks' MMAs stay in flight. With n_chunks 2, the tile's
    columns are two MMA groups with a half-width temporary each, so that a
    wide tile (fewer L2 bytes per MMA) still fits its temporaries beside the
    total (128x256: 128 + 64 registers per thread). With bm 256 the tile is
    two waves of 128 rows: each of the two math warpgroups owns 64 rows of
    each and runs the waves' MMA groups in turn through one temporary, so
    that a W box feeds 256 rows (DeepGEMM's large-M tiles)."""
    bm: int = 128
    bn: int = 128
    stages: int = 5
    group_n: int = 16
    ksplit: int = 1
    temps: int = 1
    kslices: int = 1  # split K across CTAs (small M), through a runtime workspace
    n_chunks: int = 1  # column chunks, each its own MMA group and temporary
    # a 2-CTA cluster on neighbouring tiles along M (sharing W) or N (sharing
    # A): each CTA copies half of the shared box and multicasts it to both
    cluster_m: int = 1
    cluster_n: int = 1
    # 64-column output boxes staged per pass of the TMA-store epilogue (0: all
    # bn/64 at once); fewer leave shared memory for another pipeline stage
    out_boxes: int = 0
    # shape-specialized: N and K fixed at compile time (0: taken at run time);
    # HARDWARE.toml's [[specialize.w8a8_wgmma]] lists them per model
    fixed_n: int = 0
    fixed_k: int = 0
    # split K inside a cluster of cluster_k CTAs (2 or 4), summed through
    # distributed shared memory in rank 0 (no workspace)
    cluster_k: int = 1
    # walk the tiles along M in groups of group_n tile rows instead of along
    # N in groups of group_n columns (name: _gm<group_n>)
    walk_m: bool = False
    # block mode: the weight scales ride in each stage (cp.async by the
    # producer, or by TMA with ws_bulk) instead of being loaded from L2 by
    # the math warps (name: _ws)
    ws_stage: bool = False
    # with ws_stage: the producer copies each block's weight scales by TMA
    # (a map over them: rows of K / 128 floats, so K a multiple of 512) and
    # every math lane reads them, instead of cp.async and lane 0 reading for
    # its warp (name: _wsb; wgmma_gemm::BulkWeightScales)
    ws_bulk: bool = False
    # block mode with the weight scales from L2 (no ws_stage), one-block
    # stages: each lane of a math warp holds one block's scales of the next
    # 32 and the K loop takes them by shuffle, instead of a load per block
    # waited on in that block's promotion (name: _wl;
    # wgmma_gemm::LaneWeightScales)
    ws_lanes: bool = False
    # with ws_lanes: the lanes load the first 32 blocks' scales of the CTA's
    # next unit while this one runs, so that a unit's first shuffle does not
    # wait for L2 at its start (name: _wla instead of _wl;
    # wgmma_gemm::LaneWeightScalesAhead)
    ws_lanes_ahead: bool = False
    # block mode, tiles that straddle weight-scale blocks (128 % bn != 0),
    # one or two temporaries: the K loop built once per split point, so that the
    # promotion takes compile-time scales instead of a select per 8 columns
    # (name: _sp; the rendered source specializes wgmma_gemm::SplitPaths)
    split_paths: bool = False
    # the TMA-store epilogue stages the tile with stmatrix instead of 32-bit
    # stores (name: _st; the rendered source specializes
    # wgmma_gemm::StmatrixEpilogue, so the instances without it keep their cubins)
    stmatrix: bool = False
    # a 128-row tile's two warpgroups issue their MMA groups in turn (name:
    # _oi; wgmma_gemm::OrderedIssue)
    ordered: bool = False
    # a tile width that is not a multiple of 64 stages its output for a TMA
    # store as one unswizzled box of bn columns per 64 rows instead of storing
    # straight from registers (name: _rb; wgmma_gemm::RowBoxEpilogue)
    row_box: bool = False
    # a tile width 32 more than a multiple of 64 (160, 96, 32) stages its
    # output as 32-column boxes with the 64-byte swizzle for TMA stores
    # instead of storing straight from registers (name: _hb;
    # wgmma_gemm::HalfBoxEpilogue)
    half_box: bool = False
    # K blocks per pipeline stage: each stage is one 3-D copy of A, of W and
    # of A's scales spanning stage_blocks blocks, so that narrow tiles (16 or
    # 32 W rows) issue fewer copies per byte (on the H200 one 2-D copy per
    # block held a 16-row tile at about 0.15 us per block); the producer and
    # the math warps meet once per stage (name: _sb<n>; wgmma_gemm::StageBlocks)
    stage_blocks: int = 1
    # W boxes of the first unit copied before the grid-dependency wait (-1:
    # the header's early_stages() rule; name: _e<n>; wgmma_gemm::EarlyWeights,
    # so that the instances without it keep their cubins)
    early: int = -1
    # the one-temporary K loop unrolled this many blocks (2, 4 or 8), so that
    # ptxas can fold the ring's stage arithmetic and hoist the next block's
    # barrier wait among the promotion's FFMAs, as DeepGEMM's loop (unrolled
    # 8) does (name: _u<n>; wgmma_gemm::KLoopUnroll, so that the instances
    # without it keep their cubins)
    unroll: int = 1
    # the one-temporary K loop waits for the next block's stage while the
    # block's last MMA group runs, off the path from that group's wait to
    # the next block's first MMA (name: _pw; wgmma_gemm::PrewaitNextStage)
    prewait: bool = False
    # block mode, weight scales from L2, one-block stages: an MMA group's
    # activation scales are read from the stage before its MMAs are issued
    # instead of after (name: _sf; wgmma_gemm::ScalesFirst)
    scales_first: bool = False
    # the two-temporary K loop unrolled by a turn of the ring, taken by units
    # that start at slot 0 with a multiple of `stages` K blocks, so that the
    # slots, barriers, descriptors and parities are compile-time offsets
    # (name: _ru; wgmma_gemm::RingUnroll)
    ring_unroll: bool = False
    # the two-temporary K loops: the math warps take a unit's work range and
    # tile coordinates computed while the unit before it ran, and compute
    # the next unit's once the first MMAs are issued, so that the integer
    # divisions are not between a unit's top and its first MMA (name: _cc,
    # last; wgmma_gemm::CarriedCoords)
    carry_coords: bool = False

    family: ClassVar[str] = "w8a8_wgmma"
    header: ClassVar[str] = "fp8gen/w8a8_wgmma.cuh"
    in_dtypes: ClassVar[Tuple[str, ...]] = ("float8_e4m3fn", "float8_e4m3fn")
    out_dtype: ClassVar[str] = "bfloat16"
    abi_ctypes: ClassVar[Tuple[Tuple[str, str], ...]] = (("params", "blob"),)
    host_shim: ClassVar[bool] = True
    pdl: ClassVar[bool] = True
    scale_mode: ClassVar[str] = "kScaleBlock"  # wgmma_gemm::ScaleMode

    def template_vars(self) -> Dict[str, Any]:
        return dict(super().template_vars(), scale_mode=self.scale_mode, config_args=self.config_args(),
                    split_paths=self.split_paths, stmatrix=self.stmatrix, ordered=self.ordered,
                    row_box=self.row_box, half_box=self.half_box, stage_blocks=self.stage_blocks, early=self.early,
                    ws_bulk=self.ws_bulk, ws_lanes=self.ws_lanes, ws_lanes_ahead=self.ws_lanes_ahead,
                    unroll=self.unroll,
                    prewait=self.prewait, scales_first=self.scales_first, ring_unroll=self.ring_unroll,
                    carry_coords=self.carry_coords)

    def config_args(self) -> List[str]:
        """wgmma_gemm::Config's template arguments, trailing defaults left
        out (so that adding a parameter leaves existing sources unchanged)."""
        b = lambda v: "true" if v else "false"
        args = [self.bm, self.bn, self.stages, self.group_n, self.ksplit, f"wg::{self.scale_mode}", self.temps,
                self.kslices, self.n_chunks, self.cluster_m, self.cluster_n, self.out_boxes]
        optional = [(self.fixed_n, 0), (self.fixed_k, 0), (self.cluster_k, 1), (b(self.walk_m), "false"),
                    (b(self.ws_stage), "false")]
        while optional and optional[-1][0] == optional[-1][1]:
            optional.pop()
        return [str(a) for a in args] + [str(v) for v, _ in optional]

    def tag(self) -> str:
        split = f"_k{self.ksplit}" if self.ksplit > 1 else ""
        temps = f"_t{self.temps}" if self.temps > 1 else ""
        slices = f"_x{self.kslices}" if self.kslices > 1 else ""
        chunks = f"_n{self.n_chunks}" if self.n_chunks > 1 else ""
        cluster = f"_c{self.cluster_m}x{self.cluster_n}" if self.cluster_m * self.cluster_n > 1 else ""
        boxes = f"_o{self.out_boxes}" if self.out_boxes else ""
        fixed = f"_for{self.fixed_n}x{self.fixed_k}" if self.fixed_n else ""
        ck = f"_ck{self.cluster_k}" if self.cluster_k > 1 else ""
        walk = "m" if self.walk_m else ""
        ws = "_wsb" if self.ws_bulk else "_ws" if self.ws_stage else "_wl" if self.ws_lanes else ""
        ws += "a" if self.ws_lanes_ahead else ""
        sp = "_sp" if self.split_paths else ""
        st = "_st" if self.stmatrix else ""
        oi = "_oi" if self.ordered else ""
        rb = "_rb" if self.row_box else "_hb" if self.half_box else ""
        sb = f"_sb{self.stage_blocks}" if self.stage_blocks > 1 else ""
        early = f"_e{self.early}" if self.early >= 0 else ""
        unroll = f"_u{self.unroll}" if self.unroll > 1 else ""
        unroll += "_pw" if self.prewait else ""
        unroll += "_sf" if self.scales_first else ""
        unroll += "_ru" if self.ring_unroll else ""
        unroll += "_cc" if self.carry_coords else ""
        return (f"{self.bm}x{self.bn}x{BLOCK_K}_s{self.stages}_g{walk}{self.group_n}{split}{temps}{slices}{chunks}"
                f"{cluster}{ck}{boxes}{fixed}{ws}{sp}{st}{oi}{rb}{sb}{early}{unroll}")

    @property
    def waves(self) -> int:
        """128-row waves of a 256-row tile (wgmma_gemm::Config::WAVES)."""
        return 2 if self.bm == 256 else 1

    @property
    def math_warpgroups(self) -> int:
        return self.bm // 64 // self.waves * self.ksplit

    @property
    def threads(self) -> int:
        return 128 * (self.math_warpgroups + 1)

    @property
    def dynamic_smem(self) -> int:
        # mirrors wgmma_gemm::Config::SMEM_BYTES (a static_assert checks it)
        # (the activation scales; with ws_stage 16 bytes more for the block's weight scales)
        sa_stride = -(-(self.bm * 4 + (16 if self.ws_stage else 0)) // 128) * 128
        if self.stage_blocks > 1:  # one box of stage_blocks blocks' scales
            sa_stride = -(-(self.stage_blocks * self.bm * 4) // 128) * 128
        # TMA-store epilogue staging: out_boxes (or all bn/64) 64x64 bf16 boxes per 64 rows
        # (a row box: one 64 x bn box per 64 rows)
        out_tile = self.bm // 64 * (self.out_boxes or self.bn // 64) * 8192 if self.bn % 64 == 0 else 0
        if self.row_box or self.half_box:  # (half boxes: bn / 32 boxes of 64 x 32 per 64 rows)
            out_tile = self.bm * self.bn * 2
        k_sums = (self.ksplit - 1) * 64 * self.bn * 4
        slice_flag = 16 if self.kslices > 1 else 0
        cluster_sums = (self.cluster_k - 1) * self.bm * self.bn * 4 + (16 if self.cluster_k > 1 else 0)
        return (self.stages * (self.stage_blocks * (self.bm * BLOCK_K + self.bn * BLOCK_K) + sa_stride) + out_tile
                + k_sums + cluster_sums + 2 * self.stages * 8 + slice_flag + 1024)

    def constraints(self) -> Dict[str, Any]:
        # Same operand contract as w8a8_cutlass: MN-major activation scales
        # (16-byte rows: M padded to 4), N % 8 for 16-byte TMA rows of bf16.
        found = {"scale_mn_major": True, "m_align": 4, "n_multiple": 8, "k_multiple": BLOCK_K,
                 "tile_m": self.bm, "tile_n": self.bn, "k_slices": self.kslices}
        if self.fixed_n:  # runs only this projection shape (runtime/dispatch.py fits_shape)
            found.update(fixed_n=self.fixed_n, fixed_k=self.fixed_k)
        if self.ws_bulk:  # the weight scales' map: rows of K / 128 floats, 16-byte multiples
            found.update(scale_k_multiple=4 * BLOCK_K)
        if self.cluster_k > 1:  # each CTA of the cluster takes at least one K block
            found.update(min_k=self.cluster_k * BLOCK_K, cluster_k=self.cluster_k)
        return found

    def check(self, hw: Hardware) -> None:
        super().check(hw)
        if not (hw.features.get("wgmma") and hw.features.get("tma")):
            raise CatalogError(f"{self.name}: needs wgmma and TMA (sm_90a); {hw.arch} has neither")
        if self.bm not in (64, 128, 256):
            raise CatalogError(f"{self.name}: bm must be 64 or 128 (one math warpgroup per 64 rows), or 256 (two "
                               "waves of 128 rows)")
        if self.bm == 256 and (self.temps != 1 or self.n_chunks != 1 or self.ksplit != 1 or self.cluster_k != 1
                               or self.stage_blocks != 1 or self.scale_mode != "kScaleBlock"
                               or (self.bn % 64 and not self.row_box) or self.ordered):
            # wgmma_gemm::Config::WAVES
            raise CatalogError(f"{self.name}: a 256-row tile runs its two waves through one temporary: temps 1, one "
                               "column chunk, no K split inside the CTA or cluster, one-block stages, block scales, "
                               "a TMA-store epilogue (bn % 64 == 0 or a row box), no ordered issue")
        if self.bn % 8 or not 8 <= self.bn <= 256:
            raise CatalogError(f"{self.name}: bn must be a multiple of 8 in 8..256 (wgmma's N)")
        low = self.bn & -self.bn
        if self.bn + 128 - min(low, 128) > 256:
            raise CatalogError(f"{self.name}: a {self.bn}-wide tile could span three weight-scale blocks")
        if self.ksplit not in (1, 2, 4) or (self.ksplit > 1 and self.bm != 64):
            raise CatalogError(f"{self.name}: ksplit is 1, or 2 or 4 with bm 64")
        if self.stages % self.ksplit:
            # (wgmma_gemm::Config says why: mbarrier parity aliasing)
            raise CatalogError(f"{self.name}: stages must be a multiple of ksplit, so that each K-split "
                               "warpgroup waits on every phase of the stages it reads")
        # wgmma_gemm::Config::MATH_REGS (four warpgroups keep 65536 / 640 = 96)
        math_regs = {1: 240, 2: 232, 4: 96}[self.math_warpgroups]
        if (self.temps not in (1, 2, 4) or (self.temps == 2 and self.ksplit > 1 and self.stage_blocks == 1)
                or (self.temps == 4 and self.stage_blocks == 1)):
            raise CatalogError(f"{self.name}: temps is 1, or 2 without a K split (but for multi-block stages), "
                               "or 4 with multi-block stages")
        if not 1 <= self.kslices <= 16 or (self.kslices > 1 and self.ksplit > 1):
            raise CatalogError(f"{self.name}: kslices is 1..16, and K is split across CTAs or warpgroups, not both")
        if self.kslices > 1 and self.scale_mode != "kScaleBlock":
            raise CatalogError(f"{self.name}: K slices are built for the block-scaled family only")
        if self.n_chunks not in (1, 2) or (self.n_chunks > 1 and (self.ksplit > 1 or self.bn % 16)):
            raise CatalogError(f"{self.name}: n_chunks is 1, or 2 without a K split and with bn a multiple of 16")
        if self.out_boxes and (self.bn % 64 or self.bn // 64 % self.out_boxes):
            raise CatalogError(f"{self.name}: out_boxes must divide bn/64 (a TMA-store epilogue: bn % 64 == 0)")
        if (self.cluster_m, self.cluster_n) not in ((1, 1), (2, 1), (1, 2)):
            raise CatalogError(f"{self.name}: a cluster is 1x1, 2x1 or 1x2 CTAs")
        if self.cluster_m * self.cluster_n > 1 and (self.ksplit > 1 or self.kslices > 1):
            raise CatalogError(f"{self.name}: a 2-CTA cluster runs without a K split")
        if self.cluster_k not in (1, 2, 4) or (self.cluster_k > 1 and (
                self.cluster_m * self.cluster_n > 1 or self.ksplit > 1 or self.kslices > 1)):
            raise CatalogError(f"{self.name}: cluster_k is 1, or 2 or 4 as the only K split and the only cluster")
        if self.cluster_k > 1 and self.scale_mode != "kScaleBlock":
            raise CatalogError(f"{self.name}: cluster K splits are built for the block-scaled family only")
        if bool(self.fixed_n) != bool(self.fixed_k) or self.fixed_n < 0 or self.fixed_n % 8 or \
                self.fixed_k < 0 or self.fixed_k % BLOCK_K:
            raise CatalogError(f"{self.name}: a shape-specialized instance fixes both N (a multiple of 8) and K "
                               f"(a multiple of {BLOCK_K}); got N={self.fixed_n}, K={self.fixed_k}")
        if not -1 <= self.early <= self.stages:
            raise CatalogError(f"{self.name}: early is -1 (the header's rule) or 0..stages W boxes copied before "
                               f"the grid-dependency wait; got {self.early}")
        if self.split_paths and (self.scale_mode != "kScaleBlock" or 128 % self.bn == 0 or self.temps not in (1, 2)
                                 or self.stage_blocks != 1):
            raise CatalogError(f"{self.name}: split_paths specializes the one- or two-temporary block-scaled "
                               f"promotion of tiles that straddle weight-scale blocks (128 % bn != 0, temps 1 or 2, "
                               f"one-block stages)")
        if self.stmatrix and self.bn % 64:
            raise CatalogError(f"{self.name}: stmatrix stages the TMA-store epilogue's tile (bn a multiple of 64)")
        if self.row_box and (self.bn % 64 == 0 or (self.bn % 16 != 8 and self.bn % 32 != 16) or self.out_boxes
                             or self.stmatrix):
            # rows bn * 2 bytes apart: 4 banks apart mod 32 when bn % 16 == 8
            # (conflict-free), 8 or 24 when bn % 32 == 16 (2-way)
            raise CatalogError(f"{self.name}: a row box stages a tile whose width is not a multiple of 64 and is "
                               "8 mod 16 or 16 mod 32 (unswizzled rows, at most 2-way bank conflicts), whole and "
                               "with 32-bit stores")
        if self.half_box and (self.bn % 64 != 32 or self.row_box or self.out_boxes or self.stmatrix or self.bm == 256):
            raise CatalogError(f"{self.name}: half boxes stage a tile whose width is 32 more than a multiple of 64 "
                               "(32-column boxes, 64-byte swizzle), whole, with 32-bit stores, in 64- or 128-row tiles")
        if self.ordered and (self.bm != 128 or self.ksplit != 1):
            raise CatalogError(f"{self.name}: ordered issue takes turns between a 128-row tile's two warpgroups "
                               "(bm 128, no K split)")
        if self.ws_stage and self.scale_mode != "kScaleBlock":
            raise CatalogError(f"{self.name}: ws_stage moves block weight scales: block-scaled family only")
        if self.ws_bulk and (not self.ws_stage or self.stage_blocks != 1):
            raise CatalogError(f"{self.name}: ws_bulk copies the weight scales of ws_stage by TMA into one-block "
                               "stages (ws_stage, stage_blocks 1)")
        if self.ws_lanes and (self.scale_mode != "kScaleBlock" or self.ws_stage or self.stage_blocks != 1):
            raise CatalogError(f"{self.name}: ws_lanes holds block weight scales read from L2 in the math warps' lanes "
                               "(block-scaled family, no ws_stage, one-block stages)")
        if self.ws_lanes_ahead and not self.ws_lanes:
            raise CatalogError(f"{self.name}: ws_lanes_ahead loads the next unit's lane-held weight scales early "
                               "(it needs ws_lanes)")
        if self.unroll not in (1, 2, 4, 8) or (self.unroll > 1 and (
                self.temps != 1 or self.ksplit != 1 or self.stage_blocks != 1)):
            raise CatalogError(f"{self.name}: unroll is 1, or 2, 4 or 8 for the one-temporary K loop (temps 1, no K "
                               f"split inside the CTA, one-block stages); got {self.unroll}")
        if self.prewait and (self.temps != 1 or self.ksplit != 1 or self.stage_blocks != 1):
            raise CatalogError(f"{self.name}: prewait waits ahead in the one-temporary K loop (temps 1, no K split "
                               "inside the CTA, one-block stages)")
        if self.scales_first and (self.scale_mode != "kScaleBlock" or self.ws_stage or self.stage_blocks != 1):
            raise CatalogError(f"{self.name}: scales_first reads block activation scales before the MMAs (block-scaled "
                               "family, weight scales from L2: no ws_stage, one-block stages)")
        if self.ring_unroll and (self.temps != 2 or self.ksplit != 1 or self.stage_blocks != 1 or self.split_paths):
            raise CatalogError(f"{self.name}: ring_unroll unrolls the two-temporary K loop (temps 2, no K split "
                               "inside the CTA, one-block stages, no split paths)")
        if self.carry_coords and (self.temps != 2 or self.ksplit != 1 or self.stage_blocks != 1 or self.split_paths):
            raise CatalogError(f"{self.name}: carry_coords carries the unit coordinates through the two-temporary K "
                               "loops (temps 2, no K split inside the CTA, one-block stages, no split paths)")
        if self.fixed_n and self.scale_mode != "kScaleBlock":
            raise CatalogError(f"{self.name}: shape-specialized instances are built for the block-scaled family only")
        if self.cluster_m == 2 and self.bn % 16:
            raise CatalogError(f"{self.name}: a cluster along M halves the W box: bn must be a multiple of 16")
        # a math thread holds bn/2 total + (bn / n_chunks)/2 per temporary;
        # two math warpgroups past 192 take the wide budget (240 each, 36 left
        # for the rest; wgmma_gemm::Config::WIDE_REGS)
        acc_regs = self.waves * self.bn // 2 + self.temps * self.bn // self.n_chunks // 2
        reserve = 40
        if self.math_warpgroups == 2 and acc_regs > 192:
            math_regs, reserve = 240, 36
        if acc_regs > math_regs - reserve:
            raise CatalogError(f"{self.name}: bn={self.bn} with {self.temps} temporaries needs {acc_regs} "
                               f"accumulator registers per thread; a math warpgroup gets {math_regs}")
        if not 2 <= self.stages <= 16:
            raise CatalogError(f"{self.name}: stages must be 2..16")
        if not 1 <= self.stage_blocks <= 8 or (self.stage_blocks > 1 and (
                self.temps not in (2, 4) or self.n_chunks != 1 or self.kslices != 1
                or self.cluster_m * self.cluster_n != 1 or self.ws_stage or self.split_paths
                or self.stages <= self.ksplit * ((self.stage_blocks + self.temps - 2) // self.stage_blocks))):
            # (a warpgroup waits for the stage of its next issue while it holds
            # those of its temps - 1 blocks in flight, its stages ksplit ring
            # positions apart: a ring no longer than that deadlocks, as the
            # first one-stage-per-warpgroup build did on the H200)
            raise CatalogError(f"{self.name}: stage_blocks is 1, or 2..8 with two or four temporaries, one chunk, no "
                               "split across CTAs but a cluster K split, no 2-CTA pair, weight scales from L2 and a "
                               "ring longer than the stages a warpgroup holds (wgmma_gemm::StageBlocks)")
        if self.group_n < 1:
            raise CatalogError(f"{self.name}: group_n must be >= 1")


@dataclasses.dataclass(frozen=True, eq=False)
class W8A8RowSpec(W8A8WgmmaSpec):
    """The wgmma GEMM for per-row FP8: per-token activation scales [M] x
    per-channel weight scales [N], applied in the epilogue."""
    family: ClassVar[str] = "w8a8_row"
    scale_mode: ClassVar[str] = "kScaleRow"

    def constraints(self) -> Dict[str, Any]:
        return {"n_multiple": 8, "k_multiple": BLOCK_K, "tile_m": self.bm, "tile_n": self.bn}


@dataclasses.dataclass(frozen=True, eq=False)
class W8A8TensorSpec(W8A8RowSpec):
    """The wgmma GEMM for per-tensor FP8: one output scale (activation x
    weight) read through a device pointer, so no host sync anywhere."""
    family: ClassVar[str] = "w8a8_tensor"
    scale_mode: ClassVar[str] = "kScaleTensor"


FAMILIES: Dict[str, Type[KernelSpec]] = {
    cls.family: cls for cls in (QuantGroupSpec, QuantSiluMulSpec, ScaleMnMajorSpec, Fp8DequantSpec, QuantTensorSpec,
                                QuantTokenSpec, Nvfp4ToFp8Spec, W8A8MmaSpec, W8A8MmaRowSpec, W8A8MmaTensorSpec,
                                W8A8WgmmaSpec, W8A8RowSpec, W8A8TensorSpec, W8A8CutlassSpec, W8A16GemmSpec,
                                W8A16GemvSpec)
}

# HARDWARE.toml spells thread counts `threads`; the dataclass field says what it counts.
_FIELD_ALIASES = {"threads": "threads_per_block"}
# Filled from HARDWARE.toml's top level, never listed per instance.
_INJECTED = {"cutlass_arch"}


def _specialized(arch: str, hw) -> List[KernelSpec]:
    """HARDWARE.toml [[specialize.<family>]]: a model's projection shapes, each
    built as an instance with N and K fixed at compile time from the listed
    tile configuration (the generic instances still serve every shape)."""
    specs: List[KernelSpec] = []
    for family, rows in hw.specialize.items():
        cls = FAMILIES.get(family)
        if cls is None or "fixed_n" not in {f.name for f in dataclasses.fields(cls)}:
            raise CatalogError(f"{arch}: [[specialize.{family}]]: only w8a8_wgmma instances can be specialized")
        field_names = {f.name for f in dataclasses.fields(cls)} - {"arch", "fixed_n", "fixed_k"}
        for row in rows:
            where = f"{arch}: [[specialize.{family}]] model {row.get('model', '?')!r}"
            if not isinstance(row.get("model"), str) or not row.get("shapes"):
                raise CatalogError(f"{where}: needs `model` (a name) and `shapes` (['NxK', ...])")
            kwargs = {k: v for k, v in row.items() if k not in ("model", "shapes")}
            unknown = set(kwargs) - field_names
            if unknown:
                raise CatalogError(f"{where}: unknown keys {sorted(unknown)}")
            for text in row["shapes"]:
                try:
                    (n, k), = parse_shapes(str(text))
                except ValueError as e:
                    raise CatalogError(f"{where}: {e} (a shape is 'NxK', e.g. '7168x2048')") from None
                spec = cls(arch=arch, fixed_n=n, fixed_k=k, **kwargs)
                spec.check(hw)
                specs.append(spec)
    return specs


def specs_for(arch: str) -> List[KernelSpec]:
    """Every instance HARDWARE.toml lists for `arch`, checked, in a stable order."""
    hw = load_hardware(arch)
    specs: List[KernelSpec] = []
    for family, rows in hw.instances.items():
        cls = FAMILIES.get(family)
        if cls is None:
            raise CatalogError(f"{arch}: HARDWARE.toml lists unknown family {family!r}; "
                               f"known: {', '.join(FAMILIES)}")
        field_names = {f.name for f in dataclasses.fields(cls)} - {"arch"}
        for row in rows:
            kwargs = {_FIELD_ALIASES.get(k, k): v for k, v in row.items()}
            unknown = set(kwargs) - field_names - _INJECTED
            if "cutlass_arch" in field_names:
                if hw.cutlass_arch is None:
                    raise CatalogError(f"{arch}: {family} needs `cutlass_arch` in HARDWARE.toml")
                kwargs["cutlass_arch"] = hw.cutlass_arch
            if unknown:
                raise CatalogError(f"{arch}: {family} instance has unknown keys {sorted(unknown)}")
            spec = cls(arch=arch, **kwargs)
            spec.check(hw)
            specs.append(spec)
    specs += _specialized(arch, hw)
    names = [s.name for s in specs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise CatalogError(f"{arch}: instances listed twice: {dupes}")
    return sorted(specs, key=lambda s: (s.family, s.name))


def find_spec(name: str, arches=None) -> KernelSpec:
    from runtime.paths import ARCHES

    for arch in arches or ARCHES:
        for spec in specs_for(arch):
            if spec.name == name:
                return spec
    raise CatalogError(f"no kernel named {name!r}; `python -m gen list --arch all` lists them")
