"""Machines with mock GPU boards on their PCI bus (MOCKPCI+AMD): a sysfs tree with one native function per board
(0000:03:00.0 onwards), each board's state in a directory beside it. A machine per arch lives under MOCKPCI_DIR
(default: the temp directory's usergpu-mockpci), in MOCKPCI_DIR/<arch>. Every process that asks for the machine
sees the same boards, as processes on one computer see the same GPUs: one drives a board (AM's lock files sit in
the machine's /tmp), another watches it (am_smi)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from usergpu.emu.amd.mock.pci.board import MockPCIGPU
from usergpu.emu.amd.mock.pci.function import install_pci
from usergpu.emu.amd.mock.pci.host import HostSide, Pagemap
from usergpu.emu.amd.mock.pci.vfio import install_vfio
from usergpu.emu.mock.hal import MockHAL

IOMMU_GROUP = 12  # the first board's IOMMU group


def root() -> Path:
    return Path(os.environ.get("MOCKPCI_DIR") or Path(tempfile.gettempdir()) / "usergpu-mockpci")


def bus(index: int) -> str:
    return f"0000:{0x03 + index:02x}:00.0"


def machines() -> list[Path]:
    """The machines some process made under MOCKPCI_DIR."""
    return sorted(d for d in root().glob("*/") if (d / "boards").is_dir())


def vfio_wanted() -> bool:
    return os.environ.get("MOCKPCI_VFIO") == "1"


def folder(arch: str, vfio: bool | None = None) -> Path:
    """Where the machine with boards of arch lives (bound to vfio-pci: MOCKPCI_VFIO=1, unless vfio says)."""
    vfio = vfio_wanted() if vfio is None else vfio
    return root() / (f"{arch}-vfio" if vfio else arch)


def machine(arch: str | None = None, count: int = 1, directory: str | os.PathLike | None = None,
            vfio: bool | None = None) -> MockHAL:
    """The HAL of the machine with count boards of arch (at MOCKPCI_DIR/<arch>, or <arch>-vfio, unless directory
    says); arch None: the boards some process made at directory already (what a monitor attaches to). vfio
    (MOCKPCI_VFIO=1): the boards are bound to vfio-pci, each in its own IOMMU group, and AM opens them through
    VFIO."""
    vfio = vfio_wanted() if vfio is None else vfio
    d = Path(directory) if directory else folder(arch, vfio)
    (d / "tmp").mkdir(parents=True, exist_ok=True)
    hal = MockHAL(d)
    hal.boards = []
    archs = [arch] * count if arch else [(b / "arch").read_text() for b in sorted((d / "boards").glob("*/"))
                                         if (b / "arch").exists()]
    for i, kind in enumerate(archs):
        board = MockPCIGPU(kind, d / "boards" / bus(i))
        install_pci(hal, board, bus(i))
        if vfio or (d / f"sys/bus/pci/devices/{bus(i)}/iommu_group").is_symlink():
            install_vfio(hal, board, bus(i), IOMMU_GROUP + i)
        state = d / f"sys/bus/pci/devices/{bus(i)}/power_state"
        if not state.exists():  # powered on with the board; a monitor attaching leaves it as it is
            state.write_text("D0\n")
        hal.boards.append(board)
    hal.host = HostSide(hal.boards)
    hal.unmapped.append(hal.host.unmapped)
    hal.mapped.append(hal.host.mapped)
    for board in hal.boards:
        board.host = hal.host
    hal.install("/proc/self/pagemap", lambda: Pagemap(hal.host))
    sysctl = d / "proc/sys/vm/compact_unevictable_allowed"  # 0: locked pages stay where pagemap said they are
    sysctl.parent.mkdir(parents=True, exist_ok=True)
    sysctl.write_text("0\n")
    return hal
