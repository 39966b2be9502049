"""A GPU device behind any interface: the device string picks the driver (KFD or AM) and, for MOCK interfaces, the
mock beneath the HAL. `Device("MOCKKFD+AMD")` and `Device("KFD+AMD")` run the same driver and runtime code, as do
`Device("MOCKPCI+AMD")` and `Device("PCI+AMD")`."""

from __future__ import annotations

import os
import tempfile

from usergpu.drivers.amd.am.driver import AM
from usergpu.drivers.amd.kfd import KFD
from usergpu.drivers.hal import HAL, MockHAL
from usergpu.emu.amd.soc import TIMESTAMP_HZ, register_address
from usergpu.errors import DeviceNotFound
from usergpu.runtime.aql import AQLQueue
from usergpu.runtime.memory import Buffer
from usergpu.runtime.pm4 import ComputeQueue
from usergpu.runtime.profile import Span
from usergpu.runtime.profiler import Profiler
from usergpu.runtime.sdma import CopyQueue, SDMAPackets
from usergpu.runtime.signal import Signal

INTERFACES = ("KFD+AMD", "MOCKKFD+AMD", "PCI+AMD", "MOCKPCI+AMD")
ARENA = 1 << 20
STAGING = 16 << 20  # bytes of host-visible memory a large copy goes through, chunk by chunk
_machines: dict[tuple, MockHAL] = {}  # one mock machine per (interface, arch, GPU count, MOCKPCI_DIR)


def mock_hal(arch: str | None = None, count: int | None = None, interface: str = "MOCKKFD+AMD") -> MockHAL:
    """The HAL of this process's mock machine with MOCKGPU_COUNT GPUs of MOCKGPU_ARCH (made on first use): amdkfd
    and its GPUs (MOCKKFD+AMD), or GPU boards on the PCI bus (MOCKPCI+AMD), whose state other processes share."""
    arch = arch or os.environ.get("MOCKGPU_ARCH", "gfx1100")
    count = count or int(os.environ.get("MOCKGPU_COUNT", "1"))
    key: tuple = (interface, arch, count)
    if interface == "MOCKPCI+AMD":  # one HAL per machine folder: two would make two drivers of one board
        from usergpu.emu.amd.mock.pci_machine import folder

        key = (interface, arch, count, folder(arch))
    if key not in _machines:
        if interface == "MOCKPCI+AMD":
            from usergpu.emu.amd.mock.pci_machine import machine

            _machines[key] = machine(arch, count)
        else:
            from usergpu.emu.amd.mock.kfd import MockKFD

            hal = MockHAL(tempfile.mkdtemp(prefix="usergpu-mock-"))
            hal.kfd = MockKFD(hal, arch, count)
            _machines[key] = hal
    return _machines[key]


def parse(device: str | None) -> tuple[str, int]:
    """'MOCKKFD+AMD:1' -> ('MOCKKFD+AMD', 1); None or '' reads $DEV; 'AMD' is the first real interface."""
    device = device or os.environ.get("DEV", "AMD")
    name, _, index = device.partition(":")
    name = name.upper()
    if name == "AMD":
        name = "KFD+AMD"
    if name not in INTERFACES:
        raise DeviceNotFound(f"device {device!r}: this build offers {', '.join(INTERFACES)}")
    return name, int(index or 0)


class Device:
    """A GPU: memory, queues, signals, programs. Waits longer than `timeout` seconds raise GPUHang."""

    def __init__(self, device: str | None = None, timeout: float = 30.0, queue: str = "pm4"):
        """queue: where kernels go, "pm4" (a PM4 compute queue, registers programmed by the runtime) or "aql" (an
        AQL queue, the CP sets dispatches up from the kernel descriptor)."""
        if queue not in ("pm4", "aql"):
            raise DeviceNotFound(f"queue {queue!r}: kernels run on a pm4 or an aql queue")
        self.name, self.index = parse(device)
        self.hal = mock_hal(interface=self.name) if self.name.startswith("MOCK") else HAL()
        self.driver = AM.open(self.hal, self.index) if self.name.endswith("PCI+AMD") else KFD(self.hal, self.index)
        self.arch, self.timeout, self.clock_hz = self.driver.arch, timeout, TIMESTAMP_HZ
        self.event_page = self.driver.alloc(8 * 4096, "gtt")
        self.event = self.driver.create_event(self.event_page)
        self.compute, self.copy, self.aql = ComputeQueue(self), CopyQueue(self), AQLQueue(self)
        self.queue_kind = queue
        self.timeline = Signal(self)  # the device's own: each submission bumps it
        self.timeline_value = 0
        self._pending: list[tuple[str, str, int, dict]] = []  # launches whose timestamps are still to be read
        self._spans: list[Span] = []
        self._arena = self.driver.alloc(ARENA, "gtt")
        self._arena_next = 0
        self._staging = None
        self.profiler = Profiler.from_env(self)

    def profile(self, sqtt: bool = True, counters: list[str] | tuple[str, ...] = (), **knobs) -> Profiler:
        """Profile the kernels launched from now on (thread traces, the named counters); the Profiler, whose
        write(directory) makes the capture. knobs: buffer_bytes, itrace_se_mask, slots."""
        self.synchronize()
        self.profiler = Profiler(self, sqtt, counters, **knobs)
        return self.profiler

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
        """Make the device's queues anew (after a hang): the timeline counts everything submitted as done."""
        for q in (self.compute, self.copy, self.aql):
            self.driver.destroy_queue(q.queue)
            q.create()
        self.timeline.value = self.timeline_value

    def staged(self, nbytes: int):
        """(offset, staging buffer) for each chunk of a large copy: host-visible memory the SDMA engine reads or
        writes, made on first use."""
        if self._staging is None:
            self._staging = self.driver.alloc(STAGING, "gtt")
        for off in range(0, nbytes, STAGING):
            yield off, self._staging

    def sdma_copy(self, dst: int, src: int, size: int) -> None:
        """Copy on the SDMA queue and wait for it."""
        value = self.next_timeline_value()
        self.copy.submit(SDMAPackets().copy(dst, src, size).signal(self.timeline, value, self.event))
        self.timeline.wait(value)

    def alloc(self, size: int, kind: str = "vram") -> Buffer:
        return Buffer(self, size, kind)

    def load(self, code_object: bytes):
        """A code object loaded into GPU memory: a Program, its kernels callable."""
        from usergpu.runtime.program import Program

        return Program(self, code_object)

    def signal(self, value: int = 0) -> Signal:
        return Signal(self, value)

    def synchronize(self) -> None:
        """Wait for all submitted work."""
        self.timeline.wait(self.timeline_value)
        if self.profiler:
            self.profiler.collect()
        for name, queue, times, args in self._pending:  # (start, end) GPU timestamps, 64-bit each
            start, end = self.arena_view(times, 16).cast("Q")
            self._spans.append(Span(name, start / self.clock_hz, (end - start) / self.clock_hz, {"queue": queue,
                                                                                               **args}))
        self._pending.clear()

    def profiled(self, name: str, queue: str, times: int, args: dict) -> None:
        """A launch whose (start, end) timestamps the GPU writes at times, read at the next synchronize."""
        self._pending.append((name, queue, times, args))

    def spans(self) -> list[Span]:
        """What the device's queues did, in submission order, from the GPU's timestamps (after synchronizing)."""
        self.synchronize()
        return list(self._spans)

    def close(self) -> None:
        """Let the GPU go: the device's queues, then AM's lock (another process may drive the board then) or KFD's
        files."""
        for q in (self.compute, self.copy, self.aql):
            self.driver.destroy_queue(q.queue)
        self.driver.close()

    def __repr__(self) -> str:
        return f"Device({self.name}:{self.index}, {self.arch})"
