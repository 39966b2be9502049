"""What a mock PCIe function answers, however the requests reach it (a USB bridge's TLPs, or the native MMIO
views of a mock sysfs function): dword config and memory requests, completions with the PCIe status codes."""

from __future__ import annotations

from typing import Protocol

# Completion status (PCIe base spec, the Cpl header's 3-bit field)
SC, UR, CRS, CA = 0, 1, 2, 4


class CompletionError(Exception):
    """A non-successful completion: status is UR, CRS or CA."""

    def __init__(self, status: int, what: str = ""):
        super().__init__(what or f"completion status {status}")
        self.status = status


class Unplugged(Exception):
    """The function is gone (power cut, cable pulled): nothing answers any more."""


class Target(Protocol):
    """A PCIe endpoint. Offsets and addresses are dword-aligned; byte_enable selects bytes of the dword."""

    def config_read(self, bus: int, devfn: int, offset: int) -> int: ...

    def config_write(self, bus: int, devfn: int, offset: int, value: int, byte_enable: int = 0xF) -> None: ...

    def mem_read(self, address: int) -> int: ...

    def mem_write(self, address: int, value: int, byte_enable: int = 0xF) -> None: ...
