"""tinygrad's seam for mocks, served by usergpu's mock machines: `MockFileIOInterface` is what tinygrad imports as
`test.mockgpu.mockgpu.MockFileIOInterface` when its DEV names a MOCK interface (`usergpu mock` installs the import
hook). It has the shape of tinygrad's FileIOInterface (runtime/support/hcq.py) — a file opened by path, ioctl, mmap,
read, write, listdir, seek, and the static anon_mmap, munmap, exists, readlink, eventfd — and makes each call through
the MockHAL of the machine DEV names, so tinygrad's drivers meet the same mock kernel files (errno included) that
usergpu's own drivers do. Memory it maps is real process memory; doorbells are plain stores that the mock's
doorbell agent notices (emu/mock/tinygrad/agent.py)."""

from __future__ import annotations

import functools
import os

from usergpu.emu.mock import open_hal
from usergpu.emu.mock.hal import MockHAL
from usergpu.errors import DeviceNotFound
from usergpu.hostmem import os_mmap

MAP_LOCKED, MAP_HUGETLB = 0x2000, 0x40000  # (mman-common.h) what a mock machine's memory needs neither of

# tinygrad's mock devices (DEV=<iface>+<vendor>) -> the usergpu machine behind them; MOCK+AMD is its KFD mock too
MACHINES = {"MOCK+AMD": "MOCKKFD+AMD", "MOCKKFD+AMD": "MOCKKFD+AMD", "MOCKPCI+AMD": "MOCKPCI+AMD",
            "MOCKUSB+AMD": "MOCKUSB+AMD", "MOCK+NV": "MOCK+NV"}
# the GPUs tinygrad's own mock of a machine has (its KFD and NV drivers make six; its AM mocks are one board), which
# its multi-GPU tests rely on: the machine's size where MOCKGPU_COUNT does not say
TINYGRAD_GPUS = {"MOCKKFD+AMD": 6, "MOCK+NV": 6}
# the arch of tinygrad's own mock where neither DEV nor the environment names one: its NV mock is an Ada (its channel
# classes are AMPERE_CHANNEL_GPFIFO_A and ADA_COMPUTE_A), and its newest runtime drives no Hopper
TINYGRAD_ARCH = {"MOCK+NV": ("MOCKGPU_NV_ARCH", "sm_89")}


def interface(dev: str) -> str:
    """The usergpu machine a tinygrad DEV string ("MOCKKFD+AMD", "MOCKKFD:0,1+AMD", "MOCKKFD+AMD:LLVM",
    "MOCKKFD+AMD::gfx1201", "MOCK+NV") names."""
    iface, _, vendor = dev.upper().partition("+")
    key = f"{iface.partition(':')[0]}+{vendor.partition(':')[0]}"
    if key not in MACHINES:
        raise DeviceNotFound(f"DEV {dev!r}: usergpu's mocks serve {', '.join(MACHINES)}")
    return MACHINES[key]


def target_arch(dev: str) -> str | None:
    """The arch a tinygrad DEV string names after its device and renderer ("MOCKKFD+AMD:LLVM:gfx1201"), as
    tinygrad's Target.parse reads it; None where it names none."""
    fields = dev.partition("+")[2].split(":")
    return fields[2] if len(fields) > 2 and fields[2] else None


@functools.cache
def machine() -> MockHAL:
    """The HAL of the machine $DEV names, made on first use: of the arch DEV names (else MOCKGPU_ARCH's or
    MOCKGPU_NV_ARCH's, else tinygrad's own mock's), with MOCKGPU_COUNT GPUs (else as many as tinygrad's own mock of
    it has)."""
    dev = os.environ.get("DEV", "MOCKKFD+AMD")
    name = interface(dev)
    count = None if "MOCKGPU_COUNT" in os.environ else TINYGRAD_GPUS.get(name)
    variable, default = TINYGRAD_ARCH.get(name, ("MOCKGPU_ARCH", None))
    return open_hal(name, arch=target_arch(dev) or os.environ.get(variable, default), count=count)


class MockFileIOInterface:
    """A file of the mock machine, opened by path (under the machine's root: its sysfs tree, its device files) or
    wrapping a descriptor the machine handed out (fd)."""

    def __init__(self, path: str = "", flags: int = os.O_RDONLY, fd: int | None = None):
        self.path, self.hal, self._pos = path, machine(), 0
        self.fd: int = fd if fd is not None else self.hal.open(path, flags)

    def __del__(self):
        if hasattr(self, "fd"):
            self.hal.close(self.fd)

    def ioctl(self, request: int, arg) -> int:
        return self.hal.ioctl(self.fd, request, arg)

    def mmap(self, start: int, sz: int, prot: int, flags: int, offset: int) -> int:
        return self.hal.mmap(self.fd, sz, offset, prot, flags, start or 0)  # tinygrad passes None for "anywhere"

    def read(self, size: int | None = None, binary: bool = False, offset: int | None = None):
        if offset is not None:
            self.seek(offset)
        if self.fd >= MockHAL.FIRST_FD:  # a device file: pread at the file position
            data = self.hal.pread(self.fd, size if size is not None else 1 << 20, self._pos)
            self._pos += len(data)
        else:
            with open(self.fd, "rb", closefd=False) as f:
                data = f.read(size)
        return data if binary else data.decode()

    def write(self, content, binary: bool = False, offset: int | None = None) -> None:
        if offset is not None:
            self.seek(offset)
        data = bytes(content) if binary else str(content).encode()
        if self.fd >= MockHAL.FIRST_FD:
            self._pos += self.hal.pwrite(self.fd, data, self._pos)
        else:
            with open(self.fd, "wb", closefd=False) as f:
                f.write(data)

    def listdir(self) -> list[str]:
        return self.hal.entries(self.path)

    def seek(self, offset: int) -> None:
        if self.fd >= MockHAL.FIRST_FD:
            self._pos = offset
        else:
            os.lseek(self.fd, offset, os.SEEK_SET)

    @staticmethod
    def _mmap(start: int, sz: int, prot: int, flags: int, fd: int, offset: int) -> int:
        return os_mmap(start, sz, prot, flags, fd, offset)

    @staticmethod
    def anon_mmap(start: int, sz: int, prot: int, flags: int, offset: int) -> int:
        """Anonymous memory, unlocked and of small pages: the pages a mock board reaches by DMA need no pinning
        (pagemap's frames follow them), it reserves no huge pages, and the process's RLIMIT_MEMLOCK is not the mock
        machine's (tinygrad's AM locks every system-memory buffer). Made through the machine, which is told of it
        (a PCI machine shows VRAM in the range AM reserves: pci/vram_at_va.py)."""
        return machine().mmap(-1, sz, offset, prot, flags & ~(MAP_LOCKED | MAP_HUGETLB), start or 0)

    @staticmethod
    def munmap(buf: int, sz: int) -> None:
        machine().munmap(buf, sz)  # what the machine mapped there (a trapped register BAR) goes too

    @staticmethod
    def exists(path: str) -> bool:
        return machine().exists(path)

    @staticmethod
    def readlink(path: str) -> str:
        return machine().readlink(path)

    @staticmethod
    def eventfd(initval: int, flags: int | None = None) -> MockFileIOInterface:
        return MockFileIOInterface(fd=os.eventfd(initval, flags or 0))
