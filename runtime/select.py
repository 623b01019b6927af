"""The selection rule of the dense-FFN prefill arm, as pure functions.

A projection [n, k] at m tokens takes W8A8 only when every clause of
DESIGN.md's table holds; each clause carries its reason, so the runtime, the
route log and `python -m gen explain` can all say which one failed.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Dict, List, Optional, Tuple

from runtime.dispatch import UNSPLIT, choose, fits_shape, lookup
from runtime.splitk import unsplit
from runtime.env import Knobs
from runtime.errors import ValidationError
from runtime.manifest import KernelEntry
from runtime.validate import INT32_MAX

BLOCK = 128
GEMV_MAX_M = 4

ARM_W8A8_FAST = "W8A8 fast"
ARM_W8A8_IN_TREE = "W8A8 in-tree"
ARM_W8A16_GEMM = "W8A16 GEMM"
ARM_W8A16_GEMV = "W8A16 GEMV"
ARM_W8A8_TENSOR = "W8A8 per-tensor"
ARM_W8A8_ROW = "W8A8 per-row"
W8A8_ARMS = (ARM_W8A8_FAST, ARM_W8A8_IN_TREE, ARM_W8A8_TENSOR, ARM_W8A8_ROW)
# Single-scale weight formats: their arm, GEMM families (wgmma first, then the
# in-tree mma.sync one of the arches without wgmma) and activation quantizer.
SCALAR_ROUTES = {"tensor": (ARM_W8A8_TENSOR, ("w8a8_tensor", "w8a8_mma_tensor"), "quant_tensor"),
                 "row": (ARM_W8A8_ROW, ("w8a8_row", "w8a8_mma_row"), "quant_token")}

# sm_90a fast families (wgmma, CUTLASS), preferred in this order when built.
FAST_FAMILIES = ("w8a8_wgmma", "w8a8_cutlass")
# gen tune's table across the fast families: the fastest instance of either.
FAST_TABLE = "w8a8_fast"
IN_TREE_FAMILY = "w8a8_mma"
# Arches whose e4m3 mma.sync is emulated (F2FP + HMMA; DESIGN.md, checked in SASS).
EMULATED_MMA_ARCHES = ("sm_90a", "sm_100a")
# Every routed family, longest name first (a name can start with another's).
ROUTED_FAMILIES = tuple(sorted({*FAST_FAMILIES, IN_TREE_FAMILY, "w8a16_gemv", "w8a16_gemm",
                                *(f for _, fams, _ in SCALAR_ROUTES.values() for f in fams)},
                               key=len, reverse=True))

FORMATS = {"block": "BlockScaled128", "row": "PerRow", "tensor": "PerTensor"}

LEVER_WIDENING = "w8a8_prefill_max_m_widening"
LEVER_NARROWING = "w8a8_prefill_max_m_narrowing"

NUMERICS = {
    ARM_W8A8_FAST: "e4m3 x e4m3, 1x128 activation / 128x128 weight scales, FP32 promotion per 128 K, bf16 out",
    ARM_W8A8_IN_TREE: "e4m3 x e4m3, 1x128 activation / 128x128 weight scales, FP32 promotion per 128 K, bf16 out",
    ARM_W8A16_GEMM: "bf16 x e4m3 (128x128 weight scales), FP32 accumulation, bf16 out",
    ARM_W8A16_GEMV: "bf16 x e4m3 (128x128 weight scales), FP32 accumulation, bf16 out, weights streamed once",
    ARM_W8A8_TENSOR: "e4m3 x e4m3, one activation scale per tensor (device amax, no host sync) x the weight's "
                     "scalar, 128-K partials added in FP32, scaled once in the epilogue, bf16 out",
    ARM_W8A8_ROW: "e4m3 x e4m3, per-token activation x per-channel weight scales, 128-K partials added in FP32, "
                  "scaled once in the epilogue, bf16 out",
}


@dataclasses.dataclass(frozen=True)
class Clause:
    name: str
    holds: bool
    reason: str
    ledger: str  # the route-ledger counter a failure of this clause feeds


@dataclasses.dataclass(frozen=True)
class Levers:
    """W8A8 ceilings from HARDWARE.toml [defaults]; None = no cap."""
    max_m_widening: Optional[int] = None
    max_m_narrowing: Optional[int] = None

    @classmethod
    def from_defaults(cls, defaults: Dict) -> "Levers":
        return cls(defaults.get(LEVER_WIDENING), defaults.get(LEVER_NARROWING))

    def lever_for(self, n: int, k: int) -> Tuple[str, Optional[int]]:
        return (LEVER_WIDENING, self.max_m_widening) if n > k else (LEVER_NARROWING, self.max_m_narrowing)


@dataclasses.dataclass(frozen=True)
class Availability:
    """What is loaded and allocated (the runtime knows; explain assumes)."""
    quantizer: bool
    scratch: bool
    note: str = ""
    # Whether the workspace holds a split-K instance's counters and partial
    # tiles at (m, n) (entry, m, n); None: no workspace made with max_n (explain
    # assumes one exists, as it assumes the scratch).
    split_room: Optional[Callable[[KernelEntry, int, int], bool]] = None


@dataclasses.dataclass(frozen=True)
class Shard:
    n: int
    k: int
    tp: int
    parallel: str

    def describe(self) -> str:
        if self.tp == 1:
            return ""
        dim = "n" if self.parallel == "column" else "k"
        return f"{self.parallel}-parallel shard of tp={self.tp}: {dim}/{self.tp}"


def shard(n: int, k: int, tp: int = 1, parallel: str = "column") -> Shard:
    """Column-parallel splits n, row-parallel splits k, across tp ranks."""
    if tp < 1:
        raise ValidationError(f"tp must be >= 1, got {tp}")
    if n < 1 or k < 1:
        raise ValidationError(f"n and k must be >= 1, got n={n}, k={k}")
    if parallel not in ("column", "row"):
        raise ValidationError(f"parallel must be 'column' or 'row', got {parallel!r}")
    full = n if parallel == "column" else k
    if full % tp:
        raise ValidationError(f"{'n' if parallel == 'column' else 'k'}={full} does not split over tp={tp}")
    return Shard(n // tp if parallel == "column" else n, k // tp if parallel == "row" else k, tp, parallel)


@dataclasses.dataclass(frozen=True)
class Decision:
    m: int
    shard: Shard
    weight_format: str
    arm: str
    instance: Optional[str]
    clauses: Tuple[Clause, ...]
    fast_clauses: Tuple[Clause, ...]
    notes: Tuple[str, ...] = ()

    @property
    def w8a8(self) -> bool:
        return self.arm in W8A8_ARMS

    @property
    def family(self) -> Optional[str]:
        """The kernel family of `instance` (an instance's name starts with its family)."""
        if self.instance is None:
            return None
        return next(f for f in ROUTED_FAMILIES if self.instance.startswith(f + "_"))

    @property
    def failed(self) -> Optional[Clause]:
        return next((c for c in self.clauses if not c.holds), None)

    def explain(self) -> str:
        s = self.shard
        lines = [f"projection n={s.n} k={s.k} at m={self.m}, weight {FORMATS[self.weight_format]}"
                 + (f" ({s.describe()})" if s.tp > 1 else "")]
        lines.append("clauses (W8A8 needs every one):")
        lines += [f"  [{'pass' if c.holds else 'FAIL'}] {c.name}: {c.reason}" for c in self.clauses]
        if self.fast_clauses:
            lines.append("fast W8A8 instance:")
            lines += [f"  [{'pass' if c.holds else 'no'}] {c.name}: {c.reason}" for c in self.fast_clauses]
        lines.append(f"arm: {self.arm}")
        lines.append(f"instance: {self.instance or 'none'}")
        lines.append(f"numerics: {NUMERICS[self.arm]}")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines) + "\n"


def _kill_switch(knobs: Knobs) -> Clause:
    return Clause("kill_switch", not knobs.w8a16_only,
                  "FP8GEN_W8A16_ONLY is absent" if not knobs.w8a16_only else
                  "FP8GEN_W8A16_ONLY is set (presence means on, whatever the value): operator escape hatch",
                  "gate_off")


def _clauses(m: int, s: Shard, weight_format: str, knobs: Knobs, levers: Levers, available: Availability,
             w8a8_built: bool, arch: str) -> List[Clause]:
    shard_note = f" ({s.describe()})" if s.tp > 1 else ""
    lever_name, cap = levers.lever_for(s.n, s.k)
    kind = "widening (n > k)" if s.n > s.k else "narrowing (n <= k)"
    loaded = available.quantizer and w8a8_built and available.scratch
    missing = [what for what, ok in (("the quantizer", available.quantizer),
                                     (f"a W8A8 GEMM for {arch}", w8a8_built),
                                     ("the scratch workspace", available.scratch)) if not ok]
    return [
        _kill_switch(knobs),
        Clause("m_above_gemv", m > GEMV_MAX_M,
               f"m={m} > {GEMV_MAX_M}" if m > GEMV_MAX_M else
               f"m={m} <= {GEMV_MAX_M}: stays on the batch GEMV, which streams each weight once", "small_m"),
        Clause("m_within_lever", cap is None or m <= cap,
               f"no {lever_name} in HARDWARE.toml [defaults] for {kind} rows: no cap" if cap is None else
               (f"m={m} <= {lever_name}={cap} ({kind})" if m <= cap else
                f"m={m} > {lever_name}={cap} ({kind}): W8A16 is faster past the measured crossover"),
               "above_max_m"),
        Clause("block_scaled_enabled", not knobs.fp8_single_scale,
               "FP8GEN_FP8_SINGLE_SCALE is absent" if not knobs.fp8_single_scale else
               "FP8GEN_FP8_SINGLE_SCALE is set: block-scaled prefill disabled", "gate_off"),
        Clause("weight_block_scaled", weight_format == "block",
               "weight is BlockScaled128" if weight_format == "block" else
               f"weight is {FORMATS[weight_format]}: its scale read as [N/128, K/128] would be in-bounds garbage",
               "bad_scale"),
        Clause("k_multiple_of_128", s.k % BLOCK == 0,
               f"k={s.k}{shard_note} is a multiple of 128" if s.k % BLOCK == 0 else
               f"k={s.k}{shard_note} is not a multiple of 128: one activation scale per 128 K", "bad_shape"),
        Clause("n_multiple_of_128", s.n % BLOCK == 0,
               f"n={s.n}{shard_note} is a multiple of 128" if s.n % BLOCK == 0 else
               f"n={s.n}{shard_note} is not a multiple of 128: the weight-scale grid is 128 rows", "bad_shape"),
        Clause("kernels_loaded", loaded,
               ("quantizer, W8A8 GEMM and scratch are present" if loaded else
                "missing " + ", ".join(missing) + ": a null handle or buffer is a gate, not a fault")
               + (f" ({available.note})" if available.note else ""), "no_operand"),
    ]


def _fast_clauses(m: int, s: Shard, entries: Dict[str, List[KernelEntry]], arch: str,
                  out_rows: Optional[int], dispatch: Dict,
                  split_room: Optional[Callable[[KernelEntry, int, int], bool]] = None
                  ) -> Tuple[List[Clause], Optional[KernelEntry]]:
    """The fast instance's own constraints, from its manifest entry."""
    # (a shape-specialized instance is a candidate only for its own shape)
    candidates = [e for fam in FAST_FAMILIES for e in entries.get(fam, []) if fits_shape(e, s.n, s.k)]
    # the cross-family table's pick first (else each family's table pick, in
    # FAST_FAMILIES order), then the rest in manifest order
    fastest = lookup(dispatch, FAST_TABLE, m, s.n, s.k)
    preferred = ({fastest} if any(e.name == fastest for e in candidates) else
                 {choose(entries[fam], dispatch, m, s.n, s.k).name for fam in FAST_FAMILIES if entries.get(fam)})
    # next, for a caller whose workspace has no room for a split-K pick, the
    # fastest measured among the instances that need none (the table's
    # unsplit twin), then each family's tile-rule pick among those
    measured = lookup(dispatch, FAST_TABLE + UNSPLIT, m, s.n, s.k)
    fallback = {choose(unsplit(entries[fam]), {}, m, s.n, s.k).name
                for fam in FAST_FAMILIES if entries.get(fam)}
    candidates.sort(key=lambda e: (e.name not in preferred, e.name != measured, e.name not in fallback))
    if not candidates:
        return [Clause("fast_instance_built", False,
                       f"no {' / '.join(FAST_FAMILIES)} instance is built for {arch}", "")], None
    clauses: List[Clause] = []
    for e in candidates:
        c = e.constraints
        m_pad = -(-m // c.get("m_align", 1)) * c.get("m_align", 1)
        checks = [
            ("scale_adapter", not c.get("scale_mn_major") or bool(entries.get("scale_mn_major")),
             "needs MN-major activation scales and scale_mn_major is built"),
            ("output_room", not c.get("writes_padded_m") or out_rows is None or out_rows >= m_pad,
             f"writes {m_pad} rows (M padded to {c.get('m_align', 1)}); output has room for {out_rows}"),
            ("n_multiple", s.n % c.get("n_multiple", 1) == 0, f"n % {c.get('n_multiple', 1)} == 0"),
            ("split_k_room", c.get("k_slices", 1) == 1 or split_room is None or split_room(e, m, s.n),
             f"splits K across CTAs: the workspace holds its tile counters and partial tiles at m={m}, n={s.n} "
             "(rt.workspace(..., max_n=))"),
        ]
        ok = all(holds for _, holds, _ in checks)
        failed = [f"{name}: {why}" for name, holds, why in checks if not holds]
        clauses.append(Clause(e.name, ok, "all constraints hold" if ok else "; ".join(failed), ""))
        if ok:
            return clauses, e
    return clauses, None


def decide(m: int, n: int, k: int, *, weight_format: str, knobs: Knobs, levers: Levers,
           available: Availability, entries: Dict[str, List[KernelEntry]], arch: str, tp: int = 1,
           parallel: str = "column", out_rows: Optional[int] = None,
           dispatch: Optional[Dict[str, List[Dict]]] = None) -> Decision:
    dispatch = dispatch or {}
    if weight_format not in FORMATS:
        raise ValidationError(f"weight format must be one of {sorted(FORMATS)}, got {weight_format!r}")
    if not 1 <= m <= INT32_MAX:
        # (the kernels take M as a 32-bit int)
        raise ValidationError(f"m must be in 1..{INT32_MAX}, got {m}")
    s = shard(n, k, tp, parallel)
    if weight_format in SCALAR_ROUTES:
        return _scalar_decision(m, s, weight_format, knobs, available, entries, arch, dispatch)
    w8a8_built = bool(entries.get(IN_TREE_FAMILY)) or any(entries.get(f) for f in FAST_FAMILIES)
    clauses = _clauses(m, s, weight_format, knobs, levers, available, w8a8_built, arch)
    notes: List[str] = []
    fast_clauses: List[Clause] = []
    if all(c.holds for c in clauses):
        fast_clauses, fast = _fast_clauses(m, s, entries, arch, out_rows, dispatch, available.split_room)
        if fast is not None:
            return Decision(m, s, weight_format, ARM_W8A8_FAST, fast.name, tuple(clauses), tuple(fast_clauses))
        if entries.get(IN_TREE_FAMILY):
            inst = choose(entries[IN_TREE_FAMILY], dispatch, m, s.n, s.k)
            if arch in EMULATED_MMA_ARCHES:
                notes.append(f"w8a8_mma on {arch} runs e4m3 mma.sync through FP16 HMMA (emulated): "
                             "a correctness baseline, not the fast path")
            return Decision(m, s, weight_format, ARM_W8A8_IN_TREE, inst.name, tuple(clauses),
                            tuple(fast_clauses), tuple(notes))
    arm = ARM_W8A16_GEMV if m <= GEMV_MAX_M else ARM_W8A16_GEMM
    family = "w8a16_gemv" if arm == ARM_W8A16_GEMV else "w8a16_gemm"
    instance = None
    if weight_format != "block":
        notes.append(f"no W8A16 kernel takes {FORMATS[weight_format]} weights yet")
    elif s.k % BLOCK or s.n % 16:
        notes.append(f"the W8A16 kernels need k % 128 == 0 and n % 16 == 0 too (k={s.k}, n={s.n})")
    elif entries.get(family):
        instance = choose(entries[family], dispatch, m, s.n, s.k).name
    else:
        notes.append(f"no {family} kernel is built for {arch}")
    return Decision(m, s, weight_format, arm, instance, tuple(clauses), tuple(fast_clauses), tuple(notes))


def _scalar_decision(m: int, s: Shard, weight_format: str, knobs: Knobs, available: Availability,
                     entries: Dict[str, List[KernelEntry]], arch: str, dispatch: Dict) -> Decision:
    """PerTensor / PerRow weights: their own W8A8 arm (no W8A16 kernel reads
    these scales, so a failed clause leaves no route, and says why)."""
    arm, families, quantizer = SCALAR_ROUTES[weight_format]
    family = next((f for f in families if entries.get(f)), families[0])
    missing = [f for f in (family, quantizer) if not entries.get(f)]
    n_multiple = entries[family][0].constraints.get("n_multiple", 8) if entries.get(family) else 8
    shard_note = f" ({s.describe()})" if s.tp > 1 else ""
    clauses = [
        _kill_switch(knobs),
        Clause("k_multiple_of_128", s.k % BLOCK == 0,
               f"k={s.k}{shard_note} is a multiple of 128" if s.k % BLOCK == 0 else
               f"k={s.k}{shard_note} is not a multiple of 128: the GEMM walks K in 128-wide blocks", "bad_shape"),
        Clause("n_multiple", s.n % n_multiple == 0,
               f"n={s.n}{shard_note} is a multiple of {n_multiple}" if s.n % n_multiple == 0 else
               f"n={s.n}{shard_note} is not a multiple of {n_multiple}, which {family}'s tiles need",
               "bad_shape"),
        Clause("kernels_loaded", not missing and available.scratch,
               (f"{quantizer}, {family} and scratch are present" if not missing and available.scratch else
                "missing " + ", ".join(missing + ([] if available.scratch else ["scratch"])) +
                ": a null handle or buffer is a gate, not a fault")
               + (f" ({available.note})" if available.note else ""), "no_operand"),
    ]
    if all(c.holds for c in clauses):
        inst = choose(entries[family], dispatch, m, s.n, s.k).name
        notes = ((f"{family} on {arch} runs e4m3 mma.sync through FP16 HMMA (emulated): a correctness path",)
                 if family.startswith("w8a8_mma_") and arch in EMULATED_MMA_ARCHES else ())
        return Decision(m, s, weight_format, arm, inst, tuple(clauses), (), notes)
    note = f"no W8A16 kernel takes {FORMATS[weight_format]} weights: this projection has no route on {arch}"
    return Decision(m, s, weight_format, ARM_W8A16_GEMV if m <= GEMV_MAX_M else ARM_W8A16_GEMM, None,
                    tuple(clauses), (), (note,))
