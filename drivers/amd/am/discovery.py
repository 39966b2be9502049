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


def read(mmio: Registers, vram: Registers) -> dict[str, list[IPBlock]]:
    """The GPU's IP blocks from its discovery table (BAR5 registers, BAR0 VRAM)."""
    mib = mmio.read32(RCC_CONFIG_MEMSIZE * 4)
    if mib in (0, 0xFFFFFFFF):
        raise DiscoveryError(f"NBIO RCC_CONFIG_MEMSIZE (dword {RCC_CONFIG_MEMSIZE:#x}) reads {mib:#x}: the GPU does "
                             "not say its VRAM size, so the discovery table cannot be found (not posted, or gone)")
    at = (mib << 20) - dt.DISCOVERY_TMR_OFFSET
    return parse(vram.read(at, dt.DISCOVERY_TMR_SIZE), at)


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
