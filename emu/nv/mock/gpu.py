"""One mock NVIDIA GPU: its VA spaces, its channels (channel.py) and their engines, its clock, the MMU faults and hung
channels it saw, and the doorbell that runs them (emu/mock/scheduler.py). The mock RM (rm.py) makes the objects a
runtime allocates through it and calls this interface; nothing here knows of the RM's handles.

The clock: ns from time.monotonic_ns(), strictly increasing per GPU (two timestamps a channel writes in order
differ), less the time the mock spent on modelled work past what the board takes for it: a copy engine's copy takes
its bytes at the chip's copy or bus rate (`modelled`), a launch its warp-instructions at the chip's issue rate
(`account`, compute.py), so the timestamps around them, and the bandwidth a client computes from them, are the
board's; work the mock does faster is held to that time, so the clock never runs ahead of the host's. Kernels run on
the PTX emulator with an instruction budget (`budget`: env MOCKGPU_NV_BUDGET, else the executor's default); one that
passes it hangs its channel.

A launch runs a slice at a time (compute.py): the doorbell runs the channels until the launch ends or a slice has
passed, and a launch still running is gone on with by the GPU's worker, a daemon thread that runs the channels a
slice at a time (holding the machine's lock, as a doorbell does, and letting it go between slices) while one of the
GPU's channels has a launch under way, as the real GPU runs on while its host only polls memory. The thread ends
when no launch runs (a finished, faulted or hung one, or a channel torn down), when the GPU is gone, and at exit.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from typing import NamedTuple

import numpy as np

from usergpu.autogen import nv_classes as nc
from usergpu.emu.mock.scheduler import scheduler_of
from usergpu.emu.nv.mock import chips
from usergpu.emu.nv.mock.channel import Channel
from usergpu.emu.nv.mock.host import CHAINS as GPFIFO_CLASSES
from usergpu.emu.nv.mock.vaspace import VASpace
from usergpu.emu.nv.ptx.executor import DEFAULT_BUDGET
from usergpu.errors import Error, GPUHang

# the GPFIFO class a channel is of when the RM does not say (the chip's, NV.md's table)
GPFIFO = {"sm_80": nc.AMPERE_CHANNEL_GPFIFO_A, "sm_86": nc.AMPERE_CHANNEL_GPFIFO_A,
          "sm_89": nc.AMPERE_CHANNEL_GPFIFO_A, "sm_90": nc.HOPPER_CHANNEL_GPFIFO_A,
          "sm_100": nc.BLACKWELL_CLASSES["BLACKWELL_CHANNEL_GPFIFO_A"],
          "sm_120": nc.BLACKWELL_CLASSES["BLACKWELL_CHANNEL_GPFIFO_A"]}
# NV_PFAULT_* of the GPUs' dev_fault.h (hwref ga100 and gh100 agree): an access to no mapping finds no valid PTE
FAULT_TYPE_PTE = 0x2
ACCESS_TYPE = {"read": 0x0, "execute": 0x0, "write": 0x1}  # VIRT_READ (an instruction fetch reads), VIRT_WRITE
GAP = 0.001  # seconds the worker lets go of the lock between slices (a doorbell or an ioctl waiting takes it)
JOIN = 1.0  # seconds the process's exit waits for a worker to end its slice
_workers: set[threading.Thread] = set()
_exiting = threading.Event()


class MMUFault(NamedTuple):
    """A refused access, as NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO reports it (NV_PFAULT_FAULT_TYPE_*,
    NV_PFAULT_ACCESS_TYPE_*), with the channel's token and the kernel, when a kernel made it."""

    address: int
    fault_type: int
    access_type: int
    channel: int = -1
    kernel: str = ""


class MockNVGPU:
    def __init__(self, machine: object | None, index: int, arch: str, chip: chips.Chip | None = None):
        if arch not in GPFIFO:
            raise Error(f"no mock NVIDIA GPU for {arch}: the mock models {', '.join(GPFIFO)}")
        self.machine, self.index, self.arch = machine, index, arch
        self.chip = chip or chips.chip(arch)  # the machine's, else the arch's (a GPU made alone)
        self.channels: list[Channel] = []
        self.mmu_faults: list[MMUFault] = []
        self.hangs: list[tuple[Channel, GPUHang]] = []
        self.errors: list[tuple[Channel, int, str]] = []  # (channel, ROBUST_CHANNEL code, message) of each stop
        self.interrupt_handlers: list[Callable[[Channel], None]] = []  # hear each non-stall interrupt
        self.profilers: list = []  # the RM's profilers of the GPU (profiler.Profiler), whose PC samplers listen
        self._tokens = itertools.count()
        self._clock = 0
        self._behind = 0  # ns the clock lags the host's: the mock's time over modelled work (modelled)
        self.scheduler = scheduler_of(machine)
        self.lock = getattr(machine, "lock", None) or self.scheduler.lock  # what a doorbell holds
        self._worker: threading.Thread | None = None

    @property
    def budget(self) -> int:
        """Instruction steps a batch of blocks may run (MOCKGPU_NV_BUDGET, read at each launch as the AMD mock reads
        MOCKGPU_BUDGET)."""
        return int(os.environ.get("MOCKGPU_NV_BUDGET", DEFAULT_BUDGET))

    def new_vaspace(self) -> VASpace:
        return VASpace()

    def new_channel(self, vaspace: VASpace, gpfifo_va: int, entries: int, userd: np.ndarray,
                    on_error: Callable[[int, str], None], gpfifo_class: int | None = None) -> Channel:
        """A channel running the ring of `entries` GP entries at gpfifo_va, with its GPGet/GPPut in userd (a uint8
        view of the USERD memory, Nvc56fControl's layout; the channel zeroes both); on_error(code, message) is
        called once if it stops on an error."""
        gpfifo_class = GPFIFO[self.arch] if gpfifo_class is None else gpfifo_class
        if gpfifo_class not in GPFIFO_CLASSES:
            raise Error(f"class {gpfifo_class:#06x} is not a GPFIFO class the mock GPU models")
        with self.scheduler.lock:
            channel = Channel(self, vaspace, gpfifo_va, entries, userd, on_error, next(self._tokens), gpfifo_class)
            self.channels.append(channel)
            self.scheduler.add(channel)
        return channel

    def destroy_channel(self, channel: Channel) -> None:
        with self.scheduler.lock:
            if channel in self.channels:
                self.channels.remove(channel)
                self.scheduler.remove(channel)

    def doorbell(self, token: int) -> None:
        """NOTIFY_CHANNEL_PENDING with a work-submit token: every channel of the machine runs until none can go on
        (a token no channel has rings nothing more than that, as it wakes no channel on hardware)."""
        self.scheduler.run()

    def launch_stalled(self) -> None:
        """A channel's launch did not end in its slice (called under the scheduler's lock): the worker goes on."""
        if self._worker is None and not _exiting.is_set():
            self._worker = threading.Thread(target=_work, args=(weakref.ref(self),), daemon=True,
                                            name=f"usergpu-nv-gpu{self.index}")
            _workers.add(self._worker)
            self._worker.start()

    def launching(self) -> bool:
        """Whether one of the GPU's channels has a launch under way (a hung or stopped channel's is over)."""
        return any(c.launching for c in self.channels)

    def timestamp(self) -> int:
        """The GPU clock in ns: monotonic, and strictly increasing from one reading to the next."""
        self._clock = max(time.monotonic_ns() - self._behind, self._clock + 1)
        return self._clock

    @contextlib.contextmanager
    def modelled(self, seconds: float) -> Iterator[None]:
        """Work the board does in seconds: the clock moves by that much over it, whatever the host took."""
        start = time.perf_counter()
        yield
        self.account(time.perf_counter() - start, seconds)

    def account(self, taken: float, seconds: float) -> None:
        """Work the mock took `taken` seconds of its time for is the board's `seconds`: the clock falls behind the
        host's by the difference, or the mock waits out the rest (the clock never runs ahead)."""
        if taken < seconds:
            time.sleep(seconds - taken)
        else:
            self._behind += int((taken - seconds) * 1e9)

    # ---- what the channels report ----------------------------------------------------------------------------
    def fault(self, address: int, access: str, channel: Channel, kernel: str = "") -> bool:
        """An access the MMU refused (recorded); False for a fault that is no memory access (a trap)."""
        if access not in ACCESS_TYPE:
            return False
        self.mmu_faults.append(MMUFault(address, FAULT_TYPE_PTE, ACCESS_TYPE[access], channel.token, kernel))
        return True

    def hung(self, channel: Channel, hang: GPUHang) -> None:
        self.hangs.append((channel, hang))

    def stopped(self, channel: Channel, code: int, message: str) -> None:
        self.errors.append((channel, code, message))

    def interrupted(self, channel: Channel) -> None:
        for handler in self.interrupt_handlers:
            handler(channel)


def _work(ref: weakref.ref) -> None:
    """The worker of the GPU ref names: the machine's channels run a slice at a time while one of the GPU's has a
    launch under way."""
    try:
        while not _exiting.is_set():
            time.sleep(GAP)
            gpu = ref()
            if gpu is None:
                return
            with gpu.lock, gpu.scheduler.lock:
                if _exiting.is_set() or not gpu.launching():
                    gpu._worker = None
                    return
                try:
                    gpu.scheduler.run()
                except Exception as e:  # not a channel's stop (the RM reports those): the work cannot go on
                    print(f"usergpu mock: GPU {gpu.index} stopped running its channels: {e!r}", file=sys.stderr)
                    gpu._worker = None
                    return
            del gpu
    finally:
        _workers.discard(threading.current_thread())


@atexit.register
def _stop_workers() -> None:
    """At exit the workers end (each after its slice), before the interpreter tears down what they use."""
    _exiting.set()
    for worker in list(_workers):
        worker.join(JOIN)
