"""gen compare (no GPU): bench records side by side."""
import json
import subprocess
import sys

import pytest

from gen.bench.compare import ab_report, fast_times, routed_report, runs_report


def _row(impl, M, us, N=7168, K=2048, kernel=None):
    return dict(op="gemm", impl=impl, kernel=kernel or impl, M=M, N=N, K=K, us=us, tflops=2 * M * N * K / us / 1e6,
                tbps=1.0, roofline_tflops=1000.0)


def _record(ours, peer=None, sha="s", **over):
    """ours / peer: {M: us} at 7168x2048 (peer: cuBLASLt block)."""
    rows = [_row("w8a8_wgmma", m, us) for m, us in ours.items()]
    rows += [_row("cublaslt_block", m, us) for m, us in (peer or {}).items()]
    doc = {"gpu": "NVIDIA H200", "arch": "sm_90a", "date": "2026-12-01", "git_sha": sha, "nvcc": "13.0.88",
           "driver": "13.0", "torch": "2.11", "rows": rows}
    doc.update(over)
    return doc


def test_fast_times_takes_the_faster_fast_arm_and_the_peer():
    doc = _record({64: 10.0}, {64: 20.0})
    doc["rows"].append(_row("w8a8_cutlass", 64, 8.0))
    doc["rows"].append(_row("w8a8_wgmma", 64, 12.0, kernel="slower_instance"))
    ours, peer = fast_times(doc)
    assert ours == {(7168, 2048, 64): 8.0} and peer == {(7168, 2048, 64): 20.0}
    assert fast_times(doc, ("w8a8_wgmma",))[0] == {(7168, 2048, 64): 10.0}


def test_runs_report_gives_each_run_s_geomean_and_the_spread():
    a = _record({64: 10.0, 4096: 100.0}, {64: 20.0, 4096: 110.0})
    b = _record({64: 10.5, 4096: 100.0}, {64: 20.0, 4096: 110.0})
    text = runs_report([a, b], ["a.json", "b.json"])
    # run 1: sqrt(2.0 * 1.1); run 2: sqrt(20 / 10.5 * 1.1)
    assert f"| 1 | a.json | {(2.0 * 1.1) ** 0.5:.4f}x | 1.100x (7168×2048 M=4096) |" in text
    assert f"| 2 | b.json | {(20 / 10.5 * 1.1) ** 0.5:.4f}x |" in text
    assert "| 7168×2048 | 64 | 10.00 (2.000) | 10.50 (1.905) | 5.0 % |" in text
    assert "largest 5.00 %" in text
    # ratios 2.000 and 1.905 at M=64 (5.0 %), 1.1 and 1.1 at M=4096 (0 %): median 2.5 %
    assert "Spread of the ratio to cublaslt_block: median 2.50 %, largest 5.00 % (7168×2048 M=64)." in text


def test_ab_report_splits_m_ranges_and_averages_each_side():
    base = [_record({64: 10.0, 512: 50.0, 4096: 100.0}, {64: 20.0, 512: 60.0, 4096: 110.0}),
            _record({64: 12.0, 512: 50.0, 4096: 100.0}, {64: 20.0, 512: 60.0, 4096: 110.0})]
    new = [_record({64: 11.0 * 0.9, 512: 50.0, 4096: 105.0}, {64: 20.0, 512: 60.0, 4096: 110.0})]
    text = ab_report(base, new)
    assert "| 1-128 | 1 | 0.9000x |" in text  # 9.9 over the base mean 11.0
    assert "| 129-1024 | 1 | 1.0000x |" in text
    assert "| >= 1025 | 1 | 1.0500x |" in text
    assert "Moved most: 7168×2048 M=64 0.900x; 7168×2048 M=4096 1.050x; 7168×2048 M=512 1.000x." in text
    assert "| new | 1 |" in text and "| base | 2 |" in text


def test_ab_report_per_instance():
    def inst(us_a, us_b):
        doc = _record({})
        doc["rows"] = [_row("w8a8_wgmma", 64, us_a, kernel="a"), _row("w8a8_wgmma", 64, us_b, kernel="b")]
        return doc
    text = ab_report([inst(10.0, 20.0)], [inst(9.0, 22.0)], family="w8a8_wgmma")
    assert "| a | 1 | 0.9000x |" in text and "| b | 1 | 1.1000x |" in text
    assert "vs cuBLASLt" not in text  # no peer rows: no ratio table


def test_records_of_other_setups_or_without_shared_points_are_refused():
    with pytest.raises(ValueError, match="another setup"):
        runs_report([_record({64: 1.0}, {64: 2.0}), _record({64: 1.0}, {64: 2.0}, driver="12.8")], ["a", "b"])
    with pytest.raises(ValueError, match="share no GEMM point"):
        ab_report([_record({64: 1.0})], [_record({128: 1.0})])
    with pytest.raises(ValueError, match="no cuBLASLt block rows"):
        runs_report([_record({64: 1.0})], ["a"])
    with pytest.raises(ValueError, match="lacks"):
        runs_report([{"rows": []}], ["a"])


def test_routed_report_reads_the_routed_instance_from_the_same_record():
    """The routed instance's own time counts, not the record's fastest; a
    point whose routed instance the record did not time is listed apart."""
    rows = [_row("w8a8_wgmma", 64, 10.0, kernel="a"), _row("w8a8_wgmma", 64, 11.0, kernel="b"),
            _row("w8a8_wgmma", 128, 20.0, kernel="a"), _row("w8a8_wgmma", 256, 30.0, kernel="a"),
            _row("cublaslt_block", 64, 22.0), _row("cublaslt_block", 128, 40.0), _row("cublaslt_block", 256, 60.0)]
    doc = _record({})
    doc["rows"] = rows
    route = {64: ["b"], 128: ["a"], 256: ["c"]}
    text = routed_report([doc], ["r"], lambda n, k, m: route[m])
    # M=64 routes to b (22/11 = 2.0, 1.1x the fastest), M=128 to a (2.0); M=256's c was not timed
    assert "| 1 | r | 2 | 2.0000x | 2.000x (7168×2048 M=64) | 1.0488x (at most 1.100x) | 1 points |" in text
    assert "not routed or not timed at 1 points: 7168×2048 M=256" in text
    with pytest.raises(ValueError, match="timed no routed instance"):
        routed_report([doc], ["r"], lambda n, k, m: ["z"])


def test_cli(tmp_path):
    paths = []
    for i, doc in enumerate([_record({64: 10.0}, {64: 20.0}), _record({64: 9.0}, {64: 20.0})]):
        paths.append(tmp_path / f"r{i}.json")
        paths[-1].write_text(json.dumps(doc))
    run = lambda *a: subprocess.run([sys.executable, "-m", "gen", "compare", *map(str, a)], capture_output=True,
                                    text=True)
    out = run(paths[1], "--base", paths[0])
    assert out.returncode == 0 and "| 1-128 | 1 | 0.9000x |" in out.stdout
    out = run(paths[0], paths[1])
    assert out.returncode == 0 and "spread" in out.stdout
    out = run(tmp_path / "missing.json")
    assert out.returncode != 0 and "cannot read the bench record" in out.stderr
    out = run(paths[0], "--per-instance", "w8a8_wgmma")
    assert out.returncode != 0 and "give --base too" in out.stderr
    out = run(paths[0], "--routed", "--base", paths[1])
    assert out.returncode != 0 and "not with --base" in out.stderr


def test_runs_timed_in_both_arm_orders_are_labelled():
    a = _record({64: 10.0}, {64: 20.0})
    b = _record({64: 10.0}, {64: 19.0}, arm_order="abba")
    text = runs_report([a, b], ["a.json", "b.json"])
    assert "| 1 | a.json (fp8gen first) | 2.0000x |" in text and "| 2 | b.json (abba) | 1.9000x |" in text
    # one order throughout: no labels
    assert "(fp8gen first)" not in runs_report([a, a], ["a.json", "a2.json"])


def test_the_acceptance_records_read_through_the_committed_tables():
    """Issue 6's acceptance asks that the dispatch table route each point to
    its fastest instance: read through the committed tables, each record of
    the acceptance pair timed every routed instance at all 72 anchor points,
    and the routed ones take within 0.5 % of the record's fastest (geometric
    mean; the table is tuned from many records, so single points may differ
    by a run's noise)."""
    import re

    from runtime.paths import REPO_ROOT

    records = [REPO_ROOT / "hardware/sm_90a/bench-h200.json", REPO_ROOT / "hardware/sm_90a/bench-h200-2.json"]
    out = subprocess.run([sys.executable, "-m", "gen", "compare", *map(str, records), "--routed"],
                         capture_output=True, text=True, cwd=REPO_ROOT)
    assert out.returncode == 0, out.stderr
    rows = re.findall(r"^\| \d \| \S+ \| (\d+) \| ([\d.]+)x \| .* \| ([\d.]+)x \(at most", out.stdout, re.M)
    assert len(rows) == 2 and "not routed" not in out.stdout
    for points, ratio, over in rows:
        assert int(points) == 72 and float(ratio) >= 1.0 and float(over) <= 1.005

