"""The ASM24 USB–PCIe bridge driver against the mock bridge (a real pyusb backend) in front of a fake GPU."""

from __future__ import annotations

import errno
import struct

import pytest
import usb.core

from usergpu.drivers.amd.usb import ASM24, USB_IDS, PCIeError, USBPCIDevice, USBTransferError
from usergpu.drivers.pci import BAR
from usergpu.emu.amd.mock.pci.pcie import CA, CRS, UR, CompletionError, Unplugged
from usergpu.emu.amd.mock.usb.asm24 import ASM24Backend
from usergpu.emu.mock.hal import MockHAL
from usergpu.errors import DeviceNotFound, Error, FieldError

BAR0_ADDRESS, BAR0_SIZE = 0x8_0000_0000, 256 << 20  # 64-bit prefetchable, above 4 GiB: MRd64/MWr64
BAR5_ADDRESS, BAR5_SIZE = 0xFC00_0000, 1 << 20  # 32-bit registers
CA_OFFSET, UNPLUG_OFFSET = 0x8000, 0xF0000  # in BAR5


class FakeGPU:
    """Bus 1 device 0 function 0: a Navi31's ids, BAR0 and BAR5 (registers in dicts, per BAR, by offset). Config
    dwords have write masks, so BAR sizing reads back what hardware would. Nothing else answers (UR)."""

    def __init__(self):
        self.config = {0x00: 0x744C_1002, 0x04: 0x0010_0006, 0x08: 0x0300_00C8, 0x0C: 0,
                       0x10: BAR0_ADDRESS & 0xFFFF_FFFF | 0b1100, 0x14: BAR0_ADDRESS >> 32,
                       0x24: BAR5_ADDRESS}
        self.writable = {0x04: 0xFFFF, 0x10: ~(BAR0_SIZE - 1) & 0xFFFF_FFF0, 0x14: 0xFFFF_FFFF,
                         0x24: ~(BAR5_SIZE - 1) & 0xFFFF_FFF0}
        self.regs = {0: {}, 5: {}}
        self.crs = 0  # config requests answered with CRS before the function is ready

    def _function(self, bus: int, devfn: int) -> None:
        if (bus, devfn) != (1, 0):
            raise CompletionError(UR)
        if self.crs:
            self.crs -= 1
            raise CompletionError(CRS)

    def config_read(self, bus: int, devfn: int, offset: int) -> int:
        self._function(bus, devfn)
        return self.config.get(offset, 0)

    def config_write(self, bus: int, devfn: int, offset: int, value: int, byte_enable: int = 0xF) -> None:
        self._function(bus, devfn)
        mask = self.writable.get(offset, 0) & sum(0xFF << 8 * i for i in range(4) if byte_enable >> i & 1)
        self.config[offset] = self.config.get(offset, 0) & ~mask | value & mask

    def _bar(self, address: int) -> tuple[dict, int]:
        bases = {0: self.config[0x10] & ~0xF | self.config[0x14] << 32, 5: self.config[0x24] & ~0xF}
        sizes = {0: BAR0_SIZE, 5: BAR5_SIZE}
        for n, base in bases.items():
            if self.config[0x04] & 2 and base <= address < base + sizes[n]:
                return self.regs[n], address - base
        raise CompletionError(UR)

    def mem_read(self, address: int) -> int:
        regs, offset = self._bar(address)
        if regs is self.regs[5] and offset == CA_OFFSET:
            raise CompletionError(CA)
        if regs is self.regs[5] and offset == UNPLUG_OFFSET:
            raise Unplugged
        return regs.get(offset, 0)

    def mem_write(self, address: int, value: int, byte_enable: int = 0xF) -> None:
        regs, offset = self._bar(address)
        regs[offset] = value


@pytest.fixture
def gpu():
    return FakeGPU()


def usb_hal(backend):
    """A mock HAL whose USB bus holds the mock bridge."""
    hal = MockHAL("/nonexistent")
    hal.install_usb(backend)
    return hal


@pytest.fixture
def backend(gpu):
    return ASM24Backend(gpu)


@pytest.fixture
def bridge(backend):
    return ASM24.find(usb_hal(backend))


@pytest.fixture
def dev(bridge):
    return USBPCIDevice(bridge)


@pytest.mark.parametrize("ids", USB_IDS)
def test_finds_the_bridge_by_either_id_pair(gpu, ids):
    bridge = ASM24.find(usb_hal(ASM24Backend(gpu, *ids)))
    assert (bridge.dev.idVendor, bridge.dev.idProduct) == ids
    assert USBPCIDevice(bridge).device_id == 0x744C


def test_no_bridge_is_device_not_found(gpu):
    with pytest.raises(DeviceNotFound, match=r"add1:0001, 3801:0001.*cable.*lsusb"):
        ASM24.find(usb_hal(ASM24Backend(gpu, 0x174C, 0x2464)))  # the stock firmware's ids
    with pytest.raises(DeviceNotFound, match="bridge 1 asked for, 1 found"):
        ASM24.find(usb_hal(ASM24Backend(gpu)), index=1)


def test_xdata_read_write_split_into_the_firmware_sizes(bridge, backend):
    data = bytes(range(256)) + bytes(44)
    bridge.xdata_write(0x1000, data)
    assert bytes(backend.xdata[0x1000:0x1000 + 300]) == data
    before = backend.control_transfers
    assert bridge.xdata_read(0x1000, 300) == data
    assert backend.control_transfers - before == 2  # 255 + 45 bytes
    with pytest.raises(FieldError, match="outside"):
        bridge.xdata_read(0xFFFF, 2)


def test_link_and_ids_over_type1_config(bridge, dev):
    assert bridge.link_up()
    # the mock answers UR to a type-0 request off bus 0, so these also prove the type-1 TLP
    assert (dev.vendor_id, dev.device_id) == (0x1002, 0x744C)
    assert bridge.config_read(1, 0, 0, 0) == 0x744C_1002
    assert bridge.config_read(1, 0, 0, 3, 1) == 0x74
    assert dev.name == "usb:1:00.0"


def test_sub_dword_config_write_uses_byte_enables(gpu, dev):
    dev.config_write(4, 0x0002, 2)  # command: memory space only
    assert gpu.config[4] == 0x0010_0002  # the status half untouched
    dev.config_write(0x26, 0xFFFF, 2)  # BAR5's upper half: the bits below its 1 MiB size stay 0
    assert gpu.config[0x24] == 0xFFF0_0000
    with pytest.raises(FieldError, match="naturally aligned"):
        dev.config_read(1, 2)


def test_bar_sizing_through_config_space(gpu, dev):
    saved = dict(gpu.config)
    assert dev.bar(0) == BAR(0, BAR0_ADDRESS, BAR0_SIZE, is64=True, prefetchable=True)
    assert dev.bar(5) == BAR(5, BAR5_ADDRESS, BAR5_SIZE, is64=False, prefetchable=False)
    assert gpu.config == saved  # BARs and command restored


def test_registers_through_map_bar(gpu, dev):
    regs = dev.map_bar(5)
    regs.write32(0x100, 0xDEADBEEF)
    assert gpu.regs[5][0x100] == 0xDEADBEEF
    gpu.regs[5][0x104] = 0x1234
    assert regs.read32(0x104) == 0x1234
    vram = dev.map_bar(0)  # above 4 GiB: the 64-bit TLPs
    vram.write32(0x40, 7)
    assert gpu.regs[0][0x40] == 7 and vram.read32(0x40) == 7
    with pytest.raises(FieldError, match="outside BAR 5"):
        regs.read32(BAR5_SIZE)


def test_streams_match_single_dwords_in_far_fewer_transfers(gpu, dev, backend):
    regs = dev.map_bar(5)
    data = bytes(range(256)) * 16
    before = backend.control_transfers
    regs.write(0x2000, data)
    assert regs.read(0x2000, len(data)) == data
    streamed = backend.control_transfers - before
    before = backend.control_transfers
    assert struct.pack("<1024I", *(regs.read32(0x2000 + 4 * i) for i in range(1024))) == data
    assert streamed == 4 and backend.control_transfers - before == 2048
    assert backend.bulk_bytes == 2 * len(data)


def test_streams_go_in_64k_chunks(dev, backend):
    regs = dev.map_bar(0)
    data = bytes(range(256)) * 320  # 80 KiB: two streams
    regs.write(0x10000, data)
    assert regs.read(0x10000, len(data)) == data


def test_unsupported_request_and_completer_abort_are_named(bridge, dev):
    with pytest.raises(PCIeError, match=r"config read bus 2 dev 0 fn 0 offset 0x0: Unsupported Request") as e:
        bridge.config_read(2, 0, 0, 0)
    assert e.value.status == UR
    with pytest.raises(PCIeError, match=r"memory read at 0xfc200000: Unsupported Request"):
        bridge.mem_read32(0xFC20_0000)
    regs = dev.map_bar(5)
    with pytest.raises(PCIeError, match=rf"memory read at {BAR5_ADDRESS + CA_OFFSET:#x}: Completer Abort"):
        regs.read32(CA_OFFSET)
    with pytest.raises(PCIeError, match="Completer Abort"):
        regs.read(CA_OFFSET - 0x100, 0x200)  # a stream through the aborting register


def test_config_retry_is_retried_then_given_up(gpu, dev):
    gpu.crs = 3
    assert dev.vendor_id == 0x1002
    gpu.crs = 100
    with pytest.raises(PCIeError, match=r"offset 0x0: Configuration Request Retry Status .*after 8 tries"):
        dev.config_read(0)
    assert gpu.crs == 92


def test_link_power_off(bridge, dev):
    bridge.power(False)
    assert not bridge.link_up()
    with pytest.raises(DeviceNotFound, match="link behind USB bridge add1:0001 is down"):
        USBPCIDevice(bridge)
    with pytest.raises(PCIeError, match=r"no completion from the device \(link down or device not responding\)"):
        dev.config_read(0)
    with pytest.raises(PCIeError, match="memory read of 0x10 bytes at 0xfc000000: no completion"):
        bridge.mem_read(BAR5_ADDRESS, 16)
    bridge.power(True)
    assert dev.vendor_id == 0x1002


def test_power_cut_is_a_disconnect(gpu, dev, backend):
    regs = dev.map_bar(5)
    with pytest.raises(USBTransferError, match=rf"memory read at {BAR5_ADDRESS + UNPLUG_OFFSET:#x}.*disconnected"):
        regs.read32(UNPLUG_OFFSET)
    for later in (lambda: dev.vendor_id, lambda: regs.read(0, 64), lambda: regs.write(0, bytes(8))):
        with pytest.raises(Error, match=r"No such device \(errno 19\): the USB bridge was disconnected") as e:
            later()
        assert e.value.errno == errno.ENODEV
    with pytest.raises(DeviceNotFound):
        ASM24.find(usb_hal(backend))


def test_mock_stalls_unknown_requests(bridge):
    with pytest.raises(usb.core.USBError) as e:
        bridge.dev.ctrl_transfer(0xC0, 0x99, 0, 0, 4)
    assert e.value.errno == errno.EPIPE
    with pytest.raises(USBTransferError, match=r"stalled"):
        bridge.tlp(0x7F, 0)  # a fmt_type the firmware does not issue
