"""`usergpu disasm` and the `usergpu` top level with bad input: each row one `error:` line and exit 1 (2 for a usage
error), no traceback. The code objects are a real one (tests/data/sqtt: kernel E_3 for gfx1100) and broken copies."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_errors import Case, check

REAL = Path(__file__).parents[1] / "data" / "sqtt" / "gfx1100" / "plus_run_0" / "prog0.elf"
# files made in the folder the rows run in: name -> bytes
FILES = {"text.txt": b"not a code object\n" * 8, "empty.co": b"", "short.co": REAL.read_bytes()[:100],
         "elf32.co": b"\x7fELF\x01\x01\x01" + bytes(57)}

DISASM = ["usergpu", "disasm"]
HEX = [*DISASM, "--arch", "gfx1100", "--hex"]
CASES = [
    Case([*HEX, "zz"], "'zz' is not hex bytes ('z' is not a hex digit", 2),
    Case([*HEX, "7e 00 82 b"], "has an odd number of hex digits (7): give whole bytes", 2),
    Case([*HEX, ""], "no bytes given", 2),
    Case([*HEX, "0x7e;0x00"], "';' is not a hex digit", 2),
    Case([*DISASM, "--arch", "gfx9999", "--hex", "7e0082be"],
         "unsupported arch 'gfx9999' (supported: gfx1100, gfx1200, gfx942, gfx950)", 2),
    Case([*DISASM, "--hex", "7e0082be"], "--hex needs --arch (gfx1100, gfx1200, gfx942, gfx950)"),
    Case([*HEX, "ff ff ff ff"], "gfx1100: no encoding family matches at offset 0x0: ff ff ff ff"),
    Case([*HEX, "7e0082be 800004f4"], "gfx1100: truncated SMEM instruction at offset 0x4"),
    Case([*HEX, "zz", "--json"], "not hex bytes", 2),
    Case([*DISASM, "nowhere.co"], "nowhere.co: no such file", 2),
    Case([*DISASM, "."], ".: is a directory, a file is expected", 2),
    Case([*DISASM, "text.txt"], "text.txt: not an AMDGPU code object: bad ELF magic"),
    Case([*DISASM, "empty.co"], "empty.co: not an AMDGPU code object: too short for an ELF64 header: 0 bytes"),
    Case([*DISASM, "short.co"], "short.co: not an AMDGPU code object"),
    Case([*DISASM, "elf32.co", "--json"], "elf32.co: not an AMDGPU code object"),
    Case([*DISASM, str(REAL), "--kernel", "nope"], "no kernel 'nope' in"),
    Case([*DISASM, str(REAL), "--kernel", "nope", "--json"], "(kernels: E_3)"),
    Case([*DISASM, str(REAL), "--arch", "gfx1200"], "is gfx1100 code, not --arch gfx1200"),
    Case([*DISASM, str(REAL), "--hex", "7e0082be"], "give a code object FILE (and --kernel) or --hex, not both"),
    Case([*DISASM], "give a code object FILE, or --arch with --hex"),
    Case(["usergpu", "nonsense"], "invalid choice: 'nonsense' (choose from 'devices', 'disasm',", 2),
    Case(["usergpu"], "the following arguments are required: command", 2),
    Case(["usergpu", "--bogus", "devices"], "unrecognized arguments: --bogus", 2),
    Case(["usergpu", "devices", "--json", "--mock"], "MOCKGPU_COUNT 'abc'", env={"MOCKGPU_COUNT": "abc"}),
    Case(["usergpu", "devices", "--mock"], "MOCKGPU_COUNT '0'", env={"MOCKGPU_COUNT": "0"}),
    Case(["usergpu", "devices", "--json", "--mock"], "MOCKGPU_ARCH 'gfx9999'", env={"MOCKGPU_ARCH": "gfx9999"}),
]


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("disasm-errors")
    for name, data in FILES.items():
        (root / name).write_bytes(data)
    return root


@pytest.mark.parametrize("case", CASES, ids=str)
def test_bad_input(case, folder):
    check(case, cwd=folder)
