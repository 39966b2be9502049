"""Registers by name on a discovered GPU: each IP block's register map (the generated tables of its version) and
its segment bases from IP discovery give a register's dword address (amdgpu's SOC15_REG_OFFSET)."""

from __future__ import annotations

import time
from typing import Protocol

from usergpu.drivers.amd.am.discovery import IPBlock
from usergpu.errors import Error
from usergpu.isa.amd.hw import ipmaps as _ipmaps


class BlockDriver(Protocol):
    """What each of AM's IP block drivers does, as amdgpu's ip_block funcs: `init` brings its hardware up
    (hw_init), `fini` takes it down again (hw_fini) when the driver lets the GPU go."""

    def init(self) -> None: ...

    def fini(self) -> None: ...


class UnsupportedGPU(Error):
    """A GPU with an IP block version AM has no register map or driver for."""


class RegisterMap:
    """name -> dword address for the blocks of one GPU."""

    def __init__(self, blocks: dict[str, list[IPBlock]]):
        self.blocks = blocks

    def ip(self, block: str, instance: int = 0) -> IPBlock:
        found = [ip for ip in self.blocks.get(block, ()) if ip.instance == instance]
        if not found:
            raise UnsupportedGPU(f"the GPU's IP discovery table has no {block} block" +
                                 (f" instance {instance}" if instance else ""))
        return found[0]

    def address(self, block: str, name: str, instance: int = 0) -> int:
        ip = self.ip(block, instance)
        address = _ipmaps.address(block, ip.version, ip.bases, name)
        if address is None:
            raise UnsupportedGPU(f"{block} {'.'.join(map(str, ip.version))}: AM has no register map for it (it "
                                 f"knows {_ipmaps.known()})")
        return address


TIMEOUT = 2.0  # seconds a bring-up step waits for a register


class Timeout(Error):
    """A register never reached the value a bring-up step waits for: the block, the step, the register, the value
    awaited and the value it read."""


class Registers:
    """The GPU's registers by (block, name) through BAR5, with the generated field encoders."""

    def __init__(self, mmio, regmap: RegisterMap):
        self.mmio, self.map = mmio, regmap

    def table(self, block: str, name: str):
        return _ipmaps.table(block, self.map.ip(block).version, name)

    def read(self, block: str, name: str, instance: int = 0) -> int:
        return self.mmio.read32(4 * self.map.address(block, name, instance))

    def write(self, block: str, name: str, value: int = 0, instance: int = 0, **fields: int) -> None:
        """value, or the fields given (the rest zero), to the register of that instance of the block."""
        self.mmio.write32(4 * self.map.address(block, name, instance),
                          value | (self.table(block, name).encode(**fields) if fields else 0))

    def wait(self, block: str, name: str, mask: int, value: int, step: str) -> int:
        """Poll until (register & mask) == value; Timeout naming the step, register and values otherwise."""
        deadline = time.monotonic() + TIMEOUT
        while (got := self.read(block, name)) & mask != value:
            if time.monotonic() > deadline:
                raise Timeout(f"{block}: {step}: {name} reads {got:#010x} after {TIMEOUT} s, waiting for "
                              f"{value:#x} under mask {mask:#x}")
            time.sleep(0.0001)
        return got
