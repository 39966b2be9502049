"""The mock SMU of the CDNA parts (MP1 13.0.6, smu_v13_0_6_ppt.c's interface, which MI350X's firmware speaks too):
the mailbox of smu.py with this interface's messages. GetMetricsTable writes MetricsTableX_t to the driver's table
address (SetDriverDramAddrHigh/Low): per-XCC activity and clocks, socket power, temperatures, HBM clock and
bandwidth use, in the firmware's Q10 fixed point (amdgpu's SMUQ10_ROUND reads them), between an idle and a busy
board as its engines' activity says (a dispatch runs on every XCC of the partition, so each XCC reports the board's
GFX activity). GetDpmFreqByIndex answers the DPM levels of the memory, fabric and SoC clocks (index 0xFF: their
count); the soft limits, feature enables, power limit and driver reset are taken. GfxDriverReset with argument 1 (a
mode-1 reset) resets the PSP: its sOS is gone until a driver boots it again."""

from __future__ import annotations

import ctypes

import numpy as np

from usergpu.autogen import smu_v13_0_6 as ppsmc
from usergpu.emu.amd.mock.pci.smu import MockSMU

Q10 = 1 << 10
# arch -> (SMU firmware version: 85.124.0 is past the 85.115.0 for which amdgpu loads the main SOS binaries,
# power limit W)
VERSIONS = {"gfx942": (0x00557C00, 750), "gfx950": (0x00671E00, 1000)}
# the DPM levels of the clocks the driver sets (MHz), lowest first
LEVELS = {ppsmc.PPCLK_UCLK: (900, 1300), ppsmc.PPCLK_FCLK: (1200, 2000), ppsmc.PPCLK_SOCCLK: (28, 1143)}
TABLES = {ppsmc.PPCLK_UCLK: "UclkFrequencyTable", ppsmc.PPCLK_FCLK: "FclkFrequencyTable",
          ppsmc.PPCLK_SOCCLK: "SocclkFrequencyTable"}  # where the metrics table lists each clock's levels
GFXCLK = (500, 2100)  # MHz, idle and busy
TEMPERATURES = {"MaxSocketTemperature": (40, 80), "MaxHbmTemperature": (38, 75), "MaxVrTemperature": (35, 70)}
IDLE_WATTS = 140
MODE1_RESET = 1  # GfxDriverReset's argument for a whole-GPU reset (smu_v13_0_6_mode1_reset)


class MockSMU13_0_6(MockSMU):
    ppsmc = ppsmc

    @property
    def version(self) -> int:
        return VERSIONS[self.gpu.arch][0]

    def queries(self) -> dict[int, int]:
        return {ppsmc.PPSMC_MSG_GetDriverIfVersion: ppsmc.SMU13_0_6_DRIVER_IF_VERSION,
                ppsmc.PPSMC_MSG_GetPptLimit: VERSIONS[self.gpu.arch][1], ppsmc.PPSMC_MSG_GetMetricsVersion: 0}

    def commands(self) -> dict:
        taken = (ppsmc.PPSMC_MSG_EnableAllSmuFeatures, ppsmc.PPSMC_MSG_SetSoftMinByFreq,
                 ppsmc.PPSMC_MSG_SetSoftMaxByFreq, ppsmc.PPSMC_MSG_SetPptLimit)
        return {ppsmc.PPSMC_MSG_GetMetricsTable: self._metrics, ppsmc.PPSMC_MSG_GetDpmFreqByIndex: self._level,
                ppsmc.PPSMC_MSG_GfxDriverReset: self._reset, **dict.fromkeys(taken, lambda _: True)}

    def _level(self, argument: int) -> bool:
        """(clock << 16) | index: the level's MHz in the argument register (0xFF: the count of levels)."""
        levels = LEVELS.get(argument >> 16)
        index = argument & 0xFF
        if levels is None or index != 0xFF and index >= len(levels):
            return False
        self.gpu.regs[self.argument] = len(levels) if index == 0xFF else levels[index]
        return True

    def _reset(self, argument: int) -> bool:
        if argument == MODE1_RESET and self.gpu.psp is not None:
            self.gpu.psp.power_on()
        return True

    def _metrics(self, _: int) -> bool:
        size = ctypes.sizeof(ppsmc.MetricsTableX_t)
        offset = self.table_offset(size)
        if offset is None:
            return False
        self.state[1] += 1
        gfx, memory, busy = self.busy()
        m = ppsmc.MetricsTableX_t()
        m.AccumulationCounter = int(self.state[1])
        watts = VERSIONS[self.gpu.arch][1]
        m.SocketPowerLimit = m.MaxSocketPowerLimit = watts * Q10
        m.SocketPower = int((IDLE_WATTS + (watts - IDLE_WATTS) * busy) * Q10)
        for name, (idle, hot) in TEMPERATURES.items():
            setattr(m, name, int((idle + (hot - idle) * busy) * Q10))
        m.SocketGfxBusy, m.DramBandwidthUtilization = gfx * Q10, memory * Q10
        m.UclkFrequency = LEVELS[ppsmc.PPCLK_UCLK][-1] * Q10
        m.FclkFrequency = LEVELS[ppsmc.PPCLK_FCLK][-1] * Q10
        m.MaxGfxclkFrequency, m.MinGfxclkFrequency = GFXCLK[1] * Q10, GFXCLK[0] * Q10
        for xcc in range(len(m.GfxBusy)):
            m.GfxBusy[xcc] = gfx * Q10
            m.GfxclkFrequency[xcc] = int((GFXCLK[0] + (GFXCLK[1] - GFXCLK[0]) * busy) * Q10)
        for clock, levels in LEVELS.items():
            getattr(m, TABLES[clock])[: len(levels)] = [mhz * Q10 for mhz in levels]
        self.gpu.vram[offset : offset + size] = np.frombuffer(bytes(m), np.uint8)
        return True
