"""The AMD printf ABI as clang-22 emits it (the metadata's amdhsa.printf table, hidden_printf_buffer), the decoder
of a printf buffer into each record's text, and the kernarg slot the buffer's address goes in."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from printf_kernels import printf_kernels

from usergpu.errors import CodeObjectError, LaunchError
from usergpu.isa.amd.codeobj import parse, printf
from usergpu.isa.amd.codeobj.kernargs import pack_kernargs

TABLE = printf.formats({"amdhsa.printf": ["1:2:4:4:thread %d value %f\\n", "2:0:plain\\72 %%\\n",
                                          "3:1:8:%ld\\n"]})


def buffer(*records: bytes, size: int = 64) -> memoryview:
    body = b"".join(records)
    return memoryview(bytearray(struct.pack("<II", len(body), size) + body.ljust(size - 8, b"\0")))


def record(pid: int, *words: bytes) -> bytes:
    return struct.pack("<I", pid) + b"".join(words)


@pytest.mark.parametrize("arch", ["gfx1100", "gfx942"])
def test_clang_22_emits_a_table_entry_per_printf_and_a_hidden_buffer_argument(arch):
    co = parse(printf_kernels(arch))
    table = printf.formats(co.metadata)
    assert {f.text: f.sizes for f in table.values()} == {
        "thread %d value %f\n": (4, 4), "%d:%d\n": (4, 4),
        "%s|%s|%c|%ld|%hhd|%5.2f|%e|%x|%p\n": (4, 4, 4, 8, 4, 4, 8, 4, 8),
        "%v4hlf|%v2hd|%v3hhd|%v2ld\n": (16, 4, 4, 16), "colon: tab\t quote\" 100%%\n": (),
        "no newline ": (), "then one\n": (), "before the fault\n": ()}
    for k in co.kernels.values():
        assert printf.takes_buffer(k)
        (slot,) = [a for a in k.args if a.value_kind == "hidden_printf_buffer"]
        assert slot.size == 8 and slot.offset % 8 == 0


def test_the_format_is_unescaped_as_the_lowering_escaped_it():
    assert TABLE[2].text == "plain: %%\n"
    assert printf.unescape(r"\a\b\f\n\r\v\72\101\q\\") == "\a\b\f\n\r\v:A\\q\\\\"


def test_records_decode_in_buffer_order():
    buf = buffer(record(1, struct.pack("<i", -3), struct.pack("<f", 0.5)), record(2),
                 record(3, struct.pack("<q", -(2**40))))
    assert printf.decode(buf, TABLE) == [b"thread -3 value 0.500000\n", b"plain: %\n", b"-1099511627776\n"]


def test_drain_prints_and_empties_the_buffer(capsys):
    buf = buffer(record(2), record(2))
    printf.drain(buf, TABLE)
    assert capsys.readouterr().out == "plain: %\nplain: %\n"
    assert struct.unpack_from("<II", buf) == (0, 64)
    printf.drain(buf, TABLE)
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(("buf", "offset", "expected", "got"), [
    (memoryview(b"\0" * 4), 0, "a 8-byte header", "4 bytes"),
    (buffer(size=64)[:32], 0, "a header of size 32", "size 64"),
    (memoryview(bytearray(struct.pack("<II", 60, 64) + bytes(56))), 0, "at most 56 bytes used", "60 bytes used"),
    (buffer(record(2), record(9)), 12, "a printf id of the code object (1, 2, 3)", "9"),
    (buffer(record(1, struct.pack("<i", 1))), 8, "a 12-byte record for printf 1", "8 bytes"),
    (buffer(record(2), b"\1\0"), 12, "a 4-byte printf id", "2 bytes"),
])
def test_a_corrupt_buffer_is_a_typed_error_saying_where_and_what(buf, offset, expected, got):
    with pytest.raises(printf.PrintfBufferError) as e:
        printf.decode(buf, TABLE)
    assert e.value.offset == offset and expected in e.value.expected and got in e.value.got
    assert f"offset {offset:#x}" in str(e.value)


def test_drain_empties_a_corrupt_buffer_too(capsys):
    buf = buffer(record(7))
    with pytest.raises(printf.PrintfBufferError):
        printf.drain(buf, TABLE)
    assert struct.unpack_from("<I", buf)[0] == 0 and capsys.readouterr().out == ""


@pytest.mark.parametrize("entries", [
    "1:0:x", [1], ["x:0:fmt"], ["1:x:fmt"], ["1:1:4:4:two sizes for one argument"], [None],
])
def test_a_malformed_table_is_a_code_object_error(entries):
    with pytest.raises(CodeObjectError, match="amdhsa.printf"):
        printf.formats({"amdhsa.printf": entries})


def test_the_buffer_s_address_goes_in_its_hidden_slot_and_is_required():
    k = parse(printf_kernels("gfx1100")).kernels["ids"]
    (slot,) = [a for a in k.args if a.value_kind == "hidden_printf_buffer"]
    packed, _ = pack_kernargs(k, [np.zeros(1, np.float32)], (1, 1, 1), (1, 1, 1), lambda v: 0x1000, 0xABC0000)
    assert struct.unpack_from("<Q", packed, slot.offset)[0] == 0xABC0000
    with pytest.raises(LaunchError, match="calls printf"):
        pack_kernargs(k, [np.zeros(1, np.float32)], (1, 1, 1), (1, 1, 1), lambda v: 0x1000)


def test_a_new_buffer_s_header_holds_its_size():
    assert struct.unpack_from("<II", printf.new_buffer(4096)) == (0, 4096)
    assert printf.header(128) == struct.pack("<II", 0, 128)
