"""The mock SMU (MP1) mailbox: a message id written to C2PMSG_66 runs at once; the response goes to C2PMSG_90 (1 OK,
0xFE an unknown message) and the answer to C2PMSG_82. It answers the queries a driver makes at bring-up with the
firmware it stands for (smu_13_0_0.bin's version), and transfers its metrics table (SmuMetricsExternal_t) to
the driver's buffer: clocks, temperatures, power and fan between an idle and a busy board, as the board's engines'
activity over the last second says (activity.py: what the mock is actually executing).
MOCKPCI_FAULT=smu-silent: it never answers. MockSMU is Navi31's and Navi48's SMU; smu_v13_0_6.py has the CDNA
parts' (the same mailbox, other messages and tables)."""

from __future__ import annotations

import ctypes

import numpy as np

from usergpu.autogen import smu_v13_0_0 as ppsmc

# the metrics of an idle board and one fully busy (clocks MHz, temperatures C, power W), between which activity moves
CLOCKS = {ppsmc.PPCLK_GFXCLK: (100, 2500), ppsmc.PPCLK_UCLK: (96, 1250), ppsmc.PPCLK_FCLK: (400, 1900)}
TEMPERATURES = {ppsmc.TEMP_EDGE: (35, 70), ppsmc.TEMP_HOTSPOT: (38, 90), ppsmc.TEMP_MEM: (40, 80)}
IDLE_WATTS, TBP_WATTS = 12, 355
THROTTLE_ABOVE = 90  # GFX activity (%) beyond which the board runs into its power limit
# arch -> (SMU firmware version, driver interface version)
VERSIONS = {"gfx1100": (0x004E4B00, ppsmc.SMU13_0_0_DRIVER_IF_VERSION), "gfx1200": (0x00683B00, 0x2E)}


class MockSMU:
    ppsmc = ppsmc  # the interface's message ids and result codes

    def __init__(self, gpu, message: int, argument: int, response: int, silent: bool = False):
        self.gpu, self.silent = gpu, silent
        self.argument, self.response = argument, response
        self.state = gpu.firmware[:2]  # what the firmware keeps: the driver's table address, the metrics counter
        p = self.ppsmc
        self.answers = {p.PPSMC_MSG_GetSmuVersion: self.version, p.PPSMC_MSG_TestMessage: None,
                        **self.queries()}  # message -> its answer (None: the argument plus one)
        self.handlers = {p.PPSMC_MSG_SetDriverDramAddrHigh: self._address_high,
                         p.PPSMC_MSG_SetDriverDramAddrLow: self._address_low,
                         **self.commands()}  # message -> its action on the argument (False: failed)
        gpu.on_write[message] = self.message

    @property
    def version(self) -> int:
        return VERSIONS[self.gpu.arch][0]

    def queries(self) -> dict[int, int]:
        return {ppsmc.PPSMC_MSG_GetDriverIfVersion: VERSIONS[self.gpu.arch][1], ppsmc.PPSMC_MSG_GetPptLimit: TBP_WATTS}

    def commands(self) -> dict:
        return {ppsmc.PPSMC_MSG_TransferTableSmu2Dram: self._transfer}

    def power_on(self) -> None:
        self.gpu.regs[self.response] = self.ppsmc.PPSMC_Result_OK  # ready: the last (boot-time) message done

    def message(self, value: int) -> None:
        if self.silent:
            return
        regs, p = self.gpu.regs, self.ppsmc
        if value in self.handlers:
            ok = self.handlers[value](int(regs[self.argument]))
            regs[self.response] = p.PPSMC_Result_OK if ok else p.PPSMC_Result_Failed
            return
        if value not in self.answers:
            regs[self.response] = p.PPSMC_Result_UnknownCmd
            return
        answer = self.answers[value]
        regs[self.argument] = int(regs[self.argument]) + 1 if answer is None else answer
        regs[self.response] = p.PPSMC_Result_OK

    def _address_high(self, value: int) -> bool:
        self.state[0] = value << 32 | int(self.state[0]) & 0xFFFFFFFF
        return True

    def _address_low(self, value: int) -> bool:
        self.state[0] = int(self.state[0]) & ~0xFFFFFFFF | value
        return True

    def table_offset(self, size: int) -> int | None:
        """Where in VRAM the driver's table address (an MC address in the FB aperture) is; None outside VRAM."""
        try:
            return self.gpu.mc_to_vram(int(self.state[0]), size)
        except ValueError:
            return None

    def busy(self) -> tuple[int, int, float]:
        """The board's GFX and memory activity (%), and the busier of them as a fraction."""
        gfx, memory = self.gpu.activity.percent("gfx"), self.gpu.activity.percent("memory")
        return gfx, memory, max(gfx, memory) / 100

    def _transfer(self, table: int) -> bool:
        """The metrics table into VRAM at the driver's address."""
        size = ctypes.sizeof(ppsmc.SmuMetricsExternal_t)
        offset = self.table_offset(size)
        if offset is None or table != ppsmc.TABLE_SMU_METRICS:
            return False
        self.state[1] += 1
        ext = ppsmc.SmuMetricsExternal_t()
        m = ext.SmuMetrics
        gfx, memory, busy = self.busy()
        m.MetricsCounter, m.AverageGfxActivity, m.AverageUclkActivity = int(self.state[1]), gfx, memory
        for clock, (idle, peak) in CLOCKS.items():
            m.CurrClock[clock] = int(idle + (peak - idle) * busy)
        for sensor, (idle, peak) in TEMPERATURES.items():
            m.AvgTemperature[sensor] = int(idle + (peak - idle) * busy)
        m.AverageSocketPower = int(IDLE_WATTS + (TBP_WATTS - IDLE_WATTS) * busy)
        m.ThrottlingPercentage[ppsmc.THROTTLER_PPT0_BIT] = max(0, gfx - THROTTLE_ABOVE)  # at the power limit
        m.AvgFanRpm = int(600 + 1400 * busy)
        m.AvgVoltage[ppsmc.SVI_PLANE_GFX] = int(700 + 400 * busy)  # mV
        self.gpu.vram[offset : offset + size] = np.frombuffer(bytes(ext), np.uint8)
        return True
