"""Layer 3 (GPU): gen bench's arms at points off the anchor grid (odd M),
where the activation scales need padded MN-major rows."""
import pytest

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch")

from gen.bench import arms  # noqa: E402
from gen.bench.timing import time_us  # noqa: E402


def _one_pass(torch_, calls):
    """A stand-in timer: one call, so that the test checks what is timed, not how long."""
    calls[0]()
    torch_.cuda.synchronize()
    return 1.0


@pytest.mark.parametrize("M", [1, 37, 600, 1193])
def test_bench_times_the_block_scaled_arms_at_any_m(rt, gen, M):
    """Every block-scaled arm is checked against float64 and gets a row at
    M that is not a multiple of 4; a peer that refuses a shape is reported
    as a refusal, never as a failure of ours."""
    ctx = arms.Context(torch=torch, rt=rt, gen=gen, l2_bytes=1 << 20, peak_tflops=1979.0, memory_tbps=4.25,
                       families=["w8a8_wgmma", "w8a8_cutlass", "cublaslt_block"],
                       workspace=rt.workspace(M, 128, max_n=384), progress=lambda _: None, timer=_one_pass)
    arms.gemm_point(ctx, arms.ShapeInputs(ctx, 384, 1024), M)
    assert ctx.failures == []
    timed = {r.impl for r in ctx.rows}
    assert {"w8a8_wgmma", "w8a8_cutlass"} <= timed
    assert "cublaslt_block" in timed or any(r.startswith("cublaslt_block") for r in ctx.refusals)
    assert all(r.M == M and r.N == 384 and r.K == 1024 for r in ctx.rows)


def test_events_timer_is_the_default():
    assert arms.Context.__dataclass_fields__["timer"].default is time_us
