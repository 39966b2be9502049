"""parse(): an AMDGPU ELF code object (v4, v5, v6) into its target, sections, symbols, metadata and kernels."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from usergpu.errors import CodeObjectError
from usergpu.isa import elf
from usergpu.isa.amd.codeobj import target
from usergpu.isa.amd.codeobj.kernel import Kernel, build_kernel
from usergpu.isa.amd.codeobj.note import read_metadata


@dataclass(frozen=True)
class CodeObject:
    data: bytes
    arch: str  # 'gfx1100', from the EF_AMDGPU_MACH bits of e_flags
    version: int  # code object version 4, 5 or 6
    xnack: str  # 'unsupported', 'any', 'off' or 'on'
    sramecc: str
    flags: int  # e_flags
    sections: list[elf.Section]
    segments: list[elf.Segment]
    symbols: list[elf.Symbol]  # .symtab, or .dynsym when the object is stripped
    metadata: dict[str, Any]  # the whole NT_AMDGPU_METADATA map
    kernels: dict[str, Kernel]

    @property
    def target(self) -> str:
        """Target ID, e.g. 'amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-' (as the metadata's amdhsa.target)."""
        return target.target_id(self.arch, self.xnack, self.sramecc)

    @property
    def text(self) -> elf.Section:
        """The .text section: .data holds the code, .addr where it is loaded."""
        return self.section(".text")

    def section(self, name: str) -> elf.Section:
        return elf.find_section(self.sections, name)


def parse(data: bytes) -> CodeObject:
    """Parse a linked AMDGPU code object. Any malformation raises CodeObjectError saying what and where."""
    return elf.parse_checked(_parse, data, "code object")


def _parse(data: bytes) -> CodeObject:
    hdr = elf.read_header(data)
    if hdr.osabi != target.ELFOSABI_AMDGPU_HSA:
        raise CodeObjectError(f"EI_OSABI is {hdr.osabi}, not ELFOSABI_AMDGPU_HSA ({target.ELFOSABI_AMDGPU_HSA})")
    if hdr.abiversion not in target.ABI_VERSIONS:
        raise CodeObjectError(f"EI_ABIVERSION {hdr.abiversion} is not code object v4, v5 or v6 (2, 3 or 4)")
    if hdr.type != elf.ET_DYN:
        raise CodeObjectError(f"e_type is {hdr.type}, not ET_DYN ({elf.ET_DYN}): link the object with ld.lld -shared")
    arch = target.arch_of(hdr.flags)
    xnack, sramecc = target.features(hdr.flags)
    sections = elf.read_sections(data, hdr)
    tables = {s.type: s for s in sections if s.type in (elf.SHT_SYMTAB, elf.SHT_DYNSYM)}
    if not tables:
        raise CodeObjectError("no symbol table (.symtab or .dynsym)")
    symbols = elf.read_symbols(sections, tables.get(elf.SHT_SYMTAB) or tables[elf.SHT_DYNSYM])
    metadata = read_metadata(sections)
    kernels = {}
    for meta in metadata["amdhsa.kernels"]:
        k = build_kernel(meta, arch, sections, symbols)
        kernels[k.name] = k
    return CodeObject(data, arch, target.ABI_VERSIONS[hdr.abiversion], xnack, sramecc, hdr.flags, sections,
                      elf.read_segments(data, hdr), symbols, metadata, kernels)
