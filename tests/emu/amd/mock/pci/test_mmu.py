"""The mock PCI GPU's MMU against page tables written by hand into a bare board's VRAM (no driver): what it maps
follows amdgpu's format (4 levels, PTEs and 2 MiB PDE_PTE blocks, gfx11's and gfx12's bits), what it cannot map
is listed and faults, and it takes the tables only at a VMID-0 invalidation on GC, acknowledging the VMIDs asked."""

from __future__ import annotations

import numpy as np
import pytest

from usergpu.emu.amd.mock.pci.board import MockPCIGPU
from usergpu.emu.memory import MemoryFault

# amdgpu_vm.h: PTE bits; AMDGPU_PDE_PTE (gfx11) / AMDGPU_PDE_PTE_GFX12 and AMDGPU_PTE_IS_PTE (gfx12)
VALID, SYSTEM, RWX = 1 << 0, 1 << 1, 1 << 0 | 1 << 4 | 1 << 5 | 1 << 6
PDE_PTE = {"gfx1100": 1 << 54, "gfx1200": 1 << 63}
IS_PTE = {"gfx1100": 0, "gfx1200": 1 << 63}
ROOT, PDB1, PDB0, PTB = 0x10000, 0x11000, 0x12000, 0x13000  # where the tables sit in VRAM
VA = 3 << 39 | 5 << 30 | 7 << 21  # PDB2 entry 3, PDB1 entry 5, PDB0 entry 7: PTB entry 0


@pytest.fixture(params=list(PDE_PTE))
def board(request):
    """A board whose context 0 is on the tables above (the PTB still empty), its VRAM patterned."""
    b = MockPCIGPU(request.param)
    b.vram[: 6 << 20] = np.random.default_rng(0).integers(0, 256, 6 << 20, np.uint8)
    b.vram[ROOT : PTB + 4096] = 0
    entry(b, ROOT, 3, PDB1 | VALID)
    entry(b, PDB1, 5, PDB0 | VALID)
    entry(b, PDB0, 7, PTB | VALID)
    reg(b, "GCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32", ROOT | VALID)
    reg(b, "GCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_HI32", 0)
    reg(b, "GCVM_CONTEXT0_CNTL", cntl(b))
    return b


def entry(b, table: int, index: int, value: int) -> None:
    b.vram[table + 8 * index : table + 8 * index + 8].view(np.uint64)[0] = value


def reg(b, name: str, value: int, hub: str = "GC") -> None:
    b.bar_write(5, 4 * b.address(hub, name), value)


def cntl(b, enable: int = 1, depth: int = 3) -> int:
    return b.table("GC", "GCVM_CONTEXT0_CNTL").encode(ENABLE_CONTEXT=enable, PAGE_TABLE_DEPTH=depth)


def ack(b, hub: str = "GC", engine: int = 17) -> int:
    return int(b.regs[b.address(hub, f"{'GC' if hub == 'GC' else 'MM'}VM_INVALIDATE_ENG{engine}_ACK")])


def invalidate(b, vmids: int = 1, hub: str = "GC", engine: int = 17) -> None:
    reg(b, f"{'GC' if hub == 'GC' else 'MM'}VM_INVALIDATE_ENG{engine}_REQ", vmids, hub)


def faults(b, va: int) -> bool:
    with pytest.raises(MemoryFault) as e:
        b.gpu.mem.read_bytes(va, 4)
    return e.value.address == va


def test_ptes_and_a_pde_pte_block_map_the_vram_they_name(board):
    """PTEs naming adjacent VRAM pages read as one range, a PTE elsewhere as its own page, an invalid or absent
    entry faults; a PDB0 entry with PDE_PTE maps 2 MiB of VRAM itself (a huge page) instead of naming a PTB, read on
    from the PTB's last page where the VRAM follows on."""
    b, pte = board, IS_PTE[board.arch] | RWX
    for index, page in ((0, 0x100000), (1, 0x101000), (2, 0x200000)):
        entry(b, PTB, index, page | pte)
    entry(b, PTB, 4, 0x300000 | pte & ~VALID)
    entry(b, PTB, 511, 0x3FF000 | pte)  # the page before the block below, in VA and in VRAM
    entry(b, PDB0, 8, 0x400000 | PDE_PTE[b.arch] | RWX)
    invalidate(b)
    assert b.mmu.rejected == []
    assert b.gpu.mem.read_bytes(VA, 0x2000) == b.vram[0x100000:0x102000].tobytes()
    assert b.gpu.mem.read_bytes(VA + 0x2000, 0x1000) == b.vram[0x200000:0x201000].tobytes()
    assert faults(b, VA + 0x3000) and faults(b, VA + 0x4000)
    assert b.gpu.mem.read_bytes(VA + (1 << 21) - 4096, 4096 + (1 << 21)) == b.vram[0x3FF000:0x600000].tobytes()
    assert faults(b, VA + (2 << 21))


def test_what_cannot_be_mapped_is_listed_and_faults(board):
    """A PTE with SYSTEM set, a PTE or a 2 MiB block reaching past VRAM's end, and a directory entry naming a table
    outside VRAM: each is in `rejected` with its VA and why, and faults at that VA; VRAM's last page still maps."""
    b, pte, size = board, IS_PTE[board.arch] | RWX, board.vram_size
    entry(b, PTB, 0, 0x100000 | pte | SYSTEM)
    entry(b, PTB, 1, size | pte)
    entry(b, PTB, 2, size - 4096 | pte)
    entry(b, PDB0, 8, size - 4096 | PDE_PTE[b.arch] | RWX)
    entry(b, PDB0, 9, size | VALID)
    invalidate(b)
    assert {va: why for va, _, why in b.mmu.rejected} == {
        VA: "system memory the IOMMU does not map", VA + 0x1000: "outside VRAM", VA + (1 << 21): "outside VRAM",
        VA + (2 << 21): "level 3 table outside VRAM"}
    assert all(faults(b, va) for va, _, _ in b.mmu.rejected)
    assert b.gpu.mem.read_bytes(VA + 0x2000, 4096) == b.vram[size - 4096 :].tobytes()


def test_the_tables_take_effect_at_a_vmid_0_invalidation_on_gc(board):
    """Tables written are not used until an invalidation asks for VMID 0 on a GC engine: one for another VMID, or on
    MMHUB, is acknowledged (the ACK holds exactly the VMIDs requested) and leaves the old translations in place."""
    b = board
    entry(b, PTB, 0, 0x100000 | IS_PTE[b.arch] | RWX)
    assert ack(b) == 0 and faults(b, VA)
    invalidate(b, 1 << 3)
    assert ack(b) == 1 << 3 and faults(b, VA)
    invalidate(b, 1, "MMHUB")
    assert ack(b, "MMHUB") == 1 and ack(b) == 1 << 3 and faults(b, VA)
    invalidate(b, 1, engine=5)
    assert ack(b, engine=5) == 1 and b.gpu.mem.read_bytes(VA, 4096) == b.vram[0x100000:0x101000].tobytes()
    entry(b, PTB, 0, 0)
    invalidate(b, 1, "MMHUB")
    assert b.gpu.mem.read_bytes(VA, 4) == b.vram[0x100000:0x100004].tobytes()  # GC's TLB not invalidated yet
    invalidate(b)
    assert faults(b, VA)


@pytest.mark.parametrize("change", ["disabled", "depth 2", "base not valid"])
def test_no_translation_without_a_usable_context(board, change):
    """Context 0 disabled, a table depth other than the 4 levels walked, or a base address without VALID: nothing
    is mapped after the invalidation (every access faults), and nothing is reported rejected."""
    b = board
    entry(b, PTB, 0, 0x100000 | IS_PTE[b.arch] | RWX)
    invalidate(b)
    assert b.gpu.mem.read_bytes(VA, 4) == b.vram[0x100000:0x100004].tobytes()
    if change == "base not valid":
        reg(b, "GCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32", ROOT)
    else:
        reg(b, "GCVM_CONTEXT0_CNTL", cntl(b, enable=0) if change == "disabled" else cntl(b, depth=2))
    invalidate(b)
    assert faults(b, VA) and b.mmu.rejected == []
