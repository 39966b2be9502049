"""What the per-instruction tests cover, and the emulator's errors: every opcode of the semantics table has edge
cases (and each case really contains the instruction it is filed under); an out-of-bounds access to global,
shared or local memory is a GPUFault naming the block, thread and PTX line; a kernel that never ends is a
GPUHang under a small instruction budget."""

from __future__ import annotations

import re

import numpy as np
import pytest
from test_ptx_opcodes import CASES

from usergpu.emu.nv import launch
from usergpu.emu.nv.ptx import semantics
from usergpu.errors import GPUFault, GPUHang

_INSTRUCTION = re.compile(r"^\s*(?:@!?%\w+\s+)?([a-z][\w:]*)(?:\.|\s|;)", re.M)


def _opcodes(body: str) -> set[str]:
    return {m.group(1) for m in _INSTRUCTION.finditer(body)}


def test_every_opcode_is_tested() -> None:
    covered = {c.opcode for c in CASES}
    missing = sorted(set(semantics.TABLE) - covered)
    assert not missing, f"opcodes of semantics.TABLE without edge cases: {', '.join(missing)}"


def test_cases_test_what_they_say() -> None:
    """Each case's opcode is one of the table's and appears as an instruction of its body."""
    wrong = [c.name for c in CASES if c.opcode not in semantics.TABLE or c.opcode not in _opcodes(c.body)]
    assert not wrong


HEADER = ".version 8.7\n.target sm_90\n.address_size 64\n"
FAULTING = {  # the access, and what the fault must say about it
    "global": ("ld.global.u32 %r1, [%rd0+4096];", "read", "not mapped"),
    "shared": ("ld.shared.u32 %r1, [sm+64];", "read", "64 bytes of shared memory"),
    "local": ("st.local.u32 [loc+16], %r0;", "write", "16 bytes of local memory"),
}


@pytest.mark.parametrize("space", FAULTING)
def test_out_of_bounds_faults(space: str) -> None:
    """Thread 5 of block 1 (only) goes out of bounds: the fault names that block, thread and the line."""
    access, kind, why = FAULTING[space]
    text = HEADER + f""".visible .entry k(.param .u64 a)
{{
    .reg .b64 %rd<2>;
    .reg .b32 %r<3>;
    .reg .pred %p<2>;
    .shared .align 4 .b8 sm[64];
    .local .align 4 .b8 loc[16];
    ld.param.u64 %rd0, [a];
    mov.u32 %r0, %tid.x;
    mov.u32 %r2, %ctaid.x;
    setp.eq.u32 %p0, %r0, 5;
    setp.eq.and.u32 %p1, %r2, 1, %p0;
    @%p1 {access}
    ret;
}}
"""
    with pytest.raises(GPUFault) as err:
        launch(text, "k", (2, 1, 1), (32, 1, 1), [np.zeros(16, np.uint32)])
    e = err.value
    line = next(i for i, text_line in enumerate(text.splitlines(), 1) if access in text_line)
    assert e.access == kind and why in str(e) and e.kernel == "k"
    assert "block (1, 0, 0)" in e.where and "thread (5, 0, 0)" in e.where and f"line {line}:" in e.where, e.where


def test_infinite_loop_hangs() -> None:
    text = HEADER + ".visible .entry k()\n{\nSPIN:\n    bra SPIN;\n}\n"
    with pytest.raises(GPUHang) as err:
        launch(text, "k", (1, 1, 1), (32, 1, 1), [], budget=1000)
    assert "1000" in str(err.value) and "bra SPIN" in str(err.value)
