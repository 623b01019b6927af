"""Layer 1: the Runtime's ops and composites, driven without a GPU. The
device context is faked and the launch recorded, so what reaches the launch
helper -- which kernels, in which order, with which arguments -- is checked
here; the GPU tests check what the kernels then compute."""
import contextlib

import pytest

import runtime
from runtime.select import FAST_FAMILIES
import runtime.workspace as workspace_module
from runtime import env
from runtime.loader import LoadedKernel
from runtime.tensors import DeviceArray

H, I = 5120, 17408


class FakeContext:
    ordinal, arch, sm_count = 0, "sm_90a", 132

    def __init__(self, entries, arch="sm_90a"):
        self.arch = arch
        self.kernels = {fam: [LoadedKernel(e, None) for e in es] for fam, es in entries.items()}

    def current(self):
        return contextlib.nullcontext()


class FakeDriver:
    @staticmethod
    def cuMemAlloc(nbytes):
        return nbytes

    @staticmethod
    def cuMemsetD8(ptr, value, count):
        return 0


@pytest.fixture
def fake(sm90a_entries, monkeypatch):
    launches = []
    monkeypatch.setattr(runtime, "launch_kernel",
                        lambda ctx, kernel, grid, args, stream: launches.append((kernel.entry.family, kernel.name,
                                                                                   args)))
    monkeypatch.setattr(workspace_module, "driver", FakeDriver)
    monkeypatch.setattr(workspace_module, "check", lambda result, call, **kw: 1 << 40)
    monkeypatch.setattr(workspace_module, "_free", lambda ctx, ptr: None)
    return runtime.Runtime(FakeContext(sm90a_entries)), launches


_next = [1 << 32]


def arr(shape, dtype):
    _next[0] += 1 << 30
    return DeviceArray.raw(_next[0], shape, dtype)


def weight(n, k, scale_shape=None):
    shape = scale_shape if scale_shape is not None else (-(-n // 128), k // 128)
    return runtime.Fp8Weight.from_checkpoint(arr((n, k), "e4m3"), arr(shape, "f32"), check_values=False)


def families(launches):
    return [fam for fam, _, _ in launches]


def test_linear_takes_the_fast_arm_with_mn_major_scales(fake):
    rt, launches = fake
    ws = rt.workspace(2048, H)
    for m in (949, 40):  # 40 == K/128: the layout is passed, never guessed
        launches.clear()
        d = rt.linear(arr((m, H), "bf16"), weight(I, H), arr((m, I), "bf16"), ws)
        assert d.arm == "W8A8 fast" and d.family in FAST_FAMILIES
        assert families(launches) == ["quant_group", d.family]
        quant, gemm = launches[0][2], launches[1][2]
        # the scales and the quantization padded to 128 rows, the GEMM told M
        assert quant["mn_major"] == 1 and quant["ld_scale"] == gemm["ld_scale"] == -(-m // 128) * 128
        assert quant["scale"] == gemm["a_scale"] and quant["q"] == gemm["a"]
        assert gemm["M"] == m and gemm["a_rows"] == -(-m // 128) * 128
        assert launches[1][1] == d.instance
        assert gemm["early_weights"] is True  # right after its quantizer, which writes no weight


def test_direct_gemm_calls_read_weights_early_only_when_asked(fake):
    """A direct call cannot know what the kernel before it wrote: it waits
    for it before reading W unless the caller says early_weights."""
    rt, launches = fake
    m, n, k = 64, 4096, 7168
    a, sa, w, sw = arr((m, k), "e4m3"), arr((k // 128, m), "f32"), arr((n, k), "e4m3"), arr((n // 128, k // 128), "f32")
    for early in (None, False, True):
        launches.clear()
        extra = {} if early is None else {"early_weights": early}
        rt.w8a8_wgmma(a, sa, w, sw, arr((m, n), "bf16"), **extra)
        rt.w8a8_row(a, arr((m,), "f32"), w, arr((n,), "f32"), arr((m, n), "bf16"), **extra)
        rt.w8a8_tensor(a, arr((), "f32"), w, arr((m, n), "bf16"), **extra)
        assert families(launches) == ["w8a8_wgmma", "w8a8_row", "w8a8_tensor"]
        assert all(args["early_weights"] is bool(early) for _, _, args in launches)


def test_linear_falls_back_to_w8a16_by_rule(fake):
    rt, launches = fake
    with env.override(w8a16_only=True):
        assert rt.linear(arr((949, H), "bf16"), weight(I, H), arr((949, I), "bf16"), rt.workspace(2048, H)).arm \
            == "W8A16 GEMM"
    assert families(launches) == ["w8a16_gemm"]
    launches.clear()
    rt.linear(arr((3, H), "bf16"), weight(I, H), arr((3, I), "bf16"), rt.workspace(2048, H))
    assert families(launches) == ["w8a16_gemv"]
    launches.clear()
    d = rt.linear(arr((949, H), "bf16"), weight(I, H), arr((949, I), "bf16"), rt.workspace(100, H))
    assert d.failed.name == "kernels_loaded" and families(launches) == ["w8a16_gemm"]  # scratch too small


def test_dense_ffn_launch_order(fake):
    rt, launches = fake
    ws = rt.workspace(2048, H, ffn_intermediate=I)
    gate, up, down = weight(I, H), weight(I, H), weight(H, I)
    decisions = runtime.dense_ffn_prefill(arr((949, H), "bf16"), gate, up, down, ws, out=arr((949, H), "bf16"))
    fast = [d.family for d in decisions]
    assert all(f in FAST_FAMILIES for f in fast)
    assert families(launches) == ["quant_group", fast[0], fast[1], "quant_silu_mul", fast[2]]
    assert all(launches[i][2]["early_weights"] is True for i in (1, 2, 4))  # each after a kernel of ours
    quant_x, silu = launches[0][2], launches[3][2]
    assert launches[1][2]["a"] == launches[2][2]["a"] == quant_x["q"]  # gate and up share one quantization
    assert silu["q"] == quant_x["q"] and silu["h"] == 0  # down quantizes over the same scratch
    launches.clear()
    runtime.dense_ffn_prefill(arr((4, H), "bf16"), gate, up, down, ws, out=arr((4, H), "bf16"))
    assert families(launches) == ["w8a16_gemv", "w8a16_gemv", "quant_silu_mul", "w8a16_gemv"]
    assert launches[2][2]["h"] == launches[2][2]["gate"] and launches[2][2]["q"] == 0  # h in place of gate


def test_direct_gemm_calls_follow_the_dispatch_table(fake):
    rt, launches = fake
    m, n, k = 16, 7168, 16384
    rt.w8a8_cutlass(arr((m, k), "e4m3"), arr((k // 128, m), "f32"), arr((n, k), "e4m3"),
                    arr((n // 128, k // 128), "f32"), arr((m, n), "bf16"))
    assert launches[-1][1] == rt.pick("w8a8_cutlass", m, n, k)


def test_formats_never_reach_a_kernel(fake):
    rt, launches = fake
    row = weight(I, H, scale_shape=(I,))
    with pytest.raises(runtime.FormatError, match="BlockScaled128.*PerRow"):
        rt.fp8_dequant(row, arr((I, H), "bf16"))
    ws = rt.workspace(2048, H, ffn_intermediate=I)
    with pytest.raises(runtime.FormatError, match="BlockScaled128.*PerRow"):
        runtime.dense_ffn_prefill(arr((949, H), "bf16"), row, row, weight(H, I, scale_shape=(H,)), ws,
                                  out=arr((949, H), "bf16"))
    with pytest.raises(runtime.ValidationError, match="Fp8Weight"):
        rt.linear(arr((949, H), "bf16"), arr((I, H), "e4m3"), arr((949, I), "bf16"), rt.workspace(2048, H))
    assert launches == []


def test_single_scale_weights_take_their_own_kernels(fake):
    """PerTensor: three quant_tensor steps into the workspace's resident state,
    then w8a8_tensor reading state[2] on the device; PerRow: quant_token, then
    w8a8_row with the per-token and per-channel scales."""
    rt, launches = fake
    ws = rt.workspace(2048, H)
    d = rt.linear(arr((949, H), "bf16"), weight(I, H, scale_shape=()), arr((949, I), "bf16"), ws)
    assert d.arm == "W8A8 per-tensor"
    assert families(launches) == ["quant_tensor"] * 3 + ["w8a8_tensor"]
    assert [a["stage"] for _, _, a in launches[:3]] == [0, 1, 2]
    state = ws.tensor_state().ptr
    assert all(a["state"] == state for _, _, a in launches[:3]) and launches[3][2]["a_scale"] == state + 8
    assert launches[0][2]["w_scale"] != 0 and launches[3][2]["a"] == launches[2][2]["q"]
    assert launches[3][2]["early_weights"] is True
    launches.clear()
    w = weight(I, H, scale_shape=(I, 1))
    d = rt.linear(arr((949, H), "bf16"), w, arr((949, I), "bf16"), ws)
    assert d.arm == "W8A8 per-row" and families(launches) == ["quant_token", "w8a8_row"]
    assert launches[1][2]["a_scale"] == launches[0][2]["scale"] and launches[1][2]["w_scale"] == w.scale.ptr
    assert launches[1][2]["early_weights"] is True


def test_single_scale_weights_on_an_arch_without_wgmma(sm89_entries, monkeypatch):
    """sm_89 has no wgmma: the per-tensor and per-row arms take the mma.sync
    families, one block per tile, with the same quantizers."""
    launches = []
    monkeypatch.setattr(runtime, "launch_kernel",
                        lambda ctx, kernel, grid, args, stream: launches.append((kernel.entry.family, grid, args)))
    monkeypatch.setattr(workspace_module, "driver", FakeDriver)
    monkeypatch.setattr(workspace_module, "check", lambda result, call, **kw: 1 << 40)
    monkeypatch.setattr(workspace_module, "_free", lambda ctx, ptr: None)
    rt = runtime.Runtime(FakeContext(sm89_entries, arch="sm_89"))
    ws = rt.workspace(2048, H)
    d = rt.linear(arr((949, H), "bf16"), weight(I, H, scale_shape=()), arr((949, I), "bf16"), ws)
    assert d.arm == "W8A8 per-tensor" and d.family == "w8a8_mma_tensor"
    assert families(launches) == ["quant_tensor"] * 3 + ["w8a8_mma_tensor"]
    assert launches[3][2]["scale"] == ws.tensor_state().ptr + 8
    e = next(e for e in rt.entries["w8a8_mma_tensor"] if e.name == d.instance)
    assert launches[3][1] == (-(-I // e.constraints["bn"]), -(-949 // e.constraints["bm"]), 1)
    launches.clear()
    d = rt.linear(arr((949, H), "bf16"), weight(I, H, scale_shape=(I,)), arr((949, I), "bf16"), ws)
    assert d.family == "w8a8_mma_row" and families(launches) == ["quant_token", "w8a8_mma_row"]
    assert launches[1][2]["a_scale"] == launches[0][2]["scale"]


SPLIT = "w8a8_wgmma_e4m3e4m3_bf16_64x64x128_s10_g16_t2_x4_sm90a"


def _split_table(rt, n, k):
    """A dispatch table naming the split-K instance at (n, k), as gen tune would."""
    row = {"n": n, "k": k, "m_max": 256, "instance": SPLIT}
    rt.dispatch = {**rt.dispatch, "w8a8_fast": [row], "w8a8_wgmma": [row]}


def test_split_k_instance_takes_the_workspace_counters_and_partials(fake):
    rt, launches = fake
    m, n, k = 64, 4096, 7168
    _split_table(rt, n, k)
    ws = rt.workspace(256, k, max_n=n)
    d = rt.linear(arr((m, k), "bf16"), weight(n, k), arr((m, n), "bf16"), ws)
    assert d.instance == SPLIT and launches[-1][1] == SPLIT
    args = launches[-1][2]
    # 1 x 64 tiles of 64x64, 4 slices of K: counters and partials inside the workspace, apart
    assert args["counter_slots"] >= 64 and args["partial_bytes"] >= 64 * 4 * 64 * 64 * 4
    start, end = ws._ptr, ws._ptr + ws.nbytes
    assert start <= args["counters"] < args["counters"] + 4 * args["counter_slots"] <= args["partials"]
    assert args["partials"] + args["partial_bytes"] <= end
    assert args["counters"] % 256 == 0 and args["partials"] % 256 == 0


def test_split_k_instance_is_skipped_without_room(fake):
    rt, launches = fake
    m, n, k = 64, 4096, 7168
    _split_table(rt, n, k)
    for ws in (rt.workspace(256, k), rt.workspace(64, k, max_n=1024)):  # no split region / too small
        d = rt.linear(arr((m, k), "bf16"), weight(n, k), arr((m, n), "bf16"), ws)
        assert d.instance != SPLIT and "split_k_room" in d.explain()
        assert "counters" not in launches[-1][2]
    # direct calls: the table's split pick falls back without a workspace; naming it is refused
    a, s, w, ws_, out = (arr((m, k), "e4m3"), arr((k // 128, m), "f32"), arr((n, k), "e4m3"),
                         arr((n // 128, k // 128), "f32"), arr((m, n), "bf16"))
    rt.w8a8_wgmma(a, s, w, ws_, out)
    assert launches[-1][1] != SPLIT and "counters" not in launches[-1][2]
    with pytest.raises(runtime.ValidationError, match="needs a workspace"):
        rt.w8a8_wgmma(a, s, w, ws_, out, instance=SPLIT)
    with pytest.raises(runtime.ValidationError, match="tile counters"):
        rt.w8a8_wgmma(a, s, w, ws_, out, instance=SPLIT, workspace=rt.workspace(64, k, max_n=1024))
    rt.w8a8_wgmma(a, s, w, ws_, out, workspace=rt.workspace(256, k, max_n=n))
    assert launches[-1][1] == SPLIT


def test_without_room_the_measured_unsplit_pick_runs(fake):
    """A caller whose workspace has no split-K room gets the table's unsplit
    twin's instance (gen tune: the fastest that needs no workspace), for
    rt.linear and for direct calls alike, not the tile rule's guess."""
    rt, launches = fake
    m, n, k = 64, 4096, 7168
    _split_table(rt, n, k)
    rule_pick = rt.decide(m, n, k, workspace=rt.workspace(256, k), out_rows=m).instance
    other = next(e.name for e in rt.entries["w8a8_wgmma"]
                 if e.constraints.get("k_slices", 1) == 1 and e.name != rule_pick and "_for" not in e.name
                 and e.cluster == (1, 1, 1))
    row = {"n": n, "k": k, "m_max": 256, "instance": other}
    rt.dispatch = {**rt.dispatch, "w8a8_fast_unsplit": [row], "w8a8_wgmma_unsplit": [row]}
    d = rt.linear(arr((m, k), "bf16"), weight(n, k), arr((m, n), "bf16"), rt.workspace(256, k))
    assert d.instance == other and launches[-1][1] == other, d.explain()
    rt.w8a8_wgmma(arr((m, k), "e4m3"), arr((k // 128, m), "f32"), arr((n, k), "e4m3"),
                  arr((n // 128, k // 128), "f32"), arr((m, n), "bf16"))
    assert launches[-1][1] == other
    d = rt.linear(arr((m, k), "bf16"), weight(n, k), arr((m, n), "bf16"), rt.workspace(256, k, max_n=n))
    assert d.instance == SPLIT  # with room, the split pick still runs


def test_split_k_counters_start_zeroed(fake, monkeypatch):
    rt, _ = fake
    sets = []
    monkeypatch.setattr(FakeDriver, "cuMemsetD8", staticmethod(lambda ptr, value, count: sets.append((value, count))))
    ws = rt.workspace(256, 7168, max_n=4096)
    # the quantization region (its padding rows), the per-tensor state and
    # the counters, in one set, to zero
    assert sets == [(0, ws._offsets["partials"])] and ws._offsets["q"] == 0
    assert ws._offsets["counters"] - ws._offsets["state"] >= 16 and ws.counter_slots >= 64


def test_a_shape_specialized_instance_refuses_another_shape(fake):
    rt, launches = fake
    fixed = next(e.name for es in rt.entries.values() for e in es if e.constraints.get("fixed_n") == 7168
                 and e.constraints.get("fixed_k") == 2048)
    m = 64
    for n, k, ok in ((7168, 2048, True), (7168, 4096, False), (4096, 2048, False)):
        a, s, w, ws_, out = (arr((m, k), "e4m3"), arr((k // 128, m), "f32"), arr((n, k), "e4m3"),
                             arr((-(-n // 128), k // 128), "f32"), arr((m, n), "bf16"))
        if ok:
            rt.w8a8_wgmma(a, s, w, ws_, out, instance=fixed)
            assert launches[-1][1] == fixed
        else:
            with pytest.raises(runtime.ValidationError, match="built for N=7168, K=2048 only"):
                rt.w8a8_wgmma(a, s, w, ws_, out, instance=fixed)
            rt.w8a8_wgmma(a, s, w, ws_, out)  # without a name: a generic instance
            assert launches[-1][1] != fixed


def test_a_cluster_k_split_needs_a_k_block_per_cta(fake):
    """A cluster K split of c CTAs runs K >= c x 128 only: the tile rule and
    the table never give it less, and naming it for less is a
    ValidationError."""
    from runtime.dispatch import fits_shape

    rt, launches = fake
    ck = next(e for es in rt.entries.values() for e in es if e.params.get("cluster_k", 1) > 1)
    least = 128 * ck.params["cluster_k"]
    assert ck.constraints["min_k"] == least
    assert fits_shape(ck, 2112, least) and not fits_shape(ck, 2112, least - 128)
    m, n = 64, 2112
    for k, ok in ((least, True), (least - 128, False)):
        a, s, w, ws_, out = (arr((m, k), "e4m3"), arr((k // 128, m), "f32"), arr((n, k), "e4m3"),
                             arr((-(-n // 128), k // 128), "f32"), arr((m, n), "bf16"))
        if ok:
            rt.w8a8_wgmma(a, s, w, ws_, out, instance=ck.name)
            assert launches[-1][1] == ck.name
        else:
            with pytest.raises(runtime.ValidationError, match=f"needs K >= {least}"):
                rt.w8a8_wgmma(a, s, w, ws_, out, instance=ck.name)


def test_launch_configs_are_remembered_per_kernel_grid_stream_and_knob(sm90a_entries):
    from runtime import launch

    gemm = LoadedKernel(next(e for e in sm90a_entries["w8a8_wgmma"] if tuple(e.cluster) == (1, 1, 1)), None)
    quant = LoadedKernel(sm90a_entries["quant_group"][0], None)
    with env.override(no_pdl=False):
        cfg = launch.cached_config(gemm, (132, 1, 1), 7)
        assert launch.cached_config(gemm, [132, 1, 1], 7) is cfg and cfg.numAttrs == 1
        assert cfg.gridDimX == 132 and int(cfg.hStream) == 7
        others = [launch.cached_config(gemm, (131, 1, 1), 7), launch.cached_config(gemm, (132, 1, 1), 8),
                  launch.cached_config(quant, (132, 1, 1), 7)]
        assert all(o is not cfg for o in others) and int(others[1].hStream) == 8 and others[2].numAttrs == 0
    with env.override(no_pdl=True):
        assert launch.cached_config(gemm, (132, 1, 1), 7).numAttrs == 0


def test_pdl_kernels_launch_with_programmatic_serialization(sm90a_entries):
    """The wgmma GEMMs ask the driver to let them start while the previous
    kernel on the stream finishes (they wait for it in the kernel); nothing
    else does, and FP8GEN_NO_PDL turns it off."""
    from runtime.driver import driver
    from runtime.launch import launch_config

    pdl_id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
    cluster_id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION

    def attrs(entry):
        """{attribute id: its value's PDL flag}, read while the config lives
        (the attribute objects point into its buffer)."""
        cfg = launch_config(LoadedKernel(entry, None), (1, 1, 1))
        return {a.id: int(a.value.programmaticStreamSerializationAllowed) for a in cfg.attrs[:cfg.numAttrs]}

    entries = [e for es in sm90a_entries.values() for e in es]
    gemm = next(e for e in sm90a_entries["w8a8_wgmma"] if tuple(e.cluster) == (1, 1, 1))
    pair = next(e for e in sm90a_entries["w8a8_wgmma"] if tuple(e.cluster) != (1, 1, 1))
    quant = sm90a_entries["quant_group"][0]
    assert gemm.pdl and pair.pdl and not quant.pdl
    assert {e.family for e in entries if e.pdl} == {"w8a8_wgmma", "w8a8_row", "w8a8_tensor", "w8a8_cutlass"}
    with env.override(no_pdl=False):
        assert attrs(gemm) == {pdl_id: 1}
        assert set(attrs(pair)) == {cluster_id, pdl_id}
        assert attrs(quant) == {}
    with env.override(no_pdl=True):
        assert attrs(gemm) == {} and set(attrs(pair)) == {cluster_id}


def test_decisions_are_remembered_and_match_the_rule(fake):
    """rt.decide answers repeated questions from its memo; each answer is the
    one the rule gives fresh, whatever the workspace, and a swapped table or
    a switched knob is seen at once."""
    rt, _ = fake
    wide, plain = rt.workspace(256, 7168, max_n=4096), rt.workspace(256, 7168)
    for ws in (None, plain, wide):
        for m, n, k in ((64, 4096, 7168), (16, 7168, 2048), (949, I, H), (200, 4096, 7168)):
            d = rt.decide(m, n, k, workspace=ws)
            assert d is rt.decide(m, n, k, workspace=ws)
            assert d == rt._decide(m, n, k, "block", tp=1, parallel="column", workspace=ws, out_rows=None)
    _split_table(rt, 4096, 7168)
    assert rt.decide(64, 4096, 7168, workspace=wide).instance == SPLIT  # the new table, not the memo
    assert rt.decide(64, 4096, 7168, workspace=plain).instance != SPLIT  # no room for its partials
    with env.override(w8a16_only=True):
        assert not rt.decide(64, 4096, 7168, workspace=wide).w8a8
    assert rt.decide(64, 4096, 7168, workspace=wide).instance == SPLIT


def test_bulk_weight_scales_need_k_a_multiple_of_512(fake):
    """An instance that copies its weight scales by TMA (_wsb) maps them as
    rows of K / 128 floats, which TMA needs in 16-byte multiples: the tile
    rule and the table never give it K that is not a multiple of 512, and
    naming it for such K is a ValidationError."""
    from runtime.dispatch import fits_shape

    rt, launches = fake
    wsb = next(e for es in rt.entries.values() for e in es if e.params.get("ws_bulk"))
    assert wsb.constraints["scale_k_multiple"] == 512 and wsb.constraints["k_multiple"] == 128
    assert fits_shape(wsb, 4096, 7168) and not fits_shape(wsb, 4096, 7168 - 128)
    m, n = 256, 4096
    for k, ok in ((1536, True), (1536 + 128, False)):
        a, s, w, ws_, out = (arr((m, k), "e4m3"), arr((k // 128, m), "f32"), arr((n, k), "e4m3"),
                             arr((-(-n // 128), k // 128), "f32"), arr((m, n), "bf16"))
        if ok:
            rt.w8a8_wgmma(a, s, w, ws_, out, instance=wsb.name)
            assert launches[-1][1] == wsb.name
        else:
            with pytest.raises(runtime.ValidationError, match="multiple of 512"):
                rt.w8a8_wgmma(a, s, w, ws_, out, instance=wsb.name)
