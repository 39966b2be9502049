"""Registers by name on a discovered GPU: each IP block's register map (the generated tables of its version) and
its segment bases from IP discovery give a register's dword address (amdgpu's SOC15_REG_OFFSET)."""

from __future__ import annotations

from usergpu.autogen import _ipmaps
from usergpu.drivers.amd.am.discovery import IPBlock
from usergpu.errors import Error


class UnsupportedGPU(Error):
    """A GPU with an IP block version AM has no register map or driver for."""


class RegisterMap:
    """name -> dword address for the blocks of one GPU."""

    def __init__(self, blocks: dict[str, list[IPBlock]]):
        self.blocks = blocks

    def ip(self, block: str) -> IPBlock:
        if block not in self.blocks:
            raise UnsupportedGPU(f"the GPU's IP discovery table has no {block} block")
        return self.blocks[block][0]

    def address(self, block: str, name: str) -> int:
        ip = self.ip(block)
        address = _ipmaps.address(block, ip.version, ip.bases, name)
        if address is None:
            raise UnsupportedGPU(f"{block} {'.'.join(map(str, ip.version))}: AM has no register map for it (it "
                                 f"knows {', '.join(f'{b} {v}' for b, v in _ipmaps.MAPS)})")
        return address
