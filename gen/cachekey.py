"""The content hash that decides whether a cubin is current.

It covers everything that can change the bytes nvcc produces: the rendered
source, every header under templates/include, the nvcc version and path, the
flags, the arch and the generator version. The key is passed to nvcc as a
define, so ninja (which rebuilds when a command line changes) rebuilds exactly
when the key moves, and header edits are also tracked by nvcc depfiles.
"""
from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import Iterable, Sequence, Tuple

from gen import GENERATOR_VERSION
from gen.toolchain import Toolchain
from runtime.paths import TEMPLATES_DIR

INCLUDE_DIR = TEMPLATES_DIR / "include"


@functools.lru_cache(maxsize=8)
def _headers_digest(root: Path, stamp: Tuple[Tuple[str, int, int], ...]) -> str:
    h = hashlib.sha256()
    for rel, _, _ in stamp:
        h.update(rel.encode() + b"\0" + (root / rel).read_bytes() + b"\0")
    return h.hexdigest()


def headers_digest(root: Path = INCLUDE_DIR) -> str:
    files = sorted(p for p in root.rglob("*") if p.is_file())
    # The (path, size, mtime) stamp only memoizes within one process; the
    # digest itself is over content.
    stamp = tuple((str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    return _headers_digest(root, stamp)


def cache_key(*, source: str, arch: str, flags: Sequence[str], tc: Toolchain,
              include_dir: Path = INCLUDE_DIR, extra: Iterable[str] = ()) -> str:
    h = hashlib.sha256()
    for part in (GENERATOR_VERSION, arch, tc.version, str(tc.nvcc), *flags, headers_digest(include_dir), *extra,
                 source):
        h.update(part.encode() + b"\0")
    return h.hexdigest()
