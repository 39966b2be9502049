"""What every mock machine shares, of either vendor: the HAL with mock device files beneath it (hal.py), the
kernel's checked copies between user memory and a mock driver (uaccess.py), the one scheduler their queues run on
(scheduler.py), machine sizing (mock_count), tinygrad's fault-report knob (reported_fault), and the factory the
runtime and the CLIs reach a mock machine by (open_hal); tinygrad's seam for mocks is in tinygrad/. The machines load
on first use: importing this costs nothing."""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING

from usergpu.errors import DeviceNotFound

if TYPE_CHECKING:
    from usergpu.emu.mock.hal import MockHAL

MAX_MOCK_GPUS = 64
# a device string's mock machine -> (its module, the function that makes it or gives this process's one)
MACHINES = {"MOCKKFD+AMD": ("usergpu.emu.amd.mock.machines", "mock_hal"),
            "MOCKPCI+AMD": ("usergpu.emu.amd.mock.machines", "mock_hal"),
            "MOCKUSB+AMD": ("usergpu.emu.amd.mock.machines", "mock_hal"),
            "MOCK+NV": ("usergpu.emu.nv.mock.machine", "mock_nv_hal")}
# the rescue tools' mock Navi31 board, with its SPI flash, on either transport
FLASH_BOARDS = {"MOCKUSB+AMD": "usb", "MOCKPCI+AMD": "pci"}
FLASH_BOARD = ("usergpu.emu.amd.mock.flash.board", "board_hal")


def open_hal(device: str, flash: bool = False, arch: str | None = None, count: int | None = None) -> MockHAL:
    """The HAL of the mock machine a device string names (MOCKKFD+AMD, MOCKPCI+AMD, MOCKUSB+AMD, MOCK+NV): this
    process's machine of count (else MOCKGPU_COUNT) GPUs of arch (else MOCKGPU_ARCH, MOCKGPU_NV_ARCH), made on first
    use. flash: a fresh mock Navi31 board for the rescue tools instead (its flash in $MOCKFLASH_IMAGE), behind the
    mock USB bridge or as a PCI function."""
    if flash:
        if device not in FLASH_BOARDS:
            raise DeviceNotFound(f"no mock flash board {device!r}: there are {', '.join(FLASH_BOARDS)}")
        module, make = FLASH_BOARD
        return getattr(importlib.import_module(module), make)(FLASH_BOARDS[device])
    if device not in MACHINES:
        raise DeviceNotFound(f"no mock machine {device!r}: there are {', '.join(MACHINES)}")
    module, make = MACHINES[device]
    factory = getattr(importlib.import_module(module), make)
    shape = {"arch": arch, "count": count}
    return factory(interface=device, **shape) if device.endswith("+AMD") else factory(**shape)


def mock_count(count: int | None = None) -> int:
    """How many GPUs a mock machine has: count, else MOCKGPU_COUNT (default 1), checked."""
    text = str(count) if count is not None else os.environ.get("MOCKGPU_COUNT", "1")
    if not text.isdigit() or not 1 <= int(text) <= MAX_MOCK_GPUS:
        raise DeviceNotFound(f"MOCKGPU_COUNT {text!r}: a mock machine has 1..{MAX_MOCK_GPUS} GPUs")
    return int(text)


def reported_fault() -> int | None:
    """The GPU address in MOCKGPU_EMU_FAULTADDR (hex, as tinygrad's mocks read it), or None where it is unset.
    tinygrad's tests set it to check a runtime's fault report: while it is set, a mock reports an MMU fault at that
    exact address to whoever asks for the GPU's faults (KFD's memory events, RM's debugger), and nothing else of the
    machine changes."""
    text = os.environ.get("MOCKGPU_EMU_FAULTADDR")
    if text is None:
        return None
    try:
        return int(text, 16)
    except ValueError:
        raise DeviceNotFound(f"MOCKGPU_EMU_FAULTADDR {text!r}: a GPU address in hex") from None
