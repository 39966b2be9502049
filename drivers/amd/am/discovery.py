"""IP discovery: the table at the top of VRAM that says which IP blocks a GPU has, their versions and where their
registers are, read as amdgpu_discovery.c reads it — located from NBIO's RCC_CONFIG_MEMSIZE (VRAM in MiB, the
table DISCOVERY_TMR_OFFSET below its top), checked (signatures, byte-sum checksums) and turned into one entry per
IP block instance."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

from usergpu.autogen import amd_discovery as dt
from usergpu.drivers.pci import Registers
from usergpu.errors import Error

RCC_CONFIG_MEMSIZE = 0xDE3  # NBIO dword (amdgpu_discovery.c's mmRCC_CONFIG_MEMSIZE)
HWIDS: dict[int, str] = {}  # soc15_hw_ip.h: id -> name (the first of its names: UVD before VCN)
for _name, _value in vars(dt).items():
    if _name.endswith("_HWID") and isinstance(_value, int):
        HWIDS.setdefault(_value, _name.removesuffix("_HWID"))


class DiscoveryError(Error):
    """A discovery table that is missing or damaged: what was read where, against what was expected."""


@dataclass(frozen=True)
class IPBlock:
    name: str  # soc15_hw_ip.h's, without _HWID (HW<id> for an id it does not name)
    hw_id: int
    instance: int
    version: tuple[int, int, int]  # major, minor, revision
    bases: tuple[int, ...]  # register segment bases, dwords


def _binary(mmio: Registers, vram: Registers) -> tuple[bytes, int]:
    """The discovery binary and its VRAM address."""
    mib = mmio.read32(RCC_CONFIG_MEMSIZE * 4)
    if mib in (0, 0xFFFFFFFF):
        raise DiscoveryError(f"NBIO RCC_CONFIG_MEMSIZE (dword {RCC_CONFIG_MEMSIZE:#x}) reads {mib:#x}: the GPU does "
                             "not say its VRAM size, so the discovery table cannot be found (not posted, or gone)")
    at = (mib << 20) - dt.DISCOVERY_TMR_OFFSET
    return vram.read(at, dt.DISCOVERY_TMR_SIZE), at


def read(mmio: Registers, vram: Registers) -> dict[str, list[IPBlock]]:
    """The GPU's IP blocks from its discovery table (BAR5 registers, BAR0 VRAM)."""
    return parse(*_binary(mmio, vram))


def read_gc_info(mmio: Registers, vram: Registers) -> dict[str, int]:
    """The GC table as amdgpu_discovery_get_gfx_info reads it (gc_info v1.x, RDNA's; v2.x, CDNA's, per XCC):
    gc_num_se, gc_num_sa_per_se (v2: gc_num_sh_per_se), ... without their gc_num_/gc_ prefix."""
    blob, where = _binary(mmio, vram)
    info = dt.struct_binary_header.from_buffer_copy(blob).table_list[dt.GC]
    head = _struct(dt.struct_gpu_info_header, blob, info.offset, "GC table header")
    known = [k for k in (f"struct_gc_info_v{head.version_major}_{m}" for m in range(head.version_minor, -1, -1))
             if hasattr(dt, k)]
    if not info.offset or head.table_id != dt.GC_TABLE_ID or not known:
        raise DiscoveryError(f"discovery GC table at byte {info.offset}: id {head.table_id:#x} version "
                             f"{head.version_major}.{head.version_minor}, expected {dt.GC_TABLE_ID:#x} version 1.x "
                             "or 2.x")
    _checksum(blob, info.offset, info.size, info.checksum, "GC table", where)
    gc = _struct(getattr(dt, known[0]), blob, info.offset, "GC table")
    return {name.removeprefix("gc_").removeprefix("num_"): getattr(gc, name) for name, _ in gc._fields_
            if name != "header"}


def _struct(cls, blob: bytes, offset: int, what: str):
    if offset + ctypes.sizeof(cls) > len(blob):
        raise DiscoveryError(f"discovery {what} at byte {offset} runs past the {len(blob)}-byte table")
    return cls.from_buffer_copy(blob, offset)


def _checksum(blob: bytes, offset: int, size: int, expected: int, what: str, where: int) -> None:
    got = sum(blob[offset : offset + size]) & 0xFFFF
    if got != expected:
        raise DiscoveryError(f"discovery {what} checksum (VRAM {where + offset:#x}, {size} bytes): expected "
                             f"{expected:#06x}, found {got:#06x}")


def parse(blob: bytes, where: int = 0) -> dict[str, list[IPBlock]]:
    """The IP blocks of a discovery binary (where: its VRAM address, for messages)."""
    head = _struct(dt.struct_binary_header, blob, 0, "binary header")
    if head.binary_signature != dt.BINARY_SIGNATURE:
        raise DiscoveryError(f"no IP discovery table at VRAM {where:#x}: signature {head.binary_signature:#010x}, "
                             f"expected {dt.BINARY_SIGNATURE:#010x}")
    after = dt.struct_binary_header.binary_checksum.offset + 2
    _checksum(blob, after, head.binary_size - after, head.binary_checksum, "binary", where)
    info = head.table_list[dt.IP_DISCOVERY]
    ihdr = _struct(dt.struct_ip_discovery_header, blob, info.offset, "IP discovery header")
    if ihdr.signature != dt.DISCOVERY_TABLE_SIGNATURE:
        raise DiscoveryError(f"IP discovery table signature {ihdr.signature:#010x} at byte {info.offset}, expected "
                             f"{dt.DISCOVERY_TABLE_SIGNATURE:#010x}")
    _checksum(blob, info.offset, ihdr.size, info.checksum, "IP table", where)
    blocks: dict[str, list[IPBlock]] = {}
    for d in range(ihdr.num_dies):
        die = _struct(dt.struct_die_header, blob, ihdr.die_info[d].die_offset, "die header")
        offset = ihdr.die_info[d].die_offset + ctypes.sizeof(dt.struct_die_header)
        for _ in range(die.num_ips):
            ip = _struct(dt.struct_ip_v3, blob, offset, "IP entry")
            offset += ctypes.sizeof(dt.struct_ip_v3)
            width = 8 if ihdr.version >= 4 and ihdr.base_addr_64_bit else 4
            raw = blob[offset : offset + width * ip.num_base_address]
            offset += width * ip.num_base_address
            bases = tuple(int.from_bytes(raw[i : i + width], "little") & 0x3FFFFFFF for i in range(0, len(raw), width))
            name = HWIDS.get(ip.hw_id, f"HW{ip.hw_id}")
            blocks.setdefault(name, []).append(IPBlock(name, ip.hw_id, ip.instance_number,
                                                       (ip.major, ip.minor, ip.revision), bases))
    return blocks
