"""The SMU (MP1) message mailbox, as smu_cmn.c drives it: wait for the previous message's response, clear it, write
the argument (C2PMSG_82) and the message id (C2PMSG_66), then wait for a response in C2PMSG_90 (1 is OK) and read
the answer back from C2PMSG_82. The messages and the metrics table are those of the board's SMU interface: 13.0.0's
(Navi31, and Navi48's 14.0.2 answers the same ids) or 13.0.6's (MI300X; MI350X's 13.0.12 and 13.0.14 speak it too),
whose MetricsTableX_t has per-XCC activity and clocks in Q10 fixed point."""

from __future__ import annotations

import ctypes
import time

from usergpu.autogen import smu_v13_0_0 as ppsmc
from usergpu.autogen import smu_v13_0_6 as ppsmc_6
from usergpu.errors import Error

RESULTS = {v: k.removeprefix("PPSMC_Result_") for k, v in vars(ppsmc).items() if k.startswith("PPSMC_Result_")}
MESSAGES, MESSAGES_6 = ({v: k.removeprefix("PPSMC_MSG_") for k, v in vars(m).items() if k.startswith("PPSMC_MSG_")}
                        for m in (ppsmc, ppsmc_6))
THROTTLERS = {v: k.removeprefix("THROTTLER_").removesuffix("_BIT") for k, v in vars(ppsmc).items()
              if k.startswith("THROTTLER_") and k.endswith("_BIT")}
TIMEOUT = 2.0
CDNA_SMU = {(13, 0, 6), (13, 0, 12), (13, 0, 14)}  # MP1 versions speaking smu_v13_0_6's interface


def q10(value: int) -> int:
    """A Q10 fixed-point figure rounded, as amdgpu's SMUQ10_ROUND."""
    return (value >> 10) + ((value & 0x3FF) >= 0x200)


class SMUError(Error):
    """The SMU refused a message or never answered: which message, which register, what it read."""


class SMU:
    def __init__(self, mmio, regs, timeout: float | None = None):
        self.mmio, self.timeout = mmio, TIMEOUT if timeout is None else timeout
        self.msg, self.arg, self.resp = (4 * regs.address("MP1", f"MP1_SMN_C2PMSG_{n}") for n in (66, 82, 90))
        self.cdna = regs.ip("MP1").version in CDNA_SMU
        self.ppsmc = ppsmc_6 if self.cdna else ppsmc

    def _wait(self, what: str) -> int:
        deadline = time.monotonic() + self.timeout
        while (resp := self.mmio.read32(self.resp)) == 0:
            if time.monotonic() > deadline:
                raise SMUError(f"SMU: {what}: MP1_SMN_C2PMSG_90 stayed 0 for {self.timeout} s (waiting for any "
                               "response): the SMU is not answering (firmware not running?)")
            time.sleep(0.0001)
        return resp

    def send(self, message: int, argument: int = 0) -> int:
        """Send a message; the SMU's answer (its argument register after the response)."""
        name = (MESSAGES_6 if self.cdna else MESSAGES).get(message, f"message {message:#x}")
        self._wait(f"before {name}")
        self.mmio.write32(self.resp, 0)
        self.mmio.write32(self.arg, argument)
        self.mmio.write32(self.msg, message)
        resp = self._wait(name)
        if resp != ppsmc.PPSMC_Result_OK:
            raise SMUError(f"SMU: {name} ({argument:#x}) answered {resp:#x} ({RESULTS.get(resp, 'unknown')}) in "
                           "MP1_SMN_C2PMSG_90")
        return self.mmio.read32(self.arg)

    def version(self) -> tuple[int, int, int]:
        """The SMU firmware's version, as amdgpu prints it (78.75.0 for 0x004E4B00)."""
        v = self.send(self.ppsmc.PPSMC_MSG_GetSmuVersion)
        return v >> 16, v >> 8 & 0xFF, v & 0xFF

    def metrics(self, vram, table_offset: int, mc_address: int) -> dict[str, int | float]:
        """The SMU's metrics table (SmuMetricsExternal_t), transferred to VRAM at table_offset (mc_address in the
        GPU's MC address space, which is what the SMU is told) and read back: what am_smi shows."""
        self.send(self.ppsmc.PPSMC_MSG_SetDriverDramAddrHigh, mc_address >> 32)
        self.send(self.ppsmc.PPSMC_MSG_SetDriverDramAddrLow, mc_address & 0xFFFFFFFF)
        if self.cdna:
            self.send(ppsmc_6.PPSMC_MSG_GetMetricsTable)
            return _metrics_x(vram.read(table_offset, -(-ctypes.sizeof(ppsmc_6.MetricsTableX_t) // 4) * 4))
        self.send(ppsmc.PPSMC_MSG_TransferTableSmu2Dram, ppsmc.TABLE_SMU_METRICS)
        raw = vram.read(table_offset, -(-ctypes.sizeof(ppsmc.SmuMetricsExternal_t) // 4) * 4)
        m = ppsmc.SmuMetricsExternal_t.from_buffer_copy(raw).SmuMetrics
        return {"gfx_activity": m.AverageGfxActivity, "memory_activity": m.AverageUclkActivity,
                "gfx_clock": m.CurrClock[ppsmc.PPCLK_GFXCLK], "memory_clock": m.CurrClock[ppsmc.PPCLK_UCLK],
                "fabric_clock": m.CurrClock[ppsmc.PPCLK_FCLK], "edge_temperature": m.AvgTemperature[ppsmc.TEMP_EDGE],
                "hotspot_temperature": m.AvgTemperature[ppsmc.TEMP_HOTSPOT],
                "memory_temperature": m.AvgTemperature[ppsmc.TEMP_MEM], "power": m.AverageSocketPower,
                "fan_rpm": m.AvgFanRpm, "gfx_voltage": m.AvgVoltage[ppsmc.SVI_PLANE_GFX],
                "throttling": max(m.ThrottlingPercentage), "metrics_counter": m.MetricsCounter,
                "throttle_reasons": [name for bit, name in sorted(THROTTLERS.items())
                                     if m.ThrottlingPercentage[bit]]}

    def power_limit(self) -> int:
        """The board's power limit (PPT0), watts."""
        return self.send(self.ppsmc.PPSMC_MSG_GetPptLimit)


def _metrics_x(raw: bytes) -> dict[str, int | float | list | None]:
    """The CDNA metrics (MetricsTableX_t, Q10 figures) under the keys of 13.0.0's, with the sensors these boards
    lack (edge temperature, fan, GFX voltage) None, and the per-XCC activity and clocks."""
    m = ppsmc_6.MetricsTableX_t.from_buffer_copy(raw)
    return {"gfx_activity": q10(m.SocketGfxBusy), "memory_activity": q10(m.DramBandwidthUtilization),
            "gfx_clock": max(q10(f) for f in m.GfxclkFrequency), "memory_clock": q10(m.UclkFrequency),
            "fabric_clock": q10(m.FclkFrequency), "edge_temperature": None,
            "hotspot_temperature": q10(m.MaxSocketTemperature), "memory_temperature": q10(m.MaxHbmTemperature),
            "power": q10(m.SocketPower), "fan_rpm": None, "gfx_voltage": None, "throttling": 0,
            "metrics_counter": m.AccumulationCounter, "throttle_reasons": [],
            "xcc_activity": [q10(b) for b in m.GfxBusy], "xcc_clock": [q10(f) for f in m.GfxclkFrequency]}
