"""Reads hardware/<arch>/HARDWARE.toml into a typed record. The runtime reads
the selection levers from it; gen reads everything else."""
from __future__ import annotations

import dataclasses
import functools
import sys
from typing import Any, Dict, List, Optional, Tuple

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from runtime.errors import CatalogError
from runtime.paths import ARCHES, hardware_toml

_FEATURES = ("wgmma", "tma", "native_e4m3_mma_sync", "tcgen05")


@dataclasses.dataclass(frozen=True)
class Hardware:
    arch: str
    compute_capability: Tuple[int, int]
    gencode: Tuple[str, ...]
    features: Dict[str, bool]
    max_dynamic_smem: int
    instances: Dict[str, List[Dict[str, Any]]]
    defaults: Dict[str, Any]
    roofline: Dict[str, Any]
    dispatch: Dict[str, List[Dict[str, Any]]]  # family -> measured rules (gen tune)
    # family -> [{model, shapes, <instance keys>}]: shape-specialized instances
    specialize: Dict[str, List[Dict[str, Any]]] = dataclasses.field(default_factory=dict)
    cutlass_arch: Optional[int] = None  # CUTLASS's arch tag for this target's collectives
    # peers' published figures the bench summary compares with ([published])
    published: Dict[str, Any] = dataclasses.field(default_factory=dict)
    # gen tune's model between measured M ([wave_model]: sm_count, call_cost_us)
    wave_model: Dict[str, Any] = dataclasses.field(default_factory=dict)
    # gen bench's settings measured on this arch's GPU ([bench]: rest_s)
    bench: Dict[str, Any] = dataclasses.field(default_factory=dict)
    # table -> [{shape_class, m, us: {instance: us per round-block}}] (gen tune):
    # how the runtime ranks instances for a shape with no rule of its own
    rates: Dict[str, List[Dict[str, Any]]] = dataclasses.field(default_factory=dict)


def load_hardware(arch: str) -> Hardware:
    if arch not in ARCHES:
        raise CatalogError(f"unknown arch {arch!r}; known: {', '.join(ARCHES)}")
    path = hardware_toml(arch)
    try:
        doc = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise CatalogError(f"{path} is missing") from None
    except tomllib.TOMLDecodeError as e:
        raise CatalogError(f"{path}: {e}") from None
    if doc.get("arch") != arch:
        raise CatalogError(f"{path} declares arch {doc.get('arch')!r}, expected {arch!r}")
    features = doc.get("features", {})
    missing = [f for f in _FEATURES if not isinstance(features.get(f), bool)]
    if missing:
        raise CatalogError(f"{path}: [features] needs booleans for {missing}")
    try:
        return Hardware(
            arch=arch,
            compute_capability=tuple(doc["compute_capability"]),
            gencode=tuple(doc["gencode"]),
            features=dict(features),
            max_dynamic_smem=int(doc["limits"]["max_dynamic_smem_per_block"]),
            instances={k: list(v) for k, v in doc.get("instances", {}).items()},
            defaults=dict(doc.get("defaults", {})),
            roofline=dict(doc.get("roofline", {})),
            dispatch={k: list(v) for k, v in doc.get("dispatch", {}).items()},
            cutlass_arch=doc.get("cutlass_arch"),
            specialize={k: list(v) for k, v in doc.get("specialize", {}).items()},
            published=dict(doc.get("published", {})),
            wave_model=dict(doc.get("wave_model", {})),
            bench=dict(doc.get("bench", {})),
            rates={k: list(v) for k, v in doc.get("rates", {}).items()},
        )
    except KeyError as e:
        raise CatalogError(f"{path}: missing key {e}") from None


@functools.lru_cache(maxsize=None)
def cached_hardware(arch: str) -> Hardware:
    """Read once per process (the runtime's selection rule asks per call)."""
    return load_hardware(arch)
