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


@pytest.mark.parametrize("order", ["abba", "fp8gen first", "peers first"])
def test_arm_orders_time_each_arm_where_they_say(rt, gen, order):
    """A stand-in timer returns how many timings came before plus one, so a
    row's time says where its arm ran: abba times each arm twice, once on
    the way out and once on the way back, and every arm's mean position is
    the same; the other orders time each once, fp8gen's arm first or last."""
    count = []

    def position(torch_, calls):
        calls[0]()
        torch_.cuda.synchronize()
        count.append(1)
        return float(len(count))

    ctx = arms.Context(torch=torch, rt=rt, gen=gen, l2_bytes=1 << 20, peak_tflops=1979.0, memory_tbps=4.25,
                       families=["w8a8_wgmma", "cublaslt_block"], workspace=rt.workspace(64, 128, max_n=384),
                       progress=lambda _: None, timer=position, arm_order=order)
    shape = arms.ShapeInputs(ctx, 384, 1024)
    arms.gemm_point(ctx, shape, 64)
    assert ctx.failures == [] and ctx.refusals == []
    us = {r.impl: r.us for r in ctx.rows}
    assert len(ctx.rows) == 2
    if order == "abba":
        assert len(count) == 4 and us == {"w8a8_wgmma": 2.5, "cublaslt_block": 2.5}
        first = [r for r in ctx.rows]
        count.clear()
        arms.gemm_point(ctx, shape, 64)  # the next point starts from the peer's end
        assert len(count) == 4 and [r.impl for r in ctx.rows[2:]] == ["cublaslt_block", "w8a8_wgmma"]
        assert [r.impl for r in first] == ["w8a8_wgmma", "cublaslt_block"]
    else:
        first = order == "fp8gen first"
        assert len(count) == 2 and us == {"w8a8_wgmma": 1.0 if first else 2.0, "cublaslt_block": 2.0 if first else 1.0}
