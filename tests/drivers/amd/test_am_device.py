"""AM's bring-up so far, on the mock PCI GPU (gfx1100, gfx1200): lock, discovery, VF check, partial-boot marker,
SMU mailbox; and the failures a person must be told about clearly."""

from __future__ import annotations

import time

import pytest

from usergpu.drivers.amd.am import psp as psp_mod
from usergpu.drivers.amd.am import smu as smu_mod
from usergpu.drivers.amd.am.device import AM_MARKER, AMDevice, VirtualFunction
from usergpu.drivers.amd.am.firmware import load, sos_binaries
from usergpu.drivers.amd.am.lock import DeviceBusy
from usergpu.drivers.pci import pci_devices
from usergpu.emu.amd.mock.pci.board import MockPCIGPU
from usergpu.emu.amd.mock.pci.function import install_pci
from usergpu.emu.mock.hal import MockHAL
from usergpu.isa.amd.hw import psp as _psp

VERSIONS = {"gfx1100": ((11, 0, 0), (78, 75, 0)), "gfx1200": ((12, 0, 0), (104, 59, 0))}  # smu_13_0_0.bin: 78.75.0


def board(tmp_path, arch):
    hal = MockHAL(tmp_path)
    (tmp_path / "tmp").mkdir(parents=True, exist_ok=True)
    mock = MockPCIGPU(arch)
    install_pci(hal, mock, "0000:03:00.0")
    return hal, mock, pci_devices(hal, 0x1002)[0]


@pytest.mark.parametrize("arch", VERSIONS)
def test_open_finds_the_blocks_and_the_smu(arch, tmp_path):
    hal, mock, pci = board(tmp_path, arch)
    dev = AMDevice(pci, hal, reset=False)
    gc, smu = VERSIONS[arch]
    assert dev.gc_version == gc and dev.smu_version == smu and not dev.partial
    with pytest.raises(DeviceBusy, match="0000:03:00.0 is driven by process"):
        AMDevice(pci, hal)
    dev.close()
    mock.regs[mock.address("GC", "SCRATCH_REG7")] = AM_MARKER  # as AM leaves a board it brought up
    again = AMDevice(pci, hal, reset=False)
    assert again.partial
    again.close()
    assert not AMDevice(pci, hal, reset=True).partial  # AM_RESET: a full bring-up whatever the marker says


def test_refusals(tmp_path, monkeypatch):
    hal, mock, pci = board(tmp_path, "gfx1100")
    iov = mock.address("NBIF", "RCC_DEV0_EPF0_RCC_IOV_FUNC_IDENTIFIER")
    mock.regs[iov] = 1
    with pytest.raises(VirtualFunction, match="virtual function"):
        AMDevice(pci, hal)
    mock.regs[iov] = 0
    monkeypatch.setenv("MOCKPCI_FAULT", "smu-silent")
    hal, mock, pci = board(tmp_path / "silent", "gfx1100")
    monkeypatch.setattr(smu_mod, "TIMEOUT", 0.05)
    with pytest.raises(smu_mod.SMUError, match="GetSmuVersion: MP1_SMN_C2PMSG_90 stayed 0 .*not answering"):
        AMDevice(pci, hal)


def test_smu_metrics_follow_the_boards_activity(tmp_path):
    hal, mock, pci = board(tmp_path, "gfx1100")
    dev = AMDevice(pci, hal, reset=False)
    idle = dev.metrics()
    assert idle["gfx_activity"] == 0 and idle["edge_temperature"] == 35 and idle["gfx_clock"] == 100
    now = time.monotonic_ns()
    mock.activity.begin("gfx", now - 800_000_000)  # a dispatch that ran 0.8 s of the last second
    mock.activity.end("gfx", now)
    busy = dev.metrics()
    assert 79 <= busy["gfx_activity"] <= 80 and busy["gfx_clock"] > idle["gfx_clock"] and busy["power"] > idle["power"]
    assert busy["metrics_counter"] == idle["metrics_counter"] + 1
    dev.close()


def test_psp_bootloader_brings_the_sos_up(tmp_path, monkeypatch):
    hal, mock, pci = board(tmp_path, "gfx1100")
    dev = AMDevice(pci, hal, reset=False)
    assert dev.boot_psp() == 0x00310025  # psp_13_0_0_sos.bin's sOS version
    # the parts Debian's SOS file bundles, in psp_hw_start's order, the sOS last
    parts = sos_binaries(load("psp_13_0_0_sos"))
    assert mock.psp.loaded == [command for kind, command in _psp.ORDER if kind in parts]
    assert mock.psp.loaded[-1] == _psp.LOAD_SOSDRV and _psp.LOAD_SYSDRV in mock.psp.loaded
    loads = len(mock.psp.loaded)
    assert dev.boot_psp() == 0x00310025 and len(mock.psp.loaded) == loads  # alive: left as it is
    dev.close()


def test_psp_failures_name_the_step(tmp_path, monkeypatch):
    monkeypatch.setattr(psp_mod, "TIMEOUT", 0.05)
    monkeypatch.setenv("MOCKPCI_FAULT", "psp-never-ready")
    hal, mock, pci = board(tmp_path, "gfx1100")
    dev = AMDevice(pci, hal, reset=False)
    with pytest.raises(psp_mod.PSPError, match=r"before loading \w+ .*C2PMSG_35 reads 0x00000000 .*waiting for "
                                               r"0x80000000"):
        dev.boot_psp()
    dev.close()
    monkeypatch.delenv("MOCKPCI_FAULT")
    hal, mock, pci = board(tmp_path / "b", "gfx1100")
    dev = AMDevice(pci, hal, reset=False)
    mock.psp.loaded.append(_psp.LOAD_SOSDRV)  # a part after the sOS: the bootloader refuses it
    with pytest.raises(psp_mod.PSPError, match=r"error 0x01 in MP0_SMN_C2PMSG_35"):
        dev.boot_psp()
    dev.close()
