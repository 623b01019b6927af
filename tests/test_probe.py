"""gen probe: the probe switches exist where the variants say, each probe
build leaves out exactly its part (SASS), and on the GPU a probe run swaps
the builds in, times them and puts the built function back."""
import json
import re
import subprocess
import sys

import pytest

from gen.cachekey import INCLUDE_DIR
from gen.probe.timing import parse_points
from gen.probe.variants import HEADER, VARIANTS, early, parse
from runtime.errors import CatalogError
from runtime.paths import REPO_ROOT

SMALL = "w8a8_wgmma_e4m3e4m3_bf16_128x128x128_s5_g16_t2_sm90a"
P = "w8a8_wgmma_e4m3e4m3_bf16_"
# One instance of each structure the probe switches cut through, at a
# point that exercises it (the split ones at small M, where they split):
# pairs along M and N, the cluster K split, the global K split, the K
# split across warpgroups, column chunks in a pair, one temporary, row-box
# split paths, two-temporary chunks, a shape-specialized instance.
PROBED = {
    P + "128x128x128_s6_g16_t2_c2x1_o1_ws_st_oi_sm90a": "2112x1024x256",
    P + "64x128x128_s8_g16_t2_c1x2_sm90a": "2112x1024x256",
    P + "64x64x128_s10_g16_t2_ck2_ws_sm90a": "2112x1024x64",
    P + "128x128x128_s5_g16_t2_x4_ws_st_oi_sm90a": "2112x1024x64",
    P + "64x128x128_s6_g16_k2_sm90a": "2112x1024x64",
    P + "128x256x128_s4_gm16_n2_c2x1_o1_st_sm90a": "2112x1024x256",
    P + "128x192x128_s4_g16_sm90a": "2112x1024x256",
    P + "128x136x128_s5_g16_t2_ws_sp_rb_sm90a": "2112x1024x256",
    P + "128x160x128_s6_g16_t2_n2_ws_sp_sm90a": "5120x1024x256",
    P + "64x64x128_s10_g16_t2_for7168x2048_sm90a": "7168x2048x64",
    # multi-block stages: with a K split across warpgroups, with four
    # temporaries, and in a cluster K split
    P + "64x16x128_s4_g16_k2_t2_rb_sb4_sm90a": "2112x1024x16",
    P + "64x32x128_s4_g16_t4_sb4_sm90a": "4096x1024x16",
    P + "64x32x128_s4_g16_t2_ck2_sb4_sm90a": "2112x1024x16",
}


def _require_probe_builds(kernels):
    from gen.probe.build import probe_cubin

    missing = sorted({k for k in kernels for v in VARIANTS if not probe_cubin("sm_90a", v, k).exists()})
    if missing:
        pytest.fail("probe builds missing: run `python -m gen probe build --kernel " + ",".join(missing) + "` "
                    "before the GPU tests")


def test_every_define_is_a_switch_of_the_header():
    text = (INCLUDE_DIR / HEADER).read_text()
    for v in [*VARIANTS.values(), early(3)]:
        for d in v.defines:
            name = d.split("=")[0]
            assert re.search(rf"^#ifdef {name}$", text, re.M), f"{v.name}: {name} is not switched in {HEADER}"


def test_no_kernel_source_or_build_flag_sets_a_probe_switch():
    from gen.ninja_file import COMMON_FLAGS, SHIM_FLAGS

    assert not any("PROBE" in f for f in (*COMMON_FLAGS, *SHIM_FLAGS))
    for path in (REPO_ROOT / "emitted").rglob("*.cu"):
        assert "FP8GEN_PROBE" not in path.read_text(), path


def test_variant_names_parse_in_order_once():
    assert [v.name for v in parse("bare, no-mma,bare")] == ["bare", "no-mma"]
    got = parse("early-2,trace,early-2,early-0")
    assert [v.name for v in got] == ["early-2", "trace", "early-0"]
    assert got[0].defines == ("FP8GEN_PROBE_EARLY_STAGES=2",) and got[0].same_output and not got[0].traced
    with pytest.raises(CatalogError, match="0-16"):
        parse("early-17")
    with pytest.raises(CatalogError, match="unknown probe variant 'early-x'"):
        parse("early-x")
    with pytest.raises(CatalogError, match="unknown probe variant 'nomma'"):
        parse("nomma")
    with pytest.raises(CatalogError):
        parse(" , ")


def test_points_parse_and_bad_ones_are_refused():
    assert parse_points("7168x16384x1024, 64x256x1") == [(7168, 16384, 1024), (64, 256, 1)]
    for bad in ("7168x16384", "7168x16100x64", "0x128x1", "", "axbxc"):
        with pytest.raises(ValueError):
            parse_points(bad)


def test_the_sampler_names_the_gpu_by_uuid_and_reads_its_samples(monkeypatch):
    """nvidia-smi numbers GPUs its own way (CUDA_VISIBLE_DEVICES does not
    renumber them), so the sampler asks for the CUDA device's UUID."""
    from gen.probe import sampler

    assert sampler.smi_target("8e2c0a6d-1111-2222-3333-444455556666", 0) == "GPU-8e2c0a6d-1111-2222-3333-444455556666"
    assert sampler.smi_target("GPU-abc", 3) == "GPU-abc"
    assert sampler.smi_target(None, 3) == "3"
    seen = {}

    class FakeSmi:
        def __init__(self, args, stdout, stderr):
            seen["args"] = args
            stdout.write("2026/12/01 05:00:00.000, 1980, 650.5\n[N/A], x, y\n2026/12/01 05:00:00.020, 1400, 690.0\n")

        def terminate(self):
            pass

        def wait(self):
            pass

    monkeypatch.setattr(sampler.shutil, "which", lambda name: "/usr/bin/nvidia-smi")
    monkeypatch.setattr(sampler.subprocess, "Popen", FakeSmi)
    s = sampler.PowerSampler("GPU-abc")
    s.stop()
    assert seen["args"][1:3] == ["-i", "GPU-abc"]
    assert [(c, p) for _, c, p in s.samples] == [(1980.0, 650.5), (1400.0, 690.0)]
    t0 = s.samples[0][0]
    assert s.window(t0, t0 + 1) == (1690.0, 670.25, 2)
    assert s.window(t0 + 5, t0 + 6) == (None, None, 0)


def test_probe_refuses_other_families_and_unknown_names():
    from gen.probe.build import probe_specs

    with pytest.raises(CatalogError, match="probes exist for w8a8_wgmma only"):
        probe_specs("sm_90a", [_a_kernel_of("w8a8_tensor")])
    with pytest.raises(CatalogError, match="no sm_90a kernel is named"):
        probe_specs("sm_90a", ["w8a8_wgmma_nonesuch"])


def _a_kernel_of(family: str) -> str:
    from gen.catalog import specs_for

    return next(s.name for s in specs_for("sm_90a") if s.family == family)


def test_cli_names_bad_input():
    def run(*args):
        return subprocess.run([sys.executable, "-m", "gen", "probe", *args], cwd=REPO_ROOT, capture_output=True,
                              text=True)

    out = run("build", "--kernel", SMALL, "--variants", "noload")
    assert out.returncode != 0 and "unknown probe variant 'noload'" in out.stderr
    out = run("run", "--kernel", SMALL, "--points", "7168x100x1")
    assert out.returncode != 0 and "--points" in out.stderr
    out = run("build")
    assert out.returncode != 0 and "--kernel" in out.stderr


@pytest.mark.compiler
def test_each_probe_build_leaves_out_its_part():
    """The SASS of each probe build of a 128x128 t2 tile against the built
    one: no-copies has no TMA load, no-mma no QGMMA, no-promotion no FFMA
    (the promotion is the kernel's only FFMA), bare neither copies nor FFMA;
    trace and another early-weight count change none of them (early-0
    loses the copies before the wait)."""
    from gen.build import build_arch
    from gen.probe.build import build_probes
    from runtime.paths import build_dir
    from test_compile import sass

    build_arch("sm_90a", patterns=[SMALL], echo=lambda line: None)
    built = build_probes("sm_90a", [SMALL], list(VARIANTS.values()), echo=lambda line: None)

    def counts(path):
        text = sass(path)
        return {op: len(re.findall(rf"\b{op}\b", text)) for op in ("QGMMA", "UTMALDG", "FFMA")}

    base = counts(build_dir() / "sm_90a" / f"{SMALL}.cubin")
    assert min(base.values()) > 0, base
    expect = {"no-copies": dict(base, UTMALDG=0), "no-mma": dict(base, QGMMA=0),
              "no-promotion": dict(base, FFMA=0), "bare": dict(base, UTMALDG=0, FFMA=0), "trace": base}
    assert set(expect) == set(VARIANTS)
    for name, want in expect.items():
        assert counts(built[(name, SMALL)]) == want, name
    # another count of early weight boxes changes none of them; none at all
    # drops the copies before the wait, nothing else
    built.update(build_probes("sm_90a", [SMALL], [early(2), early(0)], echo=lambda line: None))
    assert counts(built[("early-2", SMALL)]) == base
    none_early = counts(built[("early-0", SMALL)])
    assert none_early["UTMALDG"] < base["UTMALDG"] and dict(none_early, UTMALDG=0) == dict(base, UTMALDG=0)
    # the trace build reads the global timer; the built cubin does not
    assert "SR_GLOBALTIMER" in sass(built[("trace", SMALL)])
    assert "SR_GLOBALTIMER" not in sass(build_dir() / "sm_90a" / f"{SMALL}.cubin")


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", [SMALL, *PROBED])
def test_probe_run_times_each_build(tmp_path, kernel):
    """Every probe build of each structure runs to the end (no hang, no
    fault), is timed, and computes something other than the built cubin."""
    _require_probe_builds([kernel])
    out = tmp_path / "probe.json"
    point = PROBED.get(kernel, "2112x1024x256")
    res = subprocess.run([sys.executable, "-m", "gen", "probe", "run", "--kernel", kernel, "--points", point,
                          "--rounds", "2", "--git-sha", "test", "--out", str(out)],
                         cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    doc = json.loads(out.read_text())
    assert doc["kind"] == "probe" and not doc["unchanged_outputs"] and not doc["changed_outputs"]
    got = {r["variant"]: r for r in doc["rows"]}
    assert set(got) == {"built", *VARIANTS}
    for r in got.values():
        assert len(r["burst_samples"]) == 2 and r["burst_us"] > 0
    assert all(got[v]["output_equals_built"] is VARIANTS[v].same_output for v in VARIANTS)
    # the trace build's stamps make whole calls whose phases fit in a call
    tr = got["trace"]["trace"]
    us = tr["us"]
    assert tr["grid"] >= 1 and tr["calls"] >= 4 and tr["timer_step_ns"] > 0, tr
    assert 0 < us["k_loop"] <= us["k_loop_max"] < us["period"] < 10 * got["trace"]["burst_us"] + 50, tr
    assert us["first_unit_k_loop"] <= us["k_loop"] and us["release_spread"] >= 0, tr


@pytest.mark.gpu
def test_swapper_restores_the_built_function(rt):
    from gen.probe.build import probe_cubin
    from gen.probe.swap import BUILT, Swapper

    _require_probe_builds([SMALL])
    path = probe_cubin("sm_90a", "no-mma", SMALL)
    kernel = rt.loaded(SMALL)
    built = kernel.function
    with Swapper(rt, SMALL, {"no-mma": path}) as swap:
        swap.use("no-mma")
        assert kernel.function is not built
        swap.use(BUILT)
        assert kernel.function is built
        swap.use("no-mma")
    assert kernel.function is built


def test_probe_run_writes_the_record_and_fails_on_unchanged_outputs(tmp_path, monkeypatch, capsys):
    """The CLI around timing.run (no GPU): the record is written as run
    returns it, and a probe build whose output equals the built one's makes
    the command exit 1 naming it, as does a trace build whose output
    differs."""
    import gen.probe.timing as timing
    from gen.cli import main

    doc = {"kind": "probe", "rows": [{"variant": "built"}], "unchanged_outputs": [], "changed_outputs": []}
    monkeypatch.setattr(timing, "run", lambda **kw: dict(doc, kernels=list(kw["kernels"])))
    out = tmp_path / "p.json"
    args = ["probe", "run", "--kernel", f"{SMALL},{SMALL}", "--points", "64x128x1", "--git-sha", "x", "--out",
            str(out)]
    assert main(args) == 0
    assert json.loads(out.read_text()) == dict(doc, kernels=[SMALL])
    doc["unchanged_outputs"] = ["bare of K at 64x128 M=1"]
    assert main(args) == 1
    assert "bare of K at 64x128 M=1" in capsys.readouterr().err
    doc["unchanged_outputs"] = []
    doc["changed_outputs"] = ["trace of K at 64x128 M=1"]
    assert main(args) == 1
    assert "leave nothing out but whose output differs" in capsys.readouterr().err


def _synthetic_trace(calls=5, grid=3):
    """Records of `calls` calls of `grid` CTAs with known phases (ns): each
    call 10 us after the one before; CTA b enters 1 us before the previous
    call's last end + 10b, passes the wait at +500 + 20b after the call's
    start, finds its first stage 1 us later, loops 6 us + 100b, ends at
    +9500 + 5b; the producer issues its last copy 300 ns after the wait."""
    import numpy as np

    from gen.probe.trace import WORDS

    rng = np.random.default_rng(0)
    prod, math = [], []
    for c in range(calls):
        base = 10_000 * (c + 1)
        cp, cm = [], []
        for b in rng.permutation(grid):
            entry = base - 1000 + 10 * b
            wait = base + 500 + 20 * b
            first = wait + 1000
            done = first + 6000 + 100 * b
            end = base + 9500 + 5 * b
            meta = (int(b) + 7 << 32) | int(b)
            cm.append([meta, entry, entry + 100, wait, first, done, done, end])
            cp.append([meta, entry, entry + 100, wait, wait + 300, 0, 0, end - 50])
        prod += cp
        math += cm
    out = [np.array(x, dtype=np.uint64) for x in (prod, math)]
    assert out[0].shape[1] == WORDS
    return out


def test_trace_summary_gives_the_phases_of_known_stamps():
    from gen.probe.trace import SKIP_CALLS, summarize

    prod, math = _synthetic_trace()
    got = summarize(prod, math)
    assert (got["grid"], got["calls"], got["skipped"], got["timer_step_ns"]) == (3, 5, SKIP_CALLS, 5)
    assert got["us"] == {
        "period": 10.0, "first_entry": -0.51, "release": 0.99, "release_spread": 0.04, "first_stage": 1.0,
        "first_stage_max": 1.0, "k_loop": 6.1, "k_loop_max": 6.2, "first_unit_k_loop": 6.1,
        "tail": 1.885, "last_end_after_median": 0.005, "copies_issued": 0.3}
    # CTA b runs on SM b + 7 in every call, and its loop takes 6 us + 100b
    assert got["k_loop_by_sm_us"] == {"7": 6.0, "8": 6.1, "9": 6.2}
    assert got["slowest_sm"] == {"sm": 9, "share_of_calls": 1.0}


def test_trace_summary_refuses_records_that_are_not_whole_calls():
    from gen.probe.trace import summarize

    prod, math = _synthetic_trace()
    with pytest.raises(ValueError, match="expected equal"):
        summarize(prod[:-1], math)
    with pytest.raises(ValueError, match="not whole calls"):
        summarize(prod[:-1], math[:-1])
    math = math.copy()
    math[3, 0] = math[4, 0]  # call 1 names one CTA twice and another not at all
    with pytest.raises(ValueError, match="call 1's m records"):
        summarize(prod, math)
