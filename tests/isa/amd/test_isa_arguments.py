"""What the ISA functions do with arguments they cannot take: a usergpu.Error that says what was wrong (never a
TypeError, KeyError or OverflowError from inside), through one check every entry point uses."""

from __future__ import annotations

import numpy as np
import pytest

import usergpu
from usergpu.isa import amd as isa

CODE = bytes.fromhex("7e0082be000080bf")  # s_mov_b32 s2, exec_lo; s_nop 0

BAD = [
    (lambda: isa.decode(None, "gfx1100"), isa.ArgumentError, "the code must be bytes (or a buffer), not NoneType"),
    (lambda: isa.decode_all("7e0082be", "gfx1100"), isa.ArgumentError, "not str"),
    (lambda: isa.disasm(12, "gfx1100"), isa.ArgumentError, "not int"),
    (lambda: isa.disasm(CODE, "gfx9999"), isa.ArgumentError,
     "unsupported arch 'gfx9999' (supported: gfx1100, gfx1200, gfx942, gfx950)"),
    (lambda: isa.decode(CODE, None), isa.ArgumentError, "unsupported arch None"),
    (lambda: isa.decode(CODE, ["gfx1100"]), isa.ArgumentError, "unsupported arch ['gfx1100']"),
    (lambda: isa.decode(CODE, "gfx1100", -4), isa.ArgumentError, "offset -4 is outside the 8 bytes given (0..8)"),
    (lambda: isa.decode_all(CODE, "gfx1100", -1), isa.ArgumentError, "offset -1 is outside"),
    (lambda: isa.decode(CODE, "gfx1100", 9), isa.ArgumentError, "offset 9 is outside"),
    (lambda: isa.decode(CODE, "gfx1100", 1.5), isa.ArgumentError, "the offset must be an int, not float"),
    (lambda: isa.decode(CODE, "gfx1100", 8), usergpu.DecodeError, "truncated instruction at offset 0x8"),
    (lambda: isa.asm("s_mov_b32 s0, 0x1ffffffff", "gfx1100"), isa.AsmError,
     "the immediate 0x1ffffffff is out of range (an immediate or literal constant is 32 bits"),
    (lambda: isa.asm("v_add_f32 v0, -0x80000001, v1", "gfx942"), isa.AsmError, "the immediate -0x80000001"),
    (lambda: isa.asm("s_mov_b32 s0, 123456789012", "gfx1200"), isa.AsmError, "the immediate 123456789012"),
    (lambda: isa.asm("v_add_f32 v0, 1e40, v1", "gfx1100"), isa.AsmError, "cannot encode 'v_add_f32 v0, 1e40, v1'"),
    (lambda: isa.asm("nonsense", "gfx1100"), isa.AsmError, "unknown mnemonic 'nonsense'"),
    (lambda: isa.asm("s_nop 0", "gfx9999"), isa.ArgumentError, "unsupported arch 'gfx9999'"),
    (lambda: isa.asm(None, "gfx1100"), isa.AsmError, "the assembly must be text (str), not NoneType"),
    (lambda: isa.asm(b"s_nop 0", "gfx1100"), isa.AsmError, "not bytes"),
]


@pytest.mark.parametrize("call, kind, says", BAD, ids=[says for _, _, says in BAD])
def test_bad_arguments_raise_a_usergpu_error_that_says_why(call, kind, says):
    with pytest.raises(kind) as e:
        call()
    assert isinstance(e.value, usergpu.Error) and says in str(e.value)


def test_an_unknown_arch_is_a_decode_error_naming_the_arch():
    with pytest.raises(usergpu.DecodeError) as e:
        isa.decode(CODE, "gfx803")
    assert e.value.arch == "gfx803" and e.value.offset == 0


class View:
    """A view of memory whose slices are bytes, as the emulator reads a kernel's code from GPU memory."""

    def __len__(self) -> int:
        return len(CODE)

    def __getitem__(self, part: slice) -> bytes:
        return CODE[part]


def test_any_buffer_or_view_decodes_as_its_bytes():
    words = np.frombuffer(CODE, dtype="<u4")
    for data in (CODE, bytearray(CODE), memoryview(CODE), words, View()):
        assert isa.disasm(data, "gfx1100") == ["s_mov_b32 s2, exec_lo", "s_nop 0"]
    assert isa.decode(memoryview(CODE), "gfx1100", 4).text == "s_nop 0"
    assert isa.decode_all(CODE, "gfx1100", 8) == []  # from the end: nothing left


def test_immediates_at_the_edges_of_32_bits_still_encode():
    assert isa.asm("s_mov_b32 s0, 0x12345678", "gfx1100") == bytes.fromhex("ff0080be78563412")
    assert isa.disasm(isa.asm("s_mov_b32 s0, -1", "gfx1100"), "gfx1100") == ["s_mov_b32 s0, -1"]
    assert isa.disasm(isa.asm("s_mov_b32 s0, 0x80000000", "gfx1200"), "gfx1200") == ["s_mov_b32 s0, 0x80000000"]
