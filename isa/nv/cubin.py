"""parse(): a cubin (CUDA ELF, as ptxas writes it) into its arch, kernels, attributes, constant banks, relocations and
the PTX it was assembled from.

The architecture is in e_flags, in one of two layouts chosen by EI_ABIVERSION (LLVM's BinaryFormat/ELF.h EF_CUDA_*
constants and ELFObjectFile's getNVPTXCPUName; checked against cubins of ptxas 12.4, 12.9 and 13.5):

| EI_OSABI / EI_ABIVERSION | SM (0x5a: sm_90) | 'a' (sm_90a) | other bits |
| --- | --- | --- | --- |
| 0x33 / 7: CUDA up to 12.x, up to sm_90 | bits 0-7 | 0x800 | 0x100 unified texmode, 0x400 64-bit, bits 16-23 PTX SM |
| 0x41 / 8: sm_100+ from CUDA 12.8, every arch from 13 | bits 8-15 | 0x8 | not decoded (0x06000002/04 seen) |

LLVM 22 calls 0x33 ELFOSABI_CUDA but has ELFOSABI_CUDA_V2 = 41 (decimal); ptxas writes 0x41, which is taken as the
truth. ptxas 13 sets neither 'a' bit: it records the variant in .nv.compat as EICOMPAT_ATTR_CUDA_ACCELERATOR_TARGET = 1,
which nvdisasm and cuobjdump read (they print sm_90a). Any of the three makes the arch an 'a' one. sm_100f is not
recorded anywhere (ptxas makes the same cubin as for sm_100).
"""

from __future__ import annotations

import functools
import re
import struct
from dataclasses import dataclass

from usergpu.errors import CodeObjectError
from usergpu.isa import elf
from usergpu.isa.nv.compile import PTX_SECTION
from usergpu.isa.nv.nvinfo import Attribute, KParam, ParamCBank, parse_records, relocation_name
from usergpu.isa.text import text_of

EM_CUDA = 190
SHT_RELA, SHT_REL = 4, 9
STO_CUDA_ENTRY = 0x10  # st_other of a kernel's symbol (nvdisasm: STO_CUDA_ENTRY)
ACCELERATOR_TARGET = 0x09  # EICOMPAT_ATTR_CUDA_ACCELERATOR_TARGET
# EI_ABIVERSION -> (EI_OSABI, shift of the SM field in e_flags, the 'a' bit)
ABIS = {7: (51, 0, 0x800), 8: (65, 8, 0x8)}
_CONSTANT = re.compile(r"\.nv\.constant(\d+)(?:\.(.+))?$")
_REL = {SHT_REL: struct.Struct("<QQ"), SHT_RELA: struct.Struct("<QQq")}


@dataclass(frozen=True)
class Relocation:
    section: str  # the relocation section (.rela.text.<kernel>)
    target: str  # the section it patches
    offset: int
    type: int
    name: str  # R_CUDA_*
    symbol: str
    addend: int | None  # None in a .rel section


@dataclass(frozen=True)
class Kernel:
    """A kernel: its code (.text.<name>, which also holds the device functions ptxas placed after it), its
    attributes (its .nv.info.<name>, then the module-wide .nv.info records that name it), shared memory, constant
    banks and relocations."""

    name: str
    symbol: elf.Symbol
    text: elf.Section
    code: bytes
    attributes: list[Attribute]
    shared_size: int  # .nv.shared.<name>: static shared memory, including what the arch reserves (1 KiB on sm_90+)
    constants: dict[int, bytes]  # bank -> .nv.constant<bank>.<name>
    relocations: list[Relocation]

    def attribute(self, name: str) -> Attribute | None:
        """The first attribute called name ('EIATTR_REGCOUNT'), or None."""
        return next((a for a in self.attributes if a.name == name), None)

    def _value(self, name: str):
        a = self.attribute(name)
        return None if a is None else getattr(a.value, "value", a.value)

    @property
    def constant0(self) -> bytes:
        return self.constants.get(0, b"")

    @property
    def regcount(self) -> int | None:
        return self._value("EIATTR_REGCOUNT")

    @property
    def frame_size(self) -> int | None:
        return self._value("EIATTR_FRAME_SIZE")

    @property
    def min_stack_size(self) -> int | None:
        return self._value("EIATTR_MIN_STACK_SIZE")

    @property
    def max_stack_size(self) -> int | None:
        return self._value("EIATTR_MAX_STACK_SIZE")

    @property
    def max_threads(self) -> tuple[int, int, int] | None:
        """.maxntid (launch bounds)."""
        return self._value("EIATTR_MAX_THREADS")

    @property
    def reqntid(self) -> tuple[int, int, int] | None:
        return self._value("EIATTR_REQNTID")

    @property
    def maxreg_count(self) -> int | None:
        return self._value("EIATTR_MAXREG_COUNT")

    @property
    def cbank_param_size(self) -> int | None:
        return self._value("EIATTR_CBANK_PARAM_SIZE")

    @property
    def exit_offsets(self) -> tuple[int, ...]:
        return self._value("EIATTR_EXIT_INSTR_OFFSETS") or ()

    @property
    def param_cbank(self) -> ParamCBank | None:
        return self._value("EIATTR_PARAM_CBANK")

    @property
    def params(self) -> list[KParam]:
        """The parameters (EIATTR_KPARAM_INFO) in signature order; offsets from the start of the parameters, which
        lie at param_cbank.offset in constant bank 0."""
        return sorted((a.value for a in self.attributes if a.name == "EIATTR_KPARAM_INFO"), key=lambda p: p.ordinal)


@dataclass(frozen=True)
class Cubin:
    data: bytes
    arch: str  # 'sm_90', 'sm_90a', 'sm_120'
    abi_version: int  # EI_ABIVERSION: 7 or 8
    flags: int  # e_flags
    sections: list[elf.Section]
    symbols: list[elf.Symbol]  # .symtab, by index
    info: list[Attribute]  # .nv.info (module-wide; per-function values name their function)
    compat: list[Attribute]  # .nv.compat
    kernels: dict[str, Kernel]
    constants: dict[int, bytes]  # bank -> .nv.constant<bank> (module-wide: __constant__ data, bank 4 pointers...)
    relocations: list[Relocation]  # every relocation section's entries
    ptx: str | None  # the PTX it was assembled from (section .usergpu.ptx, written by assemble_ptx)

    @property
    def sm(self) -> int:
        return sm_number(self.arch)

    def section(self, name: str) -> elf.Section:
        return elf.find_section(self.sections, name)


@functools.lru_cache(maxsize=256)
def sm_number(arch: str) -> int:
    """The number of an sm_XY arch, its a/f variant aside: sm_90a -> 90, sm_120 -> 120."""
    return int(re.match(r"sm_(\d+)", arch).group(1))


def parse(data: bytes) -> Cubin:
    """Parse a cubin. Any malformation raises CodeObjectError saying what and where."""
    return elf.parse_checked(_parse, data, "cubin")


def read_header(data: bytes) -> elf.Header:
    """The ELF header of a CUDA ELF: e_machine EM_CUDA, and an ABI version and OS ABI of CUDA's."""
    hdr = elf.read_header(data, (EM_CUDA, "EM_CUDA"), "a CUDA ELF")
    if hdr.abiversion not in ABIS:
        raise CodeObjectError(f"EI_ABIVERSION is {hdr.abiversion}, not a CUDA ELF ABI (7 or 8)")
    if hdr.osabi != ABIS[hdr.abiversion][0]:
        raise CodeObjectError(f"EI_OSABI is {hdr.osabi}, not {ABIS[hdr.abiversion][0]} (what CUDA ELF ABI version "
                              f"{hdr.abiversion} uses)")
    return hdr


def arch_name(abi_version: int, flags: int, accelerator_target: bool = False) -> str:
    """sm_XX[a] from EI_ABIVERSION, e_flags and .nv.compat's accelerator-target attribute."""
    _, shift, accel = ABIS[abi_version]
    sm = (flags >> shift) & 0xFF
    if sm < 20:
        raise CodeObjectError(f"e_flags {flags:#x} names SM {sm}, not a CUDA architecture (ELF ABI {abi_version})")
    return f"sm_{sm}" + ("a" if accelerator_target or flags & accel else "")


def _parse(data: bytes) -> Cubin:
    hdr = read_header(data)
    sections = elf.read_sections(data, hdr)
    by_name = {s.name: s for s in sections}
    symtab = next((s for s in sections if s.type == elf.SHT_SYMTAB), None)
    if symtab is None:
        raise CodeObjectError("no symbol table (.symtab): a cubin names its kernels there")
    symbols = elf.read_symbols(sections, symtab)
    info = parse_records(by_name[".nv.info"], symbols) if ".nv.info" in by_name else []
    compat = parse_records(by_name[".nv.compat"], symbols, compat=True) if ".nv.compat" in by_name else []
    accelerated = any(a.code == ACCELERATOR_TARGET and a.value == 1 for a in compat)
    relocations = [r for s in sections if s.type in _REL for r in _relocations(s, sections)]
    constants = {int(m.group(1)): bytes(s.data) for s in sections
                 if (m := _CONSTANT.match(s.name)) and m.group(2) is None}
    kernels = {}
    for sym in symbols:
        if sym.type == "FUNC" and sym.other & STO_CUDA_ENTRY:
            kernels[sym.name] = _kernel(sym, sections, by_name, symbols, info, relocations)
    return Cubin(data, arch_name(hdr.abiversion, hdr.flags, accelerated), hdr.abiversion, hdr.flags, sections,
                 symbols, info, compat, kernels, constants, relocations, _ptx(by_name.get(PTX_SECTION)))


def _kernel(sym: elf.Symbol, sections: list[elf.Section], by_name: dict[str, elf.Section], symbols: list[elf.Symbol],
            info: list[Attribute], relocations: list[Relocation]) -> Kernel:
    name = sym.name
    text = sections[sym.shndx] if sym.section else None
    if text is None or text.name != f".text.{name}":
        raise CodeObjectError(f"kernel '{name}': its symbol is in section {sym.section!r}, not '.text.{name}'")
    if text.type == elf.SHT_NOBITS:
        raise CodeObjectError(f"kernel '{name}': section '.text.{name}' has no data (SHT_NOBITS)")
    own = by_name.get(f".nv.info.{name}")
    attributes = (parse_records(own, symbols) if own else []) + [
        a for a in info if getattr(a.value, "function", None) == name]
    shared = by_name.get(f".nv.shared.{name}")
    constants = {int(m.group(1)): bytes(s.data) for s in sections
                 if (m := _CONSTANT.match(s.name)) and m.group(2) == name}
    return Kernel(name, sym, text, bytes(text.data), attributes, shared.size if shared else 0, constants,
                  [r for r in relocations if r.target == text.name])


def _relocations(rel: elf.Section, sections: list[elf.Section]) -> list[Relocation]:
    entry = _REL[rel.type]
    if rel.size % entry.size:
        raise CodeObjectError(f"relocation section '{rel.name}': size {rel.size:#x} is not a multiple of its "
                              f"{entry.size}-byte entries")
    if rel.info >= len(sections) or rel.link >= len(sections) or sections[rel.link].type != elf.SHT_SYMTAB:
        raise CodeObjectError(f"relocation section '{rel.name}': sh_info {rel.info} / sh_link {rel.link} do not name "
                              f"a section and a symbol table ({len(sections)} sections)")
    symbols = elf.read_symbols(sections, sections[rel.link])
    out = []
    for off in range(0, rel.size, entry.size):
        offset, info, *addend = entry.unpack_from(rel.data, off)
        if info >> 32 >= len(symbols):
            raise CodeObjectError(f"relocation section '{rel.name}' offset {off:#x}: symbol {info >> 32} is not in "
                                  f"the symbol table ({len(symbols)} symbols)")
        rtype = info & 0xFFFFFFFF
        out.append(Relocation(rel.name, sections[rel.info].name, offset, rtype, relocation_name(rtype),
                              symbols[info >> 32].name, addend[0] if addend else None))
    return out


def _ptx(section: elf.Section | None) -> str | None:
    if section is None:
        return None
    return text_of(section.data, f"the PTX in section '{PTX_SECTION}'")


def no_ptx(runner: str) -> CodeObjectError:
    """The one error for a cubin without PTX where a runner needs it (the PTX emulator, the mock GPU that runs on
    it): what is missing and how to get a cubin that has it."""
    return CodeObjectError(f"{runner} runs a cubin's kernels from the PTX it carries (section {PTX_SECTION}), not from "
                           "its SASS; this cubin has none (a stock ptxas or nvcc cubin). Make one that does with "
                           "usergpu.assemble_ptx(ptx, arch), the PTX from usergpu.compile_cuda(src, arch), or run the "
                           "source itself (`usergpu run FILE.cu` or FILE.ptx)")
