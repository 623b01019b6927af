"""Bench records kept compressed: `gen archive` rewrites RECORD.json as
RECORD.json.xz (the same text, xz'd), and every reader of records (gen
compare, merge, tune, and the committed-table test) takes either. A record
its arch's HARDWARE.toml names (in [tuned], the dispatch table's inputs, or
in a comment) is named there as the archive afterwards. The acceptance pair
that issue 6 names (bench-h200.json, bench-h200-2.json) is refused: it
stays a plain JSON file at the path the issue gives."""
from __future__ import annotations

import lzma
import re
from pathlib import Path
from typing import Dict, List, Set, Tuple

from gen.bench.grid import validate_record
from gen.fsutil import ARCHIVED_SUFFIX, archived_bytes, read_record, write_atomic

ACCEPTANCE = ("bench-h200.json", "bench-h200-2.json")


def acceptance_records(repo: Path) -> Set[Path]:
    """Each arch's acceptance pair, resolved."""
    return {(toml.parent / name).resolve() for toml in (repo / "hardware").glob("*/HARDWARE.toml")
            for name in ACCEPTANCE}


def plan(paths: List[Path], repo: Path) -> Tuple[List[Tuple[Path, Path, bytes]], List[str]]:
    """(record, archive path, archived bytes) for each record that may be
    archived, and why each of the others may not."""
    kept = acceptance_records(repo)
    todo, refused, seen = [], [], set()
    for path in paths:
        if path.resolve() in seen:
            refused.append(f"{path}: named twice")
            continue
        seen.add(path.resolve())
        if path.suffix != ".json":
            refused.append(f"{path}: not a .json record")
            continue
        target = path.with_name(path.name[: -len(".json")] + ARCHIVED_SUFFIX)
        if path.resolve() in kept:
            refused.append(f"{path}: the acceptance pair stays plain JSON")
        elif target.exists():
            refused.append(f"{path}: {target.name} exists already")
        else:
            try:
                doc = read_record(path)
            except (OSError, ValueError, lzma.LZMAError) as e:
                refused.append(f"{path}: cannot read it: {e}")
                continue
            try:
                validate_record(doc)
            except ValueError as e:
                refused.append(f"{path}: not a bench record: {e}")
                continue
            todo.append((path, target, archived_bytes(doc)))
    return todo, refused


def _reference(name: str) -> "re.Pattern[str]":
    """RECORD.json as a word of text (a path ending in it, or the bare name),
    not already followed by .xz."""
    return re.compile(r"(?<![\w.-])" + re.escape(name) + r"(?!\.xz)(?![\w-])")


def renamed_references(text: str, names: List[str]) -> Tuple[str, int]:
    """`text` with each of these record file names (RECORD.json) followed
    by .xz wherever it names one, and how many were rewritten."""
    count = 0
    for name in names:
        text, n = _reference(name).subn(name + ".xz", text)
        count += n
    return text, count


def toml_rewrites(todo: List[Tuple[Path, Path, bytes]]) -> Dict[Path, Tuple[str, int]]:
    """For each HARDWARE.toml beside records to archive that names them:
    its text naming the archives instead, and how many references moved."""
    names: Dict[Path, List[str]] = {}
    for path, _, _ in todo:
        toml = path.parent / "HARDWARE.toml"
        if toml.exists():
            names.setdefault(toml, []).append(path.name)
    found = {}
    for toml, beside in names.items():
        text, count = renamed_references(toml.read_text(), beside)
        if count:
            found[toml] = (text, count)
    return found


def apply(todo: List[Tuple[Path, Path, bytes]]) -> Dict[Path, int]:
    """Writes each archive and checks it reads back as the record on disk;
    then names the archives wherever the HARDWARE.toml beside them named
    the records (checked: it still parses, and every [tuned] record it lists
    exists); then removes the records. Returns the references rewritten
    per HARDWARE.toml."""
    from runtime.hardware import tomllib

    written = []
    try:
        for path, target, data in todo:
            write_atomic(target, data)
            written.append(target)
            if read_record(target) != read_record(path):
                raise RuntimeError(f"{target} does not read back as {path}")
        rewrites = toml_rewrites(todo)
        for toml, (text, _) in rewrites.items():
            tuned = tomllib.loads(text).get("tuned", {})
            repo = toml.parent.parent.parent
            missing = [r for r in tuned.get("records", []) if not (repo / r).exists()]
            if missing:
                raise RuntimeError(f"{toml}: [tuned] would name records that do not exist: {', '.join(missing)}")
    except Exception:
        for target in written:  # (the records are still in place)
            target.unlink(missing_ok=True)
        raise
    for toml, (text, _) in rewrites.items():
        write_atomic(toml, text.encode())
    for path, _, _ in todo:
        path.unlink()
    return {toml: count for toml, (_, count) in rewrites.items()}
