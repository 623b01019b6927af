"""Layer 1: the numpy references against float64 and the e4m3 error model."""
import numpy as np
import pytest

import reference as ref


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.mark.parametrize("ue8m0", [False, True])
def test_quant_reconstruction_within_half_ulp(rng, ue8m0):
    """e4m3 has 3 mantissa bits: round-to-nearest leaves a relative error of
    at most 2^-4 on normal values, and at most half the subnormal spacing
    (2^-10 of the scale) below 2^-6 of it. Saturation cannot trigger because
    |x|/s <= 448 by construction of s (UE8M0 only makes s larger)."""
    x = ref.with_outliers(rng, (37, 1024)).astype(ref.BF16).astype(np.float32)
    q, s = ref.quant_group(x, ue8m0=ue8m0)
    back = q.astype(np.float64) * np.repeat(s, 128, axis=1)
    bound = np.maximum(2.0**-4 * np.abs(x), 2.0**-10 * np.repeat(s, 128, axis=1))
    assert np.all(np.abs(back - x) <= bound * (1 + 1e-6))
    amax = np.abs(x.reshape(37, 8, 128)).max(-1)
    if ue8m0:
        assert np.all(np.log2(s) == np.round(np.log2(s)))
        assert np.all(s >= amax / 448) and np.all(s < 2 * amax / 448)
    else:
        assert np.allclose(s, amax / 448, rtol=2**-23)
    # the largest element of each group lands on the top of the e4m3 range
    assert np.all(np.abs(q.astype(np.float32)).reshape(37, 8, 128).max(-1) >= (224 if ue8m0 else 448))


def test_quant_eps_floor_for_zero_groups():
    x = np.zeros((2, 256), np.float32)
    q, s = ref.quant_group(x, eps=1e-6)
    assert np.all(q.astype(np.float32) == 0)
    assert np.allclose(s, np.float32(1e-6) / np.float32(448))


def test_pow2_ceil_exact_at_powers_and_between():
    v = np.array([1.0, 1.5, 2.0, 2.0000002, 0.75, 2.0**-20 * 3], np.float32)
    assert list(ref.pow2_ceil(v)) == [1.0, 2.0, 2.0, 4.0, 1.0, 2.0**-18]


def test_w8a8_reference_equals_float64_dequantized_product(rng):
    """The per-128-K promotion is a regrouping of the dequantized product: in
    float64 both agree to rounding (~1e-15 relative)."""
    M, N, K = 9, 200, 384
    a_q, a_s = ref.quant_group(ref.with_outliers(rng, (M, K)))
    w_q, w_s = ref.quantize_weight(rng.standard_normal((N, K)).astype(np.float32))
    got = ref.w8a8(a_q, a_s, w_q, w_s)
    want = ref.dequant_act(a_q, a_s) @ ref.dequant_weight(w_q, w_s).T
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())


def test_weight_quantization_covers_ragged_n(rng):
    w = rng.standard_normal((200, 256)).astype(np.float32)
    q, s = ref.quantize_weight(w)
    assert q.shape == (200, 256) and s.shape == (2, 2)
    assert np.allclose(ref.dequant_weight(q, s), w, rtol=2**-4, atol=2**-10 * s.max())


def test_w8a8_close_to_w8a16_reference(rng):
    """DESIGN.md's gate on the references themselves: quantizing activations
    per 128 costs at most ~2^-5 relative per element; over K it averages."""
    M, N, K = 16, 256, 1024
    x = ref.with_outliers(rng, (M, K)).astype(ref.BF16).astype(np.float32)
    w_q, w_s = ref.quantize_weight(rng.standard_normal((N, K)).astype(np.float32))
    a_q, a_s = ref.quant_group(x)
    y8 = ref.w8a8(a_q, a_s, w_q, w_s)
    y16 = ref.w8a16(x, w_q, w_s)
    cos = (y8 * y16).sum() / np.linalg.norm(y8) / np.linalg.norm(y16)
    rel_rms = np.linalg.norm(y8 - y16) / np.linalg.norm(y16)
    assert cos >= 0.999 and rel_rms <= 0.02


def test_e4m3_stage_error_on_gaussian_data_is_about_2_5_percent(rng):
    """The error model behind the GPU gates (tests/gpu_helpers.py): one
    per-128 e4m3 quantization of outlier-free data leaves a relative RMS error
    above DESIGN.md's 2 % and below the 2^-3/sqrt(12) worst-case bound, and a
    GEMM against independent weights passes it through unchanged."""
    x = rng.standard_normal((64, 2048)).astype(ref.BF16).astype(np.float32)
    q, s = ref.quant_group(x)
    xd = ref.dequant_act(q, s)
    stage = np.linalg.norm(xd - x) / np.linalg.norm(x)
    assert 0.02 < stage < 2.0**-3 / 12**0.5
    w = rng.standard_normal((256, 2048))
    gemm = np.linalg.norm((xd - x) @ w.T) / np.linalg.norm(x @ w.T)
    assert abs(gemm - stage) < 0.1 * stage


def test_fp8_dequant_reference_is_the_rounded_dequantized_weight(rng):
    w_q, w_s = ref.quantize_weight(rng.standard_normal((200, 256)).astype(np.float32))
    got = ref.fp8_dequant(w_q, w_s).astype(np.float64)
    exact = ref.dequant_weight(w_q, w_s)  # float64; the FP32 product is exact (4 x 24 significant bits)
    assert np.all(np.abs(got - exact) <= 2.0**-8 * np.abs(exact))  # bf16 (8 significant bits): half an ulp
