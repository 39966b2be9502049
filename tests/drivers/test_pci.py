"""PCI functions through the HAL's sysfs, on the mock Navi31 board installed as a native function."""

from __future__ import annotations

import errno

import pytest

from usergpu.drivers.pci import pci_devices
from usergpu.emu.amd.mock.flash.board import BARS, Navi31Board, install
from usergpu.emu.mock.hal import MockHAL
from usergpu.errors import DriverError
from usergpu.isa.amd.hw.bar5 import ROM_CNTL, ROM_SW_STATUS


@pytest.fixture
def hal(tmp_path):
    h = MockHAL(tmp_path / "root")
    h.board = Navi31Board(tmp_path / "flash.bin", fault="", gated=False)
    install(h, h.board)
    return h


def test_enumeration_config_and_bars(hal):
    assert pci_devices(hal, 0x10DE) == []
    (dev,) = pci_devices(hal, 0x1002, 0x744C)
    assert (dev.vendor_id, dev.device_id, dev.config_read(0x0B, 1)) == (0x1002, 0x744C, 0x03)
    for n, (address, size, is64, prefetch) in BARS.items():
        sysfs, sized = dev.bar(n), dev.bar_from_config(n)
        assert sysfs == sized and (sysfs.address, sysfs.size, sysfs.is64, sysfs.prefetchable) == (
            address, size, is64, prefetch)
    assert dev.config_read(0x10) == BARS[0][0] & 0xFFFFFFFF | 0xC  # restored after sizing
    regs = dev.map_bar(5)
    assert regs.read32(ROM_SW_STATUS) == 0 and regs.read32(ROM_CNTL) == hal.board.rom.regs[ROM_CNTL]
    regs.write32(ROM_CNTL, 0x12345678)
    assert regs.read32(ROM_CNTL) == 0x12345678


def test_permission_problems_say_what_to_do(hal):
    def denied():
        raise PermissionError(errno.EACCES, "Permission denied")

    hal.install("/sys/bus/pci/devices/0000:0b:00.0/config", denied)
    with pytest.raises(DriverError) as e:
        pci_devices(hal, 0x1002)
    assert e.value.errno == errno.EACCES and "chmod" in str(e.value) and "driver/unbind" in str(e.value)


def test_a_dead_function_reads_all_ones(hal):
    (dev,) = pci_devices(hal, 0x1002)
    hal.board.dead = True
    assert dev.config_read(0) == 0xFFFFFFFF and dev.map_bar(5).read32(ROM_CNTL) == 0xFFFFFFFF
