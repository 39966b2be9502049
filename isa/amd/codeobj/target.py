"""The target an AMDGPU code object is built for: e_ident ABI version and e_flags (LLVM AMDGPUUsage, ELF.h)."""

from __future__ import annotations

import functools
import re

from usergpu.errors import CodeObjectError

ELFOSABI_AMDGPU_HSA = 64
# EI_ABIVERSION -> code object version (ELFABIVERSION_AMDGPU_HSA_V4..V6); v2/v3 are not read.
ABI_VERSIONS = {2: 4, 3: 5, 4: 6}

EF_AMDGPU_MACH = 0x0FF
EF_AMDGPU_FEATURE_XNACK_V4 = 0x300
EF_AMDGPU_FEATURE_SRAMECC_V4 = 0xC00
FEATURE_SETTINGS = ("unsupported", "any", "off", "on")  # the two-bit xnack/sramecc selector values

# EF_AMDGPU_MACH_AMDGCN_* from /usr/lib/llvm-22/include/llvm/BinaryFormat/ELF.h (reserved values left out).
MACH = {
    0x020: "gfx600", 0x021: "gfx601", 0x022: "gfx700", 0x023: "gfx701", 0x024: "gfx702", 0x025: "gfx703",
    0x026: "gfx704", 0x028: "gfx801", 0x029: "gfx802", 0x02a: "gfx803", 0x02b: "gfx810", 0x02c: "gfx900",
    0x02d: "gfx902", 0x02e: "gfx904", 0x02f: "gfx906", 0x030: "gfx908", 0x031: "gfx909", 0x032: "gfx90c",
    0x033: "gfx1010", 0x034: "gfx1011", 0x035: "gfx1012", 0x036: "gfx1030", 0x037: "gfx1031", 0x038: "gfx1032",
    0x039: "gfx1033", 0x03a: "gfx602", 0x03b: "gfx705", 0x03c: "gfx805", 0x03d: "gfx1035", 0x03e: "gfx1034",
    0x03f: "gfx90a", 0x041: "gfx1100", 0x042: "gfx1013", 0x043: "gfx1150", 0x044: "gfx1103", 0x045: "gfx1036",
    0x046: "gfx1101", 0x047: "gfx1102", 0x048: "gfx1200", 0x049: "gfx1250", 0x04a: "gfx1151", 0x04c: "gfx942",
    0x04e: "gfx1201", 0x04f: "gfx950", 0x051: "gfx9-generic", 0x052: "gfx10-1-generic", 0x053: "gfx10-3-generic",
    0x054: "gfx11-generic", 0x055: "gfx1152", 0x058: "gfx1153", 0x059: "gfx12-generic", 0x05a: "gfx1251",
    0x05f: "gfx9-4-generic",
}

# gfx90a-class CDNA: AGPRs share the VGPR file (accum_offset in rsrc3), 8-register VGPR granule.
_GFX90A_INSTS = {"gfx90a", "gfx942", "gfx950", "gfx9-4-generic"}


def arch_of(e_flags: int) -> str:
    mach = e_flags & EF_AMDGPU_MACH
    if mach not in MACH:
        raise CodeObjectError(f"e_flags {e_flags:#x}: unknown EF_AMDGPU_MACH {mach:#x}")
    return MACH[mach]


def features(e_flags: int) -> tuple[str, str]:
    """(xnack, sramecc) settings, each 'unsupported', 'any', 'off' or 'on' (code object v4+ encoding)."""
    return (FEATURE_SETTINGS[(e_flags & EF_AMDGPU_FEATURE_XNACK_V4) >> 8],
            FEATURE_SETTINGS[(e_flags & EF_AMDGPU_FEATURE_SRAMECC_V4) >> 10])


def target_id(arch: str, xnack: str, sramecc: str) -> str:
    """The target ID as LLVM spells it (features in alphabetical order; 'any' and 'unsupported' omitted)."""
    feats = "".join(f":{name}{'+' if v == 'on' else '-'}" for name, v in (("sramecc", sramecc), ("xnack", xnack))
                    if v in ("on", "off"))
    return f"amdgcn-amd-amdhsa--{arch}{feats}"


@functools.cache
def version(arch: str) -> tuple[int, int]:
    """(major, minor) of the GFX IP: gfx1100 -> (11, 0), gfx942 -> (9, 4), gfx1250 -> (12, 5), gfx11-generic -> 11.0."""
    m = re.fullmatch(r"gfx(\d+)-(?:(\d+)-)?generic", arch)
    if m:
        return int(m[1]), int(m[2] or 0)
    m = re.fullmatch(r"gfx(\d+)([0-9a-f])([0-9a-f])", arch)
    if not m:
        raise CodeObjectError(f"cannot read a GFX version from arch {arch!r}")
    return int(m[1]), int(m[2], 16)


def has_gfx90a_insts(arch: str) -> bool:
    return arch in _GFX90A_INSTS


def packed_workitem_ids(arch: str) -> bool:
    """gfx90a-class and gfx11+ load the X, Y, Z work-item IDs packed 10 bits apart into v0."""
    return has_gfx90a_insts(arch) or version(arch)[0] >= 11


def architected_flat_scratch(arch: str) -> bool:
    """gfx940-class and gfx11+ set up scratch in hardware: no scratch wave offset SGPR and no flat scratch init."""
    return (has_gfx90a_insts(arch) and arch != "gfx90a") or version(arch)[0] >= 11
