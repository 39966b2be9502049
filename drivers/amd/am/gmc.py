"""GMC: the GPU's memory controller hubs as gmc_v11_0/gfxhub_v3_0/mmhub_v3_0 (gmc_v9_0/gfxhub_v1_2/mmhub_v1_8 on
MI300X, whose hubs' registers have no GC/MM prefix) set them up, and AM's GPU page tables.

Both hubs (GC's GCVM for the CP, shaders and SDMA; MMHUB for the rest) get the same VM context 0: a 4-level table
(PDB2 -> PDB1 -> PDB0 -> PTB, 512 entries each, 4 KiB pages, 48-bit addresses) whose root's VRAM address goes to
VM_CONTEXT0_PAGE_TABLE_BASE_ADDR, covering all of [0, 2^48). The system aperture covers VRAM's MC range (FB
location, which the VBIOS set). A change to the tables is made visible with a legacy invalidation on engine 17
(the one amdgpu uses for its own mappings), whose ACK bit the driver waits for."""

from __future__ import annotations

import numpy as np

from usergpu.drivers.amd.am.allocator import Allocator
from usergpu.drivers.amd.am.ip import Registers
from usergpu.errors import Error, GPUFault
from usergpu.isa.amd.hw import vm as _vm

RWX = _vm.VALID | _vm.READABLE | _vm.WRITEABLE | _vm.EXECUTABLE


class MappingError(Error, ValueError):
    """A GPU mapping that is not whole pages."""


class VMFault(GPUFault):
    """A VM fault the GC hub reported through the IH: the page, the access and the hub's fault status (which
    kernel, wave and PC the hardware does not say)."""

    def __init__(self, address: int, access: str, status: dict[str, int]):
        super().__init__(address, access, "?", -1, 0, "VM fault")
        self.status = status
        fields = ", ".join(f"{k} {v:#x}" for k, v in status.items() if v)
        self.args = (f"GPU VM fault: {access} of page {address:#x} reported by the GC hub (UTCL2); fault status: "
                     f"{fields or 'none latched'}",)


class GMC:
    def __init__(self, regs: Registers, vram: np.ndarray, allocator: Allocator, family: str, fb_base: int):
        """vram: all of VRAM as bytes (BAR0); allocator: where page tables come from."""
        self.regs, self.vram, self.allocator, self.family, self.fb_base = regs, vram, allocator, family, fb_base
        self.hubs = _vm.HUB_PREFIX[family]  # block -> its registers' prefix
        self.root = self._table()
        self.tables: dict[tuple[int, int], int] = {(0, 0): self.root}  # (level, VA of its span) -> VRAM address

    def _table(self) -> int:
        address = self.allocator.alloc(_vm.ENTRIES * 8)
        self.vram[address : address + _vm.ENTRIES * 8] = 0
        return address

    def _entries(self, table: int) -> np.ndarray:
        return self.vram[table : table + _vm.ENTRIES * 8].view(np.uint64)

    def init(self) -> None:
        """Program both hubs: system aperture over VRAM, context 0 on the tables, then invalidate."""
        vram_end = self.fb_base + self.vram.size - 1
        for block, p in self.hubs.items():
            self.regs.write(block, f"{p}MC_VM_SYSTEM_APERTURE_LOW_ADDR", self.fb_base >> 18)
            self.regs.write(block, f"{p}MC_VM_SYSTEM_APERTURE_HIGH_ADDR", vram_end >> 18)
            self.regs.write(block, f"{p}VM_CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32", (self.root | _vm.VALID) & 0xFFFFFFFF)
            self.regs.write(block, f"{p}VM_CONTEXT0_PAGE_TABLE_BASE_ADDR_HI32", self.root >> 32)
            self.regs.write(block, f"{p}VM_CONTEXT0_PAGE_TABLE_START_ADDR_LO32", 0)
            self.regs.write(block, f"{p}VM_CONTEXT0_PAGE_TABLE_START_ADDR_HI32", 0)
            last = (1 << 48) - 1 >> _vm.PAGE_SHIFT
            self.regs.write(block, f"{p}VM_CONTEXT0_PAGE_TABLE_END_ADDR_LO32", last & 0xFFFFFFFF)
            self.regs.write(block, f"{p}VM_CONTEXT0_PAGE_TABLE_END_ADDR_HI32", last >> 32)
            self.regs.write(block, f"{p}VM_CONTEXT0_CNTL", ENABLE_CONTEXT=1, PAGE_TABLE_DEPTH=_vm.DEPTH,
                            PAGE_TABLE_BLOCK_SIZE=_vm.BLOCK_BITS - 9)
        self.flush()

    def fini(self) -> None:
        """Context 0 off on both hubs (its tables go with this driver), translations dropped."""
        for block, p in self.hubs.items():
            self.regs.write(block, f"{p}VM_CONTEXT0_CNTL", 0)
        self.flush()

    def _leaf(self, va: int) -> int:
        """The PTB that maps va, with the directories above it made as needed."""
        table = self.root
        for level in range(_vm.DEPTH):
            shift = _vm.level_shift(level)
            key = (level + 1, va >> shift << shift)
            if key not in self.tables:
                self.tables[key] = self._table()
                self._entries(table)[(va >> shift) % _vm.ENTRIES] = self.tables[key] | _vm.VALID
            table = self.tables[key]
        return table

    def map(self, va: int, address: int, size: int, flags: int = RWX) -> None:
        """Map size bytes of VRAM at address to va (all page-aligned); flush() makes it visible."""
        self._write(va, size, lambda pages: (address + (pages << _vm.PAGE_SHIFT)) | flags | _vm.IS_PTE[self.family],
                    address)

    def unmap(self, va: int, size: int) -> None:
        self._write(va, size, lambda pages: np.zeros(len(pages), np.uint64))

    def _write(self, va: int, size: int, entries, address: int = 0) -> None:
        page = 1 << _vm.PAGE_SHIFT
        if va % page or size % page or address % page or size <= 0:
            raise MappingError(f"GMC: a mapping of {size:#x} bytes at VA {va:#x} (VRAM {address:#x}) is not whole "
                               f"{page:#x}-byte pages")
        block = _vm.ENTRIES << _vm.PAGE_SHIFT  # what one PTB maps
        done = 0
        while done < size:
            at = va + done
            n = min(size - done, block - at % block) >> _vm.PAGE_SHIFT
            first = (at % block) >> _vm.PAGE_SHIFT
            pages = np.arange(n, dtype=np.uint64) + np.uint64(done >> _vm.PAGE_SHIFT)
            self._entries(self._leaf(at))[first : first + n] = entries(pages)
            done += n << _vm.PAGE_SHIFT

    def fault(self, address: int, write: bool) -> VMFault:
        """A UTCL2 fault interrupt's error, with the hub's latched status, which is then cleared for the next."""
        name = _vm.FAULT_STATUS[self.family]
        status = self.regs.table("GC", name).decode(self.regs.read("GC", name))
        cntl = f"{self.hubs['GC']}VM_L2_PROTECTION_FAULT_CNTL"
        self.regs.write("GC", cntl, self.regs.read("GC", cntl) | 1)  # CLEAR_PROTECTION_FAULT_STATUS_ADDR
        return VMFault(address, "write" if write else "read", status)

    def flush(self) -> None:
        """Invalidate VMID 0's translations on both hubs (engine 17) and wait for each ACK."""
        for block, p in self.hubs.items():
            self.regs.write(block, f"{p}VM_INVALIDATE_ENG17_REQ", PER_VMID_INVALIDATE_REQ=1, INVALIDATE_L2_PTES=1,
                            INVALIDATE_L2_PDE0=1, INVALIDATE_L2_PDE1=1, INVALIDATE_L2_PDE2=1, INVALIDATE_L1_PTES=1)
            self.regs.wait(block, f"{p}VM_INVALIDATE_ENG17_ACK", 1, 1, "TLB invalidation of VMID 0")
