"""The 64-byte kernel descriptor: every field by its LLVM name, the user SGPR layout and the register counts.

Facts from LLVM AMDGPUUsage ("Kernel Descriptor", "Initial Kernel Execution State"); the struct and bit
fields are the generated `usergpu.autogen.amdhsa` ones.
"""

from __future__ import annotations

import functools
import re

from usergpu.autogen.amdhsa import BITFIELDS, kernel_descriptor_t
from usergpu.errors import CodeObjectError
from usergpu.isa.amd.codeobj.target import architected_flat_scratch, has_gfx90a_insts, version

KD_SIZE = 64

# User SGPRs in the order the hardware loads them from s0 up: (KERNEL_CODE_PROPERTY enable, name, count).
USER_SGPRS = (
    ("ENABLE_SGPR_PRIVATE_SEGMENT_BUFFER", "private_segment_buffer", 4),
    ("ENABLE_SGPR_DISPATCH_PTR", "dispatch_ptr", 2),
    ("ENABLE_SGPR_QUEUE_PTR", "queue_ptr", 2),
    ("ENABLE_SGPR_KERNARG_SEGMENT_PTR", "kernarg_segment_ptr", 2),
    ("ENABLE_SGPR_DISPATCH_ID", "dispatch_id", 2),
    ("ENABLE_SGPR_FLAT_SCRATCH_INIT", "flat_scratch_init", 2),
    ("ENABLE_SGPR_PRIVATE_SEGMENT_SIZE", "private_segment_size", 1),
)
# System SGPRs follow the user SGPRs: (COMPUTE_PGM_RSRC2 enable, name).
SYSTEM_SGPRS = (
    ("ENABLE_SGPR_WORKGROUP_ID_X", "workgroup_id_x"),
    ("ENABLE_SGPR_WORKGROUP_ID_Y", "workgroup_id_y"),
    ("ENABLE_SGPR_WORKGROUP_ID_Z", "workgroup_id_z"),
    ("ENABLE_SGPR_WORKGROUP_INFO", "workgroup_info"),
    ("ENABLE_PRIVATE_SEGMENT", "private_segment_wavefront_offset"),
)

_QUALIFIER = re.compile(r"GFX(\d+)(?:_GFX(\d+)|_(PLUS))?_")


def _bound(num: str, upper: bool) -> tuple[int, int]:
    """'9' -> GFX9.x, '12' -> GFX12.x, '120' -> GFX12.0, '125' -> GFX12.5 (three digits carry the minor)."""
    n = int(num)
    if n >= 100:
        return n // 10, n % 10
    return (n, 99) if upper else (n, 0)


def _applies(field: str, ver: tuple[int, int]) -> bool:
    """Whether an LLVM field name's GFXa[_GFXb|_PLUS]_ qualifier, if any, covers this GFX version."""
    m = _QUALIFIER.match(field)
    if not m:
        return True
    lo = _bound(m[1], False)
    hi = (99, 99) if m[3] else _bound(m[2] or m[1], True)
    return lo <= ver <= hi


def _registers(kd: kernel_descriptor_t, arch: str) -> dict[str, int]:
    """BITFIELDS register name -> its value in this descriptor; rsrc3 is named by its layout for the arch."""
    regs = {"COMPUTE_PGM_RSRC1": kd.compute_pgm_rsrc1, "COMPUTE_PGM_RSRC2": kd.compute_pgm_rsrc2,
            "KERNEL_CODE_PROPERTY": kd.kernel_code_properties, "KERNARG_PRELOAD_SPEC": kd.kernarg_preload}
    if has_gfx90a_insts(arch):
        regs["COMPUTE_PGM_RSRC3_GFX90A"] = kd.compute_pgm_rsrc3
    elif version(arch)[0] >= 10:
        regs["COMPUTE_PGM_RSRC3"] = kd.compute_pgm_rsrc3
    return regs


def decode_fields(kd: kernel_descriptor_t, arch: str) -> dict[str, int]:
    """Every descriptor field, named as LLVM's enumerators name it (COMPUTE_PGM_RSRC2_ENABLE_SGPR_WORKGROUP_ID_X).

    Arch-qualified bit fields (GFX6_GFX11_..., GFX12_PLUS_...) appear only for the archs they describe. gfx90a-class
    archs decode compute_pgm_rsrc3 as COMPUTE_PGM_RSRC3_GFX90A_*; other archs before gfx10 give it no fields, so it
    shows raw as COMPUTE_PGM_RSRC3.
    """
    out = {
        "GROUP_SEGMENT_FIXED_SIZE": kd.group_segment_fixed_size,
        "PRIVATE_SEGMENT_FIXED_SIZE": kd.private_segment_fixed_size,
        "KERNARG_SIZE": kd.kernarg_size,
        "RESERVED0": int.from_bytes(bytes(kd.reserved0), "little"),
        "KERNEL_CODE_ENTRY_BYTE_OFFSET": kd.kernel_code_entry_byte_offset,
        "RESERVED1": int.from_bytes(bytes(kd.reserved1), "little"),
        "RESERVED3": int.from_bytes(bytes(kd.reserved3), "little"),
    }
    regs = _registers(kd, arch)
    if "COMPUTE_PGM_RSRC3" not in regs and "COMPUTE_PGM_RSRC3_GFX90A" not in regs:
        out["COMPUTE_PGM_RSRC3"] = kd.compute_pgm_rsrc3
    for name, reg, shift, mask in _layout(arch, tuple(regs)):
        out[name] = (regs[reg] >> shift) & mask
    return out


@functools.cache
def _layout(arch: str, regs: tuple[str, ...]) -> tuple[tuple[str, str, int, int], ...]:
    """(field name, register, shift, mask) of every bit field of regs that applies to the arch: worked out once
    per arch, as a launch decodes a descriptor each time."""
    ver = version(arch)
    return tuple((f"{reg}_{field}", reg, shift, (1 << width) - 1) for reg in regs
                 for field, (shift, width) in BITFIELDS[reg].items() if _applies(field, ver))


def descriptor(data: bytes, arch: str) -> tuple[kernel_descriptor_t, dict[str, int]]:
    """A descriptor's 64 bytes as the struct and its fields (decode_fields), both to be read only: a launch decodes
    its kernel's descriptor, so the decoding is kept by the bytes."""
    if len(data) != KD_SIZE:
        raise CodeObjectError(f"a kernel descriptor is {KD_SIZE} bytes, not {len(data)}")
    return _descriptor(bytes(data), arch)


@functools.lru_cache(maxsize=1024)
def _descriptor(data: bytes, arch: str) -> tuple[kernel_descriptor_t, dict[str, int]]:
    kd = kernel_descriptor_t.from_buffer_copy(data)
    return kd, decode_fields(kd, arch)


def user_sgprs(fields: dict[str, int]) -> list[tuple[str, int, int]]:
    """(name, first SGPR, count) of each enabled user SGPR, then the preloaded kernargs, in hardware order."""
    out, sgpr = [], 0
    for enable, name, count in USER_SGPRS:
        if fields[f"KERNEL_CODE_PROPERTY_{enable}"]:
            out.append((name, sgpr, count))
            sgpr += count
    if fields["KERNARG_PRELOAD_SPEC_LENGTH"]:
        out.append(("kernarg_preload", sgpr, fields["KERNARG_PRELOAD_SPEC_LENGTH"]))
    return out


def user_sgpr_count(fields: dict[str, int]) -> int:
    """USER_SGPR_COUNT from compute_pgm_rsrc2 (5 bits up to gfx12.0, 6 bits on gfx12.5)."""
    return fields.get("COMPUTE_PGM_RSRC2_GFX6_GFX120_USER_SGPR_COUNT",
                      fields.get("COMPUTE_PGM_RSRC2_GFX125_USER_SGPR_COUNT", 0))


def system_sgprs(fields: dict[str, int], first: int, arch: str) -> list[tuple[str, int, int]]:
    """(name, SGPR, 1) of each system SGPR SPI writes after the user SGPRs: the workgroup IDs and info, then the
    scratch wave offset, which ENABLE_PRIVATE_SEGMENT asks for only where flat scratch is not architected."""
    names = [name for enable, name in SYSTEM_SGPRS if fields[f"COMPUTE_PGM_RSRC2_{enable}"]
             and not (name == "private_segment_wavefront_offset" and architected_flat_scratch(arch))]
    return [(name, first + i, 1) for i, name in enumerate(names)]


def vgpr_granule(arch: str, wave32: bool) -> int:
    """VGPRs per GRANULATED_WORKITEM_VGPR_COUNT step (LLVM getVGPREncodingGranule): 8 on gfx90a-class and in
    wave32, 4 in wave64 elsewhere."""
    return 8 if has_gfx90a_insts(arch) or wave32 else 4


def vgpr_alloc(fields: dict[str, int], arch: str, wave32: bool) -> int:
    """VGPRs the descriptor reserves per lane: (granulated + 1) * granule. On gfx90a-class this counts the
    unified file, ArchVGPRs up to accum_offset plus the AGPRs after them."""
    return (fields["COMPUTE_PGM_RSRC1_GRANULATED_WORKITEM_VGPR_COUNT"] + 1) * vgpr_granule(arch, wave32)


def sgpr_alloc(fields: dict[str, int], arch: str) -> int | None:
    """SGPRs the descriptor reserves before gfx10: (granulated + 1) * 8, the inverse of LLVM's ceil(n / 8) - 1
    (getSGPREncodingGranule); None on gfx10+, where the field is reserved and every wave gets the full SGPR file."""
    if version(arch)[0] >= 10:
        return None
    return (fields["COMPUTE_PGM_RSRC1_GRANULATED_WAVEFRONT_SGPR_COUNT"] + 1) * 8


def accum_offset(fields: dict[str, int]) -> int | None:
    """First AGPR's index in the unified VGPR file on gfx90a-class ((ACCUM_OFFSET + 1) * 4); None elsewhere."""
    if "COMPUTE_PGM_RSRC3_GFX90A_ACCUM_OFFSET" not in fields:
        return None
    return (fields["COMPUTE_PGM_RSRC3_GFX90A_ACCUM_OFFSET"] + 1) * 4
