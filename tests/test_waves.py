"""Layer 1: gen tune's model between measured M (gen/bench/waves.py): round
counts per tile shape, pairs, cluster K splits and split tails, and the
buckets it fills in."""
import dataclasses

from gen.bench import tune, waves
from runtime import dispatch
from runtime.manifest import KernelEntry

SMS = 132


def entry(name, tile_m, tile_n, k_slices=1, cluster=(1, 1, 1), cluster_k=1, shim=True):
    c = {"tile_m": tile_m, "tile_n": tile_n, "k_slices": k_slices}
    if cluster_k > 1:
        c["cluster_k"] = cluster_k
    return KernelEntry(family="w8a8_wgmma", name=name, symbol=name, abi=(), threads=384, cluster=cluster,
                       static_smem=0, dynamic_smem=0, registers=0, spill_bytes=0, stack_bytes=0, params={},
                       constraints=c, source="", source_sha256="", cubin="", cubin_sha256="",
                       shim="x.so" if shim else "")


def test_rounds_count_whole_waves_of_tiles():
    e = entry("t128", 128, 128)
    assert waves.rounds(e, 128, 7168, 16384, SMS) == 1.0      # 56 tiles
    assert waves.rounds(e, 300, 7168, 16384, SMS) == 2.0      # 3 x 56 = 168 tiles
    assert waves.rounds(e, 256, 128 * 66, 4096, SMS) == 1.0   # exactly one wave
    assert waves.rounds(e, 257, 128 * 66, 4096, SMS) == 2.0


def test_rounds_of_pairs_cluster_k_splits_and_split_tails():
    pair_m = entry("pair", 128, 256, cluster=(2, 1, 1))
    # 3 tile rows: the pair along M covers 4 (its second CTA idles on the last)
    assert waves.rounds(pair_m, 384, 256 * 40, 4096, SMS) == 2.0  # 4 x 40 = 160 tiles
    ck2 = entry("ck2", 64, 64, cluster=(2, 1, 1), cluster_k=2)
    assert waves.rounds(ck2, 64, 64 * 66, 4096, SMS) == 0.5    # 66 tiles on 132 CTAs, each half a tile
    split = entry("x4", 128, 128, k_slices=4)
    # 2 full waves and 4 tiles left; the shim cuts them into 4 slices of 14 of 56 K blocks
    got = waves.rounds(split, 1042, 128 * 33, 7168, SMS, k_split=lambda m, n, k, s: (4, 264))
    assert got == 2 + (14 + waves.SPLIT_TAIL_BLOCKS + 3) / 56
    # the shim declines to split: a whole last round
    assert waves.rounds(split, 1042, 128 * 33, 7168, SMS, k_split=lambda m, n, k, s: (1, 268)) == 3.0


def test_fill_in_predicts_from_the_next_measured_m_by_rounds():
    """N = 132 tile columns of 128: the 128-row tile takes one round per
    tile row, the 64-row one one round per 64 rows. Measured, the wide tile
    wins at M = 128 and 256; at the unmeasured 64 and 192 the narrow one
    needs fewer rounds than at its reference M and is predicted faster."""
    wide, narrow = entry("wide", 128, 128), entry("narrow", 64, 128)
    n, k = 128 * 132, 4096
    measured = {128: {"wide": 10.0, "narrow": 10.5}, 256: {"wide": 19.0, "narrow": 20.0}}
    entries = {"wide": wide, "narrow": narrow}
    picks = waves.fill_in(measured, n, k, entries, SMS, 2.0, lambda e: None)
    assert set(picks) == {64, 192}
    # M = 192 from 256: wide 2 rounds both (19.0); narrow 3 of 4 rounds: 2 + 18 * 3 / 4 = 15.5
    assert picks[192] == "narrow"
    # M = 64 from 128: wide 1 round both (10.0); narrow 1 of 2: 2 + 8.5 / 2 = 6.25
    assert picks[64] == "narrow"
    est = waves.predict(measured[256], 256, 192, n, k, entries, SMS, 2.0, lambda e: None)
    assert est == {"wide": 19.0, "narrow": 15.5}


def test_fill_in_leaves_instances_it_cannot_model_out():
    measured = {256: {"persistent": 20.0, "other": 5.0}}
    entries = {"persistent": entry("persistent", 128, 128), "other": entry("other", 64, 64, shim=False)}
    picks = waves.fill_in(measured, 8448, 4096, entries, SMS, 2.0, lambda e: None)
    assert set(picks.values()) == {"persistent"}


def test_derive_dispatch_keeps_measured_winners_and_fills_buckets_between():
    n, k = 128 * 132, 4096
    rows = []
    for M, (a, b) in {128: (10.0, 10.5), 256: (19.0, 20.0)}.items():
        rows += [dict(op="gemm", impl="w8a8_wgmma", kernel=name, M=M, N=n, K=k, us=us, tflops=None,
                      tbps=None, roofline_tflops=None) for name, us in (("wide", a), ("narrow", b))]
    entries = {"wide": entry("wide", 128, 128), "narrow": entry("narrow", 64, 128)}

    def fill(measured, n_, k_):
        return waves.fill_in(measured, n_, k_, entries, SMS, 2.0, lambda e: None)
    exact = lambda table: [(r["m_max"], r["instance"]) for r in table["w8a8_wgmma"] if r.get("n")]
    assert exact(tune.derive_dispatch(rows, fill)) == [(64, "narrow"), (128, "wide"), (192, "narrow"),
                                                       (tune.LAST_BUCKET, "wide")]
    # without the model, the measured M alone make the buckets
    assert exact(tune.derive_dispatch(rows)) == [(tune.LAST_BUCKET, "wide")]
    d = {"w8a8_wgmma": [r for r in tune.derive_dispatch(rows, fill)["w8a8_wgmma"] if r.get("n")]}
    assert dispatch.lookup(d, "w8a8_wgmma", 150, n, k) == "narrow"
    assert dispatch.lookup(d, "w8a8_wgmma", 200, n, k) == "wide"


def test_a_shape_without_rules_is_ranked_by_predicted_time():
    """The class rule picks one instance for every shape of the class; the
    rates rank by each instance's rounds at the call's own N."""
    from runtime.dispatch import DispatchTable
    from runtime.waves import Ranker

    wide, narrow = entry("wide", 128, 128), entry("narrow", 64, 128)
    fixed = entry("fixed", 64, 64)
    fixed = dataclasses.replace(fixed, constraints={**fixed.constraints, "fixed_n": 4096, "fixed_k": 4096})
    rules = {"w8a8_fast": [{"shape_class": "widening", "m_max": tune.LAST_BUCKET, "instance": "wide"},
                           {"n": 8448, "k": 4096, "m_max": tune.LAST_BUCKET, "instance": "narrow"}]}
    # per round-block: the wide tile twice the narrow one's (twice the MMA work per tile)
    rates = {"w8a8_fast": [{"shape_class": "widening", "m": 256,
                            "us": {"wide": 0.2, "narrow": 0.1, "fixed": 0.01}}]}
    ranker = Ranker({e.name: e for e in (wide, narrow, fixed)}, SMS, 2.0, lambda e: None)
    table = DispatchTable(rules, rates, ranker)
    # N = 132 x 128 at M = 128: wide 1 round (2 + 0.2 x 32), narrow 2 rounds (2 + 0.1 x 2 x 32): a tie -> name
    n, k = 128 * 132, 4096
    assert ranker.estimate(rates["w8a8_fast"][0]["us"], 128, n, k, lambda e: True)["wide"] == 2 + 0.2 * 32
    # M = 64: narrow 1 round (2 + 3.2) against wide 1 round (2 + 6.4)
    assert table.lookup("w8a8_fast", 64, n, k) == "narrow"
    # M = 192 on N = 66 x 128: wide 132 tiles, 1 round (8.4); narrow 198 tiles, 2 rounds (8.4): tie -> name order
    assert table.lookup("w8a8_fast", 192, 128 * 66, k) == "narrow"
    # M = 256 on N = 66 x 128: wide 1 round (8.4), narrow 264 tiles, 2 rounds (8.4)
    # on N = 67 x 128: wide 134 tiles -> 2 rounds (14.8), narrow 268 -> 3 rounds (11.6)
    assert table.lookup("w8a8_fast", 256, 128 * 67, k) == "narrow"
    # the shape-specialized instance runs only its own shape, never a ranked pick elsewhere
    assert "fixed" not in {table.lookup("w8a8_fast", m, n, k) for m in (16, 64, 256, 4096)}
    # a shape with its own rules keeps them; a table without rates keeps its class rule
    assert table.lookup("w8a8_fast", 64, 8448, 4096) == "narrow"
    assert DispatchTable(rules).lookup("w8a8_fast", 64, n, k) == "wide"
    assert "rates measured at M=256" in table.basis("w8a8_fast", 64, n, k)
    assert "the rule for n=8448" in table.basis("w8a8_fast", 64, 8448, 4096)
    assert "class rule" in DispatchTable(rules).basis("w8a8_fast", 64, n, k)
