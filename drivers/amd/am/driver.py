"""AM as the runtime's driver (PCI+AMD, MOCKPCI+AMD): the same calls the KFD driver answers — memory, queues,
events — on a GPU AM brought up itself.

Memory: VRAM from AM's allocator, mapped into the GPU's page tables at the address the CPU maps it at through BAR0
(the whole of VRAM is visible with resizable BAR), so one address serves both, as with KFD. With the function bound
to vfio-pci, "gtt" memory is this process's own, mapped for the GPU through the IOMMU; through sysfs it is VRAM.
Queues take a hardware slot (MEC HQD, SDMA ring) and a doorbell in BAR2. Events are interrupts: an end-of-pipe or
SDMA trap carries the event's id as its context id, which the IH ring reports, as do the GC hub's VM faults (raised
as VMFault from the wait that finds them)."""

from __future__ import annotations

import ctypes
import time

from usergpu.drivers.amd.am.device import AMDevice
from usergpu.drivers.amd.am.gfx import EOP_BYTES
from usergpu.drivers.amd.am.gmc import RWX
from usergpu.drivers.amd.am.nbio import FlushedDoorbells
from usergpu.drivers.amd.handles import Queue, reserve, unreserve
from usergpu.drivers.devices import GPU_CLASSES, gfx_arch
from usergpu.drivers.hal import (
    HAL,
    MAP_FIXED,
    MAP_SHARED,
    PROT_READ,
    PROT_WRITE,
)
from usergpu.drivers.memobj import Memory
from usergpu.drivers.pci import PCIDevice, SysfsPCIDevice, pci_devices
from usergpu.drivers.remote.client import remote_functions
from usergpu.drivers.vfio import VFIOPCIDevice, bound_to_vfio
from usergpu.errors import DeviceNotFound, DriverError
from usergpu.hostmem import page_align
from usergpu.isa.amd.hw import ih as _ih
from usergpu.isa.amd.hw import vm as _vm

# GC versions whose ISA target is not their own number (kgd2kfd_probe's gfx_target_version)
TARGET_VERSIONS = {(9, 4, 3): 90402, (9, 4, 4): 90402}


def node_properties(gc_version: tuple[int, int, int], gc: dict[str, int]) -> dict[str, int]:
    """The node properties the runtime reads (as amdkfd's topology names them) from the discovery's GC table:
    gc_info v1 (RDNA: WGPs of two CUs, two SIMDs a CU) or v2 (CDNA: CUs per shader array, four SIMDs a CU). AM
    runs its queues on XCC 0, so the node is one XCC's."""
    major, minor, rev = gc_version
    if "cu_per_sh" in gc:
        cus_per_sa, sas, simds = gc["cu_per_sh"], gc["sh_per_se"], 4
    else:
        cus_per_sa, sas, simds = 2 * (gc["wgp0_per_sa"] + gc["wgp1_per_sa"]), gc["sa_per_se"], 2
    arrays = gc["se"] * sas
    return {"gfx_target_version": TARGET_VERSIONS.get(gc_version, major * 10000 + minor * 100 + rev), "num_xcc": 1,
            "array_count": arrays, "simd_arrays_per_engine": sas,
            "cu_per_simd_array": cus_per_sa, "simd_per_cu": simds, "simd_count": simds * cus_per_sa * arrays,
            "max_waves_per_simd": gc["max_waves_per_simd"], "wave_front_size": gc["wave_size"],
            "lds_size_in_kb": gc["lds_size"], "max_slots_scratch_cu": gc["max_scratch_slots_per_cu"]}


def amd_gpus(hal: HAL) -> list[PCIDevice]:
    """The AMD GPU functions of the machine (display or processing-accelerator class), in address order, then
    those of the remote servers the HAL names (REMOTE)."""
    found = pci_devices(hal, 0x1002) + remote_functions(hal.remote_servers(), 0x1002)
    return [d for d in found if d.config_read(8) >> 24 in GPU_CLASSES]


class AM:
    """One GPU driven by this process. `AM.open` shares it between the process's Devices: AM's lock is the
    process's, and two drivers of one board in a process would fight over its queues and page tables."""

    _open: dict[tuple[int, str], list] = {}  # (id of the HAL, bus) -> [driver, users]

    @classmethod
    def open(cls, hal: HAL, index: int = 0) -> AM:
        gpus = amd_gpus(hal)
        key = (id(hal), gpus[index].name if index < len(gpus) else str(index))
        if key not in cls._open:
            cls._open[key] = [cls(hal, index), 0]
        cls._open[key][1] += 1
        return cls._open[key][0]

    def __init__(self, hal: HAL, index: int = 0):
        gpus = amd_gpus(hal)
        if index >= len(gpus):
            raise DeviceNotFound(f"PCI+AMD GPU {index}: the machine has {len(gpus)} AMD GPU functions")
        self.hal, self.pci = hal, gpus[index]
        if isinstance(self.pci, SysfsPCIDevice) and bound_to_vfio(hal, self.pci.name):  # the IOMMU maps system memory
            self.pci = VFIOPCIDevice(hal, self.pci.name)
        self.dev = AMDevice(self.pci, hal)
        try:
            self.dev.boot()
            self.properties = node_properties(self.dev.gc_version, self.dev.gc_info)
            self.arch = gfx_arch(self.properties["gfx_target_version"])
            self._vram = self.pci.bar_file(0)
            self._doorbells = FlushedDoorbells(self.pci.mmio(2, width=8), self.dev.nbio)
        except BaseException:
            self.dev.close()
            raise
        self.events: dict[int, bool] = {}  # event id -> signaled
        self.system: set[int] = set()  # the addresses of system memory mapped for the GPU

    # ---- memory -----------------------------------------------------------------------------------------------------
    def alloc(self, size: int, kind: str = "vram", uncached: bool = False) -> Memory:
        """Memory mapped for the CPU and the GPU (page tables) at one address, cleared: VRAM through BAR0, or for
        "gtt" with VFIO this process's pages, which the IOMMU maps at the same address (without VFIO, "gtt" is
        VRAM too)."""
        if kind not in ("vram", "gtt"):
            raise DriverError(f"alloc {kind}", 0, "PCI+AMD maps VRAM and, with VFIO, system memory")
        size = page_align(size)
        if kind == "gtt" and self.pci.can_dma:
            va = reserve(self.hal, size, private=True)
            self.pci.dma_map(va, va, size)
            self.dev.gmc.map(va, va, size, RWX | _vm.SYSTEM | _vm.SNOOPED)
            self.dev.gmc.flush()
            self.system.add(va)
            return Memory(va, size, va, kind)
        address = self.dev.allocator.alloc(size)
        va = reserve(self.hal, size)
        self.hal.mmap(self._vram[0], size, self._vram[1] + address, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, va)
        ctypes.memset(va, 0, size)  # cleared, as amdgpu clears VRAM it hands out: no earlier owner's data shows
        self.dev.gmc.map(va, address, size)
        self.dev.gmc.flush()
        self.dev.account()
        return Memory(va, size, address, kind)

    def free(self, mem: Memory) -> None:
        self.dev.gmc.unmap(mem.va, mem.size)
        self.dev.gmc.flush()
        if mem.va in self.system:
            self.system.discard(mem.va)
            self.pci.dma_unmap(mem.va, mem.size)
        else:
            self.dev.allocator.free(mem.handle)
            self.dev.account()
        unreserve(self.hal, mem.va, mem.size)

    # ---- queues -----------------------------------------------------------------------------------------------------
    def create_queue(self, kind: str, ring: Memory, read_pointer: int, write_pointer: int) -> Queue:
        """A queue (pm4, aql: a MEC slot with an EOP buffer; sdma: an SDMA engine's ring) on ring."""
        if kind == "sdma":
            doorbell = self.dev.sdma.create_queue(ring.va, ring.size, read_pointer, write_pointer)
            return Queue(doorbell, self._doorbells, doorbell)
        eop = self.alloc(EOP_BYTES)
        try:
            doorbell = self.dev.gfx.create_queue(kind == "aql", ring.va, ring.size, read_pointer, write_pointer,
                                                 eop.va)
        except BaseException:
            self.free(eop)
            raise
        return Queue(doorbell, self._doorbells, doorbell, (eop,))

    def destroy_queue(self, queue: Queue) -> None:
        """Stop a queue; faults reported before (the queue's own, as a queue is made anew after one) are dropped."""
        self._interrupts()
        if queue.buffers:
            self.dev.gfx.destroy_queue(queue.queue_id)
        else:
            self.dev.sdma.destroy_queue(queue.queue_id)
        for mem in queue.buffers:
            self.free(mem)

    # ---- events -----------------------------------------------------------------------------------------------------
    def create_event(self, event_page: Memory | None = None, auto_reset: bool = True) -> int:
        """An event id: what a RELEASE_MEM's or SDMA TRAP's context id names, reported through the IH ring."""
        event = max(self.events, default=0) + 1
        self.events[event] = False
        return event

    def release_event_page(self, mem: Memory) -> None:
        """An event page is memory like any other here."""
        self.free(mem)

    def wait_events(self, event_ids: list[int], timeout_ms: int, wait_for_all: bool = False) -> list | None:
        """Poll the IH ring until the events are signaled (all, or any); their ids, or None on a timeout."""
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            fault = self._interrupts()
            if fault is not None:
                raise fault
            done = [e for e in event_ids if self.events.get(e)]
            if len(done) == len(event_ids) if wait_for_all else done:
                for e in done:
                    self.events[e] = False
                self.pci.sync_for_cpu(0)
                return done
            if time.monotonic() >= deadline:
                self.pci.sync_for_cpu(0)
                return None
            time.sleep(0.0005)

    def _interrupts(self):
        """Take the IH ring's new entries: events signaled, and the first VM fault's error (None if none)."""
        fault = None
        for entry in self.dev.ih.poll():
            source = _ih.NAMES.get((entry["client_id"], entry["src_id"]))
            if source == "UTCL2_FAULT":
                fault = fault or self.dev.gmc.fault(*_ih.fault_address(entry["src_data"]))
            elif source is not None and entry["src_data"][0] in self.events:
                self.events[entry["src_data"][0]] = True
        return fault

    def close(self) -> None:
        """Let the GPU go (once the process's last user of a shared driver closes it)."""
        key = (id(self.hal), self.pci.name)
        if self._open.get(key, [None])[0] is self:
            self._open[key][1] -= 1
            if self._open[key][1]:
                return
            del self._open[key]
        self.dev.close()
