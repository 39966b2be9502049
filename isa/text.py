"""Bytes that must be text (CUDA C, OpenCL C, PTX, the PTX a cubin carries) turned into text in one place: UTF-8, or
a CodeObjectError that names where the first byte that is not lies."""

from __future__ import annotations

from usergpu.errors import CodeObjectError


def text_of(data: bytes | bytearray | memoryview | str, what: str) -> str:
    """data as text; CodeObjectError '<what>: byte 72 (0xe9) is not UTF-8 text' when it is not."""
    if isinstance(data, str):
        return data
    try:
        return bytes(data).decode()
    except UnicodeDecodeError as e:
        raise CodeObjectError(f"{what}: byte {e.start} ({data[e.start]:#04x}) is not UTF-8 text") from None
