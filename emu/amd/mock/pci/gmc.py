"""The mock GPU's MMU (GCVM, what the CP, shaders and SDMA see): on a TLB invalidation (VM_INVALIDATE_ENG*_REQ) it walks
VM context 0's page tables (four levels; on gfx9 also in the translate-further form, vm.py) from
VM_CONTEXT0_PAGE_TABLE_BASE_ADDR as the driver wrote them in VRAM and remaps the engines' memory to what they say:
every run of valid PTEs becomes a mapping of those VRAM pages at its virtual address, and a system-memory PTE (SYSTEM
set, an IO virtual address) one of the host memory the IOMMU maps there (vfio.py). An address no valid PTE maps — an
invalid entry, a PTE pointing outside VRAM or at system memory the IOMMU does not map — stays unmapped, so an access
there is a VM fault naming the address: the engine stops, the hub latches the fault (GCVM_L2_PROTECTION_FAULT_STATUS
and _ADDR, cleared through _CNTL) and raises the UTCL2 fault interrupt. Each hub acknowledges its invalidations in
VM_INVALIDATE_ENG*_ACK; MMHUB's tables are not walked (no mock engine sits behind it)."""

from __future__ import annotations

import numpy as np

from usergpu.emu.memory import Memory
from usergpu.hostmem import view
from usergpu.isa.amd.hw import ih as _ih
from usergpu.isa.amd.hw import vm as _vm

ENGINES = 18


class MMU:
    def __init__(self, board, gpu):
        self.board, self.gpu = board, gpu
        self.family = board.arch[:5]
        self.further = False  # the tables are gfx9's translate-further form (vm.py)
        self.rejected: list[tuple[int, int, str]] = []  # (VA, entry, why) of PTEs the last walk could not map
        self.runs: list[list[int]] = []  # [va, VRAM address, size] of the VRAM the last walk mapped
        self.system: list[list[int]] = []  # [va, host address, size] of system memory, merged like VRAM's runs
        self.status = _vm.FAULT_STATUS[self.family]
        self.vm = _vm.HUB_PREFIX[self.family]["GC"] + "VM_"  # the GC hub's VM registers' prefix
        gpu.fault_handlers.append(self.fault)
        board.on_write[board.address("GC", self.vm + "L2_PROTECTION_FAULT_CNTL")] = self._fault_cntl
        for hub, prefix in _vm.HUB_PREFIX[self.family].items():
            for eng in range(ENGINES):
                req = board.address(hub, f"{prefix}VM_INVALIDATE_ENG{eng}_REQ")
                ack = board.address(hub, f"{prefix}VM_INVALIDATE_ENG{eng}_ACK")
                board.on_write[req] = lambda value, ack=ack, walk=hub == "GC": self.invalidate(value, ack, walk)
                sem = board.address(hub, f"{prefix}VM_INVALIDATE_ENG{eng}_SEM")  # a read takes it: always free
                board.on_read[sem] = lambda sem=sem: board.regs.__setitem__(sem, 1)

    def invalidate(self, request: int, ack: int, walk: bool) -> None:
        """A request clears its VMIDs' ACK bits; each is set again once those VMIDs' translations are gone."""
        vmids = request & 0xFFFF
        self.board.regs[ack] &= 0xFFFFFFFF & ~vmids
        if walk and vmids & 1:  # VMID 0: the context AM uses
            self.gpu.mem = self.walk()
            if self.board.host is not None:
                self.board.host.remapped(self.board, self.runs)
        self.board.regs[ack] |= vmids

    def fault(self, address: int, access: str) -> None:
        """A translation failed: the first fault's status and page are latched (later ones only set MORE_FAULTS
        until the driver clears them) and the UTCL2 fault interrupt goes to the IH."""
        regs, at = self.board.regs, self.board.address
        status = self.board.table("GC", self.status)
        if int(regs[at("GC", self.status)]):
            regs[at("GC", self.status)] |= status.encode(MORE_FAULTS=1)
        else:
            regs[at("GC", self.status)] = status.encode(RW=access == "write", MAPPING_ERROR=1)
            regs[at("GC", self.vm + "L2_PROTECTION_FAULT_ADDR_LO32")] = address >> 12 & 0xFFFFFFFF
            regs[at("GC", self.vm + "L2_PROTECTION_FAULT_ADDR_HI32")] = address >> 44 & 0xF
        self.board.ih.post("UTCL2_FAULT", _ih.fault_data(address, access == "write"))

    def _fault_cntl(self, value: int) -> None:
        if value & 1:  # CLEAR_PROTECTION_FAULT_STATUS_ADDR
            for name in (self.status, *(f"{self.vm}L2_PROTECTION_FAULT_ADDR_{half}" for half in ("LO32", "HI32"))):
                self.board.regs[self.board.address("GC", name)] = 0

    def _reg(self, name: str) -> int:
        return int(self.board.regs[self.board.address("GC", name)])

    def walk(self) -> Memory:
        """The engines' memory as context 0's tables map it now."""
        mem = Memory()
        self.rejected, self.runs = [], []
        cntl = self.board.table("GC", self.vm + "CONTEXT0_CNTL").decode(self._reg(self.vm + "CONTEXT0_CNTL"))
        base = self._reg(self.vm + "CONTEXT0_PAGE_TABLE_BASE_ADDR_HI32") << 32 | self._reg(
            self.vm + "CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32")
        shape = cntl["PAGE_TABLE_DEPTH"], cntl["PAGE_TABLE_BLOCK_SIZE"]
        self.further = self.family in ("gfx94", "gfx95") and shape == (_vm.FURTHER_DEPTH, _vm.FURTHER_BLOCK)
        if not cntl["ENABLE_CONTEXT"] or not base & _vm.VALID or shape[0] != _vm.DEPTH and not self.further:
            return mem  # no translation: every access faults
        runs = self.runs  # [va, vram address, size], merged where contiguous in both
        self.system = []
        # the tables translate addresses from the context's start (PAGE_TABLE_START_ADDR, in pages) up
        start = (self._reg(self.vm + "CONTEXT0_PAGE_TABLE_START_ADDR_HI32") << 32 |
                 self._reg(self.vm + "CONTEXT0_PAGE_TABLE_START_ADDR_LO32")) << _vm.PAGE_SHIFT
        self._table(base & _vm.ADDRESS, 0, start, runs)
        for va, address, size in runs:
            mem.map_at(va, self.board.vram[address : address + size])
        for va, host, size in self.system:
            mem.map_at(va, np.frombuffer(view(host, size), np.uint8))
        return mem

    def _table(self, address: int, level: int, va: int, runs: list[list[int]]) -> None:
        if address + _vm.ENTRIES * 8 > self.board.vram_size:
            self.rejected.append((va, address, f"level {level} table outside VRAM"))
            return
        entries = self.board.vram[address : address + _vm.ENTRIES * 8].view(np.uint64)
        shift = _vm.level_shift(level)
        index = np.flatnonzero(entries & np.uint64(_vm.VALID))
        if level == _vm.DEPTH:
            pages = np.ones(len(index), bool)
        elif self.further and level == _vm.DEPTH - 1:  # PDB0: a 2 MiB page, or with TF a PTB
            pages = (entries[index] & np.uint64(_vm.TF)) == 0
        else:
            pages = (entries[index] & np.uint64(_vm.PDE_PTE[self.family])) != 0
        for i in index[~pages]:
            self._table(int(entries[i]) & _vm.ADDRESS, level + 1, va + (int(i) << shift), runs)
        self._pages(va + (index[pages].astype(np.int64) << shift), entries[index[pages]], 1 << shift, runs)

    def _pages(self, vas: np.ndarray, entries: np.ndarray, size: int, runs: list[list[int]]) -> None:
        """PTEs (each mapping size bytes at its VA) into runs of VRAM; system-memory pages through the IOMMU; the
        ones that cannot be mapped into rejected."""
        address = (entries & np.uint64(_vm.ADDRESS)).astype(np.int64)
        system = (entries & np.uint64(_vm.SYSTEM)) != 0
        for va, e, at in zip(vas[system].tolist(), entries[system].tolist(), address[system].tolist(), strict=True):
            host = self.board.iommu.translate(at, size)
            if host is None:
                self.rejected.append((va, e, "system memory the IOMMU does not map"))
            else:
                _extend(self.system, va, host, size)
        bad = ~system & (address + size > self.board.vram_size)
        for va, e in zip(vas[bad].tolist(), entries[bad].tolist(), strict=True):
            self.rejected.append((va, e, "outside VRAM"))
        vas, address = vas[~system & ~bad], address[~system & ~bad]
        if not len(vas):
            return
        starts = np.flatnonzero((np.diff(vas) != size) | (np.diff(address) != size)) + 1
        for lo, hi in zip(np.r_[0, starts].tolist(), np.r_[starts, len(vas)].tolist(), strict=True):
            _extend(runs, int(vas[lo]), int(address[lo]), (hi - lo) * size)


def _extend(runs: list[list[int]], va: int, address: int, size: int) -> None:
    """Add [va, address, size] to runs, merged into the last run where both go on from it."""
    if runs and runs[-1][0] + runs[-1][2] == va and runs[-1][1] + runs[-1][2] == address:
        runs[-1][2] += size
    else:
        runs.append([va, address, size])
