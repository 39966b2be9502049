"""CUDA ELF attribute records (.nv.info, .nv.info.<kernel>, .nv.compat), their names, and relocation type names.

A record is a format byte, an attribute byte and a value: EIFMT_NVAL two zero bytes, EIFMT_BVAL one byte and one of
padding, EIFMT_HVAL a little-endian u16, EIFMT_SVAL a u16 size and then that many bytes. Records follow each other
with no gaps (ptxas pads an SVAL's size to a multiple of 4).

Names are the ones CUDA 13.5's cuobjdump -elf prints for each code (probed code by code on a cubin whose records
were rewritten); codes 0x00-0x2b agree with the enums of older public cubin readers (decuda's elfmanip.hpp,
VivekPanyam/cudaparsers), which also give the KPARAM_INFO bit layout that cuobjdump's decoding of it confirms. A
code without a name here is kept with its raw bytes and called EIATTR_<code>.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

from usergpu.errors import CodeObjectError
from usergpu.isa.elf import Section, Symbol

FORMATS = {1: "EIFMT_NVAL", 2: "EIFMT_BVAL", 3: "EIFMT_HVAL", 4: "EIFMT_SVAL"}
NVAL, BVAL, HVAL, SVAL = 1, 2, 3, 4
_FIXED = {NVAL: 0, BVAL: 1, HVAL: 2}  # value bytes of the fixed-size formats, inside their 4-byte record

# EIATTR_<name>, by code ('-': no name in cuobjdump 13.5)
EIATTR = tuple("""
ERROR PAD IMAGE_SLOT JUMPTABLE_RELOCS CTAIDZ_USED MAX_THREADS IMAGE_OFFSET IMAGE_SIZE TEXTURE_NORMALIZED SAMPLER_INIT
PARAM_CBANK SMEM_PARAM_OFFSETS CBANK_PARAM_OFFSETS SYNC_STACK TEXID_SAMPID_MAP EXTERNS REQNTID FRAME_SIZE
MIN_STACK_SIZE SAMPLER_FORCE_UNNORMALIZED BINDLESS_IMAGE_OFFSETS BINDLESS_TEXTURE_BANK BINDLESS_SURFACE_BANK
KPARAM_INFO SMEM_PARAM_SIZE CBANK_PARAM_SIZE QUERY_NUMATTRIB MAXREG_COUNT EXIT_INSTR_OFFSETS S2RCTAID_INSTR_OFFSETS
CRS_STACK_SIZE NEED_CNP_WRAPPER NEED_CNP_PATCH EXPLICIT_CACHING ISTYPEP_USED MAX_STACK_SIZE SUQ_USED
LD_CACHEMOD_INSTR_OFFSETS LOAD_CACHE_REQUEST ATOM_SYS_INSTR_OFFSETS COOP_GROUP_INSTR_OFFSETS COOP_GROUP_MASK_REGIDS -
WMMA_USED HAS_PRE_V10_OBJECT ATOMF16_EMUL_INSTR_OFFSETS ATOM16_EMUL_INSTR_REG_MAP REGCOUNT -
INT_WARP_WIDE_INSTR_OFFSETS SHARED_SCRATCH STATISTICS INDIRECT_BRANCH_TARGETS - SW_WAR CUDA_API_VERSION NUM_MBARRIERS
MBARRIER_INSTR_OFFSETS COROUTINE_RESUME_ID_OFFSETS SAM_REGION_STACK_SIZE PER_REG_TARGET_PERF_STATS CTA_PER_CLUSTER
EXPLICIT_CLUSTER MAX_CLUSTER_RANK INSTR_REG_MAP RESERVED_SMEM_USED RESERVED_SMEM_0_SIZE UCODE_SECTION_DATA
UNUSED_LOAD_BYTE_OFFSET KPARAM_INFO_V2 SYSCALL_OFFSETS - GRAPHICS_GLOBAL_CBANK SHADER_TYPE VRC_CTA_INIT_COUNT
TOOLS_PATCH_FUNC NUM_BARRIERS TEXMODE_INDEPENDENT PERF_STATISTICS AT_ENTRY_FRAGMENTS SPARSE_MMA_MASK TCGEN05_1CTA_USED
TCGEN05_2CTA_USED GEN_ERRBAR_AT_EXIT REG_RECONFIG ANNOTATIONS - STACK_CANARY_TRAP_OFFSETS STUB_FUNCTION_KIND
LOCAL_CTA_ASYNC_STORE_OFFSETS - BLOCKS_ARE_CLUSTERS SANITIZE SYSCALLS_FALLBACK CUDA_REQ - - RTCORE_ENTRY
CLUSTER_LAUNCH_CONTROL_USED - MIN_PER_CTA_MEMORY_SIZE IGNOREOOB_CP_ASYNC_BULK_INSTR_OFFSETS LANGUAGE - GRID_ATTRIBUTES
STACK_OFFSET RT_LIVESTATE_SASS_MAP NVSAL_SW_WAR INSTR_OFFSETS PREEXIT_USED
""".split())

# EICOMPAT_ATTR_<name> of .nv.compat, by code
EICOMPAT = tuple("""
ERROR PAD ISA_CLASS INST_TENSORMAP_V1 INST_TCGEN05_MMA_DEPRECATED INST_TCGEN05_MMA ENABLE_OPPORTUNISTIC_FINALIZATION - -
CUDA_ACCELERATOR_TARGET CUDA_DRIVER_VERSION CAN_FASTPATH_FINALIZE CUDA_INTERNAL_TARGET - FINALIZER_VERSION
MIN_FINALIZER_VERSION_FOR_MVC ERROR_LAST
""".split())

# R_CUDA_<name>, by relocation type (cuobjdump 13.5; tinygrad's and CuAssembler's R_CUDA_64 2, ABS32_LO_32 0x38,
# ABS32_HI_32 0x39 agree)
R_CUDA = tuple("""
- 32 64 G32 G64 ABS32_26 TEX_HEADER_INDEX SAMP_HEADER_INDEX SURF_HW_DESC SURF_HW_SW_DESC ABS32_LO_26 ABS32_HI_26
ABS32_23 ABS32_LO_23 ABS32_HI_23 ABS24_26 ABS24_23 ABS16_26 ABS16_23 TEX_SLOT SAMP_SLOT SURF_SLOT TEX_BINDLESSOFF13_32
TEX_BINDLESSOFF13_47 CONST_FIELD19_28 CONST_FIELD19_23 TEX_SLOT9_49 6_31 2_47 TEX_BINDLESSOFF13_41 TEX_BINDLESSOFF13_45
FUNC_DESC32_23 FUNC_DESC32_LO_23 FUNC_DESC32_HI_23 FUNC_DESC_32 FUNC_DESC_64 CONST_FIELD21_26 QUERY_DESC21_37
CONST_FIELD19_26 CONST_FIELD21_23 PCREL_IMM24_26 PCREL_IMM24_23 ABS32_20 ABS32_LO_20 ABS32_HI_20 ABS24_20 ABS16_20
FUNC_DESC32_20 FUNC_DESC32_LO_20 FUNC_DESC32_HI_20 CONST_FIELD19_20 BINDLESSOFF13_36 SURF_HEADER_INDEX INSTRUCTION64
CONST_FIELD21_20 ABS32_32 ABS32_LO_32 ABS32_HI_32 ABS47_34 ABS16_32 ABS24_32 FUNC_DESC32_32 FUNC_DESC32_LO_32
FUNC_DESC32_HI_32 CONST_FIELD19_40 BINDLESSOFF14_40 CONST_FIELD21_38 INSTRUCTION128 YIELD_OPCODE9_0
YIELD_CLEAR_PRED4_87 32_LO 32_HI UNUSED_CLEAR32 UNUSED_CLEAR64 ABS24_40 ABS55_16_34 8_0 8_8 8_16 8_24 8_32 8_40 8_48
8_56 G8_0 G8_8 G8_16 G8_24 G8_32 G8_40 G8_48 G8_56 FUNC_DESC_8_0 FUNC_DESC_8_8 FUNC_DESC_8_16 FUNC_DESC_8_24
FUNC_DESC_8_32 FUNC_DESC_8_40 FUNC_DESC_8_48 FUNC_DESC_8_56 ABS20_44 SAMP_HEADER_INDEX_0 UNIFIED UNIFIED_32 UNIFIED_8_0
UNIFIED_8_8 UNIFIED_8_16 UNIFIED_8_24 UNIFIED_8_32 UNIFIED_8_40 UNIFIED_8_48 UNIFIED_8_56 UNIFIED32_LO_32
UNIFIED32_HI_32 ABS56_16_34 CONST_FIELD22_37
""".split())


def _name(table: tuple[str, ...], prefix: str, code: int) -> str:
    known = table[code] if code < len(table) else "-"
    return f"{prefix}{known}" if known != "-" else f"{prefix}{code:#x}"


def attribute_name(code: int) -> str:
    return _name(EIATTR, "EIATTR_", code)


def compat_name(code: int) -> str:
    return _name(EICOMPAT, "EICOMPAT_ATTR_", code)


def relocation_name(rtype: int) -> str:
    return _name(R_CUDA, "R_CUDA_", rtype)


@dataclass(frozen=True)
class FunctionValue:
    """A per-function value in the module-wide .nv.info (REGCOUNT, FRAME_SIZE, MIN/MAX_STACK_SIZE)."""

    function: str
    value: int


@dataclass(frozen=True)
class ParamCBank:
    """EIATTR_PARAM_CBANK: the kernel's parameters lie in constant bank 0 (section `section`) at offset, size bytes."""

    section: str
    offset: int
    size: int


@dataclass(frozen=True)
class KParam:
    """EIATTR_KPARAM_INFO: one kernel parameter (ordinal: its position in the signature; offset: from the start of
    the parameters)."""

    index: int
    ordinal: int
    offset: int
    size: int
    log_alignment: int
    space: int
    cbank: int
    in_cbank: bool


@dataclass(frozen=True)
class Attribute:
    """One record: code, name, format, where it lies (section, offset), the value bytes as stored, and the value
    decoded where its layout is known (int for BVAL/HVAL, None for NVAL, the raw bytes for an SVAL not decoded)."""

    code: int
    name: str
    format: int
    section: str
    offset: int
    raw: bytes
    value: object

    @property
    def format_name(self) -> str:
        return FORMATS[self.format]


Decoder = Callable[[bytes, Callable[[int], Symbol]], object]


def _words(raw: bytes, _sym) -> tuple[int, ...]:
    return struct.unpack(f"<{len(raw) // 4}I", raw)


def _word(raw: bytes, _sym) -> int:
    return struct.unpack("<I", raw)[0]


def _function(raw: bytes, sym) -> FunctionValue:
    index, value = struct.unpack("<II", raw)
    return FunctionValue(sym(index).name, value)


def _param_cbank(raw: bytes, sym) -> ParamCBank:
    index, offset, size = struct.unpack("<IHH", raw)
    s = sym(index)
    return ParamCBank(s.section or s.name, offset, size)


def _kparam(raw: bytes, _sym) -> KParam:
    index, ordinal, offset, bits = struct.unpack("<IHHI", raw)
    return KParam(index, ordinal, offset, bits >> 18, bits & 0xFF, (bits >> 8) & 0xF, (bits >> 12) & 0x1F,
                  not bits & (1 << 17))


def _externs(raw: bytes, sym) -> tuple[str, ...]:
    return tuple(sym(i).name for i in _words(raw, sym))


# SVAL layouts: name -> (decoder, size in bytes, or 0 for any multiple of 4)
_SVAL = {
    "EIATTR_PARAM_CBANK": (_param_cbank, 8), "EIATTR_KPARAM_INFO": (_kparam, 12),
    "EIATTR_MAX_THREADS": (_words, 12), "EIATTR_REQNTID": (_words, 12), "EIATTR_CTA_PER_CLUSTER": (_words, 12),
    "EIATTR_EXTERNS": (_externs, 0), "EIATTR_CRS_STACK_SIZE": (_word, 4), "EIATTR_CUDA_API_VERSION": (_word, 4),
    "EIATTR_LANGUAGE": (_word, 4), "EIATTR_SW_WAR": (_word, 4),
    **{f"EIATTR_{n}": (_function, 8) for n in ("REGCOUNT", "FRAME_SIZE", "MIN_STACK_SIZE", "MAX_STACK_SIZE")},
    **{n: (_words, 0) for n in (f"EIATTR_{x}" for x in EIATTR) if n.endswith("_INSTR_OFFSETS")},
}


def parse_records(section: Section, symbols: list[Symbol], compat: bool = False) -> list[Attribute]:
    """Every record of an attribute section, in order. A record that runs past the section, an unknown format, or a
    known attribute whose value does not have its layout is a CodeObjectError naming the section and offset."""
    data, out, off = bytes(section.data), [], 0
    namer = compat_name if compat else attribute_name

    def where(at: int) -> str:
        return f"section '{section.name}' offset {at:#x}"

    while off < len(data):
        if off + 4 > len(data):
            raise CodeObjectError(f"{where(off)}: attribute record header runs past the section end "
                                  f"({len(data):#x} bytes)")
        fmt, code, half = data[off], data[off + 1], struct.unpack_from("<H", data, off + 2)[0]
        name = namer(code)
        if fmt not in FORMATS:
            raise CodeObjectError(f"{where(off)}: {name} has unknown format byte {fmt:#x} (EIFMT 1..4)")
        if fmt == SVAL:
            raw, end = data[off + 4:off + 4 + half], off + 4 + half
            if end > len(data):
                raise CodeObjectError(f"{where(off)}: {name} value of {half:#x} bytes runs past the section end "
                                      f"({len(data):#x} bytes)")
        else:
            raw, end = data[off + 2:off + 2 + _FIXED[fmt]], off + 4
        out.append(Attribute(code, name, fmt, section.name, off, raw, _decode(name, fmt, raw, symbols, where(off))))
        off = end
    return out


def _decode(name: str, fmt: int, raw: bytes, symbols: list[Symbol], where: str) -> object:
    if fmt != SVAL:
        return int.from_bytes(raw, "little") if raw else None
    if name not in _SVAL:
        return raw
    decoder, size = _SVAL[name]
    if (size and len(raw) != size) or len(raw) % 4:
        want = f"{size}" if size else "a multiple of 4"
        raise CodeObjectError(f"{where}: {name} value is {len(raw)} bytes, its layout needs {want}")

    def symbol(index: int) -> Symbol:
        if index >= len(symbols):
            raise CodeObjectError(f"{where}: {name} names symbol {index}, the symbol table has {len(symbols)}")
        return symbols[index]

    return decoder(raw, symbol)
