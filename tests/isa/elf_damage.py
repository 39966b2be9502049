"""Random damage to an ELF file, for the fuzz tests of both code-object readers (AMD code objects, cubins): bytes
changed within the regions a reader looks at (anywhere, the ELF header, the section headers, the regions the test
names), maybe cut short. Whatever the damage, a reader parses the file or refuses it with CodeObjectError; a
corruption a check is meant for is refused by that check."""

from __future__ import annotations

import struct
from collections.abc import Callable

import pytest
from hypothesis import strategies as st

from usergpu.errors import CodeObjectError


def damage(draw: Callable, data: bytes, regions: list[tuple[int, int]]) -> bytes:
    """data with 1 to 8 bytes changed, each in one of the regions ((start, end) byte ranges) or the ELF's own."""
    data = bytearray(data)
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    where = st.sampled_from([(0, len(data)), (0, 64), (shoff, len(data)), *regions])
    for _ in range(draw(st.integers(1, 8))):
        lo, hi = draw(where)
        data[draw(st.integers(lo, hi - 1))] = draw(st.integers(0, 255))
    cut = draw(st.one_of(st.none(), st.integers(0, len(data))))
    return bytes(data if cut is None else data[:cut])


def parses_or_refuses(parse: Callable[[bytes], object], data: bytes) -> None:
    """The reader's answer to damaged data: a parse, or CodeObjectError (anything else propagates and fails)."""
    try:
        parse(data)
    except CodeObjectError:
        pass


def refused_by_its_check(parse: Callable[[bytes], object], data: bytes, message: str, safety_net: str) -> None:
    """A corrupted file is refused with the message of the check meant for that corruption, not by the reader's
    safety net (the error that catches what no check foresaw, starting with safety_net)."""
    with pytest.raises(CodeObjectError) as e:
        parse(data)
    assert message in str(e.value)
    assert not str(e.value).startswith(safety_net)
