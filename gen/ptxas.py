"""Parses `ptxas -v` output and enforces the build rules on it."""
from __future__ import annotations

import dataclasses
import re
from typing import List

_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_WARN = re.compile(r"ptxas warning\s*:\s*(.*)")
# Reported as mere "info" but as costly as the warnings: wgmma serialized
# (C7514 and kin: "Potential Performance Loss") or a wgmma wait the compiler
# had to inject (C7517) because an accumulator may be read while in flight.
_LOSS = re.compile(r"ptxas info\s*:\s*(.*(?:Potential Performance Loss|\(C7517\)).*)")
# The C++ front end's warnings land in the same log (e.g. #179-D, a modulo by
# a template argument that may be zero): none are expected either.
_FRONTEND = re.compile(r"(warning #\d+-D: .*)")


@dataclasses.dataclass(frozen=True)
class Resources:
    registers: int
    static_smem: int
    stack_bytes: int
    spill_bytes: int
    warnings: List[str]
    losses: List[str] = dataclasses.field(default_factory=list)
    frontend: List[str] = dataclasses.field(default_factory=list)

    def violations(self) -> List[str]:
        """Build-breaking findings: local memory (stack or spills) and any
        ptxas warning (C7510 serialized wgmma and C7508 ignored setmaxnreg
        are real performance losses; the rest we have not seen and want to)."""
        found = []
        if self.spill_bytes:
            found.append(f"{self.spill_bytes} bytes of register spills")
        if self.stack_bytes:
            found.append(f"{self.stack_bytes} bytes of stack frame (local memory)")
        found.extend(f"ptxas warning: {w}" for w in self.warnings)
        found.extend(f"ptxas performance loss: {w}" for w in self.losses)
        found.extend(f"compiler {w}" for w in self.frontend)
        return found


def parse(log: str) -> Resources:
    """Every function report in the log counts: registers are the largest,
    spills, stack and shared memory the worst seen (a cubin may hold more
    than the entry function)."""
    used = [int(m.group(1)) for m in _USED.finditer(log)]
    frames = [tuple(int(g) for g in m.groups()) for m in _FRAME.finditer(log)]
    if not used or not frames:
        raise ValueError("no `ptxas -v` resource report in the compile log")
    smem = [int(m.group(1)) for m in _SMEM.finditer(log)]
    return Resources(
        registers=max(used),
        static_smem=max(smem, default=0),
        stack_bytes=max(f[0] for f in frames),
        spill_bytes=max(f[1] + f[2] for f in frames),
        warnings=[m.group(1).strip() for m in _WARN.finditer(log)],
        losses=[m.group(1).strip() for m in _LOSS.finditer(log)],
        frontend=[m.group(1).strip() for m in _FRONTEND.finditer(log)],
    )
