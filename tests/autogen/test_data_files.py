"""Generated modules with a data file (the ISA tables: NAME.py reads NAME.msgpack): the tables come back exactly as
they were generated, and `python -m usergpu.autogen --check` diffs the data file too, as readable lines."""

from __future__ import annotations

import importlib

from usergpu.autogen import __main__ as autogen_main
from usergpu.autogen import _data
from usergpu.autogen.generator import isa, spec
from usergpu.isa.amd import encoding as isa_encodings

TABLES = {"OPS": {"SOP1": {0x0: ("s_mov_b32", False, (("s1", ("sdst",)), ("src1_i", ("ssrc0",))), (), ()),
                           0x1a: ("s_x", True, (), (("map", "0=a|1=b", ("f",), (), 1),), (("f", 0),))}},
          "NAMES": {"hwreg": {1: "HW_REG_MODE"}, "image": {"MIMG.0": (3, None), "MIMG.1": (2, (1, (1, 1)))}}}


def _same(a, b) -> bool:
    """Equal, and of the same types all the way down (a tuple stays a tuple, an int key an int)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return [type(k) for k in a] == [type(k) for k in b] and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def test_tables_round_trip_exactly():
    assert _same(_data.unpack(_data.pack(TABLES)), TABLES)
    assert not _same(_data.unpack(_data.pack(TABLES)), {**TABLES, "NAMES": {"hwreg": {"1": "HW_REG_MODE"}}})


def test_each_arch_module_reads_its_data_file():
    for arch in isa_encodings.FAMILIES:
        module = importlib.import_module(f"usergpu.autogen.isa_{arch}")
        assert list(module.OPS) == [f.name for f in isa_encodings.FAMILIES[arch]]
        assert all(getattr(module, name) is table for name, table in module.OPS.items())  # isa_ARCH.SOP1 too
        assert _data.path(module.__file__).name == f"isa_{arch}.msgpack"


def test_check_diffs_a_stale_data_file_as_lines(monkeypatch, capsys, tmp_path):
    files = isa.files("gfx1100", TABLES["OPS"], TABLES["NAMES"])
    for name, content in files.items():
        (tmp_path / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    changed = {**TABLES["NAMES"], "hwreg": {1: "HW_REG_STATUS"}}
    monkeypatch.setattr(autogen_main, "HERE", tmp_path)
    monkeypatch.setattr(autogen_main, "MODULES", [spec.Module("isa_gfx1100", "-", lambda: files)])
    assert autogen_main.main(["--check"]) == 0
    assert "isa_gfx1100: up to date" in capsys.readouterr().out
    stale = isa.files("gfx1100", TABLES["OPS"], changed)
    monkeypatch.setattr(autogen_main, "MODULES", [spec.Module("isa_gfx1100", "-", lambda: stale)])
    assert autogen_main.main(["--check"]) == 1
    out = capsys.readouterr().out
    assert "isa_gfx1100: out of date" in out
    assert "-NAMES['hwreg'][1] = 'HW_REG_MODE'" in out and "+NAMES['hwreg'][1] = 'HW_REG_STATUS'" in out
    assert _same(_data.load(str(tmp_path / "isa_gfx1100.py")), TABLES)  # --check never writes the committed files
    (tmp_path / "isa_gfx1100.msgpack").unlink()
    assert autogen_main.main(["--check"]) == 1
    assert "+OPS['SOP1'][0] = ('s_mov_b32'" in capsys.readouterr().out  # a missing data file: every line is new
