"""Layer 1: rendering every arch reproduces emitted/ byte for byte, and each
committed manifest describes exactly those sources."""
import pytest

from gen.build import stale_manifest
from gen.catalog import specs_for
from gen.render import render_all, stale_sources
from runtime.paths import ARCHES


@pytest.mark.parametrize("arch", ARCHES)
def test_emitted_matches_templates(arch):
    rendered = render_all(specs_for(arch))
    assert stale_sources(arch, rendered) == []
    assert stale_manifest(arch, rendered) == []


def test_rendered_sources_are_short_instantiations():
    for arch in ARCHES:
        for spec, text in render_all(specs_for(arch)).items():
            assert text.count("\n") <= 40, spec.name
            assert f'#include "{spec.header}"' in text
            assert spec.symbol in text


def test_check_command_reports_a_drifted_file(tmp_path, monkeypatch, capsys):
    import gen.render as render
    from gen.cli import main

    emitted = tmp_path / "emitted"
    monkeypatch.setattr(render, "EMITTED_DIR", emitted)
    spec = specs_for("sm_90a")[0]
    path = render.source_path(spec)
    path.parent.mkdir(parents=True)
    path.write_text("// hand edit\n")
    assert main(["build", "--check", "--arch", "sm_90a"]) == 1
    out = capsys.readouterr().out
    assert f"{spec.name}.cu: differs from its template" in out
    assert "missing" in out
