"""The mock machines of this process, one per (interface, arch, GPU count, partition mode): amdkfd and its GPUs
(MOCKKFD+AMD) or GPU boards on the PCI bus (MOCKPCI+AMD) or behind USB–PCIe bridges (MOCKUSB+AMD), each behind the
MockHAL that drivers, usergpu's runtime and a foreign runtime (through emu/mock/tinygrad/fileio.py) all reach it by."""

from __future__ import annotations

import importlib
import os

from usergpu.emu.mock import mock_count
from usergpu.emu.mock.hal import MockHAL

# the machines of GPU boards (their state shared between processes) -> the module that makes them
BOARD_MACHINES = {"MOCKPCI+AMD": "usergpu.emu.amd.mock.pci.machine", "MOCKUSB+AMD": "usergpu.emu.amd.mock.usb.machine"}
_machines: dict[tuple, MockHAL] = {}  # one mock machine per (interface, arch, GPU count, MOCKPCI_DIR)


def mock_hal(arch: str | None = None, count: int | None = None, interface: str = "MOCKKFD+AMD") -> MockHAL:
    """The HAL of this process's mock machine with MOCKGPU_COUNT GPUs of MOCKGPU_ARCH (made on first use): amdkfd
    and its GPUs (MOCKKFD+AMD), a CDNA GPU's compute partitions in the MOCKGPU_PARTITION mode (spx, the default, or
    cpx), or GPU boards on the PCI bus (MOCKPCI+AMD) or in USB enclosures (MOCKUSB+AMD), whose state other
    processes share.
    The mock KFD's sysfs tree is a temporary folder, removed when the process exits."""
    arch = arch or os.environ.get("MOCKGPU_ARCH", "gfx1100")
    count = mock_count(count)
    partition = os.environ.get("MOCKGPU_PARTITION", "spx").lower()
    key: tuple = (interface, arch, count, partition)
    boards = importlib.import_module(BOARD_MACHINES[interface]) if interface in BOARD_MACHINES else None
    if boards is not None:  # one HAL per machine folder: two would make two drivers of one board
        key = (interface, arch, count, boards.folder(arch))
    if key not in _machines:
        if boards is not None:
            _machines[key] = boards.machine(arch, count)
        else:
            from usergpu.emu.amd.mock.kfd.kfd import MockKFD

            hal = MockHAL.temporary("usergpu-mock-")
            hal.kfd = MockKFD(hal, arch, count, partition)
            _machines[key] = hal
    return _machines[key]
