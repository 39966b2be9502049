"""The mock bridge as a pyusb backend takes what libusb takes: setup fields cut to their C widths, any payload;
what the firmware does not serve stalls (EPIPE), never another exception."""

from __future__ import annotations

import errno
import struct
from array import array

import pytest
import usb.core
import usb.util
from usb.core import USBError

from usergpu.emu.amd.mock.flash.board import BARS, Navi31Board
from usergpu.emu.amd.mock.usb.asm24 import ASM24Backend
from usergpu.isa.amd.hw.asm24 import (
    BULK_IN,
    BULK_OUT,
    IN,
    MRD32,
    MRD64,
    OUT,
    READ_STREAM,
    SINGLE,
    TLP,
    XDATA_READ,
    XDATA_WRITE,
)


@pytest.fixture
def backend(tmp_path):
    board = Navi31Board(tmp_path / "flash.bin", fault="", gated=False)
    yield ASM24Backend(board)
    board.close()


def stalls(fn, *args) -> None:
    with pytest.raises(USBError) as e:
        fn(*args)
    assert e.value.errno == errno.EPIPE


def test_setup_fields_are_cut_to_their_widths(backend):
    backend.ctrl_transfer(0, OUT | 0x100, XDATA_WRITE, 0x1_0042, 0x5A, array("B"), 1000)  # wValue 0x0042
    got = array("B", bytes(1))
    backend.ctrl_transfer(0, IN, XDATA_READ | 0x300, 0x42, 0, got, 1000)
    assert got[0] == 0x5A


def test_a_tlp_address_is_dword_aligned(backend):
    """The TLP header carries address bits 63..2: a read at BAR0 + 2 reads the dword at BAR0."""
    base = BARS[0][0]
    backend.target.vram[0:4] = (0x1122_3344).to_bytes(4, "little")
    results = []
    for address in (base, base + 2):
        backend.ctrl_transfer(0, OUT, TLP, MRD32 | 0xF << 8, SINGLE, array("B", struct.pack(
            "<III", address & 0xFFFFFFFF, address >> 32, 0)), 1000)
        reply = array("B", bytes(8))
        backend.ctrl_transfer(0, IN, TLP, 0, 0, reply, 1000)
        results.append(struct.unpack_from("<I", reply)[0])
    assert results == [0x1122_3344, 0x1122_3344]


def test_what_the_firmware_lacks_stalls(backend):
    stalls(backend.ctrl_transfer, 0, 0x21, 0x09, 0, 0, array("B"), 1000)  # a class request
    stalls(backend.ctrl_transfer, 0, IN, XDATA_READ, 0xFFFF, 0, array("B", bytes(2)), 1000)  # past XDATA
    stalls(backend.ctrl_transfer, 0, OUT, TLP, 0, SINGLE, array("B", bytes(11)), 1000)  # not the 12 bytes
    stalls(backend.ctrl_transfer, 0, IN, TLP, 0, 0, array("B", bytes(8)), 1000)  # no request pending
    stalls(backend.bulk_write, 0, BULK_OUT, 0, array("B", bytes(4)), 1000)  # no write stream set up
    stalls(backend.bulk_read, 0, BULK_OUT, 0, array("B", bytes(4)), 1000)
    stalls(backend.bulk_write, 0, BULK_IN | 0x100, 0, array("B", bytes(4)), 1000)


def read_stream(backend, address: int, dwords: int) -> None:
    backend.ctrl_transfer(0, OUT, TLP, MRD64 | 0xF << 8, READ_STREAM, array("B", struct.pack(
        "<III", address & 0xFFFFFFFF, address >> 32, dwords)), 1000)


def test_a_streams_count_is_in_dwords(backend):
    """The firmware keeps a stream's length as a 32-bit dword count (its dma_dwords): 4 is 16 bytes, and a stream
    of 2**32 - 1 dwords reads from PCIe only the packets the host takes."""
    base = BARS[0][0]
    backend.target.vram[0:16] = bytes(range(16))
    read_stream(backend, base, 4)
    got = array("B", bytes(64))
    assert backend.bulk_read(0, BULK_IN, 0, got, 1000) == 16 and bytes(got[:16]) == bytes(range(16))
    read_stream(backend, base, 0xFFFF_FFFF)
    assert backend.bulk_read(0, BULK_IN, 0, got, 1000) == 64 and bytes(got[:16]) == bytes(range(16))


def test_descriptors_over_the_default_pipe(backend):
    """GET_DESCRIPTOR answers as much as wLength asks: the device, the configuration with its interface and
    endpoints, and the strings (US English) pyusb and libusb read the product name from."""
    dev = usb.core.find(backend=backend)
    assert usb.util.get_string(dev, dev.iManufacturer) == "tiny"
    assert usb.util.get_string(dev, dev.iProduct).startswith("custom")
    device = dev.ctrl_transfer(0x80, 6, 0x0100, 0, 64)
    assert bytes(device[:2]) == b"\x12\x01" and struct.unpack_from("<HH", device, 8) == (0xADD1, 0x0001)
    configuration = dev.ctrl_transfer(0x80, 6, 0x0200, 0, 255)
    assert len(configuration) == struct.unpack_from("<H", configuration, 2)[0] == 32
    assert bytes(dev.ctrl_transfer(0x80, 6, 0x0200, 0, 4)) == bytes(configuration[:4])
    stalls(backend.ctrl_transfer, 0, 0x80, 6, 0x0600, 0, array("B", bytes(10)), 1000)  # no device qualifier
