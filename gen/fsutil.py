"""Atomic, change-only writes: a reader never sees half a file, and an
unchanged output keeps its mtime so nothing downstream rebuilds."""
from __future__ import annotations

import json
import lzma
import os
import stat
import tempfile
from pathlib import Path


def write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        # mkstemp makes 0600 files; keep the replaced file's mode, else the umask's default
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_if_different(path: Path, text: str) -> bool:
    """Returns True when the file was (re)written."""
    data = text.encode()
    try:
        if path.read_bytes() == data:
            return False
    except FileNotFoundError:
        pass
    write_atomic(path, data)
    return True


def record_text(doc: dict) -> str:
    """A measurement record as JSON with one row per line: each top-level key
    on its line, and a list of objects (the rows) one compact object per
    line. Every field on its own line (json indent=1) made the H200's
    records 53 MB against 42, and the device copies the working tree,
    records included, under a 64 MiB limit; one row per line still diffs
    row by row."""
    def value(v) -> str:
        if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            return "[\n" + ",\n".join("  " + json.dumps(x, separators=(",", ":")) for x in v) + "\n ]"
        return json.dumps(v)

    return "{\n" + ",\n".join(f" {json.dumps(k)}: {value(v)}" for k, v in doc.items()) + "\n}\n"


# Records are kept compressed (gen archive; all but the acceptance pair):
# xz takes the committed records to about a fourteenth, and the device
# copies the working tree under a 64 MiB limit.
ARCHIVED_SUFFIX = ".json.xz"


def archived_bytes(doc: dict) -> bytes:
    """A record as its archived file holds it: record_text, xz-compressed."""
    return lzma.compress(record_text(doc).encode(), preset=9)


def read_record(path) -> dict:
    """A measurement record from its JSON file, or from its archived
    (`.json.xz`) one. Raises OSError, lzma.LZMAError or ValueError (bad
    JSON) for a file that is not one."""
    data = Path(path).read_bytes()
    if str(path).endswith(ARCHIVED_SUFFIX):
        data = lzma.decompress(data)
    return json.loads(data)
