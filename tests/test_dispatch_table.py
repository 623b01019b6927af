"""The runtime's indexed, memoized dispatch table answers exactly as the
plain rule scan does (the scan stays the reference: gen explain and the
tests pass plain dicts)."""
import itertools

import pytest

from runtime import dispatch, splitk
from runtime.dispatch import DispatchTable
from runtime.errors import ValidationError
from runtime.hardware import load_hardware

SHAPES = [(2112, 7168), (7168, 2048), (4096, 7168), (17408, 5120), (5120, 17408), (24576, 1536), (32768, 512),
          (7168, 16384), (512, 512), (2112, 512), (1024, 4096), (4096, 1024), (136, 128)]
MS = [1, 16, 17, 64, 65, 128, 200, 256, 512, 1000, 1024, 2048, 4096, 8192, 20000]


@pytest.fixture(scope="module")
def rules():
    return load_hardware("sm_90a").dispatch


def _name(fn):
    try:
        return fn().name
    except ValidationError as e:
        return f"refused: {e}"


def test_lookup_and_choose_match_the_plain_scan(rules, sm90a_entries):
    table = DispatchTable(rules)
    for family, entries in sm90a_entries.items():
        for candidates in (entries, splitk.unsplit(entries)):
            for m, (n, k) in itertools.product(MS, SHAPES):
                plain = _name(lambda: dispatch.choose(candidates, rules, m, n, k))
                assert _name(lambda: dispatch.choose(candidates, table, m, n, k)) == plain, (family, m, n, k)
                # asked again: the remembered answer is the same
                assert _name(lambda: dispatch.choose(candidates, table, m, n, k)) == plain, (family, m, n, k)
    for family, m, (n, k) in itertools.product(list(rules) + ["nothing_built"], MS, SHAPES):
        assert dispatch.lookup(table, family, m, n, k) == dispatch.lookup(rules, family, m, n, k)


def test_the_memo_is_keyed_on_the_candidates(sm90a_entries):
    """The same (m, n, k) over two candidate lists gets each list's own pick."""
    wgmma = sm90a_entries["w8a8_wgmma"]
    split = next(e for e in wgmma if splitk.is_split(e))
    table = DispatchTable({"w8a8_wgmma": [{"n": 4096, "k": 7168, "m_max": 256, "instance": split.name}]})
    assert dispatch.choose(wgmma, table, 64, 4096, 7168) is split
    unsplit = splitk.unsplit(wgmma)
    picked = dispatch.choose(unsplit, table, 64, 4096, 7168)
    assert not splitk.is_split(picked) and picked is dispatch.choose(unsplit, {}, 64, 4096, 7168)
    assert dispatch.choose(wgmma, table, 64, 4096, 7168) is split


def test_the_identity_memo_answers_as_the_name_memo(sm90a_entries):
    """A list seen before is answered by identity; an equal new list, or a
    different one at the same (m, n, k), still gets its own pick."""
    wgmma = sm90a_entries["w8a8_wgmma"]
    split = next(e for e in wgmma if splitk.is_split(e))
    table = DispatchTable({"w8a8_wgmma": [{"n": 4096, "k": 7168, "m_max": 256, "instance": split.name}]})
    unsplit = splitk.unsplit(wgmma)
    first = [dispatch.choose(c, table, 64, 4096, 7168) for c in (wgmma, unsplit)]
    assert first[0] is split and not splitk.is_split(first[1])
    assert (id(wgmma), 64, 4096, 7168) in table._by_list and table._by_list[(id(wgmma), 64, 4096, 7168)][0] is wgmma
    for _ in range(2):
        assert dispatch.choose(wgmma, table, 64, 4096, 7168) is split
        assert dispatch.choose(unsplit, table, 64, 4096, 7168) is first[1]
        assert dispatch.choose(list(unsplit), table, 64, 4096, 7168) is first[1]  # equal list, new object
    shorter = unsplit[:-1] if unsplit[-1] is not first[1] else unsplit[1:]
    assert dispatch.choose(shorter, table, 64, 4096, 7168) is dispatch.choose(shorter, {}, 64, 4096, 7168)


def test_the_memo_starts_over_when_full(sm90a_entries, monkeypatch):
    monkeypatch.setattr(DispatchTable, "MEMO_LIMIT", 3)
    table = DispatchTable({})
    wgmma = sm90a_entries["w8a8_wgmma"]
    for m in range(1, 20):
        assert dispatch.choose(wgmma, table, m, 7168, 2048) is dispatch.choose(wgmma, {}, m, 7168, 2048)
        assert len(table._memo) <= 3 and len(table._by_list) <= 3


def test_it_reads_as_the_rules_it_was_made_from(rules):
    table = DispatchTable(rules)
    assert {**table} == rules and dict(table) == rules and len(table) == len(rules)
    assert table["w8a8_wgmma"] == rules["w8a8_wgmma"] and "w8a8_wgmma" in table
    assert not DispatchTable({}) and (DispatchTable({}) or {}) == {}
    with pytest.raises(TypeError):
        table["w8a8_wgmma"] = []  # read-only
    before = table.lookup("w8a8_wgmma", 64, 7168, 2048)
    table["w8a8_wgmma"][0]["instance"] = "edited"  # a copy: the index is untouched
    table["w8a8_wgmma"].clear()
    assert table.lookup("w8a8_wgmma", 64, 7168, 2048) == before and table["w8a8_wgmma"] == rules["w8a8_wgmma"]
    # a copy: editing the rules afterwards does not reach the index
    mine = {"w8a8_mma": [{"shape_class": "widening", "m_max": 64, "instance": "a"}]}
    frozen = DispatchTable(mine)
    mine["w8a8_mma"][0]["instance"] = "b"
    assert frozen.lookup("w8a8_mma", 1, 4096, 1024) == "a"
