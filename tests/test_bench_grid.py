"""Layer 1: the bench record's schema and the roofline arithmetic."""
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
