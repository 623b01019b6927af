"""Layer 1: the dispatch table and levers gen tune derives, how the runtime
reads them, and that the committed table agrees with the committed record."""
import json

import pytest

from gen.bench import tune
from runtime import dispatch
from runtime.hardware import load_hardware
from runtime import manifest
from runtime.paths import hardware_toml, manifest_path


def row(impl, kernel, M, N, K, us, op="gemm"):
    return dict(op=op, impl=impl, kernel=kernel, M=M, N=N, K=K, us=us, tflops=None, tbps=None, roofline_tflops=None)


def test_dispatch_compresses_runs_and_covers_both_classes():
    rows = []
    for M, (a, b) in {16: (1, 2), 64: (1, 2), 128: (3, 2), 256: (3, 2)}.items():
        rows += [row("w8a8_mma", "small", M, 4096, 1024, a), row("w8a8_mma", "big", M, 4096, 1024, b)]
        rows += [row("w8a8_mma", "small", M, 1024, 4096, a), row("w8a8_mma", "big", M, 1024, 4096, b)]
    table = tune.derive_dispatch(rows)["w8a8_mma"]
    exact = [r for r in table if r.get("n") == 4096]
    assert exact == [{"n": 4096, "k": 1024, "m_max": 64, "instance": "small"},
                     {"n": 4096, "k": 1024, "m_max": tune.LAST_BUCKET, "instance": "big"}]
    assert {r["shape_class"] for r in table if "shape_class" in r} == {"widening", "narrowing"}
    d = {"w8a8_mma": table}
    assert dispatch.lookup(d, "w8a8_mma", 17, 4096, 1024) == "small"    # 17 falls in the m <= 64 bucket
    assert dispatch.lookup(d, "w8a8_mma", 100, 4096, 1024) == "big"
    assert dispatch.lookup(d, "w8a8_mma", 64, 4096, 1024) == "small"
    assert dispatch.lookup(d, "w8a8_mma", 10**6, 4096, 1024) == "big"
    assert dispatch.lookup(d, "w8a8_mma", 16, 8192, 512) == "small"     # an unseen widening shape: its class
    assert dispatch.lookup({}, "w8a8_mma", 16, 8192, 512) is None


def test_levers_cap_at_the_end_of_the_first_winning_run():
    rows = []
    for M, (t8, q, t16) in {16: (5, 1, 10), 64: (6, 1, 10), 128: (12, 1, 10), 256: (5, 1, 10)}.items():
        rows += [row("w8a8_mma", "i", M, 4096, 1024, t8), row("w8a16_gemm", "j", M, 4096, 1024, t16),
                 row("quant_group", "q", M, 0, 1024, q, op="quant")]
        rows += [row("w8a8_mma", "i", M, 1024, 4096, 1), row("w8a16_gemm", "j", M, 1024, 4096, 10),
                 row("quant_group", "q", M, 0, 4096, 1, op="quant")]
    levers = tune.derive_levers(rows)
    assert levers["w8a8_prefill_max_m_widening"][0] == 64
    assert levers["w8a8_prefill_max_m_narrowing"][0] is None  # wins everywhere: no cap
    assert "128:1.30" in levers["w8a8_prefill_max_m_widening"][1]


def test_tuned_text_round_trips_through_hardware_toml(tmp_path, monkeypatch):
    import runtime.hardware as hw

    original_instances = load_hardware("sm_90a").instances  # read before the path is redirected
    path = tmp_path / "sm_90a" / "HARDWARE.toml"
    path.parent.mkdir()
    path.write_text(hardware_toml("sm_90a").read_text())
    monkeypatch.setattr(hw, "hardware_toml", lambda arch: tmp_path / arch / "HARDWARE.toml")
    rules = {"w8a8_mma": [{"n": 1, "k": 2, "m_max": 16, "instance": "x"}, {"shape_class": "widening",
                                                                         "m_max": tune.LAST_BUCKET, "instance": "y"}]}
    text = tune.tuned_text({"w8a8_prefill_max_m_widening": (512, "16:0.5")}, rules, "measured: test")
    tune.write_tuned(path, text)
    tune.write_tuned(path, text)  # idempotent: the marker splits off the old tuned part
    h = hw.load_hardware("sm_90a")
    assert h.defaults["w8a8_prefill_max_m_widening"] == 512
    assert h.dispatch == rules
    assert h.instances == original_instances and h.instances


def _committed_rows():
    """The rows of the records [tuned] names, combined as gen tune combines
    them, without instances no longer built; and the manifest's entries."""
    import tomllib

    from gen.fsutil import read_record
    from runtime.paths import REPO_ROOT

    tuned = tomllib.loads(hardware_toml("sm_90a").read_text()).get("tuned", {})
    records = [REPO_ROOT / r for r in tuned.get("records", [])] or [hardware_toml("sm_90a").parent / "bench-h200.json"]
    for record in records:
        if not record.exists():
            pytest.fail(f"{record} is missing: run `python -m gen tune --arch sm_90a` on the H200")
    # (partial records as gen tune takes them; a record may be archived, .json.xz)
    docs, _ = tune.beside_full([read_record(r) for r in records])
    _, entries = manifest.load(manifest_path("sm_90a"))
    today = tune.todays_binaries(docs, "sm_90a", entries)
    if today:
        try:  # several records are matched to today's binaries through git history
            for doc in docs:
                for sha in {doc["git_sha"], *(run["git_sha"] for run in doc.get("runs", []))}:
                    tune.manifest_at(sha, "sm_90a")
        except ValueError as e:
            pytest.skip(f"no git history here: {e}")
    combined, _ = tune.combine(docs, today)
    # (the record may hold an instance dropped since; gen tune leaves it out too)
    rows, _ = tune.built_only(combined, {e.name for e in entries})
    return rows, entries


def test_committed_dispatch_routes_every_point_to_the_recorded_fastest():
    """The fastest as the records the table names in [tuned] measured them,
    combined as gen tune combines them (or bench-h200.json alone)."""
    rows, entries = _committed_rows()
    table = load_hardware("sm_90a").dispatch
    checked = 0
    for family in tune.TUNED_FAMILIES:
        for (n, k, m), times in tune._times(rows, family).items():
            if len(times) > 1:
                assert dispatch.lookup(table, family, m, n, k) == min(times, key=times.get), (family, n, k, m)
                checked += 1
            whole = {i: us for i, us in times.items() if not tune.SPLIT_TAG.search(i)}
            if family + dispatch.UNSPLIT in table and len(whole) > 1:
                assert dispatch.lookup(table, family + dispatch.UNSPLIT, m, n, k) == min(whole, key=whole.get), \
                    (family, "unsplit", n, k, m)
                checked += 1
    assert checked > 0
    assert {"w8a8_wgmma" + dispatch.UNSPLIT, "w8a8_fast" + dispatch.UNSPLIT} <= set(table)
    levers = tune.derive_levers(rows)
    defaults = load_hardware("sm_90a").defaults
    for lever, (cap, _) in levers.items():
        assert defaults.get(lever) == cap


def test_a_split_k_family_gets_an_unsplit_table_that_the_runtime_falls_back_to():
    """Where a split-K instance is fastest, a caller without workspace room
    for it gets the fastest of the others as measured (the `_unsplit`
    table), not the tile rule's guess; a family without split instances
    gets no second table."""
    split = "w8a8_wgmma_e4m3e4m3_bf16_64x128x128_s8_g16_t2_x4_ws_sm90a"
    k2 = "w8a8_wgmma_e4m3e4m3_bf16_64x64x128_s10_g16_k2_sm90a"
    wide = "w8a8_wgmma_e4m3e4m3_bf16_64x256x128_s4_g16_sm90a"
    rows = []
    for M in (16, 64):
        rows += [row("w8a8_wgmma", split, M, 5120, 17408, 1.0), row("w8a8_wgmma", k2, M, 5120, 17408, 1.1),
                 row("w8a8_wgmma", wide, M, 5120, 17408, 1.5), row("w8a8_mma", "mma", M, 5120, 17408, 9.0)]
    table = tune.derive_dispatch(rows)
    assert {r["instance"] for r in table["w8a8_wgmma"]} == {split}
    assert {r["instance"] for r in table["w8a8_wgmma" + dispatch.UNSPLIT]} == {k2}
    assert "w8a8_mma" + dispatch.UNSPLIT not in table
    # the runtime: the family's table first, then its unsplit twin, then the tile rule
    from runtime.manifest import KernelEntry

    def entry(name, bm, bn, slices):
        return KernelEntry(family="w8a8_wgmma", name=name, symbol=name, abi=(), threads=256, cluster=(1, 1, 1),
                           static_smem=0, dynamic_smem=0, registers=0, spill_bytes=0, stack_bytes=0, params={},
                           constraints={"tile_m": bm, "tile_n": bn, "k_slices": slices}, source="",
                           source_sha256="", cubin="", cubin_sha256="")
    every = [entry(wide, 64, 256, 1), entry(k2, 64, 64, 1), entry(split, 64, 128, 4)]
    unsplit = every[:2]
    for t in (table, dispatch.DispatchTable(table)):
        assert dispatch.choose(every, t, 64, 5120, 17408).name == split
        assert dispatch.choose(unsplit, t, 64, 5120, 17408).name == k2
    assert dispatch.choose(unsplit, {"w8a8_wgmma": table["w8a8_wgmma"]}, 64, 5120, 17408).name == wide  # tile rule


def test_a_shape_specialized_instance_wins_only_its_own_shape():
    """Fastest at its own shape, it gets that shape's rule, never a class
    rule (it cannot run the class's other shapes)."""
    fixed = "w8a8_wgmma_e4m3e4m3_bf16_64x64x128_s10_g16_t2_for4096x1024_sm90a"
    rows = []
    for M in (16, 64):
        rows += [row("w8a8_wgmma", "generic", M, 4096, 1024, 2), row("w8a8_wgmma", fixed, M, 4096, 1024, 1)]
        rows += [row("w8a8_wgmma", "generic", M, 8192, 1024, 2)]
    table = tune.derive_dispatch(rows)["w8a8_wgmma"]
    assert [r["instance"] for r in table if r.get("n") == 4096] == [fixed]
    assert {r["instance"] for r in table if "shape_class" in r} == {"generic"}
    # its shape alone in its class: the class rule still goes to the generic one
    table = tune.derive_dispatch([r for r in rows if r["N"] == 4096])["w8a8_wgmma"]
    assert {r["instance"] for r in table if "shape_class" in r} == {"generic"}


def test_instances_no_longer_built_are_left_out():
    rows = [row("w8a8_wgmma", "kept", 64, 4096, 1024, 2), row("w8a8_wgmma", "dropped", 64, 4096, 1024, 1),
            row("cublaslt_block", "torch._scaled_mm", 64, 4096, 1024, 3)]
    kept, gone = tune.built_only(rows, {"kept"})
    assert gone == ["dropped"] and [r["kernel"] for r in kept] == ["kept", "torch._scaled_mm"]
    table = tune.derive_dispatch(kept)["w8a8_wgmma"]
    assert {r["instance"] for r in table} == {"kept"}


def test_tune_refuses_a_record_of_kernel_durations(tmp_path):
    from gen.cli import main

    record = tmp_path / "k.json"
    record.write_text(json.dumps({"gpu": "g", "arch": "sm_90a", "date": "d", "git_sha": "s", "nvcc": "n",
                                  "driver": "13.0", "timing": "kernel", "rows": []}))
    with pytest.raises(SystemExit, match="events timing"):
        main(["tune", "--arch", "sm_90a", "--from-record", "--record", str(record)])


def _record(rows, **setup):
    return dict({"gpu": "g", "arch": "sm_90a", "date": "d", "git_sha": "s", "nvcc": "n", "driver": "13.0",
                 "torch": "t", "pdl": True, "timing": "events", "a_rows": "padded"}, **setup, rows=rows)


def test_combined_records_pick_what_every_run_says_not_one_runs_noise():
    """Run 1 has `a` 0.5 % ahead, run 2 (1.2x slower overall) has `b` 5 %
    ahead: combined, `b`; a factor on a whole run does not change the pick."""
    def rows(a, b, quant):
        return [row("w8a8_wgmma", "a", 64, 4096, 1024, a), row("w8a8_wgmma", "b", 64, 4096, 1024, b),
                row("quant_group", "q", 64, 0, 1024, quant, op="quant")]
    one, two = _record(rows(10.0, 10.05, 2.0)), _record(rows(12.6, 12.0, 8.0))
    assert tune.derive_dispatch(one["rows"])["w8a8_wgmma"][0]["instance"] == "a"
    combined, left_out = tune.combine([one, two])
    assert left_out == 0
    assert tune.derive_dispatch(combined)["w8a8_wgmma"][0]["instance"] == "b"
    us = {r["kernel"]: r["us"] for r in combined}
    assert us["a"] == pytest.approx((10.0 * 12.6) ** 0.5) and us["q"] == pytest.approx(4.0)
    for factor in (0.5, 3.0):  # the second run slower or faster as a whole: the same pick
        scaled = _record([dict(r, us=r["us"] * factor) for r in two["rows"]])
        assert tune.derive_dispatch(tune.combine([one, scaled])[0])["w8a8_wgmma"][0]["instance"] == "b"
    # one record: its rows as they are
    assert tune.combine([one]) == (one["rows"], 0)


def test_combining_keeps_rows_some_records_lack_scaled_by_each_runs_factor_and_refuses_other_setups():
    """Record 2 ran 2x slower as a whole and adds `c`; record 1 alone has `a`.
    Each record's factor is the geometric mean of the rows both timed (b, p):
    c and a keep the order record 2 and record 1 gave them."""
    first = [row("w8a8_wgmma", "a", 64, 4096, 1024, 1.0), row("w8a8_wgmma", "b", 64, 4096, 1024, 2.0),
             row("cublaslt_block", "p", 64, 4096, 1024, 3.0)]
    second = [row("w8a8_wgmma", "b", 64, 4096, 1024, 4.0), row("cublaslt_block", "p", 64, 4096, 1024, 6.0),
              row("w8a8_wgmma", "c", 64, 4096, 1024, 3.2)]
    combined, left_out = tune.combine([_record(first), _record(second)])
    us = {r["kernel"]: r["us"] for r in combined}
    assert left_out == 0 and set(us) == {"a", "b", "c", "p"}
    assert us["b"] == pytest.approx((2.0 * 4.0) ** 0.5) and us["p"] == pytest.approx((3.0 * 6.0) ** 0.5)
    assert us["c"] / us["b"] == pytest.approx(3.2 / 4.0) and us["a"] / us["b"] == pytest.approx(1.0 / 2.0)
    assert tune.derive_dispatch(combined)["w8a8_wgmma"][0]["instance"] == "a"
    with pytest.raises(ValueError, match="torch"):
        tune.combine([_record(first), _record(first, torch="other")])
    with pytest.raises(ValueError):
        tune.combine([])


def test_a_time_on_a_binary_rebuilt_since_is_not_used():
    """Record 1 (commit s1) timed `a` fastest, but `a` was rebuilt since:
    only record 2's time of it counts; `gone` (dropped) is left out; the
    peer counts from both. A merged record's runs name each shape's commit."""
    old = [row("w8a8_wgmma", "a", 64, 4096, 1024, 1.0), row("w8a8_wgmma", "b", 64, 4096, 1024, 2.0),
           row("w8a8_wgmma", "gone", 64, 4096, 1024, 0.1), row("cublaslt_block", "p", 64, 4096, 1024, 3.0)]
    new = [row("w8a8_wgmma", "a", 64, 4096, 1024, 2.4), row("w8a8_wgmma", "b", 64, 4096, 1024, 2.0),
           row("cublaslt_block", "p", 64, 4096, 1024, 3.0)]
    docs = [_record(old, git_sha="s1", runs=[{"git_sha": "s1", "shapes": ["4096x1024"]}]),
            _record(new, git_sha="other", runs=[{"git_sha": "s2", "shapes": ["4096x1024"]}])]
    manifests = {"s1": {"a": "old", "b": "B", "gone": "G"}, "s2": {"a": "A", "b": "B"}}
    read = []
    today = tune.binaries_timed(docs, {"a": "A", "b": "B"}, lambda sha: read.append(sha) or manifests[sha])
    assert [today(0, r) for r in old] == [False, True, False, True] and all(today(1, r) for r in new)
    combined, left_out = tune.combine(docs, today)
    us = {r["kernel"]: r["us"] for r in combined}
    assert left_out == 1 and set(us) == {"a", "b", "p"} and us["a"] == pytest.approx(2.4)
    assert tune.derive_dispatch(combined)["w8a8_wgmma"][0]["instance"] == "b"
    assert sorted(read) == ["s1", "s2"]  # each commit's manifest read once


def test_fast_rows_timed_on_exact_rows_are_not_used():
    """rt.linear gives the fast GEMMs activations padded to 128 rows; a
    record that gave them exactly M rows (no "a_rows": older records) timed
    something else at a partial last tile row, so its fast rows do not count
    (on the same binaries); its other rows and the peers' do."""
    rows = [row("w8a8_wgmma", "a", 200, 4096, 1024, 1.0), row("w8a8_cutlass", "c", 200, 4096, 1024, 1.5),
            row("w8a16_gemm", "g", 200, 4096, 1024, 3.0), row("cublaslt_block", "p", 200, 4096, 1024, 3.0)]
    exact = _record(rows)
    del exact["a_rows"]
    docs = [exact, _record(rows, a_rows="exact"), _record(rows)]
    today = tune.binaries_timed(docs, {"a": "A", "c": "C", "g": "G"}, lambda sha: {"a": "A", "c": "C", "g": "G"})
    for i in (0, 1):
        assert [today(i, r) for r in rows] == [False, False, True, True]
    assert all(today(2, r) for r in rows)


def test_the_manifest_at_a_commit_comes_from_git():
    from runtime.paths import REPO_ROOT

    if not (REPO_ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    head = tune.manifest_at("HEAD", "sm_90a")
    assert head and all(":" in d for d in head.values())
    with pytest.raises(ValueError, match="cannot read"):
        tune.manifest_at("0" * 40, "sm_90a")


def test_tune_combines_several_records_and_refuses_several_to_write(tmp_path, monkeypatch):
    from gen.cli import main

    with pytest.raises(SystemExit, match="several only with --from-record"):
        main(["tune", "--arch", "sm_90a", "--record", str(tmp_path / "a.json"), "--record", str(tmp_path / "b.json")])
    (tmp_path / "a.json").write_text(json.dumps(_record([], timing="kernel")))
    (tmp_path / "b.json").write_text(json.dumps(_record([])))
    with pytest.raises(SystemExit, match="events timing"):
        main(["tune", "--arch", "sm_90a", "--from-record", "--record", str(tmp_path / "b.json"),
              "--record", str(tmp_path / "a.json")])


def test_committed_dispatch_is_what_gen_tune_derives_with_the_wave_model():
    """The whole committed table, the buckets between the measured M
    included, is what the records and [wave_model] give (gen/bench/waves.py;
    the split instances' host shims come from the build)."""
    from gen.bench import waves
    from runtime.errors import LoadError
    from runtime.paths import build_dir

    rows, entries = _committed_rows()
    model = waves.for_arch("sm_90a", entries, build_dir())
    assert model is not None
    try:
        derived, rates = tune.derive_dispatch(rows, model.fill), tune.derive_rates(rows, model)
    except LoadError as e:
        pytest.skip(f"the host shims are not built here: {e}")
    hardware = load_hardware("sm_90a")
    assert derived == hardware.dispatch
    assert rates == hardware.rates and set(rates) == set(tune.RATE_TABLES)


@pytest.mark.parametrize("family", ["w8a8_row", "w8a8_tensor"])
def test_single_scale_tables_rank_shapes_without_rules_better_than_the_class_rule(family):
    """[rates] for the per-row and per-tensor tables: each anchor shape left
    out of the committed records in turn, the wave model's ranking (rules
    and rates derived without it) routes its points at least as close to
    the fastest instance as the class rule does (H200 records: 1.0005x and
    1.0026x the best against 1.0219x and 1.0209x), and within 1 %."""
    import math

    from gen.bench import waves
    from runtime.dispatch import DispatchTable
    from runtime.errors import LoadError
    from runtime.paths import build_dir
    from runtime.waves import Ranker

    rows, entries = _committed_rows()
    try:
        model = waves.for_arch("sm_90a", entries, build_dir())
    except LoadError as e:
        pytest.skip(f"the host shims are not built here: {e}")
    assert family in tune.RATE_TABLES
    byname = {e.name: e for e in entries}
    times = tune._times(rows, family)
    ranked, by_class = [], []
    for left_out in sorted({(n, k) for n, k, _ in times}):
        train = [r for r in rows if not (r["op"] == "gemm" and (r["N"], r["K"]) == left_out)]
        train_times = tune._times(train, family)
        rules = {family: tune._rules(train_times, model.fill)}
        rates = {family: model.rates(train_times, dispatch.shape_class)}
        table = DispatchTable(rules, rates, Ranker(byname, model.sm_count, model.call_cost_us, model.k_split))
        plain = DispatchTable(rules)
        for (n, k, m), t in times.items():
            if (n, k) == left_out:
                assert "rates measured" in table.basis(family, m, n, k)
                ranked.append(t[table.lookup(family, m, n, k)] / min(t.values()))
                by_class.append(t[plain.lookup(family, m, n, k)] / min(t.values()))
    geo = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
    assert len(ranked) >= 200
    assert geo(ranked) <= geo(by_class) and geo(ranked) < 1.01, (geo(ranked), geo(by_class))


def test_tune_refuses_records_that_all_timed_some_instances_only(tmp_path):
    from gen.cli import main

    parts = []
    for name in ("part.json", "part2.json"):
        parts += ["--record", str(tmp_path / name)]
        (tmp_path / name).write_text(json.dumps(_record([], only_instances=["128x256"])))
    with pytest.raises(SystemExit, match="gen bench --instances"):
        main(["tune", "--arch", "sm_90a", "--from-record", parts[0], parts[1]])
    with pytest.raises(SystemExit, match="gen bench --instances"):
        main(["tune", "--arch", "sm_90a", "--from-record", *parts])


def test_a_partial_record_adds_timings_only_where_a_full_record_timed():
    """The full record times a, b and the peer p at M=64 and M=128; the
    partial one (c, a new instance, with the dispatched b and p) at M=64 and
    at M=256, which no full record timed. c joins at M=64 on the full
    record's scale (the partial run was 2x slower as a whole) and wins there;
    M=256 is left out, where a and b were never timed beside c."""
    full = [row("w8a8_wgmma", "a", 64, 4096, 1024, 1.0), row("w8a8_wgmma", "b", 64, 4096, 1024, 2.0),
            row("cublaslt_block", "p", 64, 4096, 1024, 3.0),
            row("w8a8_wgmma", "a", 128, 4096, 1024, 2.0), row("cublaslt_block", "p", 128, 4096, 1024, 5.0)]
    part = [row("w8a8_wgmma", "b", 64, 4096, 1024, 4.0), row("cublaslt_block", "p", 64, 4096, 1024, 6.0),
            row("w8a8_wgmma", "c", 64, 4096, 1024, 1.6), row("w8a8_wgmma", "c", 256, 4096, 1024, 3.0),
            row("cublaslt_block", "p", 256, 4096, 1024, 9.0)]
    docs, dropped = tune.beside_full([_record(full), _record(part, only_instances=["c"])])
    assert dropped == 2 and docs[0]["rows"] == full
    combined, _ = tune.combine(docs)
    us = {(r["kernel"], r["M"]): r["us"] for r in combined}
    assert (("c", 256) not in us) and us[("c", 64)] / us[("a", 64)] == pytest.approx(0.8)
    table = tune.derive_dispatch(combined)["w8a8_wgmma"]
    assert [r["instance"] for r in table if "n" in r] == ["c", "a"]  # the shape's rules: c at M=64, a above


def test_a_record_of_other_points_does_not_undo_the_factors_at_a_point():
    """Records 1 and 2 time point P (record 2 is 2x slower as a whole and
    alone times `c`); record 3 times only another M. At P each record's
    factor still comes from the rows both P-records timed (b, p), so `c`
    keeps its place under `a` that record 2 gave it; record 3 changes nothing
    there. (Before, factors came only from rows all three records timed:
    none, so c's slow run counted against it.)"""
    first = [row("w8a8_wgmma", "a", 64, 4096, 1024, 1.0), row("w8a8_wgmma", "b", 64, 4096, 1024, 2.0),
             row("cublaslt_block", "p", 64, 4096, 1024, 3.0)]
    second = [row("w8a8_wgmma", "b", 64, 4096, 1024, 4.0), row("cublaslt_block", "p", 64, 4096, 1024, 6.0),
              row("w8a8_wgmma", "c", 64, 4096, 1024, 1.8)]
    other_m = [row("w8a8_wgmma", "a", 128, 4096, 1024, 5.0), row("cublaslt_block", "p", 128, 4096, 1024, 7.0)]
    combined, left_out = tune.combine([_record(first), _record(second), _record(other_m)])
    us = {(r["kernel"], r["M"]): r["us"] for r in combined}
    assert left_out == 0
    assert us[("c", 64)] / us[("b", 64)] == pytest.approx(1.8 / 4.0)
    assert us[("a", 64)] / us[("b", 64)] == pytest.approx(1.0 / 2.0)
    assert us[("a", 128)] == pytest.approx(5.0)
    assert tune.derive_dispatch(combined)["w8a8_wgmma"][0]["instance"] == "c"


def test_point_factors_link_records_that_share_rows_pairwise_only():
    """Three records at one point, each 2x the last as a whole; 1 and 2
    share `x`, 2 and 3 share `y`, no row is in all three. The fit carries
    the factors along the chain, so `z` (record 3 only) and `w` (record 1
    only) compare as if one run had timed them: z = 3.0 in record 3 is 0.75
    of y there, w = 1.5 in record 1 is 1.5x x there."""
    times = {"w": {0: 1.5}, "x": {0: 1.0, 1: 2.0}, "y": {1: 4.0, 2: 8.0}, "z": {2: 6.0}}
    us = tune.point_times(times)
    assert us["w"] / us["x"] == pytest.approx(1.5)
    assert us["y"] / us["x"] == pytest.approx(2.0)
    assert us["z"] / us["y"] == pytest.approx(0.75)


def test_tune_refuses_records_that_would_drop_a_table_or_are_of_another_arch(tmp_path, monkeypatch):
    """Everything below HARDWARE.toml's tune marker is rewritten: records that
    time no instance for a table it has would leave that table out (an empty
    record once wrote an empty [dispatch] and exited 0). Nothing is written."""
    from gen.cli import main

    written = []
    monkeypatch.setattr(tune, "write_tuned", lambda path, text: written.append(path))
    record = tmp_path / "r.json"
    record.write_text(json.dumps(_record([])))
    with pytest.raises(SystemExit, match=r"dispatch table\(s\) .*w8a8_fast.* would drop those tables"):
        main(["tune", "--arch", "sm_90a", "--from-record", "--record", str(record)])
    record.write_text(json.dumps(_record([], arch="sm_89")))
    with pytest.raises(SystemExit, match="measured on sm_89, not --arch sm_90a"):
        main(["tune", "--arch", "sm_90a", "--from-record", "--record", str(record)])
    assert not written


def test_tune_from_record_alone_writes_the_committed_file_again(monkeypatch, capsys):
    """Without --record, `gen tune --from-record` reads the records [tuned]
    lists: what it writes is HARDWARE.toml as committed (nothing is written
    here; the text it would write is compared)."""
    from gen.cli import main
    from runtime.paths import build_dir

    _committed_rows()  # (skips without git history)
    if not any((build_dir() / "sm_90a").glob("*.so")):
        pytest.skip("the host shims are not built here (the wave model loads the split instances')")
    written = {}
    monkeypatch.setattr(tune, "write_tuned", lambda path, text: written.update(path=path, text=text))
    assert main(["tune", "--arch", "sm_90a", "--from-record"]) == 0
    current = hardware_toml("sm_90a").read_text()
    assert written["path"] == hardware_toml("sm_90a")
    assert current.split(tune.MARKER)[0] + written["text"] == current
