"""An NVIDIA GPU behind the kernel driver's RM interface: `Device("MOCK+NV")` and `Device("NVK+NV")` run the same
driver (drivers/nv) and runtime code; only the HAL differs. What is not vendor-specific (memory accounting, the
kernel-argument arena, the timeline, spans, programs kept for launch) is the AMD Device's; the queues are a
compute and a copy GPFIFO channel, the signals semaphores with ns timestamps, the programs cubins."""

from __future__ import annotations

import time
from collections import OrderedDict, deque

from usergpu.drivers.hal import HAL
from usergpu.drivers.nv.gpu import NV
from usergpu.errors import DeviceNotFound, Error, GPUFault, GPUHang
from usergpu.runtime.device import ARENA, SPANS, Device, parse
from usergpu.runtime.gpfifo import COMPUTE, COPY, GPFIFOQueue, Pushbuffer
from usergpu.runtime.signal import NVSignal

GPFIFO_ENTRIES = 1024
# where the generic address space shows shared and local memory: far above every allocation (all below 1 TiB)
WINDOWS = (0x7294_0000_0000, 0x7293_0000_0000)
ACCESS = {0: "read", 1: "write", 2: "atomic", 3: "prefetch", 4: "atomic"}  # NV_PFAULT_ACCESS_TYPE_VIRT_* (dev_fault.h)
FAULT_TYPES = {0: "no PDE", 1: "PDE size", 2: "no PTE", 3: "VA limit violation", 4: "unbound instance block",
               5: "privilege violation", 6: "read-only page", 7: "write-only page"}  # NV_PFAULT_FAULT_TYPE_*


class NVDevice(Device):
    """An NVIDIA GPU: memory, a compute and a copy channel, semaphores, cubin programs."""

    def __init__(self, device: str | None = None, timeout: float = 30.0, queue: str | None = None,
                 gpfifo_entries: int = GPFIFO_ENTRIES):
        if queue not in (None, "gpfifo"):
            raise DeviceNotFound(f"queue {queue!r}: an NVIDIA GPU runs kernels on its GPFIFO channel")
        self.closed = False
        self._memory = {}
        self._programs = OrderedDict()
        self.name, self.index = parse(device)
        if self.name.startswith("MOCK"):
            from usergpu.emu.nv.mock.machine import mock_nv_hal

            self.hal = mock_nv_hal()
        else:
            self.hal = HAL()
        self.driver = NV(self.hal, self.index)
        self.arch, self.timeout, self.clock_hz = self.driver.arch, timeout, 1e9  # the GPU timer counts ns
        self.xccs, self.queue_kind, self.windows = 1, "gpfifo", WINDOWS
        self.local_per_thread, self._local = 0, None  # local memory (stacks) each thread gets, and its buffer
        self.entries = gpfifo_entries
        self.timeline = NVSignal(self)
        self.timeline_value = 0
        self._pending = []
        self._spans = deque(maxlen=SPANS)
        self._arena = self.memory(ARENA, "gtt")
        self._arena_next = 0
        self._staging = None
        self.profiler = None
        self.compute, self.copy = GPFIFOQueue(self, "compute"), GPFIFOQueue(self, "copy")
        self.channels = None
        self._open_channels()

    def _open_channels(self) -> None:
        """The channel group, its objects bound to their subchannels, the shader windows set; waited for."""
        self.channels = self.driver.create_channels(self.entries)
        ids = self.driver.class_ids
        value = self.next_timeline_value()
        setup = Pushbuffer().bind(COMPUTE, ids["compute"]).windows(*self.windows)
        if self._local is not None:
            setup.local_memory(self._local.va, self._local_per_tpc)
        self.compute.submit(setup.signal(self.timeline, value))
        self.copy.submit(Pushbuffer().bind(COPY, ids["copy"]).signal(self.timeline, value))
        self.timeline.wait(value)

    def ensure_local_memory(self, per_thread: int) -> None:
        """Local memory (stacks, spills) of per_thread bytes for every thread the GPU can hold at once, as the
        compute class wants it: a buffer for all TPCs and the bytes each TPC may use (per thread rounded to 32,
        a warp's to 512, a TPC's to 32 KiB)."""
        if per_thread <= self.local_per_thread:
            return
        gr = self.driver.gr
        per_thread = -(-per_thread // 32) * 32
        per_warp = -(-per_thread * 32 // 0x200) * 0x200
        per_tpc = -(-per_warp * gr["MAX_WARPS_PER_SM"] * gr["LITTER_NUM_SM_PER_TPC"] // 0x8000) * 0x8000
        self.synchronize()  # the launches before may still use the old buffer
        if self._local is not None:
            self.release(self._local)
        self._local = self.memory(per_tpc * gr["LITTER_NUM_TPC_PER_GPC"] * gr["LITTER_NUM_GPCS"], "vram")
        self.local_per_thread, self._local_per_tpc = per_thread, per_tpc
        value = self.next_timeline_value()
        self.compute.submit(Pushbuffer().local_memory(self._local.va, per_tpc).signal(self.timeline, value))
        self.timeline.wait(value)

    def profile(self, sqtt: bool = True, counters=(), **knobs):
        """Thread traces and counters are AMD's (SQTT, PMC): an NVIDIA device's profile is its spans."""
        raise Error(f"{self!r}: SQTT and PMC profiling is for AMD GPUs; an NVIDIA device's launches are timed by "
                    "the GPU's timestamps (Device.spans(), usergpu.runtime.profile)")

    def packets(self) -> Pushbuffer:
        """An empty pushbuffer: the HCQ verbs (signal, wait, timestamp, memory_barrier, copy, launch)."""
        return Pushbuffer()

    def span_times(self, times: int) -> tuple[int, int]:
        """The (start, end) timestamps of a launch: two semaphore reports, their timestamps at +8 and +24."""
        words = self.arena_view(times, 32).cast("Q")
        return words[1], words[3]

    def reset_queues(self) -> None:
        """The channel group made anew (after a fault or a hang): what it held is lost, and the timeline counts
        everything submitted as done."""
        self.driver.destroy_channels(self.channels)
        self.channels = None
        done = self.timeline.value
        self._pending = [p for p in self._pending if p[4] <= done]
        self.timeline.value = self.timeline_value
        self._open_channels()

    def poll(self) -> None:
        """Look at the channels' error notifiers (the RM writes them when it stops a channel); a stopped channel
        is a GPUFault (an MMU fault, with the address the debugger's MMU fault info gives) or a GPUHang, named
        after the kernel it stopped, and the channels are made anew."""
        for ch in (self.channels.compute, self.channels.copy):
            code = ch.error(self.driver.rm_module)
            if code is not None:
                raise self.stopped(self._channel_error(ch, code))
        time.sleep(0.0002)

    def _channel_error(self, ch, code: int) -> Error:
        rm = self.driver.rm_module
        name = next((k for k, v in vars(rm).items() if k.startswith("ROBUST_CHANNEL_") and v == code), str(code))
        if code == rm.ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT:
            faults = self.driver.mmu_faults(self.channels.debugger)
            address, kind, access = faults[-1] if faults else (0, 0, 0)  # this stop's: the newest
            return GPUFault(address, ACCESS.get(access, f"access {access}"), "?", 0, 0,
                            FAULT_TYPES.get(kind, f"fault type {kind}"),
                            where=f"the {ch.kind} channel stopped ({name})")
        return GPUHang(f"the GPU stopped the {ch.kind} channel: {name} ({code})")

    def dma_copy(self, dst: int, src: int, size: int) -> None:
        """Copy on the copy channel and wait for it."""
        value = self.next_timeline_value()
        with self.work(value):
            self.copy.submit(Pushbuffer().copy(dst, src, size).signal(self.timeline, value))
        self.timeline.wait(value)

    def load(self, code_object: bytes):
        """A cubin loaded into GPU memory: an NVProgram, its kernels callable."""
        from usergpu.runtime.nv_program import NVProgram

        if self.closed:
            raise DeviceNotFound(f"{self!r} is closed")
        return NVProgram(self, code_object)

    def signal(self, value: int = 0) -> NVSignal:
        return NVSignal(self, value)

    def close(self) -> None:
        """Let the GPU go: the channels, every memory object the device still holds, then the RM client and the
        driver's files. Closing twice does nothing."""
        if self.closed:
            return
        self.closed = True
        try:
            if self.channels is not None:
                self.driver.destroy_channels(self.channels)
            for mem in reversed(list(self._memory.values())):
                mem.freed = True
                self.driver.free(mem)
            self._memory.clear()
            self._programs.clear()
        finally:
            self.driver.close()
