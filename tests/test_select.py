"""Layer 1: the selection rule, clause by clause, weight formats and their
guards, the route ledger and log, and `gen explain`'s golden outputs."""
import dataclasses
import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from runtime import select
from runtime.env import Knobs, read_environment
from runtime.errors import ValidationError
from runtime.paths import REPO_ROOT
from runtime.route import RouteLedger
from runtime.tensors import DeviceArray
from runtime.weights import BLOCK, ROW, TENSOR, FormatError, Fp8Weight, bad_scale_values, classify

GOLDEN = Path(__file__).resolve().parent / "golden"


@pytest.fixture(scope="module")
def entries(sm90a_entries):
    """sm_90a without its fast family: the in-tree arm's rule."""
    return {k: v for k, v in sm90a_entries.items() if k not in select.FAST_FAMILIES}


def test_a_built_fast_family_takes_the_w8a8_route(sm90a_entries):
    d = select.decide(949, 17408, 5120, weight_format="block", knobs=Knobs(), levers=select.Levers(),
                      available=select.Availability(quantizer=True, scratch=True), entries=sm90a_entries,
                      arch="sm_90a")
    assert d.arm == select.ARM_W8A8_FAST and d.family in select.FAST_FAMILIES


@pytest.mark.parametrize("family", select.FAST_FAMILIES)
def test_the_cross_family_table_picks_the_fast_instance(sm90a_entries, family):
    """gen tune's w8a8_fast table names the fastest instance of either fast
    family; the decision follows it (and a name that is not built is skipped)."""
    name = sm90a_entries[family][-1].name
    table = {select.FAST_TABLE: [{"n": 17408, "k": 5120, "m_max": 2**31 - 1, "instance": name}]}
    d = select.decide(949, 17408, 5120, weight_format="block", knobs=Knobs(), levers=select.Levers(),
                      available=select.Availability(quantizer=True, scratch=True), entries=sm90a_entries,
                      arch="sm_90a", dispatch=table)
    assert d.instance == name and d.family == family
    table[select.FAST_TABLE][0]["instance"] = "w8a8_wgmma_not_built_sm90a"
    d = select.decide(949, 17408, 5120, weight_format="block", knobs=Knobs(), levers=select.Levers(),
                      available=select.Availability(quantizer=True, scratch=True), entries=sm90a_entries,
                      arch="sm_90a", dispatch=table)
    assert d.arm == select.ARM_W8A8_FAST and d.family in select.FAST_FAMILIES


def decide(entries, m=949, n=17408, k=5120, **over):
    args = dict(weight_format="block", knobs=Knobs(), levers=select.Levers(),
                available=select.Availability(quantizer=True, scratch=True), entries=entries, arch="sm_90a")
    args.update(over)
    return select.decide(m, n, k, **args)


def test_tile_rule_prefers_one_cta_over_a_cluster_of_the_same_tile(sm90a_entries):
    """Without a table row the tile rule picks by tile height and width; a
    2-CTA pair along M would idle one CTA where one tile row covers m."""
    from runtime.dispatch import pick_tile

    fam = sm90a_entries["w8a8_wgmma"]
    picked = pick_tile(fam, 100)
    assert tuple(picked.cluster) == (1, 1, 1), picked.name
    twins = [e for e in fam if (e.constraints["tile_m"], e.constraints["tile_n"]) ==
             (picked.constraints["tile_m"], picked.constraints["tile_n"])]
    assert any(tuple(e.cluster) != (1, 1, 1) for e in twins), "the table has a clustered twin of that tile"
    # reversed candidate order gives the same pick (the sort, not the order, decides)
    assert pick_tile(list(reversed(fam)), 100).name == picked.name


def test_every_clause_holding_gives_w8a8(entries):
    d = decide(entries)
    assert d.w8a8 and d.arm == select.ARM_W8A8_IN_TREE and d.failed is None
    assert d.instance.startswith("w8a8_mma_") and d.instance.endswith("sm90a")


FLIPS = {
    "kill_switch": dict(knobs=Knobs(w8a16_only=True)),
    "m_above_gemv": dict(m=4),
    "m_within_lever": dict(levers=select.Levers(max_m_widening=512)),
    "block_scaled_enabled": dict(knobs=Knobs(fp8_single_scale=True)),
    "k_multiple_of_128": dict(k=5120 + 64),
    "n_multiple_of_128": dict(n=2112),
    "kernels_loaded": dict(available=select.Availability(quantizer=True, scratch=False)),
}


@pytest.mark.parametrize("clause", sorted(FLIPS))
def test_each_clause_flipped_alone_flips_the_decision(entries, clause):
    d = decide(entries, **FLIPS[clause])
    assert not d.w8a8
    assert [c.name for c in d.clauses if not c.holds] == [clause]
    assert d.arm == (select.ARM_W8A16_GEMV if clause == "m_above_gemv" else select.ARM_W8A16_GEMM)


def test_levers_split_widening_and_narrowing(entries):
    levers = select.Levers(max_m_widening=1024, max_m_narrowing=128)
    assert decide(entries, m=1024, levers=levers).w8a8                      # widening, at the cap
    assert not decide(entries, m=1025, levers=levers).w8a8                  # widening, past it
    assert not decide(entries, m=129, n=5120, k=17408, levers=levers).w8a8  # narrowing uses its own
    assert decide(entries, m=129, n=5120, k=17408, levers=select.Levers(max_m_widening=1)).w8a8  # absent: no cap
    assert select.Levers.from_defaults({"w8a8_prefill_max_m_narrowing": 7}).lever_for(1, 2) == (
        "w8a8_prefill_max_m_narrowing", 7)


@pytest.mark.parametrize("value", ["", "0", "1", "false"])
def test_kill_switch_presence_semantics(value):
    assert read_environment({"FP8GEN_W8A16_ONLY": value}).w8a16_only
    assert read_environment({"FP8GEN_FP8_SINGLE_SCALE": value}).fp8_single_scale
    assert not read_environment({}).w8a16_only


def test_knobs_override_without_touching_environ():
    from runtime import env

    environ, knobs = dict(os.environ), env.knobs()
    with env.override(w8a16_only=not knobs.w8a16_only):
        assert env.knobs().w8a16_only != knobs.w8a16_only
    assert env.knobs() == knobs and dict(os.environ) == environ


def test_shards(entries):
    d = decide(entries, n=17408, k=5120, tp=2)  # column: n/2 = 8704
    assert d.w8a8 and (d.shard.n, d.shard.k) == (8704, 5120)
    d = decide(entries, n=2048, k=7168, tp=4, parallel="column")  # 512: fine
    assert d.w8a8
    d = decide(entries, n=2112, k=7168, tp=2)  # 1056 breaks the 128 rule
    assert d.failed.name == "n_multiple_of_128" and "column-parallel shard of tp=2" in d.failed.reason
    d = decide(entries, n=7168, k=18432, tp=48, parallel="row")  # k/48 = 384
    assert d.w8a8 and d.shard.k == 384
    d = decide(entries, n=7168, k=2048 * 3, tp=32, parallel="row")  # 192
    assert d.failed.name == "k_multiple_of_128" and "row-parallel shard of tp=32: k/32" in d.explain()
    with pytest.raises(ValidationError, match="does not split"):
        decide(entries, n=17408, k=5120, tp=3)


def test_fast_instance_constraints_come_from_its_manifest_entry(entries):
    fast = dataclasses.replace(entries["w8a8_mma"][0], family="w8a8_wgmma", name="w8a8_wgmma_fake_sm90a",
                               constraints={"m_align": 64, "writes_padded_m": True, "scale_mn_major": True})
    with_fast = {**entries, "w8a8_wgmma": [fast]}
    assert decide(with_fast, m=100, out_rows=128).arm == select.ARM_W8A8_FAST
    d = decide(with_fast, m=100, out_rows=100)  # writes 128 rows, room for 100
    assert d.arm == select.ARM_W8A8_IN_TREE and "output_room" in d.fast_clauses[0].reason
    no_adapter = {k: v for k, v in with_fast.items() if k != "scale_mn_major"}
    assert decide(no_adapter, m=100, out_rows=128).arm == select.ARM_W8A8_IN_TREE


def test_no_w8a16_instance_where_the_kernels_cannot_run(entries):
    no_scalar = {f: e for f, e in entries.items() if f not in ("w8a8_tensor", "quant_tensor")}
    d = decide(no_scalar, weight_format="tensor")
    assert d.instance is None and not d.w8a8 and "no route" in d.notes[0]
    assert decide(entries, k=5120 + 64).instance is None


@pytest.mark.parametrize("fmt,arm,family", [("tensor", select.ARM_W8A8_TENSOR, "w8a8_tensor"),
                                            ("row", select.ARM_W8A8_ROW, "w8a8_row")])
def test_single_scale_formats_take_their_own_w8a8_arm(entries, fmt, arm, family):
    """PerTensor / PerRow weights never reach a block-scaled kernel: they route
    to their arm when its quantizer, GEMM and scratch exist, and every other
    way get no route, naming the failed clause."""
    d = decide(entries, weight_format=fmt)
    assert d.arm == arm and d.w8a8 and d.family == family
    for over, failed in ((dict(knobs=Knobs(w8a16_only=True)), "kill_switch"), (dict(k=5120 + 64), "k_multiple_of_128"),
                         (dict(n=2116), "n_multiple"),
                         (dict(available=select.Availability(quantizer=True, scratch=False)), "kernels_loaded")):
        d = decide(entries, weight_format=fmt, **over)
        assert not d.w8a8 and d.instance is None and [c.name for c in d.clauses if not c.holds] == [failed]
    # the block-scaled kill switch for prefill does not govern single-scale weights
    assert decide(entries, weight_format=fmt, knobs=Knobs(fp8_single_scale=True)).arm == arm


# -- weight formats -----------------------------------------------------------
def test_scale_shape_decides_the_format():
    assert classify(17408, 5120, (136, 40)) == BLOCK
    assert classify(2112, 7168, (17, 56)) == BLOCK
    assert classify(17408, 5120, (17408,)) == ROW and classify(17408, 5120, (17408, 1)) == ROW
    assert classify(17408, 5120, ()) == TENSOR and classify(17408, 5120, (1,)) == TENSOR
    with pytest.raises(ValidationError, match="fits no format"):
        classify(17408, 5120, (136, 41))
    with pytest.raises(ValidationError, match="ambiguous"):
        classify(1, 128, (1, 1))  # a 1x1 block grid or one row's scale
    assert classify(1, 128, (1, 1), declared=ROW) == ROW
    with pytest.raises(FormatError):
        classify(17408, 5120, (136, 40), declared=ROW)


def _weight(fmt):
    n, k = 256, 512
    shape = {BLOCK: (2, 4), ROW: (n,), TENSOR: ()}[fmt]
    return Fp8Weight.from_checkpoint(DeviceArray.raw(1 << 32, (n, k), "e4m3"),
                                     DeviceArray.raw(1 << 33, shape, "f32"), check_values=False)


@pytest.mark.parametrize("have", [BLOCK, ROW, TENSOR])
@pytest.mark.parametrize("want", [BLOCK, ROW, TENSOR])
def test_format_crossing_is_refused_for_every_pair(have, want):
    w = _weight(have)
    assert w.format == have
    if have == want:
        assert w.expect(want, "op") is w
    else:
        with pytest.raises(FormatError) as info:
            w.expect(want, "some_op")
        assert select.FORMATS[have] in str(info.value) and select.FORMATS[want] in str(info.value)


def test_bad_scale_values_are_named():
    assert bad_scale_values(np.array([1.0, 2.0], np.float32)) is None
    assert "NaN" in bad_scale_values(np.array([1.0, np.nan], np.float32))
    assert "infinite" in bad_scale_values(np.array([np.inf], np.float32))
    assert "non-positive" in bad_scale_values(np.array([0.0, 1.0], np.float32))
    with pytest.raises(ValidationError, match="needs rt="):
        Fp8Weight.from_checkpoint(DeviceArray.raw(1 << 32, (256, 512), "e4m3"),
                                  DeviceArray.raw(1 << 33, (2, 4), "f32"))


# -- the ledger and the log ------------------------------------------------------
def test_ledger_counts_and_logs_each_route_once(entries, caplog):
    ledger = RouteLedger()
    caplog.set_level(logging.INFO, logger="fp8gen.route")
    for _ in range(3):
        ledger.entry()
        ledger.record(decide(entries))
    ledger.entry()
    ledger.record(decide(entries, knobs=Knobs(w8a16_only=True)))
    ledger.entry()
    ledger.record(decide(entries, m=2))
    ledger.entry()
    ledger.record(decide(entries, weight_format="row"))
    ledger.entry()
    ledger.record(decide(entries, weight_format="row", knobs=Knobs(w8a16_only=True)))
    snap = ledger.snapshot()
    assert snap["entries"] == 7 and snap["gate_off"] == 2 and snap["small_m"] == 1
    assert snap["hits"] == {select.ARM_W8A8_IN_TREE: 3, select.ARM_W8A16_GEMM: 2, select.ARM_W8A16_GEMV: 1,
                            select.ARM_W8A8_ROW: 1}
    assert snap["refusals"] == {"kill_switch": 2, "m_above_gemv": 1}
    lines = [r.getMessage() for r in caplog.records]
    assert sum("W8A8 in-tree" in line for line in lines) == 1
    assert any("W8A16 GEMM" in line and "kill_switch failed" in line for line in lines)
    assert len(lines) == 5


# -- gen explain --------------------------------------------------------------------
def _explain(args, **env_over):
    env = {k: v for k, v in os.environ.items() if not k.startswith("FP8GEN_")}
    env.update(env_over)
    out = subprocess.run([sys.executable, "-m", "gen", "explain", "--arch", "sm_90a", *args], cwd=REPO_ROOT,
                         env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.parametrize("golden,args,env", [
    ("explain_w8a8.txt", ["--m", "949", "--n", "17408", "--k", "5120"], {}),
    ("explain_gemv.txt", ["--m", "4", "--n", "17408", "--k", "5120"], {}),
    ("explain_kill_switch.txt", ["--m", "949", "--n", "17408", "--k", "5120"], {"FP8GEN_W8A16_ONLY": ""}),
])
def test_explain_golden(golden, args, env):
    assert _explain(args, **env) == (GOLDEN / golden).read_text()


def test_a_shape_specialized_instance_serves_only_its_own_shape(sm90a_entries):
    """An instance built with N and K fixed: named by a table row for its
    shape, it runs; a class rule or the tile rule never sends it another
    shape (its host shim would refuse it)."""
    from runtime.dispatch import choose, fits_shape

    fam = sm90a_entries["w8a8_wgmma"]
    e = next(x for x in fam if x.constraints.get("fixed_n") == 7168 and x.constraints.get("fixed_k") == 2048
             and x.constraints["tile_m"] == 64)
    assert fits_shape(e, 7168, 2048) and not fits_shape(e, 7168, 1024) and not fits_shape(e, 0, 0)
    rows = [{"n": 7168, "k": 2048, "m_max": 2**31 - 1, "instance": e.name},
            {"shape_class": "widening", "m_max": 2**31 - 1, "instance": e.name}]
    assert choose(fam, {"w8a8_wgmma": rows}, 64, 7168, 2048).name == e.name
    assert not choose(fam, {"w8a8_wgmma": rows}, 64, 7168, 1024).constraints.get("fixed_n")
    for m in (1, 64, 1000):
        for n, k in ((7168, 1024), (4096, 4096), (7168, 2048)):
            assert not choose(fam, {}, m, n, k).constraints.get("fixed_n")  # generic first, even at its shape
    twin = next(x for x in fam if x.name == e.name.replace("_for7168x2048", ""))
    assert choose([e, twin], {}, 64, 7168, 2048).name == twin.name  # whatever the order
    with pytest.raises(ValidationError, match="no w8a8_wgmma instance runs n=7168, k=1024"):
        choose([e], {}, 64, 7168, 1024)  # only specialized instances, none for this shape
    table = {select.FAST_TABLE: rows}
    assert decide(sm90a_entries, m=64, n=7168, k=2048, dispatch=table).instance == e.name
    d = decide(sm90a_entries, m=64, n=7168, k=1024, dispatch=table)
    assert d.arm == select.ARM_W8A8_FAST and d.instance != e.name


def test_explain_names_the_ranking_for_a_shape_without_rules():
    """A shape the table has no rule for: explain says the fast arm's pick
    came from the class rates scaled by rounds, and lists the predictions."""
    out = _explain(["--m", "700", "--n", "12288", "--k", "4096"])
    assert "table: w8a8_fast: no rule for n=12288 k=4096; the widening instances' rates measured at M=" in out
    predicted = [line for line in out.splitlines() if line.startswith("  predicted ")]
    assert 1 <= len(predicted) <= 5
    picked = next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("instance: "))
    assert predicted[0].endswith(picked)
