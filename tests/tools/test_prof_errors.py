"""`usergpu prof` with bad input: each row one `error:` line and exit 1 (2 for a usage error), no traceback. The
broken captures are copies of a real one (tests/data/sqtt) with one thing wrong each."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_errors import Case, check

REAL = Path(__file__).parents[1] / "data" / "sqtt" / "gfx1200" / "plus_run_0"  # kernel E_3, wave slot 0 traced
KERNEL = Path(__file__).parents[1] / "kernels" / "prof.cl"


def _meta(edit) -> str:
    meta = json.loads((REAL / "capture.json").read_text())
    edit(meta)
    return json.dumps(meta)


# broken captures, made in the folder the rows run in: folder -> capture.json's text (None: none)
BROKEN = {
    "empty": None,
    "not_json": "{arch: gfx1200",
    "no_arch": _meta(lambda m: m.pop("arch")),
    "list": "[1, 2]",
    "unknown_arch": _meta(lambda m: m.update(arch="gfx1030")),
    "no_programs": _meta(lambda m: m.update(programs=[])),
    "bad_se": _meta(lambda m: m["traces"][0].update(se="0")),
    "bad_base": _meta(lambda m: m["programs"][0].update(base="0x1000")),
    "missing_blob": _meta(lambda m: m["traces"][0].update(file="kern9.bin")),
}

SHOW = ["usergpu", "prof", "show"]
CASES = [
    Case([*SHOW, "nowhere"], "nowhere: no such folder", 2),
    Case([*SHOW, "a_file"], "a_file: is a file, a folder is expected", 2),
    Case([*SHOW, "empty"], "empty: not a capture directory (no capture.json)"),
    Case([*SHOW, "not_json"], "not_json/capture.json: not JSON"),
    Case([*SHOW, "no_arch"], "no_arch/capture.json: no 'arch'"),
    Case([*SHOW, "list"], "list/capture.json: no 'arch'"),
    Case([*SHOW, "unknown_arch"], "unknown_arch/capture.json: no SQTT layout for arch 'gfx1030'"),
    Case([*SHOW, "no_programs"], "no_programs/capture.json: no programs"),
    Case([*SHOW, "bad_se"], "traces[0]: 'se' must be int, not '0'"),
    Case([*SHOW, "bad_base"], "programs[0]: 'base' must be int, not '0x1000'"),
    Case([*SHOW, "missing_blob"], "missing_blob/kern9.bin: No such file or directory"),
    Case([*SHOW, str(REAL), "--wave", "999"], "no wave 999 traced in", 1),
    Case([*SHOW, str(REAL), "--wave", "999"], "(waves traced: 0)", 1),
    Case([*SHOW, str(REAL), "--kernel", "E_3", "--wave", "5"], "no wave 5 traced of kernel E_3"),
    Case([*SHOW, str(REAL), "--kernel", "nope"], "no kernel 'nope' in"),
    Case([*SHOW, str(REAL), "--kernel", "nope"], "(kernels: E_3)"),
    Case([*SHOW, str(REAL), "--wave", "-1"], "'-1': a count or address (an integer >= 0) must be >= 0", 2),
    Case([*SHOW, str(REAL), "--wave", "abc"], "'abc' is not a count or address", 2),
    Case([*SHOW, str(REAL), "--perfetto", "nowhere/t.json"], "the folder", 2),
    Case([*SHOW, str(REAL), "--perfetto", "empty"], "empty: is a directory, a file is expected", 2),
    Case([*SHOW, str(REAL), "--perfetto", "/proc/t.json"], "cannot write the trace to /proc/t.json"),
    Case(["usergpu", "prof", "run", str(KERNEL), "--sqtt", "-o", "a_file"], "a_file: is a file, a folder is expected",
         2),
    Case(["usergpu", "prof", "run", str(KERNEL), "--sqtt", "-o", "a_file/capture"], "the folder", 2),
    Case(["usergpu", "prof", "run", str(KERNEL)], "ask for --sqtt, --pmc NAMES or both"),
    Case(["usergpu", "prof", "run", str(KERNEL), "--sqtt", "--itrace-se-mask", "-3"],
         "'-3': a count or address (an integer >= 0) must be >= 0", 2),
    Case(["usergpu", "prof", "run", str(KERNEL), "--pmc", "SQ_WAVES,SQ_INST_CYCLES_VALU"],
         "SQ_INST_CYCLES_VALU not counted on gfx942; it counts GRBM_GUI_ACTIVE, SQ_WAVES",
         env={"MOCKGPU_ARCH": "gfx942"}),
    Case(["usergpu", "prof", "run", str(KERNEL), "--pmc", ",".join(["SQ_WAVES"] * 17)],
         "SQ has 16 counters; SQ_WAVES is one too many", env={"MOCKGPU_ARCH": "gfx950"}),
]


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """Where the rows run: the broken captures, and a_file (a file where a folder is expected)."""
    root = tmp_path_factory.mktemp("prof-errors")
    (root / "a_file").write_text("not a folder\n")
    for name, meta in BROKEN.items():
        shutil.copytree(REAL, root / name)
        (root / name / "capture.json").unlink()
        if meta is not None:
            (root / name / "capture.json").write_text(meta)
    return root


@pytest.mark.parametrize("case", CASES, ids=str)
def test_bad_input(case, folder):
    check(case, cwd=folder)

