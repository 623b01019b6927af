"""Layer 1: specs, names, and the refusals of impossible instances."""
import dataclasses
import re

import pytest

from gen import catalog
from gen.catalog import W8A8MmaSpec, W8A8WgmmaSpec, specs_for
from runtime.hardware import load_hardware
from runtime.errors import CatalogError
from runtime.paths import ARCHES
from twins import BASES, twins_with_bases

FAMILIES = {"quant_group", "quant_silu_mul", "scale_mn_major", "fp8_dequant", "quant_tensor", "quant_token",
            "nvfp4_to_fp8", "w8a8_mma", "w8a8_cutlass", "w8a8_wgmma", "w8a8_row", "w8a8_tensor", "w8a16_gemm",
            "w8a16_gemv"}


def test_sm90a_lists_every_family():
    assert {s.family for s in specs_for("sm_90a")} == FAMILIES


def test_cutlass_tiles_the_collective_cannot_hold_are_refused():
    from gen.catalog import W8A8CutlassSpec

    hw = load_hardware("sm_90a")
    with pytest.raises(CatalogError, match="divide 128"):
        W8A8CutlassSpec(arch="sm_90a", tile_n=256).check(hw)
    with pytest.raises(CatalogError, match="two warpgroups"):
        W8A8CutlassSpec(arch="sm_90a", tile_m=64).check(hw)
    with pytest.raises(CatalogError, match="needs wgmma"):
        W8A8CutlassSpec(arch="sm_89").check(load_hardware("sm_89"))


def test_sm100a_has_no_emulated_mma():
    assert "w8a8_mma" not in {s.family for s in specs_for("sm_100a")}


@pytest.mark.parametrize("arch", ARCHES)
def test_names_are_deterministic_unique_filename_safe(arch):
    first = [s.name for s in specs_for(arch)]
    assert first == [s.name for s in specs_for(arch)]
    assert len(set(first)) == len(first)
    for name in first:
        assert re.fullmatch(r"[a-z0-9_]+", name)
        assert name.endswith("_" + arch.replace("_", ""))


def test_equality_and_hash_follow_the_name():
    a = W8A8MmaSpec(arch="sm_90a", bm=128, bn=128, warps_m=2, warps_n=4, stages=4)
    b = W8A8MmaSpec(arch="sm_90a", bm=128, bn=128, warps_m=2, warps_n=4, stages=4)
    c = dataclasses.replace(a, stages=3)
    assert a == b and hash(a) == hash(b) and a != c
    assert a.name == "w8a8_mma_e4m3e4m3_bf16_128x128x128_w2x4_s4_sm90a"


def test_abi_kinds_come_from_the_signature():
    spec = specs_for("sm_90a")[0]
    assert all(kind in ("ptr", "i32", "f32") for _, kind in spec.abi)
    assert [n for n, _ in spec.abi] == [n for n, _ in spec.abi_ctypes]


@pytest.mark.parametrize("arch", ARCHES)
def test_every_instance_fits_its_arch(arch):
    hw = load_hardware(arch)
    for spec in specs_for(arch):
        assert spec.dynamic_smem <= hw.max_dynamic_smem


def test_too_much_shared_memory_is_refused():
    hw = load_hardware("sm_89")
    with pytest.raises(CatalogError, match="shared memory"):
        W8A8MmaSpec(arch="sm_89", bm=128, bn=128, warps_m=2, warps_n=4, stages=4).check(hw)


def test_bad_tiles_are_refused():
    hw = load_hardware("sm_90a")
    with pytest.raises(CatalogError, match="divide 128"):
        W8A8MmaSpec(arch="sm_90a", bm=128, bn=256, warps_m=2, warps_n=4, stages=2).check(hw)
    with pytest.raises(CatalogError, match="multiples of 16"):
        W8A8MmaSpec(arch="sm_90a", bm=48, bn=128, warps_m=2, warps_n=4, stages=2).check(hw)


def test_wgmma_k_split_needs_stages_in_whole_turns():
    """Each K-split warpgroup must wait on every phase of the stages it
    reads (a parity wait cannot tell a phase from the one two back)."""
    hw = load_hardware("sm_90a")
    W8A8WgmmaSpec(arch="sm_90a", bm=64, bn=128, stages=6, ksplit=2).check(hw)
    with pytest.raises(CatalogError, match="multiple of ksplit"):
        W8A8WgmmaSpec(arch="sm_90a", bm=64, bn=128, stages=7, ksplit=2).check(hw)
    with pytest.raises(CatalogError, match="multiple of ksplit"):
        W8A8WgmmaSpec(arch="sm_90a", bm=64, bn=32, stages=10, ksplit=4).check(hw)
    for spec in specs_for("sm_90a"):
        if isinstance(spec, W8A8WgmmaSpec):
            assert spec.stages % spec.ksplit == 0, spec.name


def test_wgmma_chunks_clusters_and_output_boxes_are_checked():
    hw = load_hardware("sm_90a")
    ok = W8A8WgmmaSpec(arch="sm_90a", bm=128, bn=256, stages=4, n_chunks=2, cluster_m=2, out_boxes=1)
    ok.check(hw)
    assert ok.name.endswith("_s4_g16_n2_c2x1_o1_sm90a")
    # 128 total + one 64-register temporary fits; two do not
    W8A8WgmmaSpec(arch="sm_90a", bm=128, bn=256, stages=3, n_chunks=2).check(hw)
    with pytest.raises(CatalogError, match="accumulator registers"):
        W8A8WgmmaSpec(arch="sm_90a", bm=128, bn=256, stages=3, n_chunks=2, temps=2).check(hw)
    # two math warpgroups take the wide budget past 192: 136 columns with two
    # temporaries (204) fit it, 144 (216) do not; one warpgroup keeps 240
    W8A8WgmmaSpec(arch="sm_90a", bm=128, bn=136, stages=5, temps=2).check(hw)
    for bm, bn in ((128, 144), (64, 136)):
        with pytest.raises(CatalogError, match="accumulator registers"):
            W8A8WgmmaSpec(arch="sm_90a", bm=bm, bn=bn, stages=5, temps=2).check(hw)
    with pytest.raises(CatalogError, match="n_chunks"):
        W8A8WgmmaSpec(arch="sm_90a", bm=64, bn=128, stages=6, ksplit=2, n_chunks=2).check(hw)
    with pytest.raises(CatalogError, match="1x1, 2x1 or 1x2"):
        W8A8WgmmaSpec(arch="sm_90a", bm=128, bn=128, cluster_m=2, cluster_n=2).check(hw)
    with pytest.raises(CatalogError, match="without a K split"):
        W8A8WgmmaSpec(arch="sm_90a", bm=64, bn=64, stages=10, temps=2, kslices=2, cluster_n=2).check(hw)
    with pytest.raises(CatalogError, match="halves the W box"):
        W8A8WgmmaSpec(arch="sm_90a", bm=128, bn=136, stages=4, cluster_m=2).check(hw)
    with pytest.raises(CatalogError, match="out_boxes"):
        W8A8WgmmaSpec(arch="sm_90a", bm=128, bn=192, stages=4, out_boxes=2).check(hw)
    # the staging shrinks with out_boxes: 4 stages of 128x256 fit only so
    assert ok.dynamic_smem <= hw.max_dynamic_smem
    with pytest.raises(CatalogError, match="shared memory|smem"):
        W8A8WgmmaSpec(arch="sm_90a", bm=128, bn=256, stages=4, n_chunks=2).check(hw)


def test_walk_along_m_is_named_and_rendered():
    """walk_m is its own instance (_gm<group_n>) and reaches the kernel's
    Config; the default walk renders exactly as before (the committed
    sources of every other instance stay byte-identical)."""
    from gen.render import render

    hw = load_hardware("sm_90a")
    walk = W8A8WgmmaSpec(arch="sm_90a", bm=128, bn=128, stages=5, temps=2, walk_m=True)
    walk.check(hw)
    plain = W8A8WgmmaSpec(arch="sm_90a", bm=128, bn=128, stages=5, temps=2)
    assert walk.name.endswith("_s5_gm16_t2_sm90a") and plain.name.endswith("_s5_g16_t2_sm90a")
    assert "1, 1, 0, 0, 0, 1, true>;" in render(walk)
    assert "true>" not in render(plain) and "1, 1, 0>;" in render(plain)


def test_weight_scales_in_the_stage_are_named_sized_and_rendered():
    """ws_stage is its own instance (_ws): 16 bytes more per stage's scale
    slot (rounded to 128), the flag reaches Config, other renders are as
    before, and the per-row / per-tensor families refuse it."""
    from gen.catalog import W8A8RowSpec
    from gen.render import render

    hw = load_hardware("sm_90a")
    ws = W8A8WgmmaSpec(arch="sm_90a", bm=128, bn=128, stages=5, temps=2, kslices=4, ws_stage=True)
    ws.check(hw)
    plain = W8A8WgmmaSpec(arch="sm_90a", bm=128, bn=128, stages=5, temps=2, kslices=4)
    assert ws.name.endswith("_s5_g16_t2_x4_ws_sm90a") and plain.name.endswith("_s5_g16_t2_x4_sm90a")
    assert ws.dynamic_smem - plain.dynamic_smem == 5 * 128  # 512 + 16 bytes -> 640 per stage
    assert "1, 1, 0, 0, 0, 1, false, true>;" in render(ws) and "1, 1, 0>;" in render(plain)
    with pytest.raises(CatalogError, match="ws_stage"):
        W8A8RowSpec(arch="sm_90a", bm=128, bn=128, stages=5, ws_stage=True).check(hw)


def test_stmatrix_and_ordered_twins_are_named_rendered_and_checked():
    """stmatrix (_st) and ordered (_oi) twins keep the base instance's
    Config (so its host shim's code) and specialize a header trait in the
    rendered source; the base instance's render has no trait at all, so its
    cubin stays the one the records timed. ordered needs a 128-row tile
    without a K split, stmatrix the TMA-store epilogue (bn % 64 == 0)."""
    from gen.render import render

    hw = load_hardware("sm_90a")
    base = W8A8WgmmaSpec(arch="sm_90a", bm=128, bn=128, stages=5, temps=2, kslices=4, ws_stage=True)
    st = W8A8WgmmaSpec(arch="sm_90a", bm=128, bn=128, stages=5, temps=2, kslices=4, ws_stage=True, stmatrix=True)
    both = W8A8WgmmaSpec(arch="sm_90a", bm=128, bn=128, stages=5, temps=2, kslices=4, ws_stage=True,
                         stmatrix=True, ordered=True)
    for spec in (st, both):
        spec.check(hw)
    assert st.name.endswith("_t2_x4_ws_st_sm90a") and both.name.endswith("_t2_x4_ws_st_oi_sm90a")
    assert base.config_args() == st.config_args() == both.config_args()
    assert st.dynamic_smem == base.dynamic_smem
    trait = "template <> struct wg::{}<Config> {{ static constexpr bool value = true; }};"
    assert trait.format("StmatrixEpilogue") in render(st) and "OrderedIssue" not in render(st)
    assert trait.format("StmatrixEpilogue") in render(both) and trait.format("OrderedIssue") in render(both)
    assert "StmatrixEpilogue" not in render(base) and "OrderedIssue" not in render(base)
    for bad in (dict(bm=64, bn=64, stages=10, temps=2, ordered=True),
                dict(bm=64, bn=128, stages=6, ksplit=2, ordered=True)):
        with pytest.raises(CatalogError, match="ordered issue"):
            W8A8WgmmaSpec(arch="sm_90a", **bad).check(hw)
    with pytest.raises(CatalogError, match="stmatrix"):
        W8A8WgmmaSpec(arch="sm_90a", bm=128, bn=80, stages=8, temps=2, stmatrix=True).check(hw)


def test_row_box_twins_stage_a_whole_unswizzled_box():
    """Row-box twins (_rb) keep the base's Config and specialize
    RowBoxEpilogue before Config is first used (the host shim reads it to
    encode the store box). Their shared memory gains one 64 x bn bf16 box per
    warpgroup. Only widths off the 64 multiples whose unswizzled rows
    conflict at most 2-way (8 mod 16, 16 mod 32), staged whole with 32-bit
    stores, are accepted."""
    from gen.render import render

    hw = load_hardware("sm_90a")
    base = W8A8WgmmaSpec(arch="sm_90a", bm=128, bn=136, stages=5, temps=2, split_paths=True)
    rb = W8A8WgmmaSpec(arch="sm_90a", bm=128, bn=136, stages=5, temps=2, split_paths=True, row_box=True)
    rb.check(hw)
    assert rb.name.endswith("_t2_sp_rb_sm90a") and base.config_args() == rb.config_args()
    assert rb.dynamic_smem - base.dynamic_smem == 2 * 64 * 136 * 2
    text = render(rb)
    trait = "template <> struct wg::RowBoxEpilogue<Config> { static constexpr bool value = true; };"
    assert trait in text and "RowBoxEpilogue" not in render(base)
    # before the first use of Config's members and outside the cubin-only part
    assert text.index(trait) < text.index("static_assert(Config::") < text.index("#ifndef FP8GEN_HOST_SHIM")
    W8A8WgmmaSpec(arch="sm_90a", bm=128, bn=80, stages=7, temps=2, split_paths=True, row_box=True).check(hw)
    for bad in (dict(bm=128, bn=128, stages=5, temps=2), dict(bm=128, bn=160, stages=5),
                dict(bm=64, bn=32, stages=16, temps=2), dict(bm=64, bn=136, stages=8, stmatrix=True)):
        with pytest.raises(CatalogError, match="row box|stmatrix"):
            W8A8WgmmaSpec(arch="sm_90a", row_box=True, **bad).check(hw)


def test_half_box_twins_stage_32_column_swizzled_boxes():
    """Half-box twins (_hb) keep the base's Config and specialize
    HalfBoxEpilogue before Config is first used (the host shim reads it to
    encode the 32-column, 64-byte-swizzled store box). Their shared memory
    gains the whole bf16 tile; only widths 32 more than a multiple of 64,
    in 64- or 128-row tiles, staged whole with 32-bit stores, are accepted."""
    from gen.render import render

    hw = load_hardware("sm_90a")
    base = W8A8WgmmaSpec(arch="sm_90a", bm=128, bn=160, stages=5, split_paths=True, walk_m=True)
    hb = W8A8WgmmaSpec(arch="sm_90a", bm=128, bn=160, stages=5, split_paths=True, walk_m=True, half_box=True)
    hb.check(hw)
    assert hb.name.endswith("_gm16_sp_hb_sm90a") and base.config_args() == hb.config_args()
    assert hb.dynamic_smem - base.dynamic_smem == 128 * 160 * 2
    text = render(hb)
    trait = "template <> struct wg::HalfBoxEpilogue<Config> { static constexpr bool value = true; };"
    assert trait in text and "HalfBoxEpilogue" not in render(base)
    assert text.index(trait) < text.index("static_assert(Config::") < text.index("#ifndef FP8GEN_HOST_SHIM")
    W8A8WgmmaSpec(arch="sm_90a", bm=64, bn=32, stages=4, temps=4, stage_blocks=4, half_box=True).check(hw)
    W8A8WgmmaSpec(arch="sm_90a", bm=64, bn=96, stages=8, half_box=True).check(hw)
    for bad in (dict(bm=128, bn=128, stages=5), dict(bm=128, bn=136, stages=5, temps=2),
                dict(bm=128, bn=160, stages=5, row_box=True), dict(bm=128, bn=160, stages=5, stmatrix=True),
                dict(bm=256, bn=96, stages=3)):
        with pytest.raises(CatalogError, match="half boxes|row box|stmatrix|256-row"):
            W8A8WgmmaSpec(arch="sm_90a", half_box=True, **bad).check(hw)


def test_split_paths_take_one_or_two_temporaries_on_straddling_widths():
    """split_paths (_sp) builds the block-scaled promotion once per split
    point of a tile that straddles weight-scale blocks: with two
    temporaries, or with one (DeepGEMM's shape of loop, twenty-ninth
    session); never on widths that divide 128, with four temporaries or
    multi-block stages; the trait is specialized in the rendered source only."""
    from gen.render import render

    hw = load_hardware("sm_90a")
    t1 = W8A8WgmmaSpec(arch="sm_90a", bm=128, bn=160, stages=6, split_paths=True)
    t1.check(hw)
    assert t1.name.endswith("128x160x128_s6_g16_sp_sm90a")
    trait = "template <> struct wg::SplitPaths<Config> { static constexpr bool value = true; };"
    assert trait in render(t1) and "SplitPaths" not in render(W8A8WgmmaSpec(arch="sm_90a", bm=128, bn=160, stages=6))
    W8A8WgmmaSpec(arch="sm_90a", bm=128, bn=144, stages=6, split_paths=True).check(hw)
    W8A8WgmmaSpec(arch="sm_90a", bm=128, bn=136, stages=5, temps=2, split_paths=True).check(hw)
    for bad in (dict(bm=128, bn=128, stages=5), dict(bm=64, bn=48, stages=4, temps=4, stage_blocks=2),
                dict(bm=64, bn=48, stages=4, temps=2, stage_blocks=2)):
        with pytest.raises(CatalogError, match="split_paths|stage_blocks"):
            W8A8WgmmaSpec(arch="sm_90a", split_paths=True, **bad).check(hw)


def test_multi_block_stages_are_named_sized_rendered_and_checked():
    """stage_blocks (_sb<n>) keeps the base's Config and specializes
    StageBlocks before Config is first used (the host shim reads it to
    encode 3-D boxes). A stage holds n blocks of A and W and one box of n
    blocks' activation scales. Refused: a split across CTAs, clusters,
    weight scales in the stage, one temporary, column chunks, and fewer
    than two stages per K-split warpgroup (each waits for its next stage
    before it releases the last: with one stage apiece the ring deadlocks,
    as the first such build did on the H200)."""
    from gen.render import render

    hw = load_hardware("sm_90a")
    base = W8A8WgmmaSpec(arch="sm_90a", bm=64, bn=16, stages=4, ksplit=2, temps=2, row_box=True)
    sb = W8A8WgmmaSpec(arch="sm_90a", bm=64, bn=16, stages=4, ksplit=2, temps=2, row_box=True, stage_blocks=4)
    sb.check(hw)
    assert sb.name.endswith("_k2_t2_rb_sb4_sm90a") and base.config_args() == sb.config_args()
    # 4 stages x 3 more blocks of A (64 rows) and W (16 rows), and 3 more blocks' scales (64 tokens)
    assert sb.dynamic_smem - base.dynamic_smem == 4 * 3 * (64 * 128 + 16 * 128) + 4 * 3 * 64 * 4
    text = render(sb)
    trait = "template <> struct wg::StageBlocks<Config> { static constexpr int value = 4; };"
    assert trait in text and "StageBlocks" not in render(base)
    assert text.index(trait) < text.index("static_assert(Config::") < text.index("#ifndef FP8GEN_HOST_SHIM")
    ok = dict(bm=64, bn=32, stages=4, temps=2, stage_blocks=4)
    W8A8WgmmaSpec(arch="sm_90a", **ok).check(hw)
    # a cluster K split keeps each CTA's ring its own; a 2-CTA pair shares boxes (refused)
    W8A8WgmmaSpec(arch="sm_90a", **dict(ok, cluster_k=2)).check(hw)
    # four temporaries: three blocks in flight, so a warpgroup may hold the
    # stages of blocks 3 steps back; the ring must be longer than what it
    # holds (2 blocks a stage, K split in 2: 2 of its own stages, 4 positions)
    t4 = W8A8WgmmaSpec(arch="sm_90a", **dict(ok, temps=4))
    t4.check(hw)
    assert t4.name.endswith("_t4_sb4_sm90a") and t4.config_args()[6] == "4"  # Config::TEMPS
    W8A8WgmmaSpec(arch="sm_90a", bm=64, bn=16, stages=6, ksplit=2, temps=4, stage_blocks=2).check(hw)
    for bad in (dict(ok, temps=4, stage_blocks=1), dict(bm=64, bn=16, stages=4, ksplit=2, temps=4, stage_blocks=2),
                dict(ok, temps=3)):
        with pytest.raises(CatalogError, match="temps|stage_blocks"):
            W8A8WgmmaSpec(arch="sm_90a", **bad).check(hw)
    for bad in (dict(ok, stages=4, ksplit=4), dict(ok, stages=2, stage_blocks=9), dict(ok, temps=1), dict(ok, kslices=2),
                dict(ok, cluster_n=2), dict(ok, ws_stage=True), dict(bm=64, bn=128, stages=3, temps=2,
                                                                     cluster_m=2, stage_blocks=2)):
        with pytest.raises(CatalogError, match="stage_blocks"):
            W8A8WgmmaSpec(arch="sm_90a", **bad).check(hw)


def test_own_early_counts_are_named_rendered_and_checked():
    """early (_e<n>) keeps the base's Config and specializes EarlyWeights in
    the rendered source only (so that every other cubin stays the same);
    -1 is the header's rule, and more early boxes than stages are refused."""
    from gen.render import render

    hw = load_hardware("sm_90a")
    base = W8A8WgmmaSpec(arch="sm_90a", bm=64, bn=64, stages=10, temps=2)
    twin = W8A8WgmmaSpec(arch="sm_90a", bm=64, bn=64, stages=10, temps=2, early=6)
    twin.check(hw)
    assert twin.name == base.name.replace("_sm90a", "_e6_sm90a") and base.config_args() == twin.config_args()
    assert twin.dynamic_smem == base.dynamic_smem
    trait = "template <> struct wg::EarlyWeights<Config> { static constexpr int value = 6; };"
    assert trait in render(twin) and "EarlyWeights" not in render(base)
    W8A8WgmmaSpec(arch="sm_90a", bm=64, bn=64, stages=10, temps=2, early=0).check(hw)
    W8A8WgmmaSpec(arch="sm_90a", bm=64, bn=64, stages=10, temps=2, early=10).check(hw)
    for bad in (11, -2):
        with pytest.raises(CatalogError, match="early"):
            W8A8WgmmaSpec(arch="sm_90a", bm=64, bn=64, stages=10, temps=2, early=bad).check(hw)


def test_config_arguments_follow_the_header_order():
    """W8A8WgmmaSpec.config_args lists wgmma_gemm::Config's template
    arguments by position: the order must be the header's, and only
    trailing defaults may be left out (a field in the wrong slot would
    build a different kernel under the instance's name)."""
    from runtime.paths import TEMPLATES_DIR

    header = (TEMPLATES_DIR / "include" / "fp8gen" / "w8a8_wgmma.cuh").read_text()
    params = re.search(r"template <(int BM_.*?)>\s*struct Config", header, re.S).group(1)
    names = [re.match(r"\s*(?:int|bool)\s+(\w+)_", p).group(1).lower() for p in params.split(",")]
    fields = {"ksplit": "ksplit", "scale_mode": "scale_mode", "temps": "temps", "slices": "kslices",
              "chunks": "n_chunks", "out_boxes": "out_boxes"}
    # a distinct value in every slot (not a valid kernel: nothing checks it here)
    every = W8A8WgmmaSpec(arch="sm_90a", bm=64, bn=128, stages=10, group_n=8, ksplit=2, temps=3, kslices=4,
                          n_chunks=5, cluster_m=6, cluster_n=7, out_boxes=9, fixed_n=7168, fixed_k=2048,
                          cluster_k=11, walk_m=False, ws_stage=True)
    args = every.config_args()
    assert len(args) == len(names), (names, args)
    for name, arg in zip(names, args):
        value = getattr(every, fields.get(name, name))
        want = f"wg::{value}" if name == "scale_mode" else ("true" if value is True else
                                                            "false" if value is False else str(value))
        assert arg == want, f"Config's {name} gets {arg}, the spec has {want}"
    plain = W8A8WgmmaSpec(arch="sm_90a", bm=128, bn=128, stages=5)
    assert plain.config_args() == ["128", "128", "5", "16", "1", "wg::kScaleBlock", "1", "1", "1", "1", "1", "0"]
    only_ws = W8A8WgmmaSpec(arch="sm_90a", bm=128, bn=128, stages=5, ws_stage=True)
    assert only_ws.config_args()[12:] == ["0", "0", "1", "false", "true"]


def test_cluster_k_split_is_checked_and_sized():
    hw = load_hardware("sm_90a")
    ok = W8A8WgmmaSpec(arch="sm_90a", bm=64, bn=64, stages=10, temps=2, cluster_k=4)
    ok.check(hw)
    assert ok.name.endswith("_s10_g16_t2_ck4_sm90a") and ok.constraints()["min_k"] == 4 * 128
    # rank 0 holds the three peers' 64x64 FP32 partial tiles (+ two barriers)
    twin = W8A8WgmmaSpec(arch="sm_90a", bm=64, bn=64, stages=10, temps=2)
    assert ok.dynamic_smem - twin.dynamic_smem == 3 * 64 * 64 * 4 + 16 and "min_k" not in twin.constraints()
    for bad in (dict(cluster_k=3), dict(cluster_k=2, kslices=2), dict(cluster_k=2, cluster_n=2),
                dict(cluster_k=2, ksplit=2, temps=1)):
        with pytest.raises(CatalogError, match="cluster_k"):
            W8A8WgmmaSpec(arch="sm_90a", **{**dict(bm=64, bn=64, stages=10, temps=2), **bad}).check(hw)
    with pytest.raises(CatalogError, match="shared memory|smem"):
        W8A8WgmmaSpec(arch="sm_90a", bm=64, bn=128, stages=8, temps=2, cluster_k=2).check(hw)


def test_unknown_family_and_keys_in_hardware_toml(monkeypatch):
    real = catalog.load_hardware

    def patched(arch, extra):
        hw = real(arch)
        return dataclasses.replace(hw, instances={**hw.instances, **extra})

    monkeypatch.setattr(catalog, "load_hardware", lambda a: patched(a, {"w8a8_magic": [{}]}))
    with pytest.raises(CatalogError, match="unknown family"):
        specs_for("sm_90a")
    monkeypatch.setattr(catalog, "load_hardware", lambda a: patched(a, {"w8a8_mma": [{"bm": 64, "tile": 1}]}))
    with pytest.raises(CatalogError, match="unknown keys"):
        specs_for("sm_90a")


def test_unknown_arch():
    with pytest.raises(CatalogError, match="unknown arch"):
        specs_for("sm_70")


def test_show_reports_the_built_resources(capsys):
    import json

    from gen.cli import main

    name = next(s.name for s in specs_for("sm_90a") if s.family == "w8a8_cutlass")
    assert main(["show", name]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["name"] == name and info["source"].endswith(f"{name}.cu")
    assert info["threads"] > 0 and info["dynamic_smem"] > 0 and info["shim"].endswith(".so")
    assert main(["show", "no_such_kernel"]) == 2


def test_specialize_builds_each_listed_shape_with_n_and_k_fixed(monkeypatch):
    specs = {s.name: s for s in specs_for("sm_90a")}
    hw = load_hardware("sm_90a")
    listed = {(row["bm"], row["bn"], shape) for row in hw.specialize["w8a8_wgmma"] for shape in row["shapes"]}
    fixed = [s for s in specs.values() if getattr(s, "fixed_n", 0)]
    assert {(s.bm, s.bn, f"{s.fixed_n}x{s.fixed_k}") for s in fixed} == listed
    one = specs["w8a8_wgmma_e4m3e4m3_bf16_64x64x128_s10_g16_t2_for7168x2048_sm90a"]
    assert one.constraints()["fixed_n"] == 7168 and one.constraints()["fixed_k"] == 2048
    # the generic twin is unchanged, and says nothing of a shape
    twin = specs["w8a8_wgmma_e4m3e4m3_bf16_64x64x128_s10_g16_t2_sm90a"]
    assert "fixed_n" not in twin.constraints() and twin.dynamic_smem == one.dynamic_smem

    real = catalog.load_hardware

    def with_rows(rows, family="w8a8_wgmma"):
        monkeypatch.setattr(catalog, "load_hardware",
                            lambda a: dataclasses.replace(real(a), specialize={family: rows}))

    base = dict(model="m", bm=128, bn=128, stages=5, temps=2)
    for rows, match in (([{**base, "shapes": ["7168by2048"]}], "NxK"),
                        ([{**base, "shapes": ["7168x2000"]}], "multiple of 128"),
                        ([{**base, "shapes": ["7100x2048"]}], "multiple of 8"),
                        ([{**base, "shapes": []}], "needs `model`"),
                        ([{**base, "shapes": ["7168x2048"], "tile": 3}], "unknown keys")):
        with_rows(rows)
        with pytest.raises(CatalogError, match=match):
            specs_for("sm_90a")
    with_rows([{**base, "shapes": ["7168x2048"]}], family="w8a8_mma")
    with pytest.raises(CatalogError, match="only w8a8_wgmma"):
        specs_for("sm_90a")
    with pytest.raises(CatalogError, match="fixes both"):
        W8A8WgmmaSpec(arch="sm_90a", fixed_n=7168).check(hw)


def test_bulk_weight_scales_are_checked_and_named():
    """ws_bulk (the weight scales copied into the stage by TMA, _wsb) needs
    ws_stage and one block per stage, and asks the runtime for K a multiple
    of 512 (the scales' map has rows of K / 128 floats, 16-byte multiples)."""
    hw = load_hardware("sm_90a")
    base = dict(bm=128, bn=256, stages=3, n_chunks=2, walk_m=True)
    ok = W8A8WgmmaSpec(arch="sm_90a", ws_stage=True, ws_bulk=True, **base)
    ok.check(hw)
    assert ok.name.endswith("_s3_gm16_n2_wsb_sm90a") and ok.constraints()["scale_k_multiple"] == 4 * 128
    assert ok.constraints()["k_multiple"] == 128
    twin = W8A8WgmmaSpec(arch="sm_90a", ws_stage=True, **base)
    assert twin.name.endswith("_n2_ws_sm90a") and "scale_k_multiple" not in twin.constraints()
    assert ok.dynamic_smem == twin.dynamic_smem and ok.config_args() == twin.config_args()
    for bad in (dict(base, ws_bulk=True),
                dict(bm=64, bn=32, stages=4, temps=2, stage_blocks=4, ws_stage=True, ws_bulk=True)):
        with pytest.raises(CatalogError, match="ws_bulk"):
            W8A8WgmmaSpec(arch="sm_90a", **bad).check(hw)


def test_lane_held_weight_scales_are_a_block_scaled_twin_without_stage_scales():
    """ws_lanes (_wl) keeps the block weight scales read from L2 in the math
    warps' lanes: a twin of the same Config (its name differs by _wl only),
    refused where the scales ride in the stage or the family has none."""
    hw = load_hardware("sm_90a")
    base = W8A8WgmmaSpec(arch="sm_90a", bm=256, bn=128, stages=3, cluster_n=2)
    wl = W8A8WgmmaSpec(arch="sm_90a", bm=256, bn=128, stages=3, cluster_n=2, ws_lanes=True)
    wl.check(hw)
    assert wl.name == base.name.replace("_c1x2_", "_c1x2_wl_")
    assert wl.config_args() == base.config_args()
    for bad in ({"ws_stage": True}, {"ws_stage": True, "ws_bulk": True},
                {"temps": 2, "stage_blocks": 2, "bm": 64, "bn": 32, "stages": 4}):
        with pytest.raises(CatalogError, match="ws_lanes"):
            W8A8WgmmaSpec(arch="sm_90a", **dict(dict(bm=128, bn=128, stages=5, ws_lanes=True), **bad)).check(hw)


def test_lane_ahead_is_a_twin_of_lane_held_weight_scales():
    """ws_lanes_ahead (_wla) loads the next unit's lane-held weight scales
    while a unit runs: a twin of the same Config named _wla for _wl, whose
    rendered source adds the LaneWeightScalesAhead specialization to the
    _wl twin's, refused without ws_lanes."""
    from gen.render import render

    hw = load_hardware("sm_90a")
    wl = W8A8WgmmaSpec(arch="sm_90a", bm=128, bn=64, stages=8, temps=2, ws_lanes=True, ring_unroll=True)
    wla = W8A8WgmmaSpec(arch="sm_90a", bm=128, bn=64, stages=8, temps=2, ws_lanes=True, ws_lanes_ahead=True,
                        ring_unroll=True)
    wla.check(hw)
    assert wla.name == wl.name.replace("_wl_", "_wla_") and wla.config_args() == wl.config_args()
    src, base = render(wla), render(wl)
    assert "LaneWeightScalesAhead<Config>" in src and "LaneWeightScalesAhead" not in base
    with pytest.raises(CatalogError, match="ws_lanes_ahead"):
        W8A8WgmmaSpec(arch="sm_90a", bm=128, bn=64, stages=8, temps=2, ws_lanes_ahead=True).check(hw)


def test_carried_coords_is_a_twin_of_the_two_temporary_loops():
    """carry_coords (_cc, last in the name) carries a unit's coordinates
    over from the unit before: a twin of the same Config whose rendered
    source adds the CarriedCoords specialization, refused outside the
    two-temporary loops (one temporary, multi-block stages, split paths;
    a K split inside the CTA has no two-temporary loop to refuse)."""
    from gen.render import render

    hw = load_hardware("sm_90a")
    base = W8A8WgmmaSpec(arch="sm_90a", bm=128, bn=64, stages=8, temps=2, ws_lanes=True, ws_lanes_ahead=True,
                         ring_unroll=True)
    cc = W8A8WgmmaSpec(arch="sm_90a", bm=128, bn=64, stages=8, temps=2, ws_lanes=True, ws_lanes_ahead=True,
                       ring_unroll=True, carry_coords=True)
    cc.check(hw)
    assert cc.name == base.name.replace("_ru_", "_ru_cc_") and cc.config_args() == base.config_args()
    src, plain = render(cc), render(base)
    assert "CarriedCoords<Config>" in src and "CarriedCoords" not in plain
    for bad in ({"temps": 1},
                {"stage_blocks": 2, "bm": 64, "bn": 32, "stages": 4}, {"bn": 136, "stages": 5, "split_paths": True}):
        with pytest.raises(CatalogError, match="carry_coords"):
            W8A8WgmmaSpec(arch="sm_90a", **dict(dict(bm=128, bn=64, stages=8, temps=2, carry_coords=True),
                                                **bad)).check(hw)


def test_scales_first_is_a_twin_for_block_scales_read_from_l2():
    """scales_first (_sf) reads an MMA group's activation scales before the
    group: a twin of the same Config whose rendered source adds only the
    ScalesFirst specialization, refused where the weight scales ride in the
    stage, for multi-block stages and for the row- and tensor-scaled
    families (their scales are applied once, after the K loop)."""
    from gen.catalog import W8A8RowSpec, W8A8TensorSpec
    from gen.render import render
    hw = load_hardware("sm_90a")
    base = W8A8WgmmaSpec(arch="sm_90a", bm=256, bn=128, stages=3, kslices=4, stmatrix=True, unroll=2)
    sf = W8A8WgmmaSpec(arch="sm_90a", bm=256, bn=128, stages=3, kslices=4, stmatrix=True, unroll=2,
                       scales_first=True)
    sf.check(hw)
    assert sf.name == base.name.replace("_u2_", "_u2_sf_") and sf.config_args() == base.config_args()
    extra = set(render(sf).splitlines()) - set(render(base).splitlines())
    assert any("ScalesFirst<Config> { static constexpr bool value = true; }" in line for line in extra)
    assert all(base.name not in line for line in extra if "ScalesFirst" in line)
    assert "ScalesFirst" not in render(base)
    for bad in ({"ws_stage": True}, {"ws_stage": True, "ws_bulk": True},
                {"temps": 2, "stage_blocks": 2, "bm": 64, "bn": 32, "stages": 4}):
        with pytest.raises(CatalogError, match="scales_first"):
            W8A8WgmmaSpec(arch="sm_90a", **dict(dict(bm=128, bn=128, stages=5, scales_first=True), **bad)).check(hw)
    for cls in (W8A8RowSpec, W8A8TensorSpec):
        with pytest.raises(CatalogError, match="scales_first"):
            cls(arch="sm_90a", bm=128, bn=128, stages=5, scales_first=True).check(hw)


def test_an_unrolled_or_prewaiting_k_loop_is_a_one_temporary_twin():
    """unroll (_u<n>) unrolls the one-temporary K loop and prewait (_pw)
    waits for the next stage ahead in it: twins of the same Config (their
    rendered sources add only the KLoopUnroll / PrewaitNextStage
    specializations), refused for the two-temporary loops, K splits inside
    the CTA, multi-block stages and unroll counts other than 2, 4 and 8."""
    from gen.render import render
    hw = load_hardware("sm_90a")
    base = W8A8WgmmaSpec(arch="sm_90a", bm=256, bn=128, stages=3, cluster_n=2, stmatrix=True)
    u2 = W8A8WgmmaSpec(arch="sm_90a", bm=256, bn=128, stages=3, cluster_n=2, stmatrix=True, unroll=2)
    u2.check(hw)
    assert u2.name == base.name.replace("_st_", "_st_u2_")
    assert u2.config_args() == base.config_args()
    assert "KLoopUnroll<Config> { static constexpr int value = 2; }" in render(u2)
    assert "KLoopUnroll" not in render(base)
    pw = W8A8WgmmaSpec(arch="sm_90a", bm=256, bn=128, stages=3, cluster_n=2, stmatrix=True, unroll=2, prewait=True)
    pw.check(hw)
    assert pw.name == u2.name.replace("_u2_", "_u2_pw_") and pw.config_args() == base.config_args()
    assert "PrewaitNextStage<Config> { static constexpr bool value = true; }" in render(pw)
    assert "PrewaitNextStage" not in render(u2)
    for bad in ({"prewait": True, "temps": 2}, {"prewait": True, "bm": 64, "bn": 64, "ksplit": 2, "stages": 4}):
        with pytest.raises(CatalogError, match="prewait"):
            W8A8WgmmaSpec(arch="sm_90a", **dict(dict(bm=128, bn=128, stages=5), **bad)).check(hw)
    for bad in ({"unroll": 3}, {"unroll": 16}, {"unroll": 2, "temps": 2},
                {"unroll": 2, "bm": 64, "bn": 64, "ksplit": 2, "stages": 4},
                {"unroll": 2, "bm": 64, "bn": 32, "stages": 4, "temps": 2, "stage_blocks": 2}):
        with pytest.raises(CatalogError, match="unroll"):
            W8A8WgmmaSpec(arch="sm_90a", **dict(dict(bm=128, bn=128, stages=5), **bad)).check(hw)


def test_a_ring_unrolled_k_loop_is_a_two_temporary_twin():
    """ring_unroll (_ru) unrolls the two-temporary K loop by a turn of the
    ring: a twin of the same Config (its rendered source adds only the
    RingUnroll specialization), refused for the one- and four-temporary
    loops (the one-temporary variant was measured no faster and not kept),
    K splits inside the CTA, multi-block stages and split paths (likewise
    dropped)."""
    from gen.render import render
    hw = load_hardware("sm_90a")
    base = W8A8WgmmaSpec(arch="sm_90a", bm=128, bn=64, stages=8, temps=2, walk_m=True)
    ru = W8A8WgmmaSpec(arch="sm_90a", bm=128, bn=64, stages=8, temps=2, walk_m=True, ring_unroll=True)
    ru.check(hw)
    assert ru.name == base.name.replace("_t2_", "_t2_ru_")
    assert ru.config_args() == base.config_args()
    assert "RingUnroll<Config> { static constexpr bool value = true; }" in render(ru)
    assert "RingUnroll" not in render(base)
    for bad in ({"temps": 1}, {"bm": 256, "bn": 128, "stages": 3, "temps": 1},
                {"temps": 4, "bm": 64, "bn": 32, "stages": 4, "stage_blocks": 2},
                {"bm": 64, "ksplit": 2, "stages": 4, "stage_blocks": 2},
                {"bm": 64, "bn": 32, "stages": 4, "stage_blocks": 2},
                {"bm": 64, "bn": 80, "stages": 10, "split_paths": True}):
        with pytest.raises(CatalogError, match="ring_unroll"):
            W8A8WgmmaSpec(arch="sm_90a", **dict(dict(bm=128, bn=64, stages=8, temps=2, ring_unroll=True),
                                                 **bad)).check(hw)


@pytest.mark.parametrize("option", sorted(BASES))
def test_every_twin_checked_against_a_base_has_its_base_built(option):
    """The GPU layer gives each such twin's bits beside its base's and fails
    on a twin whose base is not in the catalog; this finds that without a
    GPU (a 128x96 half-box twin added without its base did, 2026-12-07)."""
    specs = {s.name: s for s in specs_for("sm_90a")}
    pairs = twins_with_bases(specs, option)
    assert pairs, f"no sm_90a instance sets {option}: the GPU test of its twins has nothing to run"
    missing = [(twin, base) for twin, base in pairs if base not in specs]
    assert not missing, missing


def test_gen_list_into_a_closed_pipe_prints_no_traceback():
    """`python -m gen list | head -1`: the reader gone before gen writes (its
    end closed at once, so the first write fails whatever the pipe holds)."""
    import subprocess
    import sys

    from runtime.paths import REPO_ROOT

    proc = subprocess.Popen([sys.executable, "-m", "gen", "list", "--arch", "all"], cwd=REPO_ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 1 and "Traceback" not in err, err
