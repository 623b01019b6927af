"""Superseded bench records kept compressed beside the live ones: `gen
archive` rewrites RECORD.json as RECORD.json.xz (the same text, xz'd), and
every reader of records (gen compare, merge, tune) takes either. The
records a checkout still reads are refused: those HARDWARE.toml's [tuned]
names (the dispatch table's inputs, which a test re-reads) and the
acceptance pair that issue 6's test reads through the committed tables."""
from __future__ import annotations

import lzma
from pathlib import Path
from typing import List, Set, Tuple

from gen.fsutil import ARCHIVED_SUFFIX, archived_bytes, read_record, write_atomic

ACCEPTANCE = ("bench-h200.json", "bench-h200-2.json")


def live_records(repo: Path) -> Set[Path]:
    """Every record path some arch's HARDWARE.toml [tuned] names, and each
    arch's acceptance pair, resolved."""
    from runtime.hardware import tomllib

    live: Set[Path] = set()
    for toml in sorted((repo / "hardware").glob("*/HARDWARE.toml")):
        tuned = tomllib.loads(toml.read_text()).get("tuned", {})
        live.update((repo / r).resolve() for r in tuned.get("records", []))
        live.update((toml.parent / name).resolve() for name in ACCEPTANCE)
    return live


def plan(paths: List[Path], repo: Path) -> Tuple[List[Tuple[Path, Path, bytes]], List[str]]:
    """(record, archive path, archived bytes) for each record that may be
    archived, and why each of the others may not."""
    live = live_records(repo)
    todo, refused = [], []
    for path in paths:
        if path.suffix != ".json":
            refused.append(f"{path}: not a .json record")
            continue
        target = path.with_name(path.name[: -len(".json")] + ARCHIVED_SUFFIX)
        if path.resolve() in live:
            refused.append(f"{path}: still read (HARDWARE.toml [tuned] or the acceptance pair)")
        elif target.exists():
            refused.append(f"{path}: {target.name} exists already")
        else:
            try:
                doc = read_record(path)
            except (OSError, ValueError, lzma.LZMAError) as e:
                refused.append(f"{path}: cannot read it: {e}")
                continue
            if not isinstance(doc, dict) or not isinstance(doc.get("rows"), list):
                refused.append(f"{path}: not a bench record (no rows)")
                continue
            todo.append((path, target, archived_bytes(doc)))
    return todo, refused


def apply(todo: List[Tuple[Path, Path, bytes]]) -> None:
    """Writes each archive, checks it reads back as the record on disk,
    then removes the record."""
    for path, target, data in todo:
        write_atomic(target, data)
        if read_record(target) != read_record(path):
            target.unlink()
            raise RuntimeError(f"{target} does not read back as {path}; left {path} in place")
        path.unlink()
