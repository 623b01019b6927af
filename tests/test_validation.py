"""Layer 1: every class of bad input is refused before launch, with a message
naming the broken requirement. Launch plans are pure, so no GPU is needed:
arrays are raw (fake) device pointers, kernels come from the manifest."""
import numpy as np
import pytest

from runtime import ops
from runtime.errors import LoadError, ValidationError
from runtime.tensors import DeviceArray, as_device_array

M, N, K = 100, 2112, 7168
BASE = 1 << 32


@pytest.fixture(scope="module")
def entries(sm90a_entries):
    return sm90a_entries


def arr(shape, dtype, offset=0, strides=None, device=None):
    arr.next += 1 << 28
    return DeviceArray.raw(arr.next + offset, shape, dtype, strides=strides, device=device)


arr.next = BASE


def gemm_args(**over):
    args = dict(a=arr((M, K), "e4m3"), a_scale=arr((M, K // 128), "f32"), w=arr((N, K), "e4m3"),
                w_scale=arr((-(-N // 128), K // 128), "f32"), out=arr((M, N), "bf16"))
    args.update(over)
    return args


def test_valid_gemm_plans(entries):
    plan = ops.w8a8_mma(entries, **gemm_args())
    assert plan.kernel.family == "w8a8_mma" and plan.kernel.constraints["bm"] == 128
    assert plan.grid == (-(-N // 128), 1, 1)
    assert ops.w8a8_mma(entries, **gemm_args(a=arr((M, K), "u8"))).args["M"] == M  # raw e4m3 bytes


def test_small_m_takes_the_small_tile(entries):
    m = 17
    plan = ops.w8a8_mma(entries, a=arr((m, K), "e4m3"), a_scale=arr((m, K // 128), "f32"), w=arr((N, K), "e4m3"),
                        w_scale=arr((17, K // 128), "f32"), out=arr((m, N), "bf16"))
    assert plan.kernel.constraints["bm"] == 64


@pytest.mark.parametrize("case,match", [
    (dict(a=lambda: arr((M, K), "bf16")), "a must be e4m3 or u8"),
    (dict(out=lambda: arr((M, N), "f32")), "out must be bf16"),
    (dict(out=lambda: arr((M, N + 16), "bf16")), r"out must have shape \(100, 2112\)"),
    (dict(a_scale=lambda: arr((M, K // 128 + 1), "f32")), "a_scale must have shape"),
    (dict(w_scale=lambda: arr((N, K // 128), "f32")), "weight_scale must have shape"),  # per-row read as block
    (dict(w_scale=lambda: arr((17, K // 128), "bf16")), "weight_scale must be f32"),
    (dict(a=lambda: arr((M, K), "e4m3", offset=8)), "a must be 16-byte aligned"),
    (dict(out=lambda: arr((M, N), "bf16", strides=(1, M))), "contiguous"),
    (dict(a=lambda: DeviceArray.raw(0, (M, K), "e4m3")), "null pointer"),
    (dict(w=lambda: arr((N, K - 128), "e4m3")), "weight has K=7040"),
    (dict(a=lambda: arr((M, K, 1), "e4m3")), "must be 2-D"),
])
def test_gemm_refusals(entries, case, match):
    with pytest.raises(ValidationError, match=match):
        ops.w8a8_mma(entries, **gemm_args(**{k: f() for k, f in case.items()}))


def test_k_and_n_rules(entries):
    with pytest.raises(ValidationError, match="K must be a multiple of 128"):
        ops.w8a8_mma(entries, a=arr((M, 100), "e4m3"), a_scale=arr((M, 1), "f32"), w=arr((N, 100), "e4m3"),
                     w_scale=arr((17, 1), "f32"), out=arr((M, N), "bf16"))
    with pytest.raises(ValidationError, match="N must be a multiple of 16"):
        ops.w8a16_gemm(entries, arr((M, K), "bf16"), arr((100, K), "e4m3"), arr((1, 56), "f32"),
                       arr((M, 100), "bf16"))


def test_empty_m_is_refused(entries):
    with pytest.raises(ValidationError, match="M must be >= 1"):
        ops.w8a16_gemm(entries, arr((0, K), "bf16"), arr((N, K), "e4m3"), arr((17, 56), "f32"), arr((0, N), "bf16"))


def test_gemv_refuses_prefill_m(entries):
    with pytest.raises(ValidationError, match="M must be <= 4"):
        ops.w8a16_gemv(entries, arr((5, K), "bf16"), arr((N, K), "e4m3"), arr((17, 56), "f32"), arr((5, N), "bf16"))
    plan = ops.w8a16_gemv(entries, arr((4, K), "bf16"), arr((N, K), "e4m3"), arr((17, 56), "f32"),
                          arr((4, N), "bf16"))
    assert plan.grid == (N // 8, 1, 1)


def test_quantizer_layouts_and_refusals(entries):
    x, q = arr((M, K), "bf16"), arr((M, K), "e4m3")
    tok = ops.quant_group(entries, x, q, arr((M, 56), "f32"))
    assert tok.args["mn_major"] == 0 and tok.args["ld_scale"] == 56
    mn = ops.quant_group(entries, x, q, arr((56, 104), "f32"), ue8m0=True)
    assert mn.args["mn_major"] == 1 and mn.args["ld_scale"] == 104 and mn.args["ue8m0"] == 1
    with pytest.raises(ValidationError, match="multiple of 4"):
        ops.quant_group(entries, x, q, arr((56, 102), "f32"))
    with pytest.raises(ValidationError, match="K must be a multiple of 128"):
        ops.quant_group(entries, arr((M, 200), "bf16"), arr((M, 200), "e4m3"), arr((M, 2), "f32"))
    for eps in (0.0, -1.0, float("inf"), float("nan"), 1e-40, 1e39):
        with pytest.raises(ValidationError, match="eps must be finite"):
            ops.quant_group(entries, x, q, arr((M, 56), "f32"), eps=eps)
    with pytest.raises(ValidationError, match="q must have shape"):
        ops.quant_group(entries, x, arr((M, K // 2), "e4m3"), arr((M, 56), "f32"))


def test_quantizers_cover_the_pad_tokens_unless_told_not_to(entries):
    """MN-major scales [K/128, M_pad]: the launch covers the M_pad tokens
    (pads written as 0) by default, only the M tokens with pad_scales=False
    (the workspace's 128-row padding, which its GEMMs never store)."""
    m_pad = 128
    per_row = K // 16
    for op, inputs in ((ops.quant_group, lambda: (arr((M, K), "bf16"),)),
                       (ops.quant_silu_mul, lambda: (arr((M, K), "bf16"), arr((M, K), "bf16")))):
        def plan(**kw):
            s = arr((K // 128, m_pad), "f32")
            if op is ops.quant_group:
                return op(entries, *inputs(), arr((M, K), "e4m3"), s, **kw)
            return op(entries, *inputs(), q=arr((M, K), "e4m3"), scale=s, **kw)
        threads = plan().kernel.threads
        assert plan().grid == (-(-m_pad * per_row // threads), 1, 1)
        lean = plan(pad_scales=False)
        assert lean.grid == (-(-M * per_row // threads), 1, 1) and lean.args["ld_scale"] == m_pad
        # token-major scales have no pad tokens: the flag changes nothing there
        tok = ops.quant_group(entries, arr((M, K), "bf16"), arr((M, K), "e4m3"), arr((M, K // 128), "f32"),
                              pad_scales=False)
        assert tok.grid == (-(-M * per_row // threads), 1, 1)


def test_scale_adapter_capacity(entries):
    with pytest.raises(ValidationError, match=f"room for the {M} tokens .* got M_pad=96"):
        ops.scale_mn_major(entries, arr((M, 56), "f32"), arr((56, 96), "f32"))
    with pytest.raises(ValidationError, match="multiple of 4 .* got M_pad=102"):  # (no GEMM reads such rows)
        ops.scale_mn_major(entries, arr((M, 56), "f32"), arr((56, 102), "f32"))
    with pytest.raises(ValidationError, match=r"src must be \[M >= 1, G >= 1\]"):
        ops.scale_mn_major(entries, arr((0, 56), "f32"), arr((56, 128), "f32"))
    ok = ops.scale_mn_major(entries, arr((M, 56), "f32"), arr((56, 128), "f32"))
    assert ok.args == {**ok.args, "M": M, "G": 56, "M_pad": 128}


def test_device_mismatch(entries):
    with pytest.raises(ValidationError, match="on cuda:1"):
        ops.w8a16_gemm(entries, arr((M, K), "bf16", device=1), arr((N, K), "e4m3"), arr((17, 56), "f32"),
                       arr((M, N), "bf16"), device=0)


def test_host_arrays_are_not_device_arrays():
    with pytest.raises(ValidationError, match="not a CUDA array"):
        as_device_array(np.zeros((4, 4), np.float32), "x")


def test_cuda_array_interface_is_read():
    class Fake:
        __cuda_array_interface__ = {"shape": (4, 8), "typestr": "<f4", "data": (BASE, False), "version": 3,
                                    "strides": (64, 8)}

    a = as_device_array(Fake(), "x")
    assert (a.ptr, a.shape, a.strides, a.dtype) == (BASE, (4, 8), (16, 2), "f32")
    assert not a.is_contiguous()


def test_missing_family_is_a_load_error():
    with pytest.raises(LoadError, match="no w8a8_mma kernel"):
        ops.w8a8_mma({}, **gemm_args())


def test_torch_like_tensors_are_read_without_dlpack():
    class Device:
        type, index = "cuda", 0

    class Tensor:
        __module__ = "torch"
        dtype = "torch.float8_e4m3fn"
        shape = (4, 128)
        device = Device()

        def data_ptr(self):
            return BASE

        def stride(self):
            return (128, 1)

    a = as_device_array(Tensor(), "w")
    assert (a.ptr, a.shape, a.strides, a.dtype, a.device) == (BASE, (4, 128), (128, 1), "e4m3", 0)
    Tensor.device = type("CPU", (), {"type": "cpu", "index": None})()
    with pytest.raises(ValidationError, match="must be on a CUDA device"):
        as_device_array(Tensor(), "w")


def test_scale_layout_must_be_said_when_the_shape_cannot_tell(entries):
    """M == K/128: [M, K/128] and [K/128, M] are one shape. Guessing would
    make an MN-major consumer read token-major scales transposed."""
    M2, K2 = 40, 5120
    x, q, s = arr((M2, K2), "bf16"), arr((M2, K2), "e4m3"), arr((40, 40), "f32")
    with pytest.raises(ValidationError, match="pass mn_major"):
        ops.quant_group(entries, x, q, s)
    assert ops.quant_group(entries, x, q, s, mn_major=True).args["mn_major"] == 1
    assert ops.quant_group(entries, x, q, s, mn_major=False).args["mn_major"] == 0
    with pytest.raises(ValidationError, match="pass mn_major"):
        ops.quant_silu_mul(entries, arr((M2, K2), "bf16"), arr((M2, K2), "bf16"), q=q, scale=s)
    # M == K/128 == 1 cannot be MN-major (M_pad must be a multiple of 4): token-major, no question
    one = ops.quant_group(entries, arr((1, 128), "bf16"), arr((1, 128), "e4m3"), arr((1, 1), "f32"))
    assert one.args["mn_major"] == 0


def test_read_only_outputs_are_refused(entries):
    import dataclasses

    class ReadOnly:
        __cuda_array_interface__ = {"shape": (M, N), "typestr": "<u2", "data": (BASE, True), "version": 3}

    assert as_device_array(ReadOnly(), "out").readonly
    with pytest.raises(ValidationError, match="read-only"):
        ops.w8a8_mma(entries, **gemm_args(out=dataclasses.replace(arr((M, N), "bf16"), readonly=True)))


def test_fp8_dequant_plans_and_refusals(entries):
    plan = ops.fp8_dequant(entries, arr((N, K), "e4m3"), arr((17, 56), "f32"), arr((N, K), "bf16"))
    assert plan.grid == (-(-N * K // 16 // 256), 1, 1) and plan.args["N"] == N
    with pytest.raises(ValidationError, match="out must have shape"):
        ops.fp8_dequant(entries, arr((N, K), "e4m3"), arr((17, 56), "f32"), arr((N, K // 2), "bf16"))
    with pytest.raises(ValidationError, match="weight_scale must be 2-D"):  # a per-row scale
        ops.fp8_dequant(entries, arr((N, K), "e4m3"), arr((N,), "f32"), arr((N, K), "bf16"))
    with pytest.raises(ValidationError, match="weight_scale must have shape"):
        ops.fp8_dequant(entries, arr((N, K), "e4m3"), arr((N, 1), "f32"), arr((N, K), "bf16"))
    with pytest.raises(ValidationError, match="K must be a multiple of 128"):
        ops.fp8_dequant(entries, arr((N, 100), "e4m3"), arr((17, 1), "f32"), arr((N, 100), "bf16"))


def _fast_args(**over):
    args = dict(a=arr((M, K), "e4m3"), a_scale=arr((K // 128, 128), "f32"), w=arr((N, K), "e4m3"),
                w_scale=arr((-(-N // 128), K // 128), "f32"), out=arr((M, N), "bf16"))
    args.update(over)
    return args


def test_sizes_past_32_bits_are_refused(entries):
    """The host shims take sizes and leading dimensions as C ints: ctypes
    would cut 2**32 + 128 to 128 without a word."""
    with pytest.raises(ValidationError, match="a_scale's sizes must be in 0..2147483647"):
        ops.w8a8_wgmma(entries, **_fast_args(a_scale=arr((K // 128, 2**32 + 128), "f32")))
    with pytest.raises(ValidationError, match="sizes must be in 0..2147483647"):
        ops.w8a8_mma(entries, **gemm_args(w=arr((N, -128), "e4m3")))


def test_empty_n_or_k_is_refused(entries):
    with pytest.raises(ValidationError, match="N and K must be >= 1, got N=2112, K=0"):
        ops.w8a8_mma(entries, **gemm_args(a=arr((M, 0), "e4m3"), w=arr((N, 0), "e4m3")))
    with pytest.raises(ValidationError, match="N and K must be >= 1, got N=0"):
        ops.w8a8_wgmma(entries, **_fast_args(w=arr((0, K), "e4m3"), out=arr((M, 0), "bf16")))
    with pytest.raises(ValidationError, match="K must be >= 1, got 0"):
        ops.quant_group(entries, arr((M, 0), "bf16"), arr((M, 0), "e4m3"), arr((M, 0), "f32"))
    with pytest.raises(ValidationError, match="N and K must be >= 1"):
        ops.fp8_dequant(entries, arr((N, 0), "e4m3"), arr((17, 0), "f32"), arr((N, 0), "bf16"))


@pytest.mark.parametrize("m", [True, 2.0, "50", float("nan")])
def test_m_must_be_an_int(entries, m):
    with pytest.raises(ValidationError, match="m must be an int in 1..100"):
        ops.w8a8_wgmma(entries, **_fast_args(), m=m)


@pytest.mark.parametrize("eps", ["1e-10", None, 10**400, True])
def test_eps_of_another_type_is_refused(entries, eps):
    with pytest.raises(ValidationError, match="eps must be finite"):
        ops.quant_group(entries, arr((M, K), "bf16"), arr((M, K), "e4m3"), arr((M, K // 128), "f32"), eps=eps)
    with pytest.raises(ValidationError, match="eps must be finite"):
        ops.quant_token(entries, arr((M, K), "bf16"), arr((M, K), "e4m3"), arr((M,), "f32"), eps=eps)


def test_raw_arrays_need_matching_strides_and_a_64_bit_address():
    with pytest.raises(ValidationError, match=r"strides \(1,\) do not match the 2-D shape"):
        DeviceArray.raw(BASE, (M, K), "e4m3", strides=(1,))
    for ptr in (-16, 2**64 + 16):
        with pytest.raises(ValidationError, match="64-bit address"):
            DeviceArray.raw(ptr, (M, K), "e4m3")
    assert not DeviceArray(BASE, (M, K), (1,), "e4m3").is_contiguous()


def test_tma_weight_scales_must_be_16_byte_aligned(entries):
    """The _wsb instances copy the weight scales by TMA (the shim refused a
    4-byte aligned view only at launch); the others read them 4-byte aligned."""
    bulk = next(e.name for e in entries["w8a8_wgmma"]
                if e.constraints.get("scale_k_multiple", 1) > 128 and not e.constraints.get("fixed_n")
                and e.constraints.get("k_slices", 1) == 1)
    plain = next(e.name for e in entries["w8a8_wgmma"]
                 if e.constraints.get("scale_k_multiple", 1) <= 128 and not e.constraints.get("fixed_n")
                 and e.constraints.get("k_slices", 1) == 1)
    shifted = arr((-(-N // 128), K // 128), "f32", offset=4)
    with pytest.raises(ValidationError, match=f"{bulk} copies the weight scales by TMA: .* 16-byte aligned"):
        ops.w8a8_wgmma(entries, **_fast_args(w_scale=shifted), instance=bulk)
    assert ops.w8a8_wgmma(entries, **_fast_args(w_scale=shifted), instance=plain).kernel.name == plain


def test_more_tile_rows_than_a_grid_holds_are_refused(entries):
    """(the mma.sync tiles run their tile rows along the grid's y, at most 65535)"""
    big = 65536 * 128
    with pytest.raises(ValidationError, match="w8a8_mma: M=8388608 needs .* more than a grid's 65535"):
        ops.w8a8_mma(entries, **gemm_args(a=arr((big, K), "e4m3"), a_scale=arr((big, K // 128), "f32"),
                                          out=arr((big, N), "bf16")))
