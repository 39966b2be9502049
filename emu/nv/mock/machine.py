"""The mock NVIDIA machine (MOCK+NV): MOCKGPU_COUNT GPUs of one chip (MOCKGPU_NV_ARCH) under an nvidia.ko of a
release (MOCKGPU_NV_RELEASE), behind a MockHAL: /dev/nvidiactl, /dev/nvidia<N> and /dev/nvidia-uvm, with the /proc
and sysfs files the driver publishes. The machine is any release of a bound branch (isa/nv/releases.py; default
the newest bound) and speaks that branch's ABI: every escape, allocation, control and UVM ioctl is checked
against its layouts, so a client built for another release is refused as that release's driver refuses it.

The mock GPUs (gpu.py) are made when first needed (a VA space, a channel, a doorbell), so the RM's escapes and
controls work without them."""

from __future__ import annotations

import os
import sys
import threading
from collections import Counter, deque

import numpy as np

from usergpu.autogen import nv_classes
from usergpu.emu.mock import mock_count
from usergpu.emu.mock.hal import MockHAL
from usergpu.emu.mock.tinygrad.agent import DoorbellAgent
from usergpu.emu.nv.mock import chips, rm_procfs
from usergpu.emu.nv.mock.devfiles import NVFile
from usergpu.emu.nv.mock.rm import RM
from usergpu.emu.nv.mock.uvm import UVMFile
from usergpu.errors import DeviceNotFound, DriverError
from usergpu.hostmem import shared_pages, view
from usergpu.isa.nv.releases import BRANCHES, bindings

DEFAULT_ARCH, DEFAULT_RELEASE = "sm_90", list(BRANCHES.values())[-1]
VERSION_LENGTH = 64  # NV_RM_API_VERSION_STRING_LENGTH, with the NUL
VA_BITS = 49  # the GPU VA width of an NV01_MEMORY_VIRTUAL without a limit (Pascal and later)
_machines: dict[tuple, MockHAL] = {}


class NVMachine:
    """The driver's state and the GPUs of one mock machine."""

    def __init__(self, hal: MockHAL, arch: str, count: int, release: str):
        if len(release.encode()) >= VERSION_LENGTH:
            raise DeviceNotFound(f"MOCKGPU_NV_RELEASE {release!r}: a release string has at most "
                                 f"{VERSION_LENGTH - 1} bytes")
        try:
            self.abi = bindings(release)
        except DriverError as e:
            raise DeviceNotFound(f"MOCKGPU_NV_RELEASE {release!r}: {e.detail}") from None
        self.hal, self.arch, self.count, self.release = hal, arch, count, release
        self.chip = chips.chip(arch)
        self.rm, self.uvm = self.abi.rm, self.abi.uvm
        self.classes = self.chip.classes(self.rm, release)
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
        self.usermode_pages: dict[int, tuple[int, int]] = {}  # GPU index -> (memfd, address) of a mapped one
        self.agent = DoorbellAgent(self.run_channels, self.lock, self.channels_pending)
        hal.unmapped.append(self.agent.unmapped)
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

    def usermode_page(self, index: int, length: int) -> int:
        """The memfd of GPU index's usermode registers as a client maps them with mmap and rings the doorbell with
        a plain store (tinygrad): shared memory the doorbell agent watches, made on first use. (usergpu's driver
        maps them with mmio, whose write at NOTIFY_CHANNEL_PENDING runs the channels at once.)"""
        if index not in self.usermode_pages:
            address, memfd = shared_pages(f"nvidia-usermode-{index}", length)
            self.usermode_pages[index] = (memfd, address)
            self.agent.watch(address, np.frombuffer(view(address, length), np.uint64))
        return self.usermode_pages[index][0]

    def run_channels(self) -> tuple[bool, bool]:
        """The doorbell agent's step: every channel of the machine runs until none can go on; whether any moved,
        and whether work is left stalled (a semaphore acquire a CPU store may release)."""
        gpus = self.gpus
        if not gpus:
            return False, False
        before = [c.progress for g in gpus for c in g.channels]
        errors = [len(g.errors) for g in gpus]
        stalled = gpus[0].scheduler.run()
        for gpu, seen in zip(gpus, errors, strict=True):  # the client hears of it through the error notifier
            for _, code, message in gpu.errors[seen:]:
                print(f"usergpu mock: {message} (ROBUST_CHANNEL error {code})", file=sys.stderr)
        return [c.progress for g in gpus for c in g.channels] != before, stalled

    def channels_pending(self) -> bool:
        """Whether a channel has GP entries it has not taken (its GP_PUT moved past its GP_GET)."""
        return any(c.busy for g in self.gpus for c in g.channels)

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
    MOCKGPU_NV_RELEASE (default the newest release bound). Its files live in a temporary folder, removed at exit;
    hal.nv is the machine, and hal.kernels_from_ptx says its GPUs run kernels from the PTX a cubin carries."""
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
