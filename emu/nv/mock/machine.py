"""The mock NVIDIA machine (MOCK+NV): MOCKGPU_COUNT GPUs of one chip (MOCKGPU_NV_ARCH) under an nvidia.ko of a
release (MOCKGPU_NV_RELEASE), behind a MockHAL: /dev/nvidiactl, /dev/nvidia<N> and /dev/nvidia-uvm, with the /proc
and sysfs files the driver publishes. The machine advertises any release string it is given; it speaks the ABI
of the bindings of its major version (535 or 555), and 535's for any other, except CHECK_VERSION_STR, whose struct
every release shares (so a client of an unsupported release learns the release and stops).

The mock GPUs (gpu.py) are made when first needed (a VA space, a channel, a doorbell), so the RM's escapes and
controls work without them."""

from __future__ import annotations

import importlib
import os
import threading
from collections import Counter, deque
from types import ModuleType

from usergpu.autogen import nv_classes
from usergpu.emu.mock import mock_count
from usergpu.emu.mock.hal import MockHAL
from usergpu.emu.nv.mock import chips, rm_procfs
from usergpu.emu.nv.mock.devfiles import NVFile
from usergpu.emu.nv.mock.rm import RM
from usergpu.emu.nv.mock.uvm import UVMFile
from usergpu.errors import DeviceNotFound, DriverError

ABIS = ("535", "555")  # the releases the generated bindings speak; any other is answered with 535's layouts
DEFAULT_ARCH, DEFAULT_RELEASE = "sm_90", "535.261.03"
VERSION_LENGTH = 64  # NV_RM_API_VERSION_STRING_LENGTH, with the NUL
VA_BITS = 49  # the GPU VA width of an NV01_MEMORY_VIRTUAL without a limit (Pascal and later)
_machines: dict[tuple, MockHAL] = {}


def bindings(release: str) -> tuple[ModuleType, ModuleType]:
    """The RM and UVM bindings whose layouts a release's driver uses."""
    abi = release.split(".")[0] if release.split(".")[0] in ABIS else ABIS[0]
    return tuple(importlib.import_module(f"usergpu.autogen.nv_{kind}_{abi}") for kind in ("rm", "uvm"))


class NVMachine:
    """The driver's state and the GPUs of one mock machine."""

    def __init__(self, hal: MockHAL, arch: str, count: int, release: str):
        if len(release.encode()) >= VERSION_LENGTH:
            raise DeviceNotFound(f"MOCKGPU_NV_RELEASE {release!r}: a release string has at most "
                                 f"{VERSION_LENGTH - 1} bytes")
        self.hal, self.arch, self.count, self.release = hal, arch, count, release
        self.chip = chips.chip(arch)
        self.rm, self.uvm = bindings(release)
        self.classes = self.chip.classes(self.rm)
        self.chip_specific = {c for ids in self.rm.CHIP_CLASSES.values() for c in ids} | set(
            nv_classes.BLACKWELL_CLASSES.values())
        self.va_bits = VA_BITS
        self.lock = threading.RLock()  # one escape, mmio write or doorbell run at a time
        self.open_gpus: Counter = Counter()  # GPU index -> open /dev/nvidia<index> descriptors
        self.vram_used = [0] * count  # bytes of each GPU's video memory its objects hold
        self.vram_next = [0] * count  # where the next video memory object goes (its offset: a bump, wrapping)
        self.memblock_size = 0  # NV_ESC_SYS_PARAMS
        self.messages: deque[str] = deque(maxlen=256)  # why the RM refused what it refused, for a person
        self._gpus: dict[int, object] = {}
        self.resman = RM(self)
        rm_procfs.publish(self)
        hal.install("/dev/nvidiactl", lambda: NVFile(self, None))
        for index in range(count):
            hal.install(f"/dev/nvidia{index}", lambda index=index: NVFile(self, index))
        hal.install("/dev/nvidia-uvm", lambda: UVMFile(self))

    def log(self, message: str) -> None:
        self.messages.append(message)

    # ---- the GPUs ----------------------------------------------------------------------------------------------
    def gpu(self, index: int):
        """Mock GPU index (a gpu.MockNVGPU), made on first use."""
        if index not in self._gpus:
            from usergpu.emu.nv.mock.gpu import MockNVGPU

            self._gpus[index] = MockNVGPU(self, index, self.arch, self.chip)
        return self._gpus[index]

    @property
    def gpus(self) -> list:
        """The GPUs made so far, by index (one not made yet has no work)."""
        return [self._gpus[i] for i in sorted(self._gpus)]

    def card(self, index: int) -> dict[str, int]:
        """What the driver knows of a GPU's PCI function (NV_ESC_CARD_INFO): its BARs (BAR0 the 16 MiB of
        registers, BAR1 video memory, resizable to all of it) and interrupt line, as the mock places them."""
        return {"reg_address": 0xA000_0000 + (index << 25), "reg_size": 1 << 24,
                "fb_address": (0x200 + (index << 4)) << 36, "fb_size": 1 << (self.chip.vram - 1).bit_length(),
                "interrupt_line": 0x80 + index}

    # ---- descriptors -------------------------------------------------------------------------------------------
    def file(self, fd: int) -> NVFile | None:
        """The machine's nvidia descriptor fd is, if it is one (nv_get_file_private)."""
        try:
            dev = self.hal.device(fd)
        except (OSError, DriverError):
            return None
        return dev if isinstance(dev, NVFile) and dev.m is self else None

    def opened(self, file: NVFile) -> None:
        if file.index is not None:
            self.open_gpus[file.index] += 1

    def closed(self, file: NVFile) -> None:
        """A descriptor's clients go with it (the RM frees a file's clients when it closes)."""
        if file.index is not None:
            self.open_gpus[file.index] -= 1
        file.context = None
        self.resman.server.free_owned(file)

    def gpu_open(self, index: int) -> bool:
        """Whether the process has /dev/nvidia<index> open (osIsGpuAccessible)."""
        return self.open_gpus[index] > 0


def mock_nv_hal(arch: str | None = None, count: int | None = None, release: str | None = None) -> MockHAL:
    """The HAL of this process's mock NVIDIA machine of (arch, count, release), made on first use: arch from
    MOCKGPU_NV_ARCH (sm_80, sm_86, sm_89, sm_90, sm_120; default sm_90), count from MOCKGPU_COUNT, release from
    MOCKGPU_NV_RELEASE (default 535.261.03). Its files live in a temporary folder, removed at exit; hal.nv is the
    machine, and hal.kernels_from_ptx says its GPUs run kernels from the PTX a cubin carries."""
    arch = arch or os.environ.get("MOCKGPU_NV_ARCH", DEFAULT_ARCH)
    count = mock_count(count)
    release = release or os.environ.get("MOCKGPU_NV_RELEASE", DEFAULT_RELEASE)
    key = (arch, count, release)
    if key not in _machines:
        chips.chip(arch)
        hal = MockHAL.temporary("usergpu-mock-nv-")
        hal.nv = NVMachine(hal, arch, count, release)
        hal.kernels_from_ptx = True  # its GPUs run a cubin's PTX (.usergpu.ptx), not SASS: the runtime asks at load
        _machines[key] = hal
    return _machines[key]
