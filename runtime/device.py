"""A GPU device behind any interface: the device string picks the driver (KFD or AM) and, for MOCK interfaces, the
mock beneath the HAL. `Device("MOCKKFD+AMD")` and `Device("KFD+AMD")` run the same driver and runtime code, as do
`Device("MOCKPCI+AMD")` and `Device("PCI+AMD")`."""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from collections import OrderedDict, deque

from usergpu.drivers.amd.am.driver import AM
from usergpu.drivers.amd.kfd import KFD
from usergpu.drivers.hal import HAL
from usergpu.drivers.memory import Memory
from usergpu.emu.amd.mock.machines import mock_hal
from usergpu.emu.amd.soc import TIMESTAMP_HZ, register_address
from usergpu.errors import DeviceNotFound, Error, GPUFault, GPUHang
from usergpu.runtime.aql import AQLQueue
from usergpu.runtime.memory import Buffer
from usergpu.runtime.pm4 import FIRST_XCC, ComputeQueue, Packets
from usergpu.runtime.profile import Span
from usergpu.runtime.profiler import Profiler
from usergpu.runtime.sdma import CopyQueue, SDMAPackets
from usergpu.runtime.signal import Signal

INTERFACES = ("KFD+AMD", "MOCKKFD+AMD", "PCI+AMD", "MOCKPCI+AMD", "NVK+NV", "MOCK+NV")
FIRST_REAL = {"AMD": "KFD+AMD", "NV": "NVK+NV"}  # the first real interface of a vendor
ARENA = 1 << 20
STAGING = 16 << 20  # bytes of host-visible memory a large copy goes through, chunk by chunk
SPANS = 4096  # the launches a Device remembers for spans() (the most recent): a long run holds memory flat
PROGRAMS = 32  # code objects a Device keeps loaded for launch (the least recently used is freed past this)
def parse(device: str | None) -> tuple[str, int]:
    """'MOCKKFD+AMD:1' -> ('MOCKKFD+AMD', 1); None or '' reads $DEV; 'AMD' and 'NV' are the first real interface
    of the vendor."""
    device = device or os.environ.get("DEV", "AMD")
    if not isinstance(device, str):
        raise DeviceNotFound(f"device {device!r}: a device string is IFACE+VENDOR[:index], e.g. 'MOCKKFD+AMD:0'")
    name, _, index = device.partition(":")
    name = name.upper()
    name = FIRST_REAL.get(name, name)
    if name not in INTERFACES:
        raise DeviceNotFound(f"device {device!r}: this build offers {', '.join(INTERFACES)}")
    if not (index or "0").isdigit():
        raise DeviceNotFound(f"device {device!r}: the index after ':' is a GPU number 0, 1, ...")
    return name, int(index or 0)


class Device:
    """A GPU: memory, queues, signals, programs. Waits longer than `timeout` seconds raise GPUHang. An NVIDIA
    device string makes an NVDevice (runtime/nv_device.py), which shares what is not vendor-specific."""

    def __new__(cls, device: str | None = None, *args, **kwargs):
        if cls is Device and parse(device)[0].endswith("+NV"):
            from usergpu.runtime.nv_device import NVDevice

            return super().__new__(NVDevice)
        return super().__new__(cls)

    def __init__(self, device: str | None = None, timeout: float = 30.0, queue: str | None = None):
        """queue: where kernels go, "pm4" (a PM4 compute queue, registers programmed by the runtime) or "aql" (an
        AQL queue, the CP sets dispatches up from the kernel descriptor); by default pm4, and aql on a GPU of
        several XCCs (whose XCCs split an AQL dispatch's workgroups, where a PM4 one runs on the first XCC alone:
        pm4.py), as ROCr and tinygrad choose there."""
        if queue not in (None, "pm4", "aql"):
            raise DeviceNotFound(f"queue {queue!r}: kernels run on a pm4 or an aql queue")
        self.closed = False
        self._memory: dict[int, Memory] = {}  # every driver memory object the device holds, by address
        self._programs: OrderedDict[bytes, object] = OrderedDict()  # launch's loaded code objects, by digest
        self.name, self.index = parse(device)
        self.hal = mock_hal(interface=self.name) if self.name.startswith("MOCK") else HAL()
        self.driver = AM.open(self.hal, self.index) if self.name.endswith("PCI+AMD") else KFD(self.hal, self.index)
        self.arch, self.timeout, self.clock_hz = self.driver.arch, timeout, TIMESTAMP_HZ
        self.xccs = self.driver.properties.get("num_xcc", 1) if isinstance(self.driver, KFD) else 1
        self.event_page = self.memory(8 * 4096, "gtt")
        self.event = self.driver.create_event(self.event_page)
        self.compute, self.copy, self.aql = ComputeQueue(self), CopyQueue(self), AQLQueue(self)
        self.queue_kind = queue or ("aql" if self.xccs > 1 else "pm4")
        self.timeline = Signal(self)  # the device's own: each submission bumps it
        self.timeline_value = 0
        self._pending: list[tuple[str, str, int, dict, int]] = []  # launches not yet read: name, queue, times, args,
        # and the timeline value they end at
        self._spans: deque[Span] = deque(maxlen=SPANS)
        self._arena = self.memory(ARENA, "gtt")
        self._arena_next = 0
        self._staging = None
        self.profiler = Profiler.from_env(self)

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

    def register_address(self, name: str) -> int:
        """A GC register's dword address on this device."""
        return register_address(self.arch, name)

    def next_timeline_value(self) -> int:
        self.timeline_value += 1
        return self.timeline_value

    def arena(self, size: int) -> int:
        """size bytes (64-byte aligned) of kernel-argument memory for a launch in flight."""
        size = -(-size // 64) * 64
        if self._arena_next + size > ARENA:
            self.synchronize()  # every launch that used the arena is done
            self._arena_next = 0
        va = self._arena.va + self._arena_next
        self._arena_next += size
        return va

    def arena_view(self, va: int, size: int) -> memoryview:
        off = va - self._arena.va
        return self._arena.view()[off : off + size]

    def reset_queues(self) -> None:
        """Make the device's queues anew (after a hang or a fault): what they held is lost, and the timeline counts
        everything submitted as done."""
        for q in (self.compute, self.copy, self.aql):
            self.driver.destroy_queue(q.queue)
            q.create()
        done = self.timeline.value
        self._pending = [p for p in self._pending if p[4] <= done]  # the lost launches never wrote their times
        self.timeline.value = self.timeline_value

    def poll(self) -> None:
        """Wait a little for the device's event (the GPU goes on meanwhile). A fault or a hang the GPU reports
        stops the kernel it names; the queues are made anew, so the next launch runs at once."""
        try:
            if self.driver.wait_events([self.event], timeout_ms=10) is None:
                time.sleep(0.001)
        except (GPUFault, GPUHang) as e:
            raise self.stopped(e) from None

    def stuck(self) -> str | None:
        """The oldest launch the timeline has not passed: the kernel a hang or a fault stopped (None: none)."""
        done = self.timeline.value
        return next((name for name, _, _, _, value in self._pending if value > done), None)

    def stopped(self, e: GPUFault | GPUHang) -> Error:
        """A fault or a hang the GPU reported while the device waited: named after the kernel it stopped, with
        the queues made anew so the next launch runs at once."""
        name = self.stuck()
        self.reset_queues()
        return e.named(name) if name else e

    def hang(self, what: str, timeout: float) -> GPUHang:
        """A wait that passed its timeout: the kernel it waited for (when a launch is pending) and how to give it
        longer; the queues are made anew."""
        name = self.stuck()
        self.reset_queues()
        return GPUHang(f"device hang detected: {what} after {timeout:g} s", name,
                       f"Device(timeout=...) allows longer (now {self.timeout:g} s)")

    def staged(self, nbytes: int):
        """(offset, staging buffer) for each chunk of a large copy: host-visible memory the SDMA engine reads or
        writes, made on first use."""
        if self._staging is None:
            self._staging = self.memory(STAGING, "gtt")
        for off in range(0, nbytes, STAGING):
            yield off, self._staging

    @contextlib.contextmanager
    def work(self, value: int):
        """Around the submission of work that signals the timeline with value: if a queue refuses it or the GPU
        stops it there (a fault), the work is over and the timeline counts it done, so later waits do not wait."""
        try:
            yield
        except Error:
            self.timeline.value = max(self.timeline.value, value)
            raise

    def dma_copy(self, dst: int, src: int, size: int) -> None:
        """Copy on the SDMA queue and wait for it."""
        value = self.next_timeline_value()
        with self.work(value):
            self.copy.submit(self.sdma_packets().copy(dst, src, size).signal(self.timeline, value, self.event))
        self.timeline.wait(value)

    def alloc(self, size: int, kind: str = "vram", at_end: bool = False) -> Buffer:
        """size bytes of device memory (kind vram or gtt); at_end places them at the end of their pages, so that a
        kernel touching a byte past them faults."""
        return Buffer(self, size, kind, at_end)

    def memory(self, size: int, kind: str = "gtt") -> Memory:
        """A driver memory object the device keeps account of (close gives back what is left)."""
        if self.closed:
            raise DeviceNotFound(f"{self!r} is closed")
        mem = self.driver.alloc(size, kind)
        self._memory[mem.va] = mem
        return mem

    def release(self, mem: Memory) -> None:
        """Give a memory object back to the driver (once: a second time is a BufferError)."""
        from usergpu.runtime.memory import BufferError

        if mem.freed or self._memory.get(mem.va) is not mem:
            raise BufferError(f"memory of {mem.size} bytes at {mem.va:#x} was already freed")
        del self._memory[mem.va]
        mem.freed = True
        self.driver.free(mem)

    def load(self, code_object: bytes):
        """A code object loaded into GPU memory: a Program, its kernels callable."""
        from usergpu.runtime.program import Program

        if self.closed:
            raise DeviceNotFound(f"{self!r} is closed")
        return Program(self, code_object)

    def program(self, code_object: bytes):
        """The code object loaded once for repeated launches: the Program kept for it (the least recently used of
        more than PROGRAMS is freed)."""
        key = hashlib.blake2b(code_object, digest_size=16).digest()
        if key in self._programs:
            self._programs.move_to_end(key)
            return self._programs[key]
        prog = self._programs[key] = self.load(code_object)
        if len(self._programs) > PROGRAMS:
            self._programs.popitem(last=False)[1].free()
        return prog

    def signal(self, value: int = 0) -> Signal:
        return Signal(self, value)

    def synchronize(self) -> None:
        """Wait for all submitted work."""
        self.timeline.wait(self.timeline_value)
        if self.profiler:
            self.profiler.collect()
        for name, queue, times, args, _ in self._pending:
            start, end = self.span_times(times)
            self._spans.append(Span(name, start / self.clock_hz, (end - start) / self.clock_hz, {"queue": queue,
                                                                                               **args}))
        self._pending.clear()

    def span_times(self, times: int) -> tuple[int, int]:
        """A launch's (start, end) GPU timestamps: two 64-bit words at times."""
        start, end = self.arena_view(times, 16).cast("Q")
        return start, end

    def profiled(self, name: str, queue: str, times: int, args: dict, value: int) -> None:
        """A launch whose (start, end) timestamps the GPU writes at times, read at the next synchronize; the
        timeline reaches value when it is done."""
        self._pending.append((name, queue, times, args, value))

    def last_span(self) -> Span:
        """The latest launch's span (after synchronizing)."""
        self.synchronize()
        return self._spans[-1]

    def spans(self) -> list[Span]:
        """What the device's queues did (the SPANS most recent launches), in submission order, from the GPU's
        timestamps (after synchronizing)."""
        self.synchronize()
        return list(self._spans)

    def close(self) -> None:
        """Let the GPU go: the device's queues, every memory object it still holds (buffers and programs too:
        using one afterwards is a BufferError), then AM's lock (another process may drive the board then) or
        KFD's files. Closing twice does nothing."""
        if self.closed:
            return
        self.closed = True
        try:
            for q in (self.compute, self.copy, self.aql):
                self.driver.destroy_queue(q.queue)
            for mem in reversed(list(self._memory.values())):
                mem.freed = True
                (self.driver.release_event_page if mem is self.event_page else self.driver.free)(mem)
            self._memory.clear()
            self._programs.clear()
        finally:
            self.driver.close()

    def __repr__(self) -> str:
        return f"Device({self.name}:{self.index}, {self.arch})"
