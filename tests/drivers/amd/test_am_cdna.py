"""AM on the mock MI300X and MI350X boards, as far as it drives them so far: discovery (gc_info v2.1), the SMU's
13.0.6 interface (version, per-XCC metrics), the PSP's bootloader (the SOS file's main or aux binaries, as the SMU
firmware's version in MP1_PUB_SCRATCH0 says, read past BAR5 through NBIO's index/data pair), the sOS's ring, the
TMR and GC 9.4.3's firmware set; the hubs, the IH, the MEC and SDMA 4.4's rings. (The runtime through it: the CDNA
corpus in tests/runtime/test_runtime.py.)"""

from __future__ import annotations

import time

import pytest

from usergpu.autogen import amdgpu_ucode as uc
from usergpu.autogen import psp_gfx_if as gfx
from usergpu.drivers.amd.am.device import AMDevice
from usergpu.drivers.amd.am.firmware import load, sos_binaries
from usergpu.drivers.amd.am.ip import Registers
from usergpu.drivers.amd.am.nbio import smn_read
from usergpu.drivers.amd.am.psp import PSP
from usergpu.drivers.pci import pci_devices
from usergpu.emu.amd.mock.pci import smu_v13_0_6
from usergpu.emu.amd.mock.pci.board import MockPCIGPU
from usergpu.emu.amd.mock.pci.function import install_pci
from usergpu.emu.mock.hal import MockHAL
from usergpu.isa.amd.hw import psp as _psp

PARTS = {"gfx942": ((9, 4, 3), (85, 124, 0), "psp_13_0_6_sos"), "gfx950": ((9, 5, 0), (103, 30, 0), "psp_13_0_14_sos")}
# GC 9.4.3's set in amdgpu's order: the P2S table first, one SDMA image per engine of an IO die, the MEC and its
# jump table, the RLC's restore lists and the RLC; the SOS file's register list last
FIRMWARE = [gfx.GFX_FW_TYPE_P2S_TABLE, gfx.GFX_FW_TYPE_SDMA0, gfx.GFX_FW_TYPE_SDMA1, gfx.GFX_FW_TYPE_SDMA2,
            gfx.GFX_FW_TYPE_SDMA3, gfx.GFX_FW_TYPE_CP_MEC, gfx.GFX_FW_TYPE_CP_MEC_ME1,
            gfx.GFX_FW_TYPE_RLC_RESTORE_LIST_SRM_CNTL, gfx.GFX_FW_TYPE_RLC_RESTORE_LIST_GPM_MEM,
            gfx.GFX_FW_TYPE_RLC_RESTORE_LIST_SRM_MEM, gfx.GFX_FW_TYPE_RLC_G, gfx.GFX_FW_TYPE_REG_LIST]


def board(tmp_path, arch):
    hal = MockHAL(tmp_path)
    (tmp_path / "tmp").mkdir(parents=True, exist_ok=True)
    mock = MockPCIGPU(arch)
    install_pci(hal, mock, "0000:03:00.0")
    return hal, mock, AMDevice(pci_devices(hal, 0x1002)[0], hal, reset=False)


@pytest.mark.parametrize("arch", PARTS)
def test_boot_brings_the_psp_firmware_and_engines_up(arch, tmp_path):
    hal, mock, dev = board(tmp_path, arch)
    gc, smu, _ = PARTS[arch]
    assert dev.gc_version == gc and dev.smu_version == smu and dev.family == f"gfx{gc[0]}{gc[1]}"
    assert dev.gc_info["se"] == 4 and dev.gc_info["cu_per_sh"] in (9, 10)  # gc_info v2.1, one XCC's
    dev.boot()
    assert mock.psp.loaded[-1] == _psp.LOAD_SOSDRV and mock.psp.loaded_fw == FIRMWARE
    assert mock.psp.sos.images[gfx.GFX_FW_TYPE_CP_MEC_ME1] == load(f"gc_{'_'.join(map(str, gc))}_mec").data[
        256 + 66832 * 4: 256 + 66832 * 4 + 288 * 4]  # jt_offset and jt_size (dwords) of the file's v1 header
    assert mock.cp.mec_running()  # CP_MEC_CNTL's halts released, the MEC's firmware in
    ring = dev.allocator.alloc(4096)
    doorbell = dev.sdma.create_queue(dev.fb_base + ring, 4096, dev.fb_base + ring + 2048, dev.fb_base + ring + 2056)
    assert ("SDMA", 0, 0) in mock.cp.queues and mock.cp.queues["SDMA", 0, 0][0] == 2 * doorbell  # SDMA0's GFX ring
    dev.close()
    assert ("SDMA", 0, 0) not in mock.cp.queues


def test_the_smu_firmware_version_picks_the_sos_binaries(tmp_path, monkeypatch):
    """amdgpu loads MI300X's aux SOS binaries under SMU firmware older than 85.115.0 (MP1_PUB_SCRATCH0, an SMN
    address past BAR5): the bootloader is handed the aux set's system driver."""
    hal, mock, dev = board(tmp_path, "gfx942")
    regs = Registers(dev.mmio, dev.regs)
    assert smn_read(regs, _psp.MP1_PUB_SCRATCH0) == 0x00557C00
    psp = PSP(dev.mmio, dev.vram, dev.regs, dev.vram_size - (16 << 20), dev.fb_base)
    assert not psp.aux_sos()
    monkeypatch.setitem(smu_v13_0_6.VERSIONS, "gfx942", (0x00557000, 750))  # 85.112.0
    assert psp.aux_sos()
    staged = []
    monkeypatch.setattr(PSP, "_load", lambda self, data, command, step: staged.append((command, data)))
    monkeypatch.setattr(PSP, "sos_alive", lambda self: bool(staged))
    psp.boot(load("psp_13_0_6_sos"))
    aux = sos_binaries(load("psp_13_0_6_sos"), aux=True)
    assert dict(staged)[_psp.LOAD_SYSDRV] == aux[uc.PSP_FW_TYPE_PSP_SYS_DRV]
    dev.close()


def test_metrics_report_each_xcc(tmp_path):
    hal, mock, dev = board(tmp_path, "gfx942")
    idle = dev.metrics()
    assert idle["xcc_activity"] == [0] * 8 and idle["edge_temperature"] is None and idle["power"] == 140
    now = time.monotonic_ns()
    mock.activity.begin("gfx", now - 500_000_000)  # a dispatch on every XCC for half of the last second
    mock.activity.end("gfx", now)
    busy = dev.metrics()
    assert all(49 <= a <= 50 for a in busy["xcc_activity"]) and 49 <= busy["gfx_activity"] <= 50
    assert busy["gfx_clock"] > idle["gfx_clock"] and busy["power"] > idle["power"]
    assert busy["metrics_counter"] == idle["metrics_counter"] + 1
    assert dev.smu.power_limit() == 750
    dev.close()
