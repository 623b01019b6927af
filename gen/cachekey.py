"""The content hash that decides whether a cubin is current.

It covers everything that can change the bytes nvcc produces: the rendered
source, every project header it includes (transitively), the nvcc version and path, the
flags, the arch and the generator version. The key is passed to nvcc as a
define, so ninja (which rebuilds when a command line changes) rebuilds exactly
when the key moves, and header edits are also tracked by nvcc depfiles.
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Dict, Iterable, List, Sequence

from gen import GENERATOR_VERSION
from gen.toolchain import Toolchain
from runtime.paths import TEMPLATES_DIR

INCLUDE_DIR = TEMPLATES_DIR / "include"


_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def included_headers(source: str, include_dir: Path) -> List[Path]:
    """The project headers `source` reaches through #include "...", followed
    transitively; system and CUDA headers are covered by the nvcc identity."""
    seen: Dict[Path, None] = {}
    stack = [source]
    while stack:
        for name in _INCLUDE.findall(stack.pop()):
            path = include_dir / name
            if path.is_file() and path not in seen:
                seen[path] = None
                stack.append(path.read_text())
    return sorted(seen)


def headers_digest(source: str, include_dir: Path = INCLUDE_DIR) -> str:
    h = hashlib.sha256()
    for path in included_headers(source, include_dir):
        h.update(str(path.relative_to(include_dir)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def cache_key(*, source: str, arch: str, flags: Sequence[str], tc: Toolchain,
              include_dir: Path = INCLUDE_DIR, extra: Iterable[str] = ()) -> str:
    h = hashlib.sha256()
    for part in (GENERATOR_VERSION, arch, tc.version, str(tc.nvcc), *flags, headers_digest(source, include_dir), *extra,
                 source):
        h.update(part.encode() + b"\0")
    return h.hexdigest()
