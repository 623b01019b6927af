"""Layer 1: the cache key, the generated ninja file, and the ptxas rules."""
import dataclasses
from pathlib import Path

import pytest

from gen.cachekey import cache_key
from gen.ninja_file import NinjaTarget, ninja_text
from gen.ptxas import parse
from gen.toolchain import Toolchain

TC = Toolchain(nvcc=Path("/opt/cuda/bin/nvcc"), version="13.0.88", origin="test")


def _key(tmp_path, **over):
    inc = tmp_path / "inc"
    inc.mkdir(exist_ok=True)
    (inc / "a.cuh").write_text('#include "b.cuh"\n')
    (inc / "b.cuh").write_text(over.pop("header", "// header\n"))
    (inc / "unused.cuh").write_text(over.pop("unused", "// not included\n"))
    args = dict(source='#include "a.cuh"\n', arch="sm_90a", flags=["-O3"], tc=TC, include_dir=inc)
    args.update(over)
    return cache_key(**args)


@pytest.mark.parametrize("change", [
    dict(source='#include "a.cuh"\n// v2\n'), dict(arch="sm_89"), dict(flags=["-O2"]), dict(header="// edited\n"),
    dict(tc=dataclasses.replace(TC, version="13.0.89")), dict(tc=dataclasses.replace(TC, nvcc=Path("/x/nvcc"))),
])
def test_cache_key_covers_each_input(tmp_path, change):
    base = _key(tmp_path)
    assert _key(tmp_path) == base
    assert _key(tmp_path, **change) != base


def test_headers_outside_the_include_graph_do_not_move_the_key(tmp_path):
    assert _key(tmp_path, unused="// edited\n") == _key(tmp_path)


def test_ninja_file_uses_depfiles_and_puts_the_key_on_the_command():
    text = ninja_text(nvcc=Path("/r/.venv/bin/nvcc"), include_dirs=[Path("/r/inc")],
                      gencode=["-gencode=arch=compute_90a,code=sm_90a"],
                      targets=[NinjaTarget("k1", Path("/r/e/k1.cu"), "k1.cubin", "k1.ptxas.log", "abc123")],
                      base=Path("/r/build/sm_90a"))
    assert "depfile = $out.d" in text and "deps = gcc" in text
    assert "-MD -MF $out.d" in text
    assert "-DFP8GEN_CACHE_KEY=$key" in text
    assert "  key = abc123" in text
    assert "-gencode=arch=compute_90a,code=sm_90a" in text
    # every path relative to the build directory: the checkout's location
    # must not reach the outputs (nvcc records paths derived from its own)
    assert "build k1.cubin | k1.ptxas.log: cubin ../../e/k1.cu" in text
    assert "nvcc = ../../.venv/bin/nvcc" in text and "-I../../inc" in text and "-L../../.venv/lib" in text
    assert "/r/" not in text
    # and cicc / cudafe++ hash that relative name, not the absolute path,
    # into internal symbol names and the host module id
    assert text.count("-Xcicc --orig_src_path_name -Xcicc $in -Xcudafe --orig_src_path_name -Xcudafe $in") == 2


CLEAN = """ptxas info    : Compiling entry function 'k' for 'sm_90a'
ptxas info    : Function properties for k
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 168 registers, used 1 barriers, 1024 bytes smem
"""


def test_ptxas_clean_report():
    r = parse(CLEAN)
    assert (r.registers, r.static_smem, r.spill_bytes, r.stack_bytes) == (168, 1024, 0, 0)
    assert r.violations() == []


def test_ptxas_spills_and_warnings_break_the_build():
    spilled = CLEAN.replace("0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads",
                            "56 bytes stack frame, 64 bytes spill stores, 60 bytes spill loads")
    v = parse(spilled).violations()
    assert any("124 bytes of register spills" in x for x in v) and any("stack frame" in x for x in v)
    warned = CLEAN + "ptxas warning : (C7510) Potential Performance Loss: wgmma.mma_async instructions are serialized\n"
    assert any("C7510" in x for x in parse(warned).violations())


def test_ptxas_serialization_reported_as_info_breaks_the_build():
    # what ptxas 13.0 printed for a two-temporary mainloop whose loop exits
    # left a wgmma group possibly in flight
    injected = CLEAN + ("ptxas info    : (C7517) warpgroup.wait is injected in around line 1479 by compiler to "
                        "allow use of registers defined by GMMA in function 'k'\n")
    serialized = CLEAN + ("ptxas info    : (C7514) Potential Performance Loss: wgmma.mma_async instructions are "
                          "serialized due to non wgmma instructions reading accumulator registers of  a wgmma "
                          "between start and end of the pipeline stage in the function 'k'\n")
    assert any("C7517" in x for x in parse(injected).violations())
    assert any("C7514" in x for x in parse(serialized).violations())


def test_compiler_front_end_warnings_break_the_build():
    # what nvcc 13.0 printed for a static_assert taking `x % OUT_BOXES_` with OUT_BOXES_ = 0
    warned = ("emitted/sm_90a/k.cu(138): warning #179-D: right operand of \"%\" is zero\n"
              "    static_assert(OUT_BOXES_ == 0 || (BN / 64) % OUT_BOXES_ == 0);\n" + CLEAN)
    assert any("#179-D" in x for x in parse(warned).violations())
    assert parse(CLEAN).violations() == []


def test_ptxas_every_function_report_counts():
    second = CLEAN.replace("'k'", "'helper'").replace("0 bytes stack frame, 0 bytes spill stores",
                                                      "16 bytes stack frame, 8 bytes spill stores")
    r = parse(CLEAN + second)
    assert r.spill_bytes == 8 and r.stack_bytes == 16 and r.violations()


def test_ptxas_without_report_is_an_error():
    with pytest.raises(ValueError):
        parse("nothing here")


def test_a_header_edit_moves_exactly_its_dependents_keys(tmp_path):
    import shutil

    from gen.cachekey import INCLUDE_DIR
    from gen.catalog import specs_for
    from gen.render import render_all

    copy = tmp_path / "include"
    shutil.copytree(INCLUDE_DIR, copy)
    rendered = render_all(specs_for("sm_90a"))

    def keys(inc):
        return {s.family + "/" + s.name: cache_key(source=t, arch="sm_90a", flags=[], tc=TC, include_dir=inc)
                for s, t in rendered.items()}

    before = keys(copy)
    (copy / "fp8gen/quant_group.cuh").write_text((copy / "fp8gen/quant_group.cuh").read_text() + "// edit\n")
    moved = {k.split("/")[0] for k, v in keys(copy).items() if before[k] != v}
    assert moved == {"quant_group", "quant_silu_mul", "quant_tensor", "quant_token", "nvfp4_to_fp8"}
    (copy / "fp8gen/tile.cuh").write_text((copy / "fp8gen/tile.cuh").read_text() + "// edit\n")
    moved = {k.split("/")[0] for k, v in keys(copy).items() if before[k] != v}
    assert moved == {"quant_group", "quant_silu_mul", "quant_tensor", "quant_token", "nvfp4_to_fp8", "w8a8_mma",
                     "w8a16_gemm"}


def test_atomic_writes_keep_a_readable_mode(tmp_path):
    import os
    import stat

    from gen.fsutil import write_atomic, write_if_different

    new = tmp_path / "new.txt"
    write_if_different(new, "a")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(new.stat().st_mode) == 0o666 & ~umask
    new.chmod(0o640)
    write_atomic(new, b"b")
    assert stat.S_IMODE(new.stat().st_mode) == 0o640 and new.read_text() == "b"
