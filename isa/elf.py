"""ELF64 little-endian reading: header, sections, segments and symbols, every offset checked against the file."""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TypeVar

from usergpu.errors import CodeObjectError

EM_AMDGPU = 224
ET_DYN = 3
SHT_NOBITS, SHT_NOTE, SHT_SYMTAB, SHT_DYNSYM = 8, 7, 2, 11
SHN_UNDEF, SHN_LORESERVE, SHN_ABS = 0, 0xFF00, 0xFFF1
SHF_ALLOC = 0x2

_EHDR = struct.Struct("<HHIQQQIHHHHHH")  # e_type .. e_shstrndx, after the 16-byte e_ident
_SHDR = struct.Struct("<IIQQQQIIQQ")
_PHDR = struct.Struct("<IIQQQQQQ")
_SYM = struct.Struct("<IBBHQQ")
SYMBOL_TYPES = {0: "NOTYPE", 1: "OBJECT", 2: "FUNC", 3: "SECTION", 4: "FILE", 5: "COMMON", 6: "TLS", 10: "GNU_IFUNC"}
SYMBOL_BINDINGS = {0: "LOCAL", 1: "GLOBAL", 2: "WEAK", 10: "GNU_UNIQUE"}
T = TypeVar("T")


@dataclass(frozen=True)
class Header:
    osabi: int
    abiversion: int
    type: int
    flags: int
    phoff: int
    shoff: int
    phnum: int
    shnum: int
    shstrndx: int


@dataclass(frozen=True)
class Section:
    index: int
    name: str
    type: int
    flags: int
    addr: int
    offset: int
    size: int
    link: int
    info: int
    entsize: int
    data: memoryview  # empty for SHT_NOBITS

    def contains(self, addr: int, size: int = 1) -> bool:
        """Whether [addr, addr+size) lies inside this section once loaded (allocated sections only)."""
        return bool(self.flags & SHF_ALLOC) and self.addr <= addr and addr + size <= self.addr + self.size


@dataclass(frozen=True)
class Segment:
    type: int
    flags: int
    offset: int
    vaddr: int
    filesz: int
    memsz: int
    align: int


@dataclass(frozen=True)
class Symbol:
    name: str
    value: int
    size: int
    type: str  # 'FUNC', 'OBJECT', ... as readelf prints them
    binding: str  # 'LOCAL', 'GLOBAL', 'WEAK'
    section: str | None  # None for undefined and absolute symbols
    shndx: int
    other: int = 0  # st_other (visibility; CUDA marks kernels there)


def read_header(data: bytes, machine: tuple[int, str] = (EM_AMDGPU, "EM_AMDGPU"),
                what: str = "an AMDGPU code object") -> Header:
    """The ELF64 header, checked: a file of this e_machine (number, name), its tables inside the file."""
    if len(data) < 64:
        raise CodeObjectError(f"too short for an ELF64 header: {len(data)} bytes, need 64")
    if data[:4] != b"\x7fELF":
        raise CodeObjectError(f"bad ELF magic at offset 0: {bytes(data[:4]).hex(' ')}, want 7f 45 4c 46")
    if data[4] != 2 or data[5] != 1:
        raise CodeObjectError(f"not ELF64 little-endian: EI_CLASS {data[4]} (want 2), EI_DATA {data[5]} (want 1)")
    e_type, e_machine, _, _, phoff, shoff, flags, _, phentsize, phnum, shentsize, shnum, shstrndx = _EHDR.unpack_from(
        data, 16)
    if e_machine != machine[0]:
        raise CodeObjectError(f"e_machine is {e_machine}, not {machine[1]} ({machine[0]}): not {what}")
    if shnum and shentsize != _SHDR.size:
        raise CodeObjectError(f"e_shentsize is {shentsize}, want {_SHDR.size}")
    if phnum and phentsize != _PHDR.size:
        raise CodeObjectError(f"e_phentsize is {phentsize}, want {_PHDR.size}")
    for what, off, n, size in (("section header table", shoff, shnum, _SHDR.size),
                               ("program header table", phoff, phnum, _PHDR.size)):
        if off + n * size > len(data):
            raise CodeObjectError(f"{what} at offset {off:#x} ({n} entries of {size} bytes) runs past the end of "
                                  f"the file ({len(data)} bytes)")
    if shnum == 0:
        raise CodeObjectError("the file has no section headers (e_shnum is 0)")
    if shstrndx >= shnum:
        raise CodeObjectError(f"e_shstrndx {shstrndx} is not a section (e_shnum is {shnum})")
    return Header(data[7], data[8], e_type, flags, phoff, shoff, phnum, shnum, shstrndx)


def string_at(table: Section, offset: int) -> str:
    tail = bytes(table.data[offset:]) if 0 <= offset < table.size else b""
    end = tail.find(b"\0")
    if end < 0:
        raise CodeObjectError(f"string table '{table.name or table.index}' offset {offset:#x} is out of bounds "
                              f"(size {table.size:#x}) or unterminated")
    return tail[:end].decode("utf-8", "replace")


def read_sections(data: bytes, hdr: Header) -> list[Section]:
    raw, name_offsets = [], []
    for i in range(hdr.shnum):
        name, typ, flags, addr, off, size, link, info, _, entsize = _SHDR.unpack_from(data, hdr.shoff + i * _SHDR.size)
        if typ != SHT_NOBITS and off + size > len(data):
            raise CodeObjectError(f"section [{i}] data at offset {off:#x} ({size:#x} bytes) runs past the end of "
                                  f"the file ({len(data)} bytes)")
        view = memoryview(data)[off:off + size] if typ != SHT_NOBITS else memoryview(b"")
        raw.append(Section(i, "", typ, flags, addr, off, size, link, info, entsize, view))
        name_offsets.append(name)
    names = raw[hdr.shstrndx]
    if names.type == SHT_NOBITS:
        raise CodeObjectError(f"section name table [{hdr.shstrndx}] has no data (SHT_NOBITS)")
    return [replace(s, name=string_at(names, off)) for s, off in zip(raw, name_offsets, strict=True)]


def sections_end(data: bytes, hdr: Header) -> int:
    """Where the last section's data ends (SHT_NOBITS ones hold none): read_sections' bounds check without
    building the sections, for a loader that only needs an image's extent."""
    end = 0
    table = memoryview(data)[hdr.shoff : hdr.shoff + hdr.shnum * _SHDR.size]
    for i, (_, typ, _, _, off, size, *_) in enumerate(_SHDR.iter_unpack(table)):
        if typ != SHT_NOBITS:
            if off + size > len(data):
                raise CodeObjectError(f"section [{i}] data at offset {off:#x} ({size:#x} bytes) runs past the end "
                                      f"of the file ({len(data)} bytes)")
            end = max(end, off + size)
    return end


def read_segments(data: bytes, hdr: Header) -> list[Segment]:
    segs = []
    for i in range(hdr.phnum):
        typ, flags, off, vaddr, _, filesz, memsz, align = _PHDR.unpack_from(data, hdr.phoff + i * _PHDR.size)
        if off + filesz > len(data):
            raise CodeObjectError(f"segment [{i}] at offset {off:#x} ({filesz:#x} bytes) runs past the end of the "
                                  f"file ({len(data)} bytes)")
        segs.append(Segment(typ, flags, off, vaddr, filesz, memsz, align))
    return segs


def read_symbols(sections: list[Section], table: Section) -> list[Symbol]:
    if table.entsize != _SYM.size or table.size % _SYM.size:
        raise CodeObjectError(f"symbol table '{table.name}': entry size {table.entsize} and size {table.size:#x} "
                              f"do not fit {_SYM.size}-byte symbols")
    if table.link >= len(sections):
        raise CodeObjectError(f"symbol table '{table.name}': sh_link {table.link} is not a section")
    strings = sections[table.link]
    syms = []
    for off in range(0, table.size, _SYM.size):
        name, info, other, shndx, value, size = _SYM.unpack_from(table.data, off)
        if shndx == SHN_UNDEF or shndx >= SHN_LORESERVE:
            section = None
        elif shndx < len(sections):
            section = sections[shndx].name
        else:
            raise CodeObjectError(f"symbol table '{table.name}' entry {off // _SYM.size}: section index {shndx} "
                                  f"is not a section")
        syms.append(Symbol(string_at(strings, name), value, size, SYMBOL_TYPES.get(info & 0xF, str(info & 0xF)),
                           SYMBOL_BINDINGS.get(info >> 4, str(info >> 4)), section, shndx, other))
    return syms


def find_section(sections: list[Section], name: str) -> Section:
    """The section called name; CodeObjectError naming the sections there are."""
    for s in sections:
        if s.name == name:
            return s
    raise CodeObjectError(f"no section '{name}' (sections: {', '.join(s.name for s in sections if s.name)})")


def parse_checked(parse: Callable[[bytes], T], data: bytes, what: str) -> T:
    """parse(data), where any failure the parser's own checks missed is still a CodeObjectError: a malformed `what`,
    with the cause."""
    data = bytes(data)
    try:
        return parse(data)
    except CodeObjectError:
        raise
    except Exception as e:
        raise CodeObjectError(f"malformed {what} ({len(data)} bytes): {type(e).__name__}: {e}") from e
