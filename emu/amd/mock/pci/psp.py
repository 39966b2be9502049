"""The mock PSP (MP0) bootloader: C2PMSG_35 reads 0x80000000 while it waits for a command; a command takes the part
staged at C2PMSG_36 << 20 (an MC address in VRAM's FB aperture, as psp_v13_0.c gives it) and answers ready again, or
ready with an error code in bits 7:0 (a part out of order: anything after the sOS, the sOS before the system driver;
an unknown command; nothing staged). Loading the sOS lights its sign of life (C2PMSG_81) and version (C2PMSG_58). The
parts are not authenticated: the real PSP checks their signatures, the mock only that something was staged.
MOCKPCI_FAULT=psp-never-ready: C2PMSG_35 stays 0. The sOS's ring and commands: psp_ring.py."""

from __future__ import annotations

import os

from usergpu.emu.amd.mock.pci.psp_ring import MockSOS
from usergpu.isa.amd.hw import psp as _psp

COMMANDS = {command for _, command in _psp.ORDER}
ERROR_ORDER, ERROR_COMMAND, ERROR_EMPTY = 0x01, 0x02, 0x03
# the sOS's version (its binary's in the SOS file: psp_13_0_0_sos.bin, psp_13_0_6_sos.bin, psp_13_0_14_sos.bin)
SOS_VERSION = {"gfx1100": 0x00310025, "gfx1200": 0x003A0017, "gfx942": 0x00360260, "gfx950": 0x00360822}


class MockPSP:
    def __init__(self, gpu, c35: int, c36: int, c58: int, c81: int, never_ready: bool = False):
        self.gpu, self.c36, self.c58, self.c81, self.c35 = gpu, c36, c58, c81, c35
        self.loaded: list[int] = []
        self.never_ready = never_ready
        if not never_ready:
            gpu.on_write[c35] = self.command
        self.sos = MockSOS(gpu, hang="psp-ring-hang" in os.environ.get("MOCKPCI_FAULT", "").split(","))

    def power_on(self) -> None:
        """Reset: the bootloader waits for its first part, no sOS runs."""
        self.loaded.clear()
        self.gpu.regs[self.c81] = self.gpu.regs[self.c58] = 0
        self.gpu.regs[self.c35] = 0 if self.never_ready else _psp.MBOX_READY
        self.sos.power_on()

    @property
    def loaded_fw(self) -> list[int]:
        """The GFX_FW_TYPE_* LOAD_IP_FW took, in order."""
        return self.sos.loaded_fw

    def has_firmware(self, fw_type: int) -> bool:
        """Whether the sOS holds this GFX_FW_TYPE_* (what the mock CP and SDMA need to run queues)."""
        return self.sos.has_firmware(fw_type)

    def command(self, value: int) -> None:
        regs = self.gpu.regs
        try:
            staged = self.gpu.mc_to_vram(int(regs[self.c36]) << 20, 4096)
        except ValueError:
            staged = None
        error = 0
        if value not in COMMANDS:
            error = ERROR_COMMAND
        elif _psp.LOAD_SOSDRV in self.loaded or (value == _psp.LOAD_SOSDRV and _psp.LOAD_SYSDRV not in self.loaded):
            error = ERROR_ORDER
        elif staged is None or not self.gpu.vram[staged : staged + 4096].any():
            error = ERROR_EMPTY
        else:
            self.loaded.append(value)
            if value == _psp.LOAD_SOSDRV:
                regs[self.c81] = 1
                regs[self.c58] = SOS_VERSION[self.gpu.arch]
                self.sos.start()
        regs[self.c35] = _psp.MBOX_READY | error
