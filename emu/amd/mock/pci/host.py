"""A MOCKPCI+AMD machine as a driver in this process reaches it by mapping the boards' BARs itself (tinygrad's AM
behind its mock seam, DEV=MOCKPCI+AMD; usergpu's own drivers use MMIO views instead): its register BAR mapped and
trapped (mmio_trap: each read and write is the board's, at once), its doorbell BAR mapped as plain memory that a
doorbell agent watches (a queue's doorbell changing runs the boards' queues, and a stalled queue is retried while it
waits on memory the CPU writes), /proc/self/pagemap giving the physical addresses of the process's pages, which
the boards' DMA reaches as on a machine without an IOMMU (each board's IOMMU maps those addresses back to the
pages), and the boards' VRAM shown at its GPU addresses in the range the driver reserves (vram_at_va.py)."""

from __future__ import annotations

import struct
import threading

import numpy as np

from usergpu.autogen import vfio
from usergpu.emu.amd.mock.pci import vram_at_va
from usergpu.emu.mock import mmio_trap
from usergpu.emu.mock.scheduler import settle
from usergpu.emu.mock.tinygrad.agent import DoorbellAgent
from usergpu.hostmem import MAP_ANONYMOUS, MAP_SHARED, PAGE, PROT_NONE, os_mmap, view

FIRST_FRAME = 1 << 20  # the first page frame handed out (4 GiB up): clear of low memory and the MSI window
PM_PRESENT = 1 << 63  # a pagemap entry's present bit; bits 0-54 the frame (Documentation/admin-guide/mm/pagemap.rst)
DMA = vfio.VFIO_DMA_MAP_FLAG_READ | vfio.VFIO_DMA_MAP_FLAG_WRITE


class HostSide:
    """The machine's boards (each holds this as `host`), the lock their CPU-side calls and the agent share, and the
    page frames handed out so far."""

    def __init__(self, boards: list):
        self.boards = boards
        self.lock = threading.RLock()
        self.agent = DoorbellAgent(self.run, self.lock, self.rung)
        self.doorbells: dict[object, tuple[int, np.ndarray]] = {}  # board -> (address, words) of its doorbell BAR
        self.registers: list[tuple[int, int]] = []  # (address, length) of the register BAR mappings
        self.seen: dict[tuple[object, int], int] = {}  # (board, doorbell dword) -> the value the queues last ran on
        self.frames: dict[int, int] = {}  # virtual page -> page frame
        self.next_frame = FIRST_FRAME
        self.vram_at_va = vram_at_va.VRAMAtVA() if vram_at_va.enabled() else None

    def run(self) -> tuple[bool, bool]:
        with self.lock:
            return settle([(b.cp.scheduler, b.gpu) for b in self.boards])

    def rung(self) -> bool:
        """Whether a queue's doorbell changed since its queues last ran (the new values become the seen ones)."""
        rung = False
        for board, (_, words) in self.doorbells.items():
            for index, _ in board.cp.queues.values():
                value = int(words[index]) | int(words[index + 1]) << 32 if index + 1 < len(words) else 0
                if self.seen.get((board, index)) != value:
                    self.seen[board, index] = value
                    board.hdp.doorbell()
                    rung = True
        return rung

    def map_bar(self, board, bar: int, registers: bool, length: int, offset: int, prot: int, flags: int,
                address: int) -> int:
        """Map part of a board's register BAR (trapped) or doorbell BAR (watched; stores through memoryviews trapped)
        into this process."""
        mapped = os_mmap(address, length, prot, flags | MAP_SHARED | MAP_ANONYMOUS, -1, 0)
        if registers:
            def read32(at: int) -> int:
                with self.lock:
                    return board.bar_read(bar, offset + at)

            def write32(at: int, value: int) -> None:
                with self.lock:
                    board.bar_write(bar, offset + at, value)
            mmio_trap.track(mapped, length, *mmio_trap.dwords(read32, write32))
            self.registers.append((mapped, length))
        else:
            with self.lock:
                self.doorbells[board] = (mapped, np.frombuffer(view(mapped, length & ~3), np.uint32))
            self.agent.start()
            self.agent.trap(mapped, length)  # a doorbell stored through a memoryview runs the queues at once
        return mapped

    def unmapped(self, address: int, length: int) -> None:
        """A munmap (MockHAL's hook): the mappings in the range are gone, trapped or watched no more."""
        with self.lock:
            for at, n in [r for r in self.registers if address <= r[0] < address + length]:
                mmio_trap.untrack(at)
                self.registers.remove((at, n))
            for board in [b for b, (at, _) in self.doorbells.items() if address <= at < address + length]:
                del self.doorbells[board]
            if self.vram_at_va is not None:
                self.vram_at_va.unmapped(address, length)
        self.agent.unmapped(address, length)

    def mapped(self, address: int, length: int, prot: int, fd: int) -> None:
        """An mmap (MockHAL's hook): an anonymous PROT_NONE one reserves a range VRAM may show in."""
        if self.vram_at_va is not None:
            with self.lock:
                self.vram_at_va.mapped(address, length, fd == -1 and prot == PROT_NONE)

    def remapped(self, board, runs: list[list[int]]) -> None:
        """A board's page tables were walked anew (its GMC, under the lock): runs of [va, VRAM offset, bytes]."""
        if self.vram_at_va is not None:
            self.vram_at_va.show(board, board.memfd, runs)

    def pagemap(self, length: int, offset: int) -> bytes:
        """/proc/self/pagemap: 8 bytes a virtual page from offset / 8; a mapped page present with a frame (the same
        one each time it is asked), each new run of frames mapped for DMA on every board."""
        first, count = offset // 8, length // 8
        mapped = _mapped(first, count)
        with self.lock:
            run: list[int] = []
            for page in range(first, first + count):
                if mapped(page) and page not in self.frames:
                    run.append(page)
                else:
                    self._assign(run)
            self._assign(run)
            entries = [PM_PRESENT | self.frames[p] if p in self.frames and mapped(p) else 0
                       for p in range(first, first + count)]
        return struct.pack(f"<{count}Q", *entries)

    def _assign(self, run: list[int]) -> None:
        """Frames for a run of consecutive new pages, contiguous after those handed out, mapped for every board."""
        if not run:
            return
        frame, self.next_frame = self.next_frame, self.next_frame + len(run)
        for k, page in enumerate(run):
            self.frames[page] = frame + k
        for iommu in {id(b.iommu): b.iommu for b in self.boards}.values():  # boards in one VFIO container share one
            iommu.map(frame * PAGE, run[0] * PAGE, len(run) * PAGE, DMA)
        run.clear()


class Pagemap:
    """/proc/self/pagemap of the machine's host side (a device file: pread only)."""

    def __init__(self, host: HostSide):
        self.host = host

    def pread(self, length: int, offset: int) -> bytes:
        return self.host.pagemap(length, offset)


def _mapped(first: int, count: int):
    """Whether each virtual page of [first, first + count) is mapped in this process (/proc/self/maps)."""
    spans = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            lo, hi = (int(x, 16) // PAGE for x in line.split(maxsplit=1)[0].split("-"))
            if hi > first and lo < first + count:
                spans.append((lo, hi))
    return lambda page: any(lo <= page < hi for lo, hi in spans)
