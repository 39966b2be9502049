"""The hardware's dispatch path, as the runtime and the emulator both use it: the COMPUTE_* registers (written by PM4
SET_SH_REG packets, or by the CP firmware for an AQL packet) say where a kernel's code lies in GPU memory, its user
SGPRs, the workgroup size, LDS, scratch, wave size and float modes. kernel_registers and user_sgpr_values work
them out from a kernel descriptor; image lays a code object's loadable segments out as the GPU sees them."""

from __future__ import annotations

import functools
import struct

from usergpu.autogen import regs_gc_9_4_3, regs_gc_11_0_0, regs_gc_12_0_0
from usergpu.autogen._regs import Reg
from usergpu.errors import FieldError, LaunchError
from usergpu.isa.amd.codeobj import CodeObject
from usergpu.isa.amd.codeobj import kd as kdesc
from usergpu.isa.amd.codeobj.target import version

PT_LOAD = 1
# the register maps by GFX version: GC 9.4.3 (MI300's, what gfx942 and gfx950 dispatch through), 11 and 12
REGS = {(9, 4): regs_gc_9_4_3.REGS, (9, 5): regs_gc_9_4_3.REGS, 11: regs_gc_11_0_0.REGS, 12: regs_gc_12_0_0.REGS}
LDS_GRANULE = 512  # bytes per COMPUTE_PGM_RSRC2.LDS_SIZE step (128 dwords from gfx7 on)
SCRATCH_GRANULE = {9: 1024, 11: 256, 12: 256}  # bytes per wave per COMPUTE_TMPRING_SIZE.WAVESIZE step
DENORM_SHIFT = {32: 4, 16: 6, 64: 6}  # FP_DENORM_32 and FP_DENORM_16_64 within COMPUTE_PGM_RSRC1.FLOAT_MODE


def regs_of(arch: str) -> dict[str, Reg]:
    ver = version(arch)
    table = REGS.get(ver, REGS.get(ver[0]))
    if table is None:
        raise LaunchError(f"{arch}: the emulator dispatches gfx942, gfx950, gfx11 and gfx12 kernels only")
    return table


def _replace(reg: Reg, value: int, **fields: int) -> int:
    """A register value with these fields replaced."""
    return value & ~sum(reg.fields[name][1] for name in fields) | reg.encode(**fields)


def user_sgpr_values(kd: bytes, arch: str, values: dict[str, int | bytes]) -> list[int]:
    """The user SGPR dwords, s0 up, for the kernel whose 64-byte descriptor is kd: each one the descriptor enables,
    from values by name (private_segment_buffer, dispatch_ptr, queue_ptr, kernarg_segment_ptr, dispatch_id,
    flat_scratch_init, private_segment_size; missing ones 0); then the kernarg dwords it preloads (KERNARG_PRELOAD_SPEC
    LENGTH dwords from dword OFFSET of values["kernarg_preload"], the kernarg segment's bytes); then zeros up to the
    descriptor's USER_SGPR_COUNT, which LLVM pads on gfx11 so the system SGPRs start at s16 minus their number."""
    layout, preload_at, total = _user_layout(bytes(kd), arch)
    out: list[int] = []
    for name, count in layout:
        if name == "kernarg_preload":
            raw = bytes(values.get(name, b""))[preload_at : preload_at + 4 * count].ljust(4 * count, b"\0")
            out += struct.unpack(f"<{count}I", raw)
        else:
            value = int(values.get(name, 0))
            out += [(value >> 32 * i) & 0xFFFFFFFF for i in range(count)]
    return out + [0] * (total - len(out))


@functools.lru_cache(maxsize=1024)
def _user_layout(kd: bytes, arch: str) -> tuple[tuple[tuple[str, int], ...], int, int]:
    """The descriptor's user SGPRs: (name, count) in order, the preloaded kernargs' byte offset, USER_SGPR_COUNT."""
    _, fields = kdesc.descriptor(kd, arch)
    layout = tuple((name, count) for name, _, count in kdesc.user_sgprs(fields))
    return layout, 4 * fields["KERNARG_PRELOAD_SPEC_OFFSET"], kdesc.user_sgpr_count(fields)


def kernel_registers(kd: bytes, kd_address: int, arch: str, block: tuple[int, int, int], user_data: list[int],
                     lds_bytes: int | None = None, scratch_per_lane: int | None = None) -> dict[str, int]:
    """The COMPUTE_* register values (REGS names) that dispatch the kernel whose 64-byte descriptor kd lies at GPU
    address kd_address, with workgroups of block work-items and user_data in its user SGPRs. LDS per workgroup is
    lds_bytes (default: the descriptor's group segment size), scratch per lane scratch_per_lane (default: its private
    segment size). COMPUTE_TMPRING_SIZE.WAVES (how many waves the queue's scratch holds) and the scratch base are the
    queue's to add."""
    out = dict(_kernel_registers(bytes(kd), kd_address, arch, tuple(block), len(user_data), lds_bytes,
                                 scratch_per_lane))
    for i, value in enumerate(user_data):
        if not 0 <= value <= 0xFFFFFFFF:
            raise FieldError(f"user SGPR {i}: {value:#x} is not a dword")
        out[f"COMPUTE_USER_DATA_{i}"] = value
    return out


@functools.lru_cache(maxsize=1024)
def _kernel_registers(kd: bytes, kd_address: int, arch: str, block: tuple[int, int, int], user_sgprs: int,
                      lds_bytes: int | None, scratch_per_lane: int | None) -> dict[str, int]:
    """kernel_registers but the user data: a kernel launched again (a suite's many launches) reuses them. Read
    only."""
    regs = regs_of(arch)
    desc, fields = kdesc.descriptor(kd, arch)
    code = kd_address + desc.kernel_code_entry_byte_offset
    if code % 256:
        raise LaunchError(f"kernel code at {code:#x} is not 256-byte aligned, as COMPUTE_PGM_LO/HI need")
    wave32 = fields["KERNEL_CODE_PROPERTY_ENABLE_WAVEFRONT_SIZE32"]
    if wave32 and "CS_W32_EN" not in regs["COMPUTE_DISPATCH_INITIATOR"].fields:
        raise LaunchError(f"a wave32 kernel: {arch} runs wave64 kernels only (compile it for {arch})")
    if user_sgprs and f"COMPUTE_USER_DATA_{user_sgprs - 1}" not in regs:
        last = max(i for i in range(user_sgprs) if f"COMPUTE_USER_DATA_{i}" in regs)
        raise LaunchError(f"{user_sgprs} user SGPRs: {arch} has COMPUTE_USER_DATA_0..{last} only")
    lds = desc.group_segment_fixed_size if lds_bytes is None else lds_bytes
    scratch = desc.private_segment_fixed_size if scratch_per_lane is None else scratch_per_lane
    out = {
        "COMPUTE_PGM_LO": regs["COMPUTE_PGM_LO"].encode(DATA=code >> 8 & 0xFFFFFFFF),
        "COMPUTE_PGM_HI": regs["COMPUTE_PGM_HI"].encode(DATA=code >> 40),
        "COMPUTE_PGM_RSRC1": desc.compute_pgm_rsrc1,
        "COMPUTE_PGM_RSRC2": _replace(regs["COMPUTE_PGM_RSRC2"], desc.compute_pgm_rsrc2, USER_SGPR=user_sgprs,
                                      LDS_SIZE=-(-lds // LDS_GRANULE)),
        "COMPUTE_PGM_RSRC3": desc.compute_pgm_rsrc3,
        "COMPUTE_DISPATCH_INITIATOR": regs["COMPUTE_DISPATCH_INITIATOR"].encode(
            COMPUTE_SHADER_EN=1, FORCE_START_AT_000=1, **({"CS_W32_EN": wave32} if wave32 else {})),
        "COMPUTE_TMPRING_SIZE": regs["COMPUTE_TMPRING_SIZE"].encode(
            WAVESIZE=-(-scratch * (32 if wave32 else 64) // SCRATCH_GRANULE[version(arch)[0]])),
    }
    for axis, n in zip("XYZ", block, strict=True):
        out[f"COMPUTE_NUM_THREAD_{axis}"] = regs[f"COMPUTE_NUM_THREAD_{axis}"].encode(NUM_THREAD_FULL=n)
    return out


def image(co: CodeObject) -> bytes:
    """The loaded image: every PT_LOAD segment at its virtual address."""
    loads = [s for s in co.segments if s.type == PT_LOAD]
    size = max((s.vaddr + s.memsz for s in loads), default=len(co.data))
    out = bytearray(size)
    for s in loads:
        out[s.vaddr : s.vaddr + s.filesz] = co.data[s.offset : s.offset + s.filesz]
    return bytes(out)
