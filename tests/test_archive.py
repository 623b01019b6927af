"""gen archive (no GPU): superseded records kept compressed, and every
reader taking either form."""
import json
import subprocess
import sys

import pytest

from gen.bench import archive
from gen.fsutil import archived_bytes, read_record, record_text


def _doc(sha, points=1):
    rows = [dict(op="gemm", impl=impl, kernel=impl, M=64 * (i + 1), N=7168, K=2048, us=us * (i + 1), tflops=1.0,
                 tbps=1.0, roofline_tflops=1000.0)
            for i in range(points) for impl, us in (("w8a8_wgmma", 10.0), ("cublaslt_block", 20.0))]
    return {"gpu": "NVIDIA H200", "arch": "sm_90a", "date": "2026-12-07", "git_sha": sha, "nvcc": "13.0.88",
            "driver": "13.0", "torch": "2.11", "rows": rows}


TOML = """# the t record (bench-h200-t.json) and bench-h200-t.json.xz-like names: bench-h200-t.jsonl
[defaults]
note = "measured: hardware/sm_90a/bench-h200-t.json (git t), hardware/sm_90a/bench-h200-old.json"

[tuned]
records = ["hardware/sm_90a/bench-h200-t.json", "hardware/sm_90a/bench-h200-old-2.json"]
"""


def _repo(tmp_path):
    """A checkout with one arch whose HARDWARE.toml names two records
    ([tuned], a note, a comment), an acceptance pair, and a record no file
    names."""
    hw = tmp_path / "hardware" / "sm_90a"
    hw.mkdir(parents=True)
    (hw / "HARDWARE.toml").write_text(TOML)
    for name in ("bench-h200-t", "bench-h200", "bench-h200-2", "bench-h200-old", "bench-h200-old-2"):
        (hw / f"{name}.json").write_text(record_text(_doc(name)))
    return hw


def test_archived_record_reads_back_as_the_record(tmp_path):
    path = tmp_path / "r.json.xz"
    path.write_bytes(archived_bytes(_doc("a", points=200)))
    assert read_record(path) == _doc("a", points=200)
    assert path.stat().st_size * 5 < len(record_text(_doc("a", points=200)))
    (tmp_path / "r.json").write_text(record_text(_doc("b")))
    assert read_record(tmp_path / "r.json") == _doc("b")


def test_the_acceptance_pair_is_refused_and_the_rest_archived(tmp_path):
    """Records HARDWARE.toml names are archived and named there as the
    archives ([tuned] still lists files that exist); the acceptance pair
    is refused; a name that only starts like a record's is left alone."""
    from runtime.hardware import tomllib

    hw = _repo(tmp_path)
    names = ["bench-h200-t.json", "bench-h200.json", "bench-h200-2.json", "bench-h200-old.json", "bench-h200-old.md"]
    todo, refused = archive.plan([hw / n for n in names], tmp_path)
    assert [t[0].name for t in todo] == ["bench-h200-t.json", "bench-h200-old.json"]
    assert len(refused) == 3 and sum("acceptance pair" in r for r in refused) == 2
    assert any("not a .json record" in r for r in refused)
    assert archive.apply(todo) == {hw / "HARDWARE.toml": 4}
    assert not (hw / "bench-h200-old.json").exists() and not (hw / "bench-h200-t.json").exists()
    assert read_record(hw / "bench-h200-old.json.xz") == _doc("bench-h200-old")
    text = (hw / "HARDWARE.toml").read_text()
    assert text == """# the t record (bench-h200-t.json.xz) and bench-h200-t.json.xz-like names: bench-h200-t.jsonl
[defaults]
note = "measured: hardware/sm_90a/bench-h200-t.json.xz (git t), hardware/sm_90a/bench-h200-old.json.xz"

[tuned]
records = ["hardware/sm_90a/bench-h200-t.json.xz", "hardware/sm_90a/bench-h200-old-2.json"]
"""
    tuned = tomllib.loads(text)["tuned"]["records"]
    assert tuned == ["hardware/sm_90a/bench-h200-t.json.xz", "hardware/sm_90a/bench-h200-old-2.json"]
    assert all((tmp_path / r).exists() for r in tuned)
    # once archived, a second try is refused rather than overwriting
    (hw / "bench-h200-old.json").write_text(record_text(_doc("x")))
    _, refused = archive.plan([hw / "bench-h200-old.json"], tmp_path)
    assert refused and "exists already" in refused[0]


def test_a_failed_archive_leaves_the_records_and_the_toml_as_they_were(tmp_path, monkeypatch):
    hw = _repo(tmp_path)
    todo, _ = archive.plan([hw / "bench-h200-t.json", hw / "bench-h200-old.json"], tmp_path)
    real = archive.read_record
    monkeypatch.setattr(archive, "read_record", lambda p: {} if str(p).endswith("old.json.xz") else real(p))
    with pytest.raises(RuntimeError, match="does not read back"):
        archive.apply(todo)
    assert (hw / "HARDWARE.toml").read_text() == TOML
    assert sorted(p.name for p in hw.iterdir() if "bench-h200-t" in p.name or "old." in p.name) == [
        "bench-h200-old.json", "bench-h200-t.json"]


def test_files_that_are_not_records_are_refused(tmp_path):
    hw = _repo(tmp_path)
    (hw / "notes.json").write_text('{"a": 1}')
    (hw / "numbers.json").write_text(json.dumps(dict(_doc("n"), rows=[1, 2, 3])))
    (hw / "broken.json").write_text("{")
    todo, refused = archive.plan([hw / "notes.json", hw / "numbers.json", hw / "broken.json", hw / "missing.json"],
                                 tmp_path)
    assert not todo and len(refused) == 4
    assert "not a bench record: bench record lacks" in refused[0]
    assert "not a bench record: row 0 has fields int" in refused[1]
    assert all("cannot read it" in r for r in refused[2:])


def test_a_record_named_twice_is_refused(tmp_path):
    """(archiving it once and then again would remove the record twice)"""
    hw = _repo(tmp_path)
    todo, refused = archive.plan([hw / "bench-h200-t.json", hw / ".." / "sm_90a" / "bench-h200-t.json"], tmp_path)
    assert [t[0].name for t in todo] == ["bench-h200-t.json"] and len(refused) == 1 and "named twice" in refused[0]


def test_cli_archives_and_compare_reads_the_archive(tmp_path):
    run = lambda *a: subprocess.run([sys.executable, "-m", "gen", *map(str, a)], capture_output=True, text=True)
    for name in ("a", "b"):
        (tmp_path / f"{name}.json").write_text(json.dumps(_doc(name)))
    out = run("archive", "--dry-run", tmp_path / "a.json")
    assert out.returncode == 0 and "(dry run)" in out.stdout and (tmp_path / "a.json").exists()
    out = run("archive", tmp_path / "a.json")
    assert out.returncode == 0 and not (tmp_path / "a.json").exists() and (tmp_path / "a.json.xz").exists()
    out = run("compare", tmp_path / "a.json.xz", tmp_path / "b.json")
    assert out.returncode == 0 and "spread" in out.stdout
    # one refused record: nothing archived, exit 1
    out = run("archive", tmp_path / "b.json", tmp_path / "missing.json")
    assert out.returncode == 1 and "nothing archived" in out.stderr and (tmp_path / "b.json").exists()
