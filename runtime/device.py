"""A GPU device behind any interface, vendor-neutral: the device string picks the vendor's device (the VENDORS
table) and, for MOCK interfaces, the mock machine beneath the HAL (emu.mock.open_hal, loaded only then). What every
vendor's device shares is here: memory accounting, the kernel-argument arena, the timeline and its spans, the
programs kept for launch, the end of a stopped queue and close. `Device("MOCKKFD+AMD")` and `Device("KFD+AMD")` run
the same driver and runtime code, as do `Device("MOCK+NV")` and `Device("NVK+NV")`; only the HAL differs."""

from __future__ import annotations

import abc
import contextlib
import hashlib
import importlib
import os
from collections import OrderedDict, deque
from collections.abc import Callable

from usergpu.drivers.hal import HAL
from usergpu.drivers.memobj import Memory
from usergpu.errors import DeviceNotFound, Error, GPUFault, GPUHang
from usergpu.runtime.buffer import Buffer, BufferError
from usergpu.runtime.signal import Signal
from usergpu.runtime.spans import Span

INTERFACES = ("KFD+AMD", "MOCKKFD+AMD", "PCI+AMD", "MOCKPCI+AMD", "NVK+NV", "MOCK+NV")
FIRST_REAL = {"AMD": "KFD+AMD", "NV": "NVK+NV"}  # the first real interface of a vendor
# a vendor -> the module and class of its device (imported when a device of it is first made)
VENDORS = {"AMD": ("usergpu.runtime.amd.device", "AMDDevice"), "NV": ("usergpu.runtime.nv.device", "NVDevice")}
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


class Device(abc.ABC):
    """A GPU: memory, queues, signals, programs. Waits longer than `timeout` seconds raise GPUHang.
    `Device(string)` makes the device of the string's vendor (VENDORS)."""

    clock_hz: float  # the rate of the GPU timestamps that spans are read from
    signal_class: type[Signal]
    program_class: type

    def __new__(cls, device: str | None = None, *args, **kwargs):
        if cls is Device:
            module, name = VENDORS[parse(device)[0].rpartition("+")[2]]
            cls = getattr(importlib.import_module(module), name)
        return super().__new__(cls)

    def __init__(self, device: str | None = None, timeout: float = 30.0):
        self.closed = False
        self._memory: dict[int, Memory] = {}  # every driver memory object the device holds, by address
        self._programs: OrderedDict[bytes, object] = OrderedDict()  # launch's loaded code objects, by digest
        self.name, self.index = parse(device)
        if self.name.startswith("MOCK"):
            from usergpu.emu.mock import open_hal

            self.hal = open_hal(self.name)
        else:
            self.hal = HAL()
        self.driver = self.open_driver()
        self.arch, self.timeout = self.driver.arch, timeout
        self.timeline_value = 0
        self.on_synchronize: dict[object, Callable[[], None]] = {}  # what must run once the GPU is idle (printf)
        self._pending: list[tuple[str, str, int, dict, int]] = []  # launches not yet read: name, queue, times, args,
        # and the timeline value they end at
        self._spans: deque[Span] = deque(maxlen=SPANS)
        self._arena = self.memory(ARENA, "gtt")
        self._arena_bytes = self._arena.view()  # made once: a launch takes several views of it
        self._arena_next = 0
        self._staging = None
        self.profiler = None
        self.timeline = self.signal()  # the device's own: each submission bumps it

    # ---- what each vendor's device says ---------------------------------------------------------------------------
    @abc.abstractmethod
    def open_driver(self):
        """The driver of this device's interface, over self.hal."""

    @abc.abstractmethod
    def open_queues(self) -> None:
        """The device's queues made (anew after a fault or a hang)."""

    @abc.abstractmethod
    def close_queues(self) -> None:
        """The device's queues given back to the driver."""

    @abc.abstractmethod
    def copy_packets(self, dst: int, src: int, size: int, value: int):
        """The work of a copy on the copy queue that signals the timeline with value."""

    @abc.abstractmethod
    def poll(self) -> None:
        """Wait a little while the GPU goes on; raise what the GPU reports stopped (self.stopped)."""

    @abc.abstractmethod
    def span_times(self, times: int) -> tuple[int, int]:
        """A launch's (start, end) GPU timestamps, from where it wrote them."""

    def give_back(self, mem: Memory) -> None:
        """A memory object returned to the driver at close."""
        self.driver.free(mem)

    # ---- the timeline and its arena -------------------------------------------------------------------------------
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
        return self._arena_bytes[off : off + size]

    @contextlib.contextmanager
    def work(self, value: int):
        """Around the submission of work that signals the timeline with value: if a queue refuses it or the GPU
        stops it there (a fault), the work is over and the timeline counts it done, so later waits do not wait."""
        try:
            yield
        except Error:
            self.timeline.value = max(self.timeline.value, value)
            raise

    # ---- a queue the GPU stopped ------------------------------------------------------------------------------------
    def reset_queues(self) -> None:
        """Make the device's queues anew (after a hang or a fault): what they held is lost, and the timeline counts
        everything submitted as done."""
        self.close_queues()
        done = self.timeline.value
        self._pending = [p for p in self._pending if p[4] <= done]  # the lost launches never wrote their times
        self.timeline.value = self.timeline_value
        self.open_queues()

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

    # ---- memory -----------------------------------------------------------------------------------------------------
    def staged(self, nbytes: int):
        """(offset, staging buffer) for each chunk of a large copy: host-visible memory the copy engine reads or
        writes, made on first use."""
        if self._staging is None:
            self._staging = self.memory(STAGING, "gtt")
        for off in range(0, nbytes, STAGING):
            yield off, self._staging

    def dma_copy(self, dst: int, src: int, size: int) -> None:
        """Copy on the copy queue and wait for it."""
        value = self.next_timeline_value()
        with self.work(value):
            self.copy.submit(self.copy_packets(dst, src, size, value))
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
        if mem.freed or self._memory.get(mem.va) is not mem:
            raise BufferError(f"memory of {mem.size} bytes at {mem.va:#x} was already freed")
        del self._memory[mem.va]
        mem.freed = True
        self.driver.free(mem)

    # ---- programs and signals ---------------------------------------------------------------------------------------
    def load(self, code_object: bytes):
        """A code object loaded into GPU memory: a Program, its kernels callable."""
        if self.closed:
            raise DeviceNotFound(f"{self!r} is closed")
        return self.program_class(self, code_object)

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
        return self.signal_class(self, value)

    # ---- spans ------------------------------------------------------------------------------------------------------
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
        done, self.on_synchronize = self.on_synchronize, {}
        for run in done.values():
            run()

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
        using one afterwards is a BufferError), then the driver (AM's lock, so another process may drive the
        board; KFD's or the RM's files). Closing twice does nothing."""
        if self.closed:
            return
        self.closed = True
        try:
            self.close_queues()
            for mem in reversed(list(self._memory.values())):
                mem.freed = True
                self.give_back(mem)
            self._memory.clear()
            self._programs.clear()
        finally:
            self.driver.close()

    def __repr__(self) -> str:
        return f"Device({self.name}:{self.index}, {self.arch})"
