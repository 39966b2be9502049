"""usergpu disasm: code objects and raw bytes, text and JSON, and its errors."""

from __future__ import annotations

import json

import pytest

import usergpu
from usergpu.emu.amd import isa
from usergpu.tools import cli

SRC = """__kernel void vadd(__global float* a, __global const float* b, int n) {
    int i = __builtin_amdgcn_workitem_id_x();
    if (i < n) a[i] += b[i];
}"""


@pytest.fixture(scope="module")
def code_object(tmp_path_factory):
    path = tmp_path_factory.mktemp("co") / "vadd.co"
    path.write_bytes(usergpu.compile_opencl(SRC, "gfx1100"))
    return path


def test_code_object_listing(code_object, capsys):
    assert cli.main(["disasm", str(code_object)]) == 0
    out = capsys.readouterr().out
    assert "kernel vadd (amdgcn-amd-amdhsa--gfx1100" in out and "global_buffer" in out and "kernarg_segment_ptr" in out
    assert "s_endpgm" in out and "global_load_b32" in out


def test_json_matches_the_library(code_object, capsys):
    assert cli.main(["disasm", str(code_object), "--kernel", "vadd", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (k,) = doc["kernels"]
    code = usergpu.emu.amd.codeobj.parse(code_object.read_bytes()).kernels["vadd"].code
    assert [i["text"] for i in k["instructions"]] == isa.disasm(code, "gfx1100")
    assert k["instructions"][0]["pc"] == k["entry"] and k["wavefront_size"] == 32
    assert [a["value_kind"] for a in k["args"]] == ["global_buffer", "global_buffer", "by_value"]


def test_hex_bytes(capsys):
    assert cli.main(["disasm", "--arch", "gfx1100", "--hex", "01 05 00 06 00 00 b0 bf"]) == 0
    out = capsys.readouterr().out
    assert "0x00000000: 01050006" in out and "v_add_f32_e32 v0, v1, v2" in out and "0x00000004" in out


@pytest.mark.parametrize("argv, message", [
    (["disasm", "--arch", "gfx1100", "--hex", "ff ff ff ff"], "error: gfx1100: no encoding family matches"),
    (["disasm", "--hex", "00 00 b0 bf"], "error: --hex needs --arch"),
    (["disasm", "--arch", "gfx1100", "--hex", "zz"], "error: --hex:"),
    (["disasm"], "error: give a code object FILE"),
])
def test_errors_are_one_line(argv, message, capsys):
    assert cli.main(argv) == 1
    assert capsys.readouterr().err.startswith(message)


def test_bad_code_object_and_unknown_kernel(code_object, tmp_path, capsys):
    bad = tmp_path / "bad.co"
    bad.write_bytes(b"\x7fELG" + bytes(60))
    assert cli.main(["disasm", str(bad)]) == 1
    assert "bad ELF magic" in capsys.readouterr().err
    assert cli.main(["disasm", str(code_object), "--kernel", "nope"]) == 1
    assert "no kernel 'nope'" in capsys.readouterr().err

