"""An NVIDIA GPU behind the kernel driver's RM interface: `Device("MOCK+NV")` and `Device("NVK+NV")` run the same
driver (drivers/nv) and runtime code; only the HAL differs. What is not vendor-specific (memory accounting, the
kernel-argument arena, the timeline, spans, programs kept for launch) is the core Device's; the queues are a
compute and a copy GPFIFO channel, the signals semaphores with ns timestamps, the programs cubins."""

from __future__ import annotations

import time

from usergpu.drivers.nv.gpu import NV
from usergpu.errors import DeviceNotFound, Error, GPUFault, GPUHang
from usergpu.runtime.device import Device
from usergpu.runtime.nv.gpfifo import COMPUTE, COPY, GPFIFOQueue, Pushbuffer
from usergpu.runtime.nv.program import NVProgram
from usergpu.runtime.nv.signal import NVSignal

GPFIFO_ENTRIES = 1024
# where the generic address space shows shared and local memory: far above every allocation (all below 1 TiB)
WINDOWS = (0x7294_0000_0000, 0x7293_0000_0000)
ACCESS = {0: "read", 1: "write", 2: "atomic", 3: "prefetch", 4: "atomic"}  # NV_PFAULT_ACCESS_TYPE_VIRT_* (dev_fault.h)
FAULT_TYPES = {0: "no PDE", 1: "PDE size", 2: "no PTE", 3: "VA limit violation", 4: "unbound instance block",
               5: "privilege violation", 6: "read-only page", 7: "write-only page"}  # NV_PFAULT_FAULT_TYPE_*


class NVDevice(Device):
    """An NVIDIA GPU: memory, a compute and a copy channel, semaphores, cubin programs."""

    clock_hz = 1e9  # the GPU timer counts ns
    signal_class = NVSignal
    program_class = NVProgram

    def __init__(self, device: str | None = None, timeout: float = 30.0, queue: str | None = None,
                 gpfifo_entries: int = GPFIFO_ENTRIES):
        if queue not in (None, "gpfifo"):
            raise DeviceNotFound(f"queue {queue!r}: an NVIDIA GPU runs kernels on its GPFIFO channel")
        self.entries, self.channels = gpfifo_entries, None
        self.local_per_thread, self._local = 0, None  # local memory (stacks) each thread gets, and its buffer
        super().__init__(device, timeout)
        self.xccs, self.queue_kind, self.windows = 1, "gpfifo", WINDOWS
        self.compute, self.copy = GPFIFOQueue(self, "compute"), GPFIFOQueue(self, "copy")
        self.open_queues()

    def open_driver(self) -> NV:
        return NV(self.hal, self.index)

    def open_queues(self) -> None:
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
                    "the GPU's timestamps (Device.spans(), usergpu.runtime.spans)")

    def packets(self) -> Pushbuffer:
        """An empty pushbuffer: the HCQ verbs (signal, wait, timestamp, memory_barrier, copy, launch)."""
        return Pushbuffer()

    def span_times(self, times: int) -> tuple[int, int]:
        """The (start, end) timestamps of a launch: two semaphore reports, their timestamps at +8 and +24."""
        words = self.arena_view(times, 32).cast("Q")
        return words[1], words[3]

    def close_queues(self) -> None:
        """The channel group given back (after a fault or a hang it is made anew: reset_queues)."""
        if self.channels is not None:
            self.driver.destroy_channels(self.channels)
            self.channels = None

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

    def copy_packets(self, dst: int, src: int, size: int, value: int) -> Pushbuffer:
        return Pushbuffer().copy(dst, src, size).signal(self.timeline, value)
