"""Parses `ptxas -v` output and enforces the build rules on it."""
from __future__ import annotations

import dataclasses
import re
from typing import List

_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_WARN = re.compile(r"ptxas warning\s*:\s*(.*)")


@dataclasses.dataclass(frozen=True)
class Resources:
    registers: int
    static_smem: int
    stack_bytes: int
    spill_bytes: int
    warnings: List[str]

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
        return found


def parse(log: str) -> Resources:
    used = _USED.search(log)
    frame = _FRAME.search(log)
    if not used or not frame:
        raise ValueError("no `ptxas -v` resource report in the compile log")
    smem = _SMEM.search(log)
    return Resources(
        registers=int(used.group(1)),
        static_smem=int(smem.group(1)) if smem else 0,
        stack_bytes=int(frame.group(1)),
        spill_bytes=int(frame.group(2)) + int(frame.group(3)),
        warnings=[m.group(1).strip() for m in _WARN.finditer(log)],
    )
