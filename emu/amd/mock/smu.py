"""The mock SMU (MP1) mailbox: a message id written to C2PMSG_66 runs at once; the response goes to C2PMSG_90 (1 OK,
0xFE an unknown message) and the answer to C2PMSG_82. It answers the queries a driver makes at bring-up with the
firmware it stands for (smu_13_0_0.bin's version). MOCKPCI_FAULT=smu-silent: it never answers."""

from __future__ import annotations

from usergpu.autogen import smu_v13_0_0 as ppsmc

# arch -> (SMU firmware version, driver interface version)
VERSIONS = {"gfx1100": (0x004E4B00, ppsmc.SMU13_0_0_DRIVER_IF_VERSION), "gfx1200": (0x00683B00, 0x2E)}


class MockSMU:
    def __init__(self, gpu, message: int, argument: int, response: int, silent: bool = False):
        self.gpu, self.silent = gpu, silent
        self.argument, self.response = argument, response
        smu, driver_if = VERSIONS[gpu.arch]
        self.answers = {ppsmc.PPSMC_MSG_GetSmuVersion: smu, ppsmc.PPSMC_MSG_GetDriverIfVersion: driver_if,
                        ppsmc.PPSMC_MSG_TestMessage: None}
        gpu.regs[response] = ppsmc.PPSMC_Result_OK  # ready: the last (boot-time) message done
        gpu.on_write[message] = self.message

    def message(self, value: int) -> None:
        if self.silent:
            return
        regs = self.gpu.regs
        if value not in self.answers:
            regs[self.response] = ppsmc.PPSMC_Result_UnknownCmd
            return
        answer = self.answers[value]
        regs[self.argument] = regs.get(self.argument, 0) + 1 if answer is None else answer
        regs[self.response] = ppsmc.PPSMC_Result_OK
