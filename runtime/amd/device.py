"""An AMD GPU behind KFD (amdgpu's /dev/kfd) or AM (usergpu's userspace PCI driver): PM4 compute, AQL and SDMA
queues, signals as amd_signal_t, programs as ELF code objects, the SQTT/PMC profiler. What is not AMD's is the
core Device's (runtime/device.py)."""

from __future__ import annotations

import time

from usergpu.drivers.amd.am.driver import AM
from usergpu.drivers.amd.kfd import KFD
from usergpu.drivers.memobj import Memory
from usergpu.errors import DeviceNotFound, GPUFault, GPUHang
from usergpu.isa.amd.hw.soc import TIMESTAMP_HZ, register_address
from usergpu.runtime.amd.aql import AQLQueue
from usergpu.runtime.amd.pm4 import FIRST_XCC, ComputeQueue, Packets
from usergpu.runtime.amd.profiler import Profiler
from usergpu.runtime.amd.program import Program
from usergpu.runtime.amd.sdma import CopyQueue, SDMAPackets
from usergpu.runtime.amd.signal import AMDSignal
from usergpu.runtime.device import Device


class AMDDevice(Device):
    """An AMD GPU: memory, a PM4 compute, an AQL and an SDMA queue, signals, code-object programs."""

    clock_hz = TIMESTAMP_HZ
    signal_class = AMDSignal
    program_class = Program

    def __init__(self, device: str | None = None, timeout: float = 30.0, queue: str | None = None):
        """queue: where kernels go, "pm4" (a PM4 compute queue, registers programmed by the runtime) or "aql" (an
        AQL queue, the CP sets dispatches up from the kernel descriptor); by default pm4, and aql on a GPU of
        several XCCs (whose XCCs split an AQL dispatch's workgroups, where a PM4 one runs on the first XCC alone:
        pm4.py), as ROCr and tinygrad choose there."""
        if queue not in (None, "pm4", "aql"):
            raise DeviceNotFound(f"queue {queue!r}: kernels run on a pm4 or an aql queue")
        super().__init__(device, timeout)
        self.xccs = self.driver.properties.get("num_xcc", 1) if isinstance(self.driver, KFD) else 1
        self.event_page = self.memory(8 * 4096, "gtt")
        self.event = self.driver.create_event(self.event_page)
        self.compute, self.copy, self.aql = ComputeQueue(self), CopyQueue(self), AQLQueue(self)
        self.queue_kind = queue or ("aql" if self.xccs > 1 else "pm4")
        self.profiler = Profiler.from_env(self)

    def open_driver(self):
        return AM.open(self.hal, self.index) if self.name.endswith("PCI+AMD") else KFD(self.hal, self.index)

    def open_queues(self) -> None:
        for q in (self.compute, self.copy, self.aql):
            q.create()

    def close_queues(self) -> None:
        for q in (self.compute, self.copy, self.aql):
            self.driver.destroy_queue(q.queue)

    def give_back(self, mem: Memory) -> None:
        (self.driver.release_event_page if mem is self.event_page else self.driver.free)(mem)

    def profile(self, sqtt: bool = True, counters: list[str] | tuple[str, ...] = (), **knobs) -> Profiler:
        """Profile the kernels launched from now on (thread traces, the named counters); the Profiler, whose
        write(directory) makes the capture. knobs: buffer_bytes, itrace_se_mask, slots."""
        self.synchronize()
        if self.profiler:
            self.profiler.release()
        self.profiler = Profiler(self, sqtt, counters, **knobs)
        return self.profiler

    def packets(self) -> Packets:
        """PM4 packets in the device's encodings."""
        return Packets(self.arch)

    def first_xcc(self, packets: list[int]) -> list[int]:
        """The packets, to run on the first XCC alone where the GPU has several (PRED_EXEC: inside an IB)."""
        return self.packets().pred_exec(FIRST_XCC, packets) if self.xccs > 1 else packets

    def sdma_packets(self) -> SDMAPackets:
        """SDMA packets in the device's encodings."""
        return SDMAPackets(self.arch)

    def copy_packets(self, dst: int, src: int, size: int, value: int) -> SDMAPackets:
        return self.sdma_packets().copy(dst, src, size).signal(self.timeline, value, self.event)

    def register_address(self, name: str) -> int:
        """A GC register's dword address on this device."""
        return register_address(self.arch, name)

    def poll(self) -> None:
        """Wait a little for the device's event (the GPU goes on meanwhile). A fault or a hang the GPU reports
        stops the kernel it names; the queues are made anew, so the next launch runs at once."""
        try:
            if self.driver.wait_events([self.event], timeout_ms=10) is None:
                time.sleep(0.001)
        except (GPUFault, GPUHang) as e:
            raise self.stopped(e) from None

    def span_times(self, times: int) -> tuple[int, int]:
        """A launch's (start, end) GPU timestamps: two 64-bit words at times."""
        start, end = self.arena_view(times, 16).cast("Q")
        return start, end
