"""The PSP (MP0) bootloader, as psp_v13_0.c drives it: each part of the SOS firmware file is copied to a 1 MiB-
aligned buffer, its address (>> 20) written to C2PMSG_36 and the bootloader's command to C2PMSG_35, which reads
0x80000000 again when the bootloader is ready for the next (bits 7:0: an error). After the sOS, its sign of life
appears in C2PMSG_81 and its version in C2PMSG_58. A board whose sOS is alive already is left as it is."""

from __future__ import annotations

import time

from usergpu.autogen import _psp
from usergpu.autogen import amdgpu_ucode as uc
from usergpu.drivers.amd.am.firmware import Firmware, sos_binaries
from usergpu.drivers.amd.am.ip import UnsupportedGPU
from usergpu.errors import Error

TIMEOUT = 2.0
PARTS = {v: k.removeprefix("PSP_FW_TYPE_PSP_") for k, v in vars(uc).items() if k.startswith("PSP_FW_TYPE_PSP_")}


class PSPError(Error):
    """The PSP bootloader refused a part or never became ready: which step, which register, what it read."""


class PSP:
    def __init__(self, mmio, vram, regs, staging: int):
        """staging: the VRAM offset (1 MiB-aligned) parts are copied to."""
        if staging % (1 << 20):
            raise PSPError(f"PSP staging buffer at {staging:#x} is not 1 MiB-aligned")
        version = regs.ip("MP0").version
        if version[0] != 13:
            raise UnsupportedGPU(f"MP0 {'.'.join(map(str, version))}: AM drives the PSP 13.x bootloader (Navi31) so "
                                 "far")
        self.mmio, self.vram, self.staging = mmio, vram, staging
        self.reg = {n: 4 * regs.address("MP0", f"MP0_SMN_C2PMSG_{n}") for n in (35, 36, 58, 81)}

    def sos_alive(self) -> bool:
        return self.mmio.read32(self.reg[81]) != 0

    def boot(self, sos: Firmware) -> int:
        """Load the SOS file's parts in order, then the sOS; its version (also when it was up already)."""
        if not self.sos_alive():
            parts = sos_binaries(sos)
            for kind, command in _psp.ORDER:
                if kind in parts:
                    self._load(parts[kind], command, f"loading {PARTS[kind]} ({len(parts[kind])} bytes)")
            deadline = time.monotonic() + TIMEOUT
            while not self.sos_alive():
                if time.monotonic() > deadline:
                    raise PSPError(f"PSP: no sOS sign of life: MP0_SMN_C2PMSG_81 stayed 0 for {TIMEOUT} s after "
                                   "the SOS was loaded")
                time.sleep(0.0005)
        return self.mmio.read32(self.reg[58])

    def _ready(self, step: str) -> None:
        deadline = time.monotonic() + TIMEOUT
        while (value := self.mmio.read32(self.reg[35])) != _psp.MBOX_READY:
            if value & 0xFF and value & _psp.MBOX_READY:
                raise PSPError(f"PSP bootloader, {step}: error {value & 0xFF:#04x} in MP0_SMN_C2PMSG_35 "
                               f"({value:#010x})")
            if time.monotonic() > deadline:
                raise PSPError(f"PSP bootloader, {step}: MP0_SMN_C2PMSG_35 reads {value:#010x} after {TIMEOUT} s, "
                               f"waiting for {_psp.MBOX_READY:#010x} (ready)")
            time.sleep(0.0005)

    def _load(self, data: bytes, command: int, step: str) -> None:
        self._ready(f"before {step}")
        self.vram.write(self.staging, data + bytes(-len(data) % 4))
        self.mmio.write32(self.reg[36], self.staging >> 20)
        self.mmio.write32(self.reg[35], command)
        self._ready(step)
