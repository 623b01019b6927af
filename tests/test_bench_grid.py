"""Layer 1: the bench record's schema and the roofline arithmetic."""
import re

import pytest

from gen.bench import grid
from gen.bench.report import ratio_table


def test_roofline_matches_the_anchor_example():
    # ANCHORS.md: below M~128 every shape is memory-bound; at M=64 the ceiling
    # is about 2*64*4.25e12 bytes/s ~ 540 TFLOP/s (for N*K >> M*(N+K)).
    r = grid.roofline_tflops(64, 32768, 16384, peak_tflops=1979, memory_tbps=4.25)
    assert 500 < r < 545
    assert grid.roofline_tflops(8192, 8192, 8192, peak_tflops=1979, memory_tbps=4.25) == 1979


def test_gemm_bytes_counts_each_operand_once():
    M, N, K = 16, 2112, 7168
    assert grid.gemm_bytes(M, N, K) == M * K + N * K + 2 * M * N + 4 * (M * 56 + 17 * 56)


def test_parse_shapes():
    assert grid.parse_shapes("17408x5120, 5120×17408") == [(17408, 5120), (5120, 17408)]
    with pytest.raises(ValueError):
        grid.parse_shapes("17408by5120")


def _row(**over):
    r = dict(op="gemm", impl="w8a8_mma", kernel="k", M=64, N=256, K=512, us=1.0, tflops=10.0, tbps=1.0,
             roofline_tflops=100.0)
    r.update(over)
    return r


def test_record_schema_is_enforced():
    doc = {"gpu": "g", "arch": "sm_90a", "date": "d", "git_sha": "s", "nvcc": "13.0.88", "driver": "13.0",
           "rows": [_row()]}
    grid.validate_record(doc)
    with pytest.raises(ValueError, match="lacks"):
        grid.validate_record({k: v for k, v in doc.items() if k != "driver"})
    with pytest.raises(ValueError, match="fields"):
        grid.validate_record(dict(doc, rows=[{**_row(), "extra": 1}]))


@pytest.mark.parametrize("bad,why", [
    (5, "JSON object, not int"), (None, "JSON object, not NoneType"), ([1, 2], "JSON object, not list"),
    ({"git_sha": None}, r"\['git_sha'\] must be strings"), ({"rows": None}, "rows must be a list"),
    ({"rows": [1, 2]}, "row 0 has fields int"), ({"rows": [_row(us=0)]}, "us = 0"),
    ({"rows": [_row(us="fast")]}, "us = 'fast'"), ({"rows": [_row(us=float("nan"))]}, "us = nan"),
    ({"rows": [_row(M=0)]}, "M = 0, expected an integer >= 1"), ({"rows": [_row(K=1.5)]}, "K = 1.5"),
    ({"rows": [_row(N=True)]}, "N = True"), ({"rows": [_row(kernel=None)]}, "must be strings"),
    ({"rows": [_row(tflops=-1.0)]}, "tflops = -1.0"), ({"rows": [_row(tbps="x")]}, "tbps = 'x'"),
])
def test_a_record_with_wrong_types_or_ranges_is_refused(bad, why):
    """Readers divide by times and index rows by these fields: a record
    that would make them raise TypeError or ZeroDivisionError is refused
    first, saying what is wrong."""
    doc = {"gpu": "g", "arch": "sm_90a", "date": "d", "git_sha": "s", "nvcc": "13.0.88", "driver": "13.0",
           "rows": [_row()]}
    with pytest.raises(ValueError, match=why):
        grid.validate_record(dict(doc, **bad) if isinstance(bad, dict) else bad)


def test_rows_without_a_size_may_say_0():
    """(the copy row and the quantizers' rows carry 0 for the sizes they lack; null rates where none apply)"""
    doc = {"gpu": "g", "arch": "sm_90a", "date": "d", "git_sha": "s", "nvcc": "13.0.88", "driver": "13.0",
           "rows": [_row(op="copy", impl="copy", M=0, N=0, K=0, tflops=None, roofline_tflops=None),
                    _row(op="quant", impl="quant_group", N=0, tflops=None, roofline_tflops=None)]}
    grid.validate_record(doc)


def test_ratio_table_divides_by_cublaslt():
    doc = {"rows": [_row(impl="cublaslt_block", tflops=100.0), _row(tflops=150.0)]}
    table = ratio_table(doc)
    assert "150 (1.50)" in table


def test_ratio_table_takes_each_family_s_fastest_instance():
    doc = {"rows": [_row(impl="cublaslt_block", tflops=100.0), _row(kernel="fast", us=1.0, tflops=150.0),
                    _row(kernel="slow", us=3.0, tflops=50.0)]}
    assert "150 (1.50)" in ratio_table(doc) and "(0.50)" not in ratio_table(doc)


def test_ratio_table_measures_single_scale_arms_against_their_own_peers():
    doc = {"rows": [_row(impl="cublaslt_block", tflops=100.0), _row(impl="cublaslt_row", tflops=80.0),
                    _row(impl="w8a8_row", tflops=60.0), _row(impl="cublaslt_tensor", tflops=50.0),
                    _row(impl="w8a8_tensor", tflops=55.0)]}
    table = ratio_table(doc)
    assert "60 (0.75 vs cublaslt_row)" in table
    assert "55 (1.10 vs cublaslt_tensor)" in table


def test_ratio_table_lists_weight_converters_with_their_shape():
    doc = {"rows": [_row(op="weight", impl="nvfp4_to_fp8", M=0, N=2112, K=7168, us=12.5, tflops=None, tbps=2.5,
                         roofline_tflops=None)]}
    assert "| weight | nvfp4_to_fp8 | 0 | 2112 | 7168 | 12.5 | 2.50 |" in ratio_table(doc)


def _record(sha, shapes, **over):
    rows = [_row(op="copy", impl="copy", kernel="torch copy_", M=0, N=0, K=0, tflops=None)]
    rows += [_row(impl=impl, N=n, K=k) for n, k in shapes for impl in ("cublaslt_block", "w8a8_wgmma")]
    doc = {"gpu": "NVIDIA H200", "arch": "sm_90a", "date": "2026-11-29", "git_sha": sha, "nvcc": "13.0.88",
           "driver": "13.0", "torch": "2.11", "seed": 0, "rows": rows}
    doc.update(over)
    return doc


def test_merge_keeps_every_part_and_says_which_run_measured_what():
    from gen.bench.merge import merge

    a, b = _record("aaa", [(2112, 7168), (4096, 7168)]), _record("bbb", [(32768, 512)], date="2026-11-30")
    # both parts timed the quantizer at K = 7168 (it depends on M and K only)
    quant = _row(op="quant", impl="quant_group", N=0, K=7168)
    a["rows"].append(quant)
    b["rows"].append(dict(quant, us=2.0))
    doc, repeated = merge([a, b])
    assert doc["git_sha"] == "aaa" and len(doc["rows"]) == 1 + 4 + 2 + 1 and repeated == 2
    assert [r["op"] for r in doc["rows"]].count("copy") == 1  # the device-copy reference once
    assert [r["us"] for r in doc["rows"] if r["op"] == "quant"] == [1.0]  # the first measurement
    assert doc["runs"] == [{"git_sha": "aaa", "date": "2026-11-29", "shapes": ["2112x7168", "4096x7168"], "seed": 0},
                           {"git_sha": "bbb", "date": "2026-11-30", "shapes": ["32768x512"], "seed": 0}]
    # a merged record merges again, its runs carried over
    again, _ = merge([doc, _record("ccc", [(7168, 2048)])])
    assert [r["git_sha"] for r in again["runs"]] == ["aaa", "bbb", "ccc"]


def test_merge_refuses_other_setups_and_points_measured_twice():
    from gen.bench.merge import merge

    a = _record("aaa", [(2112, 7168)])
    with pytest.raises(ValueError, match="driver"):
        merge([a, _record("bbb", [(4096, 7168)], driver="12.8")])
    # timings with and without programmatic dependent launch are not one setup
    # (a record from before the field existed was made without it)
    with pytest.raises(ValueError, match="pdl"):
        merge([a, _record("bbb", [(4096, 7168)], pdl=True)])
    assert merge([_record("aaa", [(2112, 7168)], pdl=False), _record("bbb", [(4096, 7168)])])[0]["pdl"] is False
    with pytest.raises(ValueError, match="measure each GEMM point once"):
        merge([a, _record("bbb", [(2112, 7168)])])
    with pytest.raises(ValueError, match="two or more"):
        merge([a])


def test_gen_merge_writes_the_record_and_table(tmp_path, capsys):
    import json

    from gen.cli import main

    paths = []
    for sha, shapes in (("aaa", [(2112, 7168)]), ("bbb", [(4096, 7168)])):
        paths.append(tmp_path / f"{sha}.json")
        paths[-1].write_text(json.dumps(_record(sha, shapes)))
    out, md = tmp_path / "merged.json", tmp_path / "merged.md"
    assert main(["merge", *map(str, paths), "--out", str(out), "--md", str(md)]) == 0
    doc = json.loads(out.read_text())
    assert len(doc["runs"]) == 2 and "4096×7168" in md.read_text()
    with pytest.raises(SystemExit, match="cannot merge"):
        main(["merge", str(paths[0]), str(paths[0]), "--out", str(out)])


def _point(N, K, M, fast_tflops, base_tflops, roof=1000.0):
    return [_row(impl="cublaslt_block", N=N, K=K, M=M, tflops=base_tflops, us=1.0, roofline_tflops=roof),
            _row(impl="w8a8_wgmma", kernel="w", N=N, K=K, M=M, tflops=fast_tflops, us=base_tflops / fast_tflops,
                 roofline_tflops=roof)]


def test_summary_counts_the_targets():
    from gen.bench.report import summary

    rows = _point(2112, 7168, 64, 300.0, 150.0, roof=350.0) + _point(2112, 7168, 4096, 990.0, 1000.0) \
        + [_row(impl="w8a8_cutlass", kernel="c", N=2112, K=7168, M=4096, tflops=1200.0, us=0.5,
                roofline_tflops=1000.0)] + _point(7168, 2048, 128, 400.0, 200.0, roof=1000.0)
    text = summary({"rows": rows}, {"deepgemm": [[64, 2112, 7168, 206], [128, 7168, 2048, 510],
                                                 [4096, 32768, 512, 775]]})
    # 2.0, 1.2 (CUTLASS is the faster fast-path arm at M=4096), 2.0: none below 1.0
    assert "geometric mean 1.687x over 3 points" in text and "0 below 1.0" in text
    assert "w8a8_wgmma alone: geometric mean 1.582x" in text  # 2.0, 0.99, 2.0
    # 300/350 = 86 % passes, 400/1000 = 40 % does not
    assert "1 of 2 points at >= 75% of the memory roofline: 2112×7168 M=64 86%" in text
    assert "| 64 | 2112×7168 | 300 | 206 | met |" in text
    assert "| 128 | 7168×2048 | 400 | 510 | short by 21.6% |" in text
    assert "Met at 1 of 2 rows." in text  # the row the record lacks is left out


def test_summary_names_the_memory_ceiling_and_a_gpu_it_was_not_measured_on():
    """The roofline shares are against HARDWARE.toml's ceiling, which the
    record keeps; measured on another GPU than the record's (one arch, two
    cards), the summary says the shares are not that card's own."""
    from gen.bench.report import summary

    roof = {"memory_tbps": 4.25, "memory_tbps_note": "measured: H200, device-to-device copy",
            "fp8_dense_tflops": 1979.0}
    rows = _point(2112, 7168, 64, 300.0, 150.0, roof=350.0)
    here = summary({"rows": rows, "gpu": "NVIDIA H200", "roofline": roof})
    assert "Memory ceiling 4.25 TB/s (measured: H200, device-to-device copy)." in here
    assert "Not this record's GPU" not in here
    other = summary({"rows": rows, "gpu": "NVIDIA H100 80GB HBM3", "roofline": roof})
    assert "Not this record's GPU (NVIDIA H100 80GB HBM3)" in other
    assert "Memory ceiling" not in summary({"rows": rows, "gpu": "NVIDIA H100 80GB HBM3"})  # older records


def test_summary_sets_the_fast_path_against_deepgemm_timed_in_the_run():
    from gen.bench.report import summary

    def dg(N, K, M, us, tflops):
        return _row(impl="deepgemm", kernel="deep_gemm.fp8_gemm_nt 1D2D", N=N, K=K, M=M, us=us, tflops=tflops,
                    roofline_tflops=1000.0)

    # fast path times: 0.5 us (M=64) and 1.0101 us (M=4096); DeepGEMM 0.75 and 0.9 us: 1.5x and 0.891x
    rows = _point(2112, 7168, 64, 300.0, 150.0) + _point(2112, 7168, 4096, 990.0, 1000.0) \
        + [dg(2112, 7168, 64, 0.75, 200.0), dg(2112, 7168, 4096, 0.9, 1111.0)]
    text = summary({"rows": rows}, {"deepgemm": [[64, 2112, 7168, 206], [4096, 2112, 7168, 1127]]})
    assert "Fast path against deepgemm timed in this run: geometric mean 1.156x over 2 points, 0.891-1.500x" in text
    assert "1 below 1.0: 2112×7168 M=4096 0.891" in text
    # the published rows gain the figure timed here
    assert "| 64 | 2112×7168 | 300 | 206 | met | 200 |" in text
    assert "| 4096 | 2112×7168 | 990 | 1127 | short by 12.2% | 1111 |" in text
    # the published table's DeepGEMM-cuBLASLt geomean is unaffected: 2.0 and 0.99
    assert "geometric mean 1.407x over 2 points" in text
    # without the arm, neither the line nor the column
    plain = summary({"rows": rows[:4]}, {"deepgemm": [[64, 2112, 7168, 206]]})
    assert "timed in this run" not in plain and "| 64 | 2112×7168 | 300 | 206 | met |" in plain


def test_gen_bench_takes_the_deepgemm_arm_only_by_name(tmp_path, monkeypatch):
    """deepgemm is not among the default arms (fp8gen does not install it);
    named, it reaches the run, where a machine without deep_gemm stops with a
    message that says what is missing."""
    import builtins

    import gen.bench.run
    from gen.bench.arms import load_deep_gemm
    from gen.cli import ALL_ARMS, main

    assert "deepgemm" not in ALL_ARMS
    seen = {}
    monkeypatch.setattr(gen.bench.run, "bench", lambda **kw: seen.update(kw) or 0)
    out = str(tmp_path / "b.json")
    assert main(["bench", "--families", "w8a8_wgmma,cublaslt_block,deepgemm", "--out", out, "--git-sha", "x"]) == 0
    assert seen["families"] == ["w8a8_wgmma", "cublaslt_block", "deepgemm"]
    with pytest.raises(SystemExit, match="deepgem"):
        main(["bench", "--families", "deepgem", "--out", out, "--git-sha", "x"])
    real_import = builtins.__import__

    def no_deep_gemm(name, *args, **kwargs):
        if name == "deep_gemm":
            raise ImportError("No module named 'deep_gemm'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_deep_gemm)
    with pytest.raises(SystemExit, match=r"needs its Python package \(deep_gemm\)"):
        load_deep_gemm(pdl=True)


def test_summary_lists_points_below_the_baseline():
    from gen.bench.report import summary

    text = summary({"rows": _point(4096, 7168, 8192, 990.0, 1000.0), "timing": "kernel"})
    assert "1 below 1.0: 4096×7168 M=8192 0.990 (w)" in text and "profiler kernel durations" in text
    assert "Arm order" not in text  # (a record from before the field)
    assert "Arm order at each point: abba (listed, then reversed" in summary(
        {"rows": _point(4096, 7168, 8192, 990.0, 1000.0), "arm_order": "abba"})


def test_kernel_timing_splits_the_trace_at_each_flush():
    from gen.bench.timing import per_call_us

    trace = [{"name": "fill", "dur": 50.0}, {"name": "gemm", "dur": 3.0}, {"name": "reduce", "dur": 1.0},
             {"name": "fill", "dur": 50.0}, {"name": "gemm", "dur": 2.5}]
    assert per_call_us(trace, {"fill"}, 2) == [4.0, 2.5]
    with pytest.raises(RuntimeError, match="expected 3"):
        per_call_us(trace, {"fill"}, 3)
    with pytest.raises(RuntimeError, match="1 without a kernel"):
        per_call_us(trace + [{"name": "fill", "dur": 50.0}], {"fill"}, 3)


def test_merge_refuses_records_timed_differently():
    from gen.bench.merge import merge

    head = {"gpu": "g", "arch": "sm_90a", "date": "d", "git_sha": "s", "nvcc": "n", "driver": "13.0"}
    events = dict(head, rows=[_row(N=1)])  # no "timing": events
    kernel = dict(head, timing="kernel", rows=[_row(N=2)])
    with pytest.raises(ValueError, match="timing"):
        merge([events, kernel])
    assert len(merge([events, dict(head, timing="events", rows=[_row(N=3)])])[0]["rows"]) == 2


def test_instances_narrow_an_all_instance_run_and_keep_the_dispatched_reference():
    from types import SimpleNamespace

    from gen.bench import arms

    names = ["w8a8_wgmma_a_128x256_s3", "w8a8_wgmma_b_128x128_t2", "w8a8_wgmma_c_64x64_t2", "w8a8_wgmma_d_128x80_sp"]
    rt = SimpleNamespace(entries={"w8a8_wgmma": [SimpleNamespace(name=n, constraints={}) for n in names]},
                         pick=lambda family, m, n, k: "w8a8_wgmma_c_64x64_t2")
    ctx = SimpleNamespace(rt=rt, all_instances=True, only=("128x256", "_sp"), order_seed=None)
    assert arms._instances(ctx, "w8a8_wgmma", 64, 7168, 2048) == [names[0], names[2], names[3]]
    ctx.only = ()
    assert arms._instances(ctx, "w8a8_wgmma", 64, 7168, 2048) == names
    ctx.order_seed = 0  # (gen bench's: the same instances, in the point's drawn order)
    assert arms._instances(ctx, "w8a8_wgmma", 64, 7168, 2048) == arms.point_order(names, 0, 64, 7168, 2048)
    ctx.all_instances = False
    assert arms._instances(ctx, "w8a8_wgmma", 64, 7168, 2048) == ["w8a8_wgmma_c_64x64_t2"]
    assert arms.unmatched_parts(("128x256", "x999"), names) == ["x999"]


def test_gen_bench_instances_needs_all_instances_and_real_parts(tmp_path):
    from gen.cli import main

    out = str(tmp_path / "b.json")
    with pytest.raises(SystemExit, match="--all-instances"):
        main(["bench", "--instances", "128x256", "--out", out])
    with pytest.raises(SystemExit, match="comma-separated parts"):
        main(["bench", "--all-instances", "--instances", "128x256,,_sp", "--out", out])


def test_a_merge_with_a_partial_part_is_partial():
    from gen.bench.merge import merge

    a = _record("aaa", [(2112, 7168)], only_instances=["_sp"])
    doc, _ = merge([_record("bbb", [(4096, 7168)]), a])
    assert doc["only_instances"] == ["_sp"]
    assert "only_instances" not in merge([_record("bbb", [(4096, 7168)]), _record("ccc", [(7168, 2048)])])[0]


def test_bench_rests_before_a_point_that_follows_heavier_work():
    from gen.bench.timing import needs_rest

    assert not needs_rest(None, (7168, 2048, 16))  # the first point
    assert not needs_rest((7168, 2048, 16), (7168, 2048, 64))  # M ascending: as hot as the last
    assert needs_rest((7168, 2048, 8192), (4096, 7168, 16))  # a new shape after its largest M
    assert needs_rest((7168, 2048, 8192), (4096, 7168, 8192))  # any shape switch
    assert needs_rest((7168, 2048, 8192), (7168, 2048, 16))  # a step down in M


def test_the_h200_rest_is_declared_where_per_arch_numbers_live():
    from runtime.hardware import load_hardware

    assert load_hardware("sm_90a").bench["rest_s"] > 0  # measured on the H200 (HARDWARE.toml [bench])
    assert load_hardware("sm_89").bench.get("rest_s", 0.0) == 0.0  # not measured there: no rest


def test_all_instance_runs_time_each_point_in_its_own_drawn_order():
    from gen.bench.arms import point_order

    names = [f"i{j}" for j in range(12)]
    a = point_order(names, 0, 4096, 7168, 7168)
    assert sorted(a) == sorted(names) and a != names  # a permutation, not the manifest's order
    assert point_order(names, 0, 4096, 7168, 7168) == a  # the same for the same seed and point
    assert point_order(names, 0, 8192, 7168, 7168) != a  # another at another point
    assert point_order(names, 1, 4096, 7168, 7168) != a  # and under another seed
    assert point_order(names, None, 4096, 7168, 7168) == names  # no seed: as given


def test_arm_orders_put_peers_first_or_time_every_arm_early_and_late():
    from gen.bench.arms import arm_order

    steps = [(False, "mma"), (False, "wgmma"), (True, "cublaslt_block"), (False, "tensor"), (True, "cublaslt_tensor"),
             (True, "torch_bf16")]
    listed = ["mma", "wgmma", "cublaslt_block", "tensor", "cublaslt_tensor", "torch_bf16"]
    assert [s for _, s in arm_order(steps, "fp8gen first")] == listed
    assert [s for _, s in arm_order(steps, "peers first")] == ["cublaslt_block", "cublaslt_tensor", "torch_bf16",
                                                               "mma", "wgmma", "tensor"]
    abba = [s for _, s in arm_order(steps, "abba", 0)]
    assert abba == listed + listed[::-1]
    # every arm's two positions average to the same place: none is favoured by a drift along the point
    assert len({(abba.index(a) + len(abba) - 1 - abba[::-1].index(a)) for a in listed}) == 1
    # and the next point starts from the other end, so that each arm is first as often
    assert [s for _, s in arm_order(steps, "abba", 1)] == listed[::-1] + listed
    assert [s for _, s in arm_order(steps, "abba", 2)] == abba
    with pytest.raises(ValueError, match="arm order"):
        arm_order(steps, "random")


def test_gen_bench_arm_order_reaches_the_run(tmp_path, monkeypatch):
    import gen.bench.run
    from gen.cli import main

    seen = {}
    monkeypatch.setattr(gen.bench.run, "bench", lambda **kw: seen.update(kw) or 0)
    out = str(tmp_path / "b.json")
    common = ["--families", "w8a8_wgmma,cublaslt_block", "--out", out, "--git-sha", "x"]
    assert main(["bench"] + common) == 0 and seen["arm_order"] is None  # bench picks: abba, or fp8gen first
    for typed, recorded in (("abba", "abba"), ("peers-first", "peers first"), ("fp8gen-first", "fp8gen first")):
        assert main(["bench", "--arm-order", typed] + common) == 0 and seen["arm_order"] == recorded
    with pytest.raises(SystemExit):
        main(["bench", "--arm-order", "peers_first"] + common)


def test_merge_refuses_records_timed_in_different_arm_orders():
    from gen.bench.merge import merge

    # a record without the field ran fp8gen's arms first
    assert merge([_record("aaa", [(2112, 7168)]), _record("bbb", [(4096, 7168)], arm_order="fp8gen first")])
    with pytest.raises(ValueError, match="different orders"):
        merge([_record("aaa", [(2112, 7168)]), _record("bbb", [(4096, 7168)], arm_order="peers first")])


def test_records_are_written_one_row_per_line_and_read_back_unchanged(tmp_path):
    """gen bench, merge and probe records: one row per line (diffable, and a
    third smaller than one field per line), the same JSON value back; the
    committed records are written this way."""
    import glob
    import json

    from gen.fsutil import record_text

    doc = {"gpu": "X", "seed": 3, "rows": [{"op": "gemm", "us": 1.25, "tflops": None, "kernel": "a b"},
                                           {"op": "quant", "us": 0.1 + 0.2, "tflops": 7.0, "kernel": "c"}],
           "runs": [], "notes": ["x", "y"]}
    text = record_text(doc)
    assert json.loads(text) == doc and json.loads(text)["rows"][1]["us"] == 0.1 + 0.2
    lines = text.splitlines()
    assert lines[0] == "{" and lines[-1] == "}" and ' "notes": ["x", "y"]' in lines
    assert [line for line in lines if '"op"' in line] == ['  {"op":"gemm","us":1.25,"tflops":null,"kernel":"a b"},',
                                                        '  {"op":"quant","us":0.30000000000000004,"tflops":7.0,'
                                                        '"kernel":"c"}']
    committed = sorted(glob.glob("hardware/*/*.json"))
    assert committed
    for path in committed:
        with open(path) as f:
            assert f.read() == record_text(json.load(open(path))), path
    # archived ones (gen archive) hold the same text, compressed
    import lzma

    archived = sorted(glob.glob("hardware/*/*.json.xz"))
    for path in archived:
        text = lzma.decompress(open(path, "rb").read()).decode()
        assert text == record_text(json.loads(text)), path


def test_gen_bench_instances_routed_names_every_instance_the_tables_pick(tmp_path, monkeypatch):
    """`--instances routed` hands the run the full name of each instance the
    committed tables dispatch to at the bench's points (the ones `gen compare
    --routed` reads), beside any other parts given; a family without a table
    (the cuBLASLt peer) adds none."""
    import gen.bench.run
    from gen.bench.grid import ANCHOR_MS, ANCHOR_SHAPES
    from gen.cli import _router, main

    seen = {}
    monkeypatch.setattr(gen.bench.run, "bench", lambda **kw: seen.update(kw) or 0)
    out = str(tmp_path / "b.json")
    fams = "w8a8_wgmma,w8a8_cutlass,cublaslt_block"
    assert main(["bench", "--all-instances", "--instances", "_pw,routed", "--families", fams, "--out", out,
                 "--git-sha", "x"]) == 0
    only = seen["only"]
    assert only[0] == "_pw" and "routed" not in only
    route = _router("sm_90a", ("w8a8_wgmma", "w8a8_cutlass"), 132)
    picked = {name for n, k in ANCHOR_SHAPES for m in ANCHOR_MS for name in route(n, k, m)}
    assert picked and set(only[1:]) == picked
    assert {n.split("_e4m3")[0] for n in picked} <= {"w8a8_wgmma", "w8a8_cutlass"}
    # one point: exactly the instances routed there
    assert main(["bench", "--all-instances", "--instances", "routed", "--families", fams, "--shapes", "4096x7168",
                 "--m", "4096", "--out", out, "--git-sha", "x"]) == 0
    assert set(seen["only"]) == set(route(4096, 7168, 4096))
    with pytest.raises(SystemExit, match="no table"):
        main(["bench", "--all-instances", "--instances", "routed", "--families", "cublaslt_block", "--out", out,
              "--git-sha", "x"])


def test_a_gpu_with_its_own_measured_ceiling_gets_it():
    """[roofline.by_gpu."<device name>"] overrides the arch's ceilings for
    that card alone; other cards keep the arch's, and the flat result (what
    a record keeps) has no by_gpu table left in it."""
    from gen.bench.grid import ceilings_for

    roof = {"fp8_dense_tflops": 1979.0, "memory_tbps": 4.25, "memory_tbps_note": "measured: H200, copy",
            "by_gpu": {"NVIDIA H100 80GB HBM3": {"memory_tbps": 3.0, "memory_tbps_note": "measured: H100, copy"}}}
    h100 = ceilings_for(roof, "NVIDIA H100 80GB HBM3")
    assert h100 == {"fp8_dense_tflops": 1979.0, "memory_tbps": 3.0, "memory_tbps_note": "measured: H100, copy"}
    h200 = ceilings_for(roof, "NVIDIA H200")
    assert h200 == {"fp8_dense_tflops": 1979.0, "memory_tbps": 4.25, "memory_tbps_note": "measured: H200, copy"}
    assert ceilings_for({"memory_tbps": 4.25}, "NVIDIA H200") == {"memory_tbps": 4.25}


def test_resident_timing_reads_one_input_set_and_says_so(tmp_path, monkeypatch):
    """--timing resident: one input set per point (operands that fit stay in
    L2), the same events timer, the record and its table saying which; the
    default rotates over sets a few times the L2."""
    import types

    import gen.bench.run
    from gen.bench import arms, report
    from gen.bench.timing import rotation, time_us
    from gen.cli import main

    l2 = 50 << 20
    rotating, resident = (types.SimpleNamespace(l2_bytes=l2, rotate=r) for r in (True, False))
    assert arms.input_sets(resident, 1 << 20) == 1
    assert arms.input_sets(rotating, 1 << 20) == rotation(1 << 20, l2) > 1
    assert arms.Context.__dataclass_fields__["rotate"].default is True
    assert gen.bench.run.TIMERS["resident"] is time_us

    seen = {}
    monkeypatch.setattr(gen.bench.run, "bench", lambda **kw: seen.update(kw) or 0)
    common = ["--families", "w8a8_wgmma,cublaslt_block", "--out", str(tmp_path / "b.json"), "--git-sha", "x"]
    assert main(["bench", "--timing", "resident"] + common) == 0 and seen["timing"] == "resident"

    row = dict(op="gemm", impl="w8a8_wgmma", kernel="k", M=128, N=7168, K=2048, us=1.0, tflops=900.0, tbps=1.0,
               roofline_tflops=1000.0)
    base = dict(row, impl="cublaslt_block", kernel="c", tflops=450.0)
    resident, events = ({"timing": t, "rows": [row, base]} for t in ("resident", "events"))
    assert "one input set" in report.summary(resident) and "does not bound" in report.summary(resident)
    assert "launch gaps included" in report.summary(events)
    # the roofline share is claimed for rotated inputs only
    assert "memory roofline:" in report.summary(events) and "memory roofline:" not in report.summary(resident)


def test_gpu_commands_without_torch_say_so_in_one_line(tmp_path, monkeypatch):
    """(fp8gen does not install torch; its runtime does not need it)"""
    import sys

    from gen.cli import main

    monkeypatch.setitem(sys.modules, "torch", None)  # import torch: ModuleNotFoundError
    for argv in (["bench", "--out", str(tmp_path / "b.json")], ["bench-ffn"], ["soak"],
                 ["probe", "run", "--kernel", "k", "--points", "128x128x1", "--out", str(tmp_path / "p.json")]):
        with pytest.raises(SystemExit, match=f"gen {argv[0]}.* needs torch with CUDA and a GPU"):
            main(argv)


def test_a_long_run_checks_where_it_will_write_first(tmp_path):
    from gen.cli import main

    (tmp_path / "file").write_text("")
    with pytest.raises(SystemExit, match="is a directory"):
        main(["bench", "--out", str(tmp_path)])
    with pytest.raises(SystemExit, match="cannot write"):
        main(["bench", "--md", str(tmp_path / "file" / "t.md")])


def test_compare_names_an_unknown_arm(tmp_path):
    import json

    from gen.cli import main

    path = tmp_path / "a.json"
    path.write_text(json.dumps(_record("aaa", [(2112, 7168)])))
    with pytest.raises(SystemExit, match=r"unknown --impl \['bogus'\]"):
        main(["compare", str(path), "--impl", "bogus"])
    with pytest.raises(SystemExit, match="unknown --per-instance family 'bogus'"):
        main(["compare", str(path), "--base", str(path), "--per-instance", "bogus"])


@pytest.mark.parametrize("argv,why", [
    (["--m", "16", "--n", "0", "--k", "7168"], "n and k must be >= 1"),
    (["--m", "16", "--n", "2048", "--k", "-128"], "n and k must be >= 1"),
    (["--m", str(2**31), "--n", "2048", "--k", "7168"], r"m must be in 1\.\.2147483647"),
])
def test_explain_refuses_impossible_shapes(argv, why, capsys):
    from gen.cli import main

    assert main(["explain", *argv]) == 2
    assert re.search(why, capsys.readouterr().err)


def test_explain_takes_a_positive_sm_count(capsys):
    from gen.cli import main

    with pytest.raises(SystemExit):
        main(["explain", "--m", "16", "--n", "2048", "--k", "7168", "--sms", "0"])
    assert "--sms: must be >= 1, got 0" in capsys.readouterr().err


def test_a_time_written_as_a_huge_integer_is_refused():
    """(json reads a 400-digit number as an int, past float's range)"""
    doc = {"gpu": "g", "arch": "sm_90a", "date": "d", "git_sha": "s", "nvcc": "13.0.88", "driver": "13.0",
           "rows": [_row(us=10**400)]}
    with pytest.raises(ValueError, match="expected a time > 0"):
        grid.validate_record(doc)
