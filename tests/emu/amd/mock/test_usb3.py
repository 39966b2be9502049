"""MockUSB3 (tinygrad's `test.mockgpu.usb.MockUSB3`) over the MOCKUSB+AMD machine: one mock ASM2464PD bridge per
GPU on the USB bus, the transfers tinygrad's USB3 makes, failures raised as tinygrad's USB3 raises them; and an
unmodified tinygrad under `usergpu mock --dev MOCKUSB+AMD` gets through enumeration, the bridges' bus setup, BAR
assignment and IP discovery to AM's firmware step."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from usergpu.autogen.generator.toolchain import LLVM
from usergpu.emu.amd.mock.machines import mock_hal
from usergpu.emu.amd.mock.pci.board import FB_BASE
from usergpu.emu.amd.mock.usb import asm24
from usergpu.emu.mock.hal import MockHAL
from usergpu.emu.mock.tinygrad import usb3
from usergpu.emu.mock.tinygrad.fileio import interface
from usergpu.emu.mock.tinygrad.usb3 import MockUSB3, USBCallError
from usergpu.errors import DeviceNotFound, Error

IDS = (0xADD1, 0x0001)  # the custom firmware's
GPU_BUS, CFGRD, CFGWR, MWR64, MRD64 = 4, 0x04, 0x44, 0x60, 0x20
USERGPU = Path(sys.executable).parent / "usergpu"


@pytest.fixture
def hal(tmp_path, monkeypatch) -> MockHAL:
    """The MOCKUSB+AMD machine of two gfx1100 boards (state in tmp_path) that MockUSB3 sees."""
    monkeypatch.setenv("MOCKPCI_DIR", str(tmp_path))
    machine = mock_hal("gfx1100", 2, "MOCKUSB+AMD")
    monkeypatch.setattr(usb3, "machine", lambda: machine)
    return machine


@pytest.fixture
def usb(hal) -> MockUSB3:
    return MockUSB3(MockUSB3.list_devices(*IDS)[0][0])


def tlp(usb: MockUSB3, fmt_type: int, address: int, value: int = 0, mode: int = 0) -> None:
    usb.control_write(0xF0, fmt_type | 0xF << 8, mode, struct.pack("<III", address & 0xFFFFFFFF, address >> 32, value))


def config(usb: MockUSB3, bus: int, offset: int, value: int | None = None) -> int:
    """A config request (type 0 on bus 0, type 1 beyond) and its completion: the data, or the status if it failed."""
    tlp(usb, (CFGRD if value is None else CFGWR) | (bus > 0), bus << 24 | offset, value or 0)
    data, status, returned = struct.unpack("<IBxxB", usb.control_read(0xF0, 8))
    assert returned == 0
    return data if status == 0 else -(status >> 5)


def open_path(usb: MockUSB3) -> None:
    """Number the bridges' buses and open their prefetchable windows from the GPU's BAR0 up."""
    for bus in range(GPU_BUS):
        config(usb, bus, 0x18, (bus + 1) << 8 | GPU_BUS << 16)
        config(usb, bus, 0x24, 0xFFF0 << 16)
        config(usb, bus, 0x28, FB_BASE >> 32)
        config(usb, bus, 0x2C, 0xFFFF_FFFF)
        config(usb, bus, 0x04, 0x0006)


def test_the_interface_names_the_usb_machine():
    assert interface("MOCKUSB+AMD") == interface("mockusb:0+AMD") == "MOCKUSB+AMD"


def test_one_bridge_per_gpu_is_listed(hal):
    found = MockUSB3.list_devices(*IDS)
    assert [name for _, name in found] == ["usb:1-2", "usb:1-3"]
    assert MockUSB3.list_devices(0x3801, 0x0001) == []  # the other ids tinygrad looks for
    first, second = (MockUSB3(dev) for dev, _ in found)
    first.control_write(0xE5, value=0x9000, index=0xA5)
    assert bytes(first.control_read(0xE4, 1, value=0x9000)) == b"\xa5"
    assert bytes(second.control_read(0xE4, 1, value=0x9000)) == b"\x00"  # each bridge is its own


def test_a_machine_without_usb_lists_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(usb3, "machine", lambda: MockHAL(tmp_path))
    assert MockUSB3.list_devices(*IDS) == []


def test_the_product_string_is_the_custom_firmwares(usb, monkeypatch):
    assert usb.product.startswith("custom")
    monkeypatch.setitem(asm24.STRINGS, 2, "ASM2464PD mass storage")
    with pytest.raises(DeviceNotFound, match="'ASM2464PD mass storage' is not a bridge tinygrad drives"):
        MockUSB3(MockUSB3.list_devices(*IDS)[0][0])


def test_control_round_trips(usb):
    assert bytes(usb.control_read(0xE4, 1, value=0xB450)) == b"\x78"  # the PCIe link is up
    usb.control_write(0xE5, value=0xA000, index=0x5A)
    assert bytes(usb.control_read(0xE4, 2, value=0xA000)) == b"\x5a\x00"
    assert config(usb, 0, 0) == 0x2461_1B21  # the ASM2461 switch port on bus 0
    assert config(usb, GPU_BUS, 0) == -1  # Unsupported Request until the bridges are numbered
    open_path(usb)
    assert config(usb, GPU_BUS, 0) == 0x744C_1002


def test_bulk_streams_round_trip_through_the_hierarchy(hal, usb):
    open_path(usb)
    data = bytes(range(256)) * 4
    tlp(usb, MWR64, FB_BASE + 0x1000, len(data) // 4, mode=1)  # the count is in dwords
    usb.bulk_write(data)
    assert bytes(hal.boards[0].vram[0x1000:0x1000 + len(data)]) == data
    tlp(usb, MRD64, FB_BASE + 0x1000, len(data) // 4, mode=2)
    assert bytes(usb.bulk_read(len(data))) == data


def test_failed_transfers_raise_what_tinygrads_usb3_raises(usb):
    with pytest.raises(USBCallError, match="^libusb_control_transfer: Pipe error$") as e:
        usb.control_read(0xEE, 4)  # a request the firmware does not serve stalls
    assert isinstance(e.value, RuntimeError) and isinstance(e.value, Error)
    with pytest.raises(USBCallError, match="^bulk OUT 0x02 failed: Pipe error$"):
        usb.bulk_write(bytes(64))  # no write stream armed
    with pytest.raises(USBCallError, match="^bulk IN 0x81 failed: Operation timed out$"):
        usb.bulk_read(64)  # nothing to send


def test_async_transfers_complete_in_order_and_failures_latch(usb):
    write = usb.control_write_async(0xE5, value=0xA800, index=7)
    read, landed = usb.control_read_async(0xE4, 8, value=0xA800)
    usb.bulk_wait(write)
    usb.bulk_wait(read)
    assert bytes(landed) == b"\x07" + bytes(7)
    stalled = usb.bulk_write_async(bytes(512))  # no stream armed: the transfer stalls
    with pytest.raises(USBCallError, match=r"async bulk OUT failed: status=4"):  # LIBUSB_TRANSFER_STALL
        usb.bulk_wait(stalled)
    with pytest.raises(USBCallError, match="status=4"):
        usb.bulk_wait(usb.control_write_async(0xE5, value=0xA800, index=1))


def test_a_gpu_that_drops_off_unplugs_its_bridge(hal, usb):
    open_path(usb)
    hal.boards[0].dead = True
    with pytest.raises(USBCallError, match=r"^libusb_control_transfer: No such device \(it may have been"):
        tlp(usb, MRD64, FB_BASE, 1, mode=2)  # the firmware starts a read stream as the request arrives
    with pytest.raises(USBCallError, match="^bulk IN 0x81 failed: No such device"):
        usb.bulk_read(4)
    with pytest.raises(USBCallError, match="^async submit failed: No such device"):
        usb.control_write_async(0xE5, value=0xA000, index=1)
    assert [name for _, name in MockUSB3.list_devices(*IDS)] == ["usb:1-3"]


PROBE = """
import json, traceback
from tinygrad import Tensor
try:
    print((Tensor([1, 2, 3]) + 1).numpy())
    report = {"stopped": None}
except Exception as e:
    frames = [f for f, _ in traceback.walk_tb(e.__traceback__)]
    report = {"stopped": type(e).__name__, "steps": [f.f_code.co_qualname for f in frames],
              "firmware": [f.f_locals["fname"] for f in frames if f.f_code.co_qualname == "AMFirmware.load_fw"]}
from usergpu.emu.mock.tinygrad.fileio import machine
bridge = machine().usb_backend().devices[0]
gpu = bridge.target.function
report["bars"] = {n: gpu.bar_address(n) for n in gpu.bars}
report["buses"] = [list(b.config[0x18:0x1B]) for b in bridge.target.bridges]
print(json.dumps(report))
"""


def test_tinygrad_reaches_the_firmware_step(tmp_path):
    """Over USB enumeration, the bridges' buses and windows, BAR sizing and assignment, IP discovery read through a
    read stream and the memory manager's first page table, tinygrad's AM stops where it loads firmware by sha256:
    from its download cache (empty here) or the network (none here)."""
    pytest.importorskip("tinygrad")
    cc = shutil.which("clang") or shutil.which(f"clang-{LLVM}")  # tinygrad's CPU device compiles a helper with it
    if cc is None:
        pytest.skip(f"tinygrad's CPU device needs clang (or clang-{LLVM})")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DEV", "MOCKGPU"))}
    env |= {"MOCKPCI_DIR": str(tmp_path / "machines"), "TMPDIR": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path),
            "CC": cc, "https_proxy": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"}  # no network
    out = subprocess.run([str(USERGPU), "mock", "--dev", "MOCKUSB+AMD", "--", sys.executable, "-c", PROBE],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["stopped"] == "URLError", out.stdout
    assert report["firmware"] == ["psp_13_0_0_sos.bin"]  # the first file AMFirmware loads for MP0 13.0.0
    assert {"USBIface.__init__", "AMDev.__init__", "AMDev.init_sw", "AMFirmware.__init__"} <= set(report["steps"])
    # pci_setup_usb_bars numbered buses 1..4 and placed the GPU's prefetchable BARs from 32 GiB, BAR5 at 256 MiB
    assert report["buses"] == [[0, bus + 1, GPU_BUS] for bus in range(GPU_BUS)]
    assert report["bars"] == {"0": 32 << 30, "2": (32 << 30) + (24 << 30), "5": 0x1000_0000}
