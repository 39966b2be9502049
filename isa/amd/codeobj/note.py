"""The NT_AMDGPU_METADATA note: a msgpack map whose 'amdhsa.kernels' describes every kernel (code object v3+)."""

from __future__ import annotations

import struct
from typing import Any

import msgpack

from usergpu.errors import CodeObjectError
from usergpu.isa.elf import SHT_NOTE, Section

NT_AMDGPU_METADATA = 32
_NHDR = struct.Struct("<III")  # namesz, descsz, type


def _notes(sec: Section):
    """(name, type, desc, offset in file) of each note in a SHT_NOTE section; entries are 4-byte aligned."""
    pos, data = 0, sec.data
    while pos < sec.size:
        if pos + _NHDR.size > sec.size:
            raise CodeObjectError(f"section '{sec.name}': note header at offset {sec.offset + pos:#x} is cut off")
        namesz, descsz, typ = _NHDR.unpack_from(data, pos)
        name_at = pos + _NHDR.size
        desc_at = name_at + (namesz + 3) // 4 * 4
        end = desc_at + (descsz + 3) // 4 * 4
        if desc_at + descsz > sec.size:
            raise CodeObjectError(f"section '{sec.name}': note at offset {sec.offset + pos:#x} (name {namesz} bytes, "
                                  f"desc {descsz} bytes) runs past the section end")
        yield bytes(data[name_at:name_at + namesz]).rstrip(b"\0"), typ, data[desc_at:desc_at + descsz], sec.offset + pos
        pos = end


def read_metadata(sections: list[Section]) -> dict[str, Any]:
    """The decoded metadata map, checked to hold 'amdhsa.kernels' as a list of maps with .name and .symbol."""
    for sec in sections:
        if sec.type != SHT_NOTE:
            continue
        for name, typ, desc, at in _notes(sec):
            if name == b"AMDGPU" and typ == NT_AMDGPU_METADATA:
                return _decode(desc, f"metadata note in section '{sec.name}' at offset {at:#x}")
    raise CodeObjectError("no NT_AMDGPU_METADATA note (owner 'AMDGPU', type 32) in any SHT_NOTE section")


def _decode(desc: memoryview, where: str) -> dict[str, Any]:
    try:
        meta = msgpack.unpackb(desc, raw=False, strict_map_key=False)
    except Exception as e:  # msgpack raises several unrelated types for bad input
        raise CodeObjectError(f"{where}: bad msgpack: {type(e).__name__}: {e}") from None
    if not isinstance(meta, dict):
        raise CodeObjectError(f"{where}: msgpack is a {type(meta).__name__}, not a map")
    kernels = meta.get("amdhsa.kernels")
    if not isinstance(kernels, list):
        raise CodeObjectError(f"{where}: no 'amdhsa.kernels' list (keys: {', '.join(map(str, meta))})")
    for i, k in enumerate(kernels):
        if not isinstance(k, dict) or not isinstance(k.get(".name"), str) or not isinstance(k.get(".symbol"), str):
            raise CodeObjectError(f"{where}: amdhsa.kernels[{i}] is not a map with string .name and .symbol")
    return meta
