"""The manifest: gen writes it, the loader reads it. One schema, one place.

emitted/<arch>/manifest.json = {"schema": 1, "arch", "compute_capability",
"toolchain": {...},
"kernels": [entry, ...]}; an entry records the family, name, symbol, the
parameter ABI, launch resources (threads, cluster, smem, registers, spills),
the instance's constraints, the source and its sha256, the cubin and its sha256,
and whether it launches with programmatic dependent launch.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Dict, List, Tuple

from runtime.errors import LoadError

SCHEMA = 1

# ABI kinds: how the loader packs each parameter.
ABI_KINDS = ("ptr", "i32", "f32", "blob")  # blob: a Params struct the instance's host shim fills


@dataclasses.dataclass(frozen=True)
class KernelEntry:
    family: str
    name: str
    symbol: str
    abi: Tuple[Tuple[str, str], ...]  # (parameter name, kind)
    threads: int
    cluster: Tuple[int, int, int]
    static_smem: int
    dynamic_smem: int
    registers: int
    spill_bytes: int
    stack_bytes: int
    params: Dict[str, Any]      # tile parameters from HARDWARE.toml
    constraints: Dict[str, Any]  # what the runtime checks before launch
    source: str
    source_sha256: str
    cubin: str                  # relative to the build directory
    cubin_sha256: str
    shim: str = ""              # host shim library (CUTLASS instances), relative to the build directory
    shim_sha256: str = ""
    # launched with programmatic dependent launch (the kernel waits on the
    # previous grid itself before touching global memory)
    pdl: bool = False

    def to_json(self) -> Dict[str, Any]:
        d = dataclasses.asdict(self)
        d["abi"] = [list(p) for p in self.abi]
        d["cluster"] = list(self.cluster)
        return d

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "KernelEntry":
        fields = {f.name for f in dataclasses.fields(cls)}
        optional = {f.name for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}
        missing = fields - optional - d.keys()
        if missing:
            raise LoadError(f"manifest entry {d.get('name', '?')} lacks {sorted(missing)}")
        d = {k: d[k] for k in fields if k in d}
        d["abi"] = tuple((str(n), str(k)) for n, k in d["abi"])
        for _, kind in d["abi"]:
            if kind not in ABI_KINDS:
                raise LoadError(f"manifest entry {d['name']}: unknown ABI kind {kind!r}")
        d["cluster"] = tuple(d["cluster"])
        return cls(**d)


def dumps(arch: str, compute_capability: Tuple[int, int], toolchain: Dict[str, str],
          kernels: List[KernelEntry]) -> str:
    doc = {"schema": SCHEMA, "arch": arch, "compute_capability": list(compute_capability), "toolchain": toolchain,
           "kernels": [k.to_json() for k in sorted(kernels, key=lambda k: (k.family, k.name))]}
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def load(path: Path) -> Tuple[Dict[str, Any], List[KernelEntry]]:
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise LoadError(f"no manifest at {path}; run `python -m gen build --arch {path.parent.name}`") from None
    except json.JSONDecodeError as e:
        raise LoadError(f"manifest {path} is not JSON: {e}") from None
    if doc.get("schema") != SCHEMA:
        raise LoadError(f"manifest {path} has schema {doc.get('schema')!r}, this runtime reads {SCHEMA}")
    return doc, [KernelEntry.from_json(k) for k in doc["kernels"]]
