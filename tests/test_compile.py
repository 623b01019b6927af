"""Layer 2 (compiler, no GPU): real builds, the no-op rebuild, header
tracking, failure reporting, and what the SASS of each family promises."""
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, Tuple

import pytest

from gen.build import build_arch
from gen.catalog import specs_for
from gen.toolchain import sass_tool
from runtime.errors import CatalogError, CompileError
from runtime.paths import REPO_ROOT, build_dir
from twins import bulk_base_candidates, first_of

pytestmark = pytest.mark.compiler
QUIET = lambda line: None  # noqa: E731

# Native QMMA where the arch has it; the FP16 emulation (asserted as the
# fact it is) on sm_90a.
MMA_SASS = {
    "sm_89": ["QMMA.16832.F32.E4M3.E4M3"],
    "sm_120a": ["QMMA.16832.F32.E4M3.E4M3"],
    "sm_121a": ["QMMA.16832.F32.E4M3.E4M3"],
    "sm_90a": ["F2FP.F16.E4M3.UNPACK_B", "HMMA.16816.F32"],
    "sm_100a": ["F2FP.F16.E4M3.UNPACK_B", "HMMA.16816.F32"],  # the single-scale variants only
}


# cuobjdump's SASS per cubin version (path, mtime, size): five tests read
# every sm_90a cubin's SASS, and one pass over them takes about 90 s here.
_SASS: Dict[Tuple[str, int, int], str] = {}


def sass(cubin) -> str:
    tool = sass_tool("cuobjdump")
    if tool is None:
        pytest.fail("cuobjdump not found: install the test extra (`pip install -e .[test]`)")
    st = os.stat(cubin)
    key = (os.path.realpath(cubin), st.st_mtime_ns, st.st_size)
    if key not in _SASS:
        _SASS[key] = subprocess.run([str(tool), "-sass", str(cubin)], capture_output=True, text=True,
                                    check=True).stdout
    return _SASS[key]


def prefetch_sass(cubins) -> None:
    """Disassemble these cubins on every core (cuobjdump runs as its own
    process), so that a test's loop over them reads the kept text."""
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        list(pool.map(sass, list(cubins)))


@pytest.fixture(scope="module")
def sm90a_built():
    build_arch("sm_90a", echo=QUIET)
    return build_dir() / "sm_90a"


def test_noop_rebuild_is_fast(sm90a_built):
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "gen", "build", "--arch", "sm_90a"], cwd=REPO_ROOT,
                         capture_output=True, text=True)
    elapsed = time.monotonic() - t0
    assert out.returncode == 0, out.stderr
    assert "no work to do" in out.stdout
    assert elapsed < 2.0, f"no-op build took {elapsed:.2f} s"


def test_header_change_rebuilds_exactly_its_dependents(sm90a_built):
    import gen.ninja_file as nf

    ninja = nf.ninja_binary()
    header = REPO_ROOT / "templates/include/fp8gen/scale_mn_major.cuh"
    stamp = header.stat()
    try:
        header.touch()
        dry = subprocess.run([ninja, "-C", str(sm90a_built), "-n"], capture_output=True, text=True, check=True)
    finally:
        import os

        os.utime(header, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    rebuilt = re.findall(r"nvcc (\S+)", dry.stdout)
    assert rebuilt == [s.name for s in specs_for("sm_90a") if s.family == "scale_mn_major"]


def test_every_sm90a_kernel_is_clean(sm90a_built):
    prefetch_sass(sm90a_built / f"{spec.name}.cubin" for spec in specs_for("sm_90a"))
    for spec in specs_for("sm_90a"):
        text = sass(sm90a_built / f"{spec.name}.cubin")
        assert not re.search(r"\b(LDL|STL)\b", text), f"{spec.name} uses local memory"


def test_register_reallocation_fits_the_launch_allotment(sm90a_built):
    """setmaxnreg moves registers between the warpgroups of a CTA, within
    what the CTA was launched with (ptxas's count x its threads). A
    warpgroup's increase that asks for more than the others gave back waits
    forever (seen on the H200: a 128x136 tile with a 32-register producer
    and two 240-register math warpgroups, 512 > 3 x 168, hung)."""
    from runtime import manifest
    from runtime.paths import manifest_path

    _, entries = manifest.load(manifest_path("sm_90a"))
    prefetch_sass(sm90a_built / f"{e.name}.cubin" for e in entries)
    checked = 0
    for e in entries:
        text = sass(sm90a_built / f"{e.name}.cubin")
        dealloc = [int(v, 16) for v in re.findall(r"USETMAXREG\.DEALLOC\S* (0x[0-9a-f]+)", text)]
        alloc = [int(v, 16) for v in re.findall(r"USETMAXREG\.TRY_ALLOC\S* \w+, (0x[0-9a-f]+)", text)]
        if not (dealloc or alloc):
            continue
        assert len(set(dealloc)) == 1 and len(set(alloc)) <= 1, f"{e.name}: {dealloc} {alloc}"
        groups = e.threads // 128  # one producer warpgroup, the rest math
        math = alloc[0] if alloc else e.registers  # (four math warpgroups keep the launch's count)
        total = dealloc[0] + (groups - 1) * math
        assert total <= groups * e.registers, \
            f"{e.name}: {dealloc[0]} + {groups - 1} x {math} registers > {groups} x {e.registers} at launch"
        checked += 1
    assert checked >= sum(e.family == "w8a8_wgmma" for e in entries)


def test_a_rebuilt_shim_is_byte_identical(sm90a_built):
    """Host shims, like cubins, are reproducible: rebuilding one by the same
    ninja rule gives the bytes the manifest's sha256 records (nvcc's default
    temporary names carry a process id into the library)."""
    import hashlib

    from gen.ninja_file import ninja_binary
    from runtime import manifest
    from runtime.paths import manifest_path

    _, entries = manifest.load(manifest_path("sm_90a"))
    smallest = min((e for e in entries if e.family == "w8a8_wgmma"), key=lambda e: e.dynamic_smem)
    lib = build_dir() / smallest.shim
    lib.unlink()
    out = subprocess.run([ninja_binary(), "-C", str(sm90a_built), lib.name], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert hashlib.sha256(lib.read_bytes()).hexdigest() == smallest.shim_sha256, smallest.name
    assert not (sm90a_built / f"{lib.name}.keep").exists(), "the intermediates are removed after the build"


def test_cutlass_instances_run_fp8_wgmma_and_ship_a_shim(sm90a_built):
    from runtime import manifest
    from runtime.paths import manifest_path

    _, entries = manifest.load(manifest_path("sm_90a"))
    cutlass = [e for e in entries if e.family == "w8a8_cutlass"]
    assert cutlass, "HARDWARE.toml lists w8a8_cutlass instances for sm_90a"
    for e in cutlass:
        assert "QGMMA" in sass(sm90a_built / f"{e.name}.cubin"), e.name
        assert e.shim and (build_dir() / e.shim).is_file() and len(e.shim_sha256) == 64
        assert e.constraints["params_bytes"] > 0 and e.threads == 384


def _r2ur_inside_mma_batches(sass_text: str) -> int:
    """R2UR instructions between a QGMMA and the last one of its batch (the
    one that closes the group, `gsb0`) that write a descriptor register of a
    later MMA of that batch (`gdesc[URk]` reads URk..URk+3). An R2UR of some
    other uniform value there (a block's B scale for the promotion, in the
    one-temporary loops) costs one issue slot and does not hold the MMA."""
    count, inside, pending = 0, False, []
    for m in re.finditer(r"\b(QGMMA\S*|R2UR)\b([^;]*)", sass_text):
        if m.group(1).startswith("QGMMA"):
            desc = re.search(r"gdesc\[UR(\d+)\]", m.group(2))
            if inside and desc:
                base = int(desc.group(1))
                hit = [r for r in pending if base <= r < base + 4]
                count += len(hit)
                pending = [r for r in pending if r not in hit]
            inside = "gsb0" not in m.group(2)
            if not inside:
                pending = []
        elif inside:
            dest = re.match(r"\s*UR(\d+)", m.group(2))
            if dest:
                pending.append(int(dest.group(1)))
    return count


def test_r2ur_count_sees_descriptors_moved_between_mmas():
    """The check above can fail: SASS as ptxas wrote it before the warpgroup
    index was read through a shuffle (128x128 t2, abridged)."""
    before = """
        QGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR24], RZ, !UPT ;
        R2UR UR24, R200 ;
        R2UR UR25, R201 ;
        QGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR24], R24 ;
        R2UR UR24, R200 ;
        QGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR24], R24, gsb0 ;
        R2UR UR23, R199 ;
        QGMMA.64x128x32.F32.E4M3.E4M3 R88, gdesc[UR24], RZ, !UPT ;"""
    assert _r2ur_inside_mma_batches(before) == 3
    assert _r2ur_inside_mma_batches(before.replace("R2UR", "UMOV")) == 0
    # a scale moved to a uniform register inside a batch is not a descriptor
    scale = before.replace("R2UR UR24, R200", "R2UR UR49, R206")
    assert _r2ur_inside_mma_batches(scale) == 1


def test_wgmma_families_run_qgmma_fed_by_tma(sm90a_built):
    """The raw-PTX families: FP8 wgmma (QGMMA), TMA loads, register
    reallocation between the warpgroups, each wgmma batch issued without a
    wait between its MMAs (no serialization), a host shim; ptxas's own
    warnings (C7508 setmaxnreg ignored, C7510 wgmma serialized) already fail
    the build."""
    from runtime import manifest
    from runtime.paths import manifest_path

    _, entries = manifest.load(manifest_path("sm_90a"))
    fams = {"w8a8_wgmma", "w8a8_tensor", "w8a8_row"}
    found = [e for e in entries if e.family in fams]
    built = {p.stem for p in sm90a_built.glob("*.cubin")}
    assert {e.family for e in found} == fams
    prefetch_sass(sm90a_built / f"{e.name}.cubin" for e in found)
    for e in found:
        text = sass(sm90a_built / f"{e.name}.cubin")
        assert "QGMMA" in text and "UTMALDG" in text and "USETMAXREG" in text, e.name
        # between the four k32 MMAs of a block no warpgroup wait is issued
        ops = re.findall(r"\b(QGMMA|WARPGROUP\.DEPBAR)\S*", text)
        runs = [len(r) for r in "".join("Q" if op == "QGMMA" else "|" for op in ops).split("|") if r]
        assert runs and all(r % 4 == 0 for r in runs), f"{e.name}: wgmma serialized: runs of {runs}"
        # the descriptors are built in uniform registers: no R2UR moves them
        # there between a block's MMAs (ptxas does when it cannot prove the
        # warpgroup index warp-uniform; those kernels took 1.04-1.05x the time)
        assert _r2ur_inside_mma_batches(text) == 0, f"{e.name}: wgmma descriptors moved by R2UR between MMAs"
        if e.params.get("temps", 1) == 2:
            # the next block's group stays in flight while the last one is promoted
            assert "WARPGROUP.DEPBAR.LE gsb0, 0x1" in text, f"{e.name}: no wgmma group kept in flight"
        # the TMA-store epilogue: 64-column boxes, a row box (_rb) or half boxes (_hb)
        assert ("UTMASTG" in text) == (e.params["bn"] % 64 == 0 or e.params.get("row_box", False)
                                       or e.params.get("half_box", False)), e.name
        # ws_stage: the producer's cp.async of the weight scales, tied to the
        # stage's barrier; without it the math warps load them from L2
        # (ws_bulk: by TMA, through the scales' own map: one tensor copy more
        # than its twin without it)
        ws = e.params.get("ws_stage", False)
        bulk = e.params.get("ws_bulk", False)
        assert ("LDGSTS" in text and "ARRIVES.LDGSTSBAR" in text) == (ws and not bulk), f"{e.name}: weight-scale copy"
        if bulk:
            twin = first_of(bulk_base_candidates(e.name), built)
            assert twin, f"{e.name}: no base of this _wsb twin is built"
            # (a 2-CTA pair with the scales in the stage copies no W box
            # before the grid-dependency wait, wgmma_gemm's kEarly: where its
            # twin does, the twin has that copy site more)
            twin_ws = next(t for t in found if t.name == twin).params.get("ws_stage", False)
            pair = e.params.get("cluster_m", 1) * e.params.get("cluster_n", 1) > 1
            early_site = int(pair and not twin_ws)
            assert text.count("UTMALDG") > sass(sm90a_built / f"{twin}.cubin").count("UTMALDG") - early_site, \
                f"{e.name}: no tensor copy of the weight scales beside {twin}'s"
        if e.family == "w8a8_wgmma" and not ws:
            assert "LDG.E.CONSTANT" in text, f"{e.name}: no weight-scale load"
        if e.params.get("cluster_k", 1) > 1:
            # the cluster K split: rank 0 gathers the peers' partial tiles
            # through distributed shared memory (generic stores to the
            # cluster window), once per tile, behind cluster barriers
            assert tuple(e.cluster) == (e.params["cluster_k"], 1, 1), e.name
            assert re.search(r"\bST\.E\b", text) and "MEMBAR.ALL.GPU" in text, f"{e.name}: no DSMEM hand-off"
            assert "UTMALDG.2D.MULTICAST" not in text, e.name
        elif tuple(e.cluster) != (1, 1, 1):
            # multicast copies, and no memory fence where the MMAs run: a
            # cluster-scope release on each remote arrive (MEMBAR.ALL.GPU per
            # warp per stage) halved these kernels' speed on the H200
            assert "UTMALDG.2D.MULTICAST" in text, f"{e.name}: no multicast copy"
            ops = re.findall(r"\b(?:MEMBAR|SYNCS\.ARRIVE\.TRANS64\.RED|QGMMA|FFMA|BRA)\S*", text)
            remote = [i for i, op in enumerate(ops) if op.startswith("SYNCS.ARRIVE.TRANS64.RED")]
            assert remote, f"{e.name}: no remote arrive"
            for i in remote:
                assert not any(op.startswith("MEMBAR") for op in ops[max(0, i - 4):i]), \
                    f"{e.name}: a memory fence before a remote arrive"
            # one cluster barrier (the start's, arriving relaxed) and no
            # GPU-wide fence: a releasing cluster barrier at the end (a
            # MEMBAR.ALL.GPU in every thread, each CTA held until its
            # stores reached L2) cost the pairs 6-15 % on the H200; the
            # producer's tail on the empty barriers replaces it
            assert text.count("UCGABAR_ARV") == 1 and "MEMBAR.ALL.GPU" not in text, \
                f"{e.name}: a pair's cluster barrier fences or comes twice"
        assert e.shim and (build_dir() / e.shim).is_file() and e.constraints["params_bytes"] > 0


# Instructions that touch global memory (shared-memory LDS/STS/LDSM excluded;
# UTMAPF, the tensor-map prefetch, reads a kernel parameter, which no kernel writes).
GLOBAL_ACCESS = re.compile(r"\b(LDG|LDGSTS|STG|ATOMG?|RED|LD|ST|UTMALDG|UTMASTG|UBLKCP)\b")


def test_pdl_kernels_wait_before_touching_global_memory(sm90a_built):
    """A kernel the runtime launches with programmatic dependent launch may
    start while the previous kernel still writes its inputs: its SASS must
    wait for that grid (griddepcontrol.wait: ACQBULK) before its first
    global load, store, atomic or bulk copy. The flag and the code agree:
    an entry waits exactly when the manifest says it launches with PDL."""
    from runtime import manifest
    from runtime.paths import manifest_path

    _, entries = manifest.load(manifest_path("sm_90a"))
    assert {e.family for e in entries if e.pdl} == {"w8a8_wgmma", "w8a8_tensor", "w8a8_row", "w8a8_cutlass"}
    prefetch_sass(sm90a_built / f"{e.name}.cubin" for e in entries)
    for e in entries:
        lines = sass(sm90a_built / f"{e.name}.cubin").splitlines()
        wait = next((i for i, line in enumerate(lines) if "ACQBULK" in line), None)
        assert (wait is not None) == e.pdl, f"{e.name}: waits={wait is not None}, manifest pdl={e.pdl}"
        if e.pdl and e.family == "w8a8_cutlass":
            # CUTLASS's producer warps wait; its math warps have one global
            # load before the epilogue, of alpha/beta through pointers that
            # the host shim leaves null (a guarded LDG that never runs), and
            # store only what the producer's copies brought in after its wait
            assert any("PREEXIT" in line for line in lines), f"{e.name}: never lets the next call launch"
        elif e.pdl:
            access = [i for i, line in enumerate(lines) if GLOBAL_ACCESS.search(line.split(";")[0])]
            # (SYNCS.ARRIVE...RED is an mbarrier arrive in shared memory, not a global RED)
            early = [lines[i].strip() for i in access if i < wait and "SYNCS." not in lines[i]]
            # (wgmma_gemm::run's kEarly: not in the cluster K split, nor in a pair with ws_stage)
            pair = e.params.get("cluster_m", 1) * e.params.get("cluster_n", 1) > 1
            if e.params.get("cluster_k", 1) == 1 and not (pair and e.params.get("ws_stage")):
                # kEarlyWeights (a flag in Params): the first W boxes by TMA
                # (a pair's too, multicast along M), and in _ws instances
                # their weight scales by cp.async, may be copied before the
                # wait; nothing else is read or written
                assert early and all(re.search(r"\b(UTMALDG|LDGSTS)\b", x) for x in early), \
                    f"{e.name}: before the grid dependency wait: {early}"
                assert any("UTMALDG" in x for x in early), f"{e.name}: no early weight copy"
                # (with ws_bulk the weight scales by TMA too: a second tensor copy)
                bulk = bool(e.params.get("ws_bulk"))
                assert any("LDGSTS" in x for x in early) == (bool(e.params.get("ws_stage")) and not bulk), e.name
                assert sum("UTMALDG" in x for x in early) >= 1 + bulk, f"{e.name}: early copies {early}"
            else:  # the cluster K split and the pairs with ws_stage never read early
                assert not early, f"{e.name}: {early[0]} before the grid dependency wait"
            # and it lets the next call launch once its copies are issued
            # (griddepcontrol.launch_dependents: PREEXIT), after its last load
            trigger = [i for i, line in enumerate(lines) if "PREEXIT" in line]
            loads = [i for i, line in enumerate(lines) if "UTMALDG" in line]
            assert trigger and trigger[0] > loads[-1], f"{e.name}: no trigger after the copies"
    quant = [e for e in entries if e.family in ("quant_group", "quant_silu_mul")]
    assert {e.family for e in quant} == {"quant_group", "quant_silu_mul"}
    # the quantizers do not trigger early (quant_group.cuh says what that cost)
    assert not any("PREEXIT" in sass(sm90a_built / f"{e.name}.cubin") for e in quant), \
        "a quantizer lets the GEMM after it launch before its CTAs exit"


@pytest.mark.parametrize("arch", sorted(MMA_SASS))
def test_w8a8_mma_sass(arch):
    # A smoke subset for the arches CI does not build whole: the mma GEMMs.
    # the single-scale mma.sync variants ride along where the arch lists them
    mma_families = ("w8a8_mma", "w8a8_mma_row", "w8a8_mma_tensor")
    listed = [f for f in mma_families if any(s.family == f for s in specs_for(arch))]
    build_arch(arch, patterns=listed, echo=QUIET)
    for spec in specs_for(arch):
        if spec.family not in mma_families:
            continue
        text = sass(build_dir() / arch / f"{spec.name}.cubin")
        for op in MMA_SASS[arch]:
            assert op in text, f"{spec.name}: {op} missing from SASS"
        if arch in ("sm_90a", "sm_100a"):
            assert "QMMA" not in text
        assert not re.search(r"\b(LDL|STL)\b", text)


@pytest.mark.parametrize("arch", ["sm_100a", "sm_120a"])
def test_smoke_quantizer_and_w8a16_build(arch):
    build_arch(arch, patterns=["quant_group", "w8a16_gemv"], echo=QUIET)


# Each arch's CUTLASS collective shows its own FP8 tensor-core instruction.
CUTLASS_SASS = {"sm_100a": "UTCQMMA", "sm_120a": "QMMA.16832.F32.E4M3.E4M3"}


@pytest.mark.parametrize("arch", sorted(CUTLASS_SASS))
def test_smoke_cutlass_build_and_sass(arch):
    # One instance per arch keeps CI bounded (~1-2 min each); the rest are built locally.
    spec = next(s for s in specs_for(arch) if s.family == "w8a8_cutlass")
    build_arch(arch, patterns=[spec.name], echo=QUIET)
    text = sass(build_dir() / arch / f"{spec.name}.cubin")
    assert CUTLASS_SASS[arch] in text, f"{spec.name}: {CUTLASS_SASS[arch]} missing from SASS"
    assert not re.search(r"\b(LDL|STL)\b", text)
    assert (build_dir() / arch / f"{spec.name}.so").is_file()


def test_empty_filter_is_an_error():
    with pytest.raises(CatalogError, match="no kernel matches"):
        build_arch("sm_90a", patterns=["no_such_kernel*"], echo=QUIET)


def test_compile_error_carries_command_output_and_source(tmp_path, monkeypatch):
    import gen.build as build
    import gen.render as render

    monkeypatch.setenv("FP8GEN_BUILD_DIR", str(tmp_path / "b"))
    from runtime import env

    with env.override(build_dir=tmp_path / "b"):
        monkeypatch.setattr(render, "EMITTED_DIR", tmp_path / "emitted")
        monkeypatch.setattr(build, "render_all",
                            lambda specs: {s: "#error deliberately broken\n" for s in specs})
        with pytest.raises(CompileError) as info:
            build.build_arch("sm_90a", patterns=["scale_mn_major"], echo=QUIET)
    msg = str(info.value)
    assert "deliberately broken" in msg and "command:" in msg and "scale_mn_major" in msg


def test_split_k_instances_pick_slices_that_fill_the_sms(sm90a_built):
    """The host shim's slice rule (no driver needed to ask it): enough slices
    to put every SM on the last wave's tiles, not so many that another wave queues."""
    from runtime import manifest
    from runtime.errors import LaunchError
    from runtime.loader import HostShim
    from runtime.paths import manifest_path

    _, entries = manifest.load(manifest_path("sm_90a"))
    # the 4-slice instances of 64-row tiles, by tile width
    x4 = {int(e.constraints["tile_n"]): HostShim(build_dir() / e.shim, e) for e in entries
          if e.family == "w8a8_wgmma" and int(e.constraints.get("k_slices", 1)) == 4
          and int(e.constraints["tile_m"]) == 64}
    assert {64, 128} <= set(x4), "the 64x64 and 64x128 4-slice instances are built"
    split = lambda n_cols, *call: x4[n_cols].k_split(*call)  # noqa: E731
    # 40 tiles (N 5120, 128 wide) of 136 K blocks on 132 SMs: 3 slices fill one
    # wave (120 CTAs); 4 would leave 28 CTAs for a second wave.
    assert split(128, 64, 5120, 17408, 132) == (3, 0)
    # 33 tiles (N 2112, 64 wide) of 56 K blocks: 4 slices, 132 CTAs, one wave
    assert split(64, 64, 2112, 7168, 132) == (4, 0)
    # 80 tiles: 2 slices would need a second wave, which reads W again: no split
    assert split(64, 64, 5120, 17408, 132) == (1, 80)
    # 160 tiles: the first 132 run whole, the last wave's 28 in 4 slices (112 CTAs)
    assert split(64, 128, 5120, 17408, 132) == (4, 132)
    # 112 tiles already fill the SMs; 264 fill two waves exactly: no split
    assert split(64, 64, 7168, 2048, 132) == (1, 112)
    assert split(64, 128, 4224, 2048, 132) == (1, 132) and split(64, 256, 4224, 17408, 132) == (1, 264)
    # two tiles of 128 K blocks: all 4 slices; of 16 or 2 K blocks: a split
    # tail outweighs the blocks it saves, so no split; of one: nothing to split
    assert split(64, 16, 128, 16384, 132) == (4, 0)
    assert split(64, 16, 128, 2048, 132) == (1, 2)
    assert split(64, 16, 128, 256, 132) == (1, 2)
    assert split(64, 16, 128, 128, 132) == (1, 2)
    # fewer SMs, fewer slices: 40 tiles on 40 SMs fill one wave unsplit
    assert split(128, 64, 5120, 17408, 40) == (1, 40)
    # a call the instance cannot run
    with pytest.raises(LaunchError):
        split(64, 0, 128, 256, 132)


def test_fast_shims_bind_their_own_entry_points(sm90a_built):
    """Every shim loads; the wgmma-template ones (block, per-row and
    per-tensor scaling) take A's readable rows (prepare_rows) and refuse
    fewer rows than M before anything needs a driver, so the argument lands
    where the shim reads it; the CUTLASS ones take none."""
    from runtime import manifest
    from runtime.errors import LaunchError
    from runtime.loader import HostShim
    from runtime.paths import manifest_path

    _, entries = manifest.load(manifest_path("sm_90a"))
    shimmed = [e for e in entries if e.shim]
    assert {e.family for e in shimmed} == {"w8a8_wgmma", "w8a8_cutlass", "w8a8_row", "w8a8_tensor"}
    for e in shimmed:
        shim = HostShim(build_dir() / e.shim, e)
        assert shim.takes_rows == (e.family != "w8a8_cutlass"), e.name
        if not shim.takes_rows:
            continue
        M, N, K = 200, int(e.constraints.get("fixed_n", 0)) or 1024, int(e.constraints.get("fixed_k", 0)) or 1024
        args = dict(a=0, a_scale=0, ld_scale=256, w=0, w_scale=0, out=0, M=M, N=N, K=K)
        with pytest.raises(LaunchError, match="cannot implement"):
            shim.prepare(dict(args, a_rows=M - 1), 132)
        try:  # past the row check (then it may lack a driver or a workspace here)
            shim.prepare(dict(args, a_rows=256), 132)
        except LaunchError as refused:
            assert "cannot implement" not in str(refused), e.name


def test_explain_prints_a_split_instance_plan(sm90a_built, capsys, monkeypatch):
    """`gen explain` says how the chosen split-K instance cuts K (its shim's
    rule, asked without a GPU)."""
    import dataclasses

    import runtime.hardware as hardware_module
    from gen.cli import main

    split = "w8a8_wgmma_e4m3e4m3_bf16_128x128x128_s5_g16_t2_x4_sm90a"
    row = {"n": 5120, "k": 17408, "m_max": 2**31 - 1, "instance": split}
    real = hardware_module.load_hardware
    monkeypatch.setattr(hardware_module, "load_hardware", lambda arch: dataclasses.replace(
        real(arch), dispatch={**real(arch).dispatch, "w8a8_fast": [row]}))
    assert main(["explain", "--m", "128", "--n", "5120", "--k", "17408"]) == 0
    out = capsys.readouterr().out
    assert f"instance: {split}" in out
    assert "K split on 132 SMs: 0 of 40 tiles run whole, the last 40 in 3 K slices each" in out
    assert main(["explain", "--m", "128", "--n", "5120", "--k", "17408", "--sms", "40"]) == 0
    assert "K split on 40 SMs: none (40 tiles run whole)" in capsys.readouterr().out
