"""usergpu disasm: code objects and raw bytes, text and JSON (its bad input: test_disasm_errors.py)."""

from __future__ import annotations

import json

import pytest

import usergpu
from usergpu.isa import amd as isa
from usergpu.isa.amd.codeobj import parse
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
    code = parse(code_object.read_bytes()).kernels["vadd"].code
    assert [i["text"] for i in k["instructions"]] == isa.disasm(code, "gfx1100")
    assert k["instructions"][0]["pc"] == k["entry"] and k["wavefront_size"] == 32
    assert [a["value_kind"] for a in k["args"]] == ["global_buffer", "global_buffer", "by_value"]


def test_hex_bytes(capsys):
    assert cli.main(["disasm", "--arch", "gfx1100", "--hex", "01 05 00 06 00 00 b0 bf"]) == 0
    out = capsys.readouterr().out
    assert "0x00000000: 01050006" in out and "v_add_f32_e32 v0, v1, v2" in out and "0x00000004" in out


def test_hex_json_and_spellings_of_bytes(capsys):
    for text in ("01 05 00 06 00 00 b0 bf", "0105000600 00b0bf", "0x01,0x05,0x00,0x06,0x00,0x00,0xb0,0xbf"):
        assert cli.main(["disasm", "--arch", "gfx1100", "--hex", text, "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert doc == {"arch": "gfx1100", "instructions": [
            {"pc": 0, "bytes": "01050006", "text": "v_add_f32_e32 v0, v1, v2"},
            {"pc": 4, "bytes": "0000b0bf", "text": "s_endpgm"}]}


def test_arch_of_a_code_object_may_be_given_when_it_agrees(code_object, capsys):
    assert cli.main(["disasm", str(code_object), "--arch", "gfx1100", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["arch"] == "gfx1100"


def test_usage_errors_exit_2_and_failures_1(code_object, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["disasm", "--arch", "gfx1100", "--hex", "zz"])
    assert e.value.code == 2 and "'zz' is not hex bytes" in capsys.readouterr().err
    assert cli.main(["disasm", "--arch", "gfx1100", "--hex", "ff ff ff ff"]) == 1
    assert capsys.readouterr().err.startswith("error: gfx1100: no encoding family matches")
    assert cli.main(["disasm", str(code_object), "--kernel", "nope"]) == 1
    assert "no kernel 'nope'" in capsys.readouterr().err
