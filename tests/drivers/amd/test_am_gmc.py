"""AM's GMC on the mock PCI GPU (gfx1200, gfx1100): the page tables AM writes map each allocation's GPU VA to the
VRAM pages its allocator chose, in amdgpu's 4-level format; freed and invalid mappings fault naming the address;
a table change takes effect at the engine-17 invalidation, whose ACK the driver waits for."""

from __future__ import annotations

import numpy as np
import pytest

import usergpu
from usergpu.drivers.amd.am import ip
from usergpu.drivers.amd.am.driver import AM
from usergpu.emu.amd.mock.pci.machine import machine
from usergpu.emu.memory import MemoryFault
from usergpu.errors import GPUFault
from usergpu.hostmem import view

ARCHS = ("gfx1200", "gfx1100")
# amdgpu_vm.h, written out here rather than taken from isa/amd/hw/vm.py, so the walk below checks that file too
VALID, SYSTEM, EXECUTABLE, READABLE, WRITEABLE = 1 << 0, 1 << 1, 1 << 4, 1 << 5, 1 << 6
ADDRESS = ((1 << 48) - 1) & ~0xFFF  # bits 47:12
IS_PTE = 1 << 63  # AMDGPU_PTE_IS_PTE: gfx12 marks every leaf PTE
UNUSED_VA = 1 << 32  # a GPU VA no allocation sits at (the CPU's mappings are far above)


@pytest.fixture(params=ARCHS)
def am(request, tmp_path):
    driver = AM(machine(request.param, directory=tmp_path))
    yield driver
    driver.close()


def board(am):
    return am.hal.boards[0]


def fault_address(board, va: int) -> int:
    """The address of the MemoryFault a GPU read at va raises."""
    with pytest.raises(MemoryFault) as e:
        board.gpu.mem.read_bytes(va, 4)
    return e.value.address


def walk(board, va: int) -> int:
    """va's PTE, found by hand from the root in GCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR through PDB2, PDB1 and PDB0 (bits
    47:39, 38:30, 29:21 of va index them, bits 20:12 the PTB), each level's entry read from VRAM."""
    reg = lambda name: int(board.regs[board.address("GC", f"GCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_{name}")])  # noqa: E731
    base = reg("HI32") << 32 | reg("LO32")
    assert base & VALID
    table = base & ADDRESS
    for shift in (39, 30, 21):
        at = table + 8 * (va >> shift & 511)
        pde = int(board.vram[at : at + 8].view(np.uint64)[0])
        assert pde & ~ADDRESS == VALID  # names the next table: no huge-page (PDE_PTE), system or other bit
        table = pde & ADDRESS
        assert table % 4096 == 0 and table + 4096 <= board.vram_size
    at = table + 8 * (va >> 12 & 511)
    return int(board.vram[at : at + 8].view(np.uint64)[0])


def test_each_allocation_maps_its_va_to_the_vram_pages_the_allocator_chose(am):
    """A pattern the CPU writes at an allocation's address (BAR0) is what the GPU reads at that address, and both are
    the VRAM bytes at the allocation's handle: the tables send the GPU VA to exactly the allocator's pages. A buffer
    of 2 MiB + 4 KiB spans two PTBs; a hand walk (both PTBs, and inside a 6 MiB buffer) shows the entries are
    amdgpu's format."""
    b = board(am)
    sizes = (4096, (2 << 20) + 4096, 6 << 20, 100, 256, 5000)
    mems = [am.alloc(size) for size in sizes]
    span = mems[1]
    assert span.va >> 21 != (span.va + span.size - 1) >> 21
    patterns = [np.random.default_rng(i).integers(0, 256, m.size, np.uint8) for i, m in enumerate(mems)]
    for m, pattern in zip(mems, patterns, strict=True):
        view(m.va, m.size)[:] = pattern
    for m, pattern in zip(mems, patterns, strict=True):
        got = b.gpu.mem.read_bytes(m.va, m.size)
        assert got == pattern.tobytes() and got == b.vram[m.handle : m.handle + m.size].tobytes()
    b.gpu.mem.write_bytes(mems[0].va + 8, b"from the GPU")  # and the GPU's writes land where the CPU looks
    assert bytes(mems[0].view()[8:20]) == b"from the GPU"
    gfx12 = am.arch.startswith("gfx12")
    for va in (span.va, (span.va >> 21) + 1 << 21, span.va + span.size - 4096, mems[2].va + (3 << 20) + 0x5000):
        m = next(m for m in mems if m.va <= va < m.va + m.size)
        pte = walk(b, va)
        assert pte & ADDRESS == m.handle + va - m.va
        assert pte & 0x7F == VALID | EXECUTABLE | READABLE | WRITEABLE  # local VRAM: no SYSTEM, SNOOPED or TMZ
        assert pte & ~ADDRESS & ~0x7F == (IS_PTE if gfx12 else 0)


def test_a_freed_allocation_faults_and_its_vram_is_handed_out_again(am):
    """After free() the GPU faults at every page of the buffer (its neighbours stay mapped), and the next allocation
    of that size gets the same VRAM, cleared, mapped at its own address."""
    b = board(am)
    before, mem, after = am.alloc(4096), am.alloc(3 * 4096), am.alloc(4096)
    mem.view()[:] = b"\xab" * mem.size
    am.free(mem)
    for page in range(3):
        assert fault_address(b, mem.va + page * 4096) == mem.va + page * 4096
    assert b.gpu.mem.read_bytes(before.va, 4096) == bytes(4096) == b.gpu.mem.read_bytes(after.va, 4096)
    again = am.alloc(3 * 4096)
    assert again.handle == mem.handle
    assert b.gpu.mem.read_bytes(again.va, again.size) == bytes(again.size)
    b.gpu.mem.write_bytes(again.va, b"reused")
    assert bytes(b.vram[again.handle : again.handle + 6]) == b"reused"


def test_ptes_the_mmu_cannot_map_fault_with_their_address(am):
    """PTEs past the end of VRAM or at system memory no IOMMU mapping holds and a directory entry naming a table
    outside VRAM are not mapped: the MMU lists them, a read there faults with the address, and the valid mappings
    around them still work. VRAM's last page is the boundary: it maps."""
    b, gmc, size = board(am), am.dev.gmc, am.dev.vram_size
    mem = am.alloc(4096)
    last, past, system = UNUSED_VA, UNUSED_VA + 4096, UNUSED_VA + 8192
    gmc.map(last, size - 4096, 4096)
    gmc.map(past, size, 4096)
    gmc.map(system, mem.handle, 4096, flags=VALID | SYSTEM | READABLE | WRITEABLE)
    root = gmc._entries(gmc.root)
    assert root[1] == 0  # VA [2^39, 2^40): nothing of AM's
    root[1] = size | VALID
    gmc.flush()
    why = {va: (entry & ADDRESS, text) for va, entry, text in b.mmu.rejected}
    assert why == {past: (size, "outside VRAM"), system: (mem.handle, "system memory the IOMMU does not map"),
                   1 << 39: (size, "level 1 table outside VRAM")}
    for va in (past, system, 1 << 39):
        assert fault_address(b, va) == va
    assert b.gpu.mem.read_bytes(last, 4096) == b.vram[size - 4096 :].tobytes()
    assert b.gpu.mem.read_bytes(mem.va, 4096) == bytes(4096)


def test_a_kernel_touching_an_unmapped_page_raises_gpufault_in_that_page(tmp_path, monkeypatch):
    """Through the runtime on MOCKPCI+AMD: once a buffer's second page is unmapped (and the TLB invalidated), a load
    from it and a store to it raise GPUFault at an address in that page; before, the same store worked."""
    monkeypatch.setenv("MOCKPCI_DIR", str(tmp_path))
    monkeypatch.setenv("MOCKGPU_ARCH", "gfx1200")
    dev = usergpu.Device("MOCKPCI+AMD")
    src = """
    __kernel void load(__global int *dst, __global const int *src, int off) {
        int i = __builtin_amdgcn_workitem_id_x(); dst[i] = src[off + i]; }
    __kernel void store(__global int *dst, int off) { dst[off + __builtin_amdgcn_workitem_id_x()] = 7; }
    """
    try:
        prog = dev.load(usergpu.compile_opencl(src, dev.arch))
        buf, out = dev.alloc(2 * 4096), dev.alloc(4096)
        prog.kernels["store"](buf, 1000, grid=(1, 1, 1), block=(32, 1, 1))  # 1000..1031: across both pages
        assert list(buf.copyout(np.int32)[1000:1032]) == [7] * 32
        page = buf.va + 4096
        dev.driver.dev.gmc.unmap(page, 4096)
        dev.driver.dev.gmc.flush()
        for name, args, access in (("load", (out, buf, 1030), "read"), ("store", (buf, 1000), "write")):
            with pytest.raises(GPUFault) as e:
                prog.kernels[name](*args, grid=(1, 1, 1), block=(32, 1, 1))
            assert e.value.kernel == name and e.value.access == access and page <= e.value.address < page + 4096
    finally:
        dev.close()


def test_table_changes_take_effect_at_the_invalidation_the_driver_waits_for(am, monkeypatch):
    """A new PTE is not used before the engine-17 invalidation; the hub sets VMID 0's ACK bit for the REQ write, and
    the driver's flush fails with a Timeout if it never comes."""
    b, gmc = board(am), am.dev.gmc
    mem = am.alloc(4096)
    mem.view()[:4] = b"ours"
    acks = [b.address(hub, f"{p}VM_INVALIDATE_ENG17_ACK") for hub, p in (("GC", "GC"), ("MMHUB", "MM"))]
    for ack in acks:
        b.regs[ack] = 0  # as before any request
    gmc.map(UNUSED_VA, mem.handle, 4096)
    assert [int(b.regs[ack]) for ack in acks] == [0, 0]
    assert fault_address(b, UNUSED_VA) == UNUSED_VA  # the tables say mapped; the MMU has not been told
    gmc.flush()
    assert [int(b.regs[ack]) for ack in acks] == [1, 1]  # VMID 0's bit, no other VMID's
    assert b.gpu.mem.read_bytes(UNUSED_VA, 4) == b"ours"  # an alias of the buffer's VRAM page
    request = b.address("GC", "GCVM_INVALIDATE_ENG17_REQ")
    hub = b.on_write.pop(request)  # a hub that never answers
    b.regs[acks[0]] = 0
    monkeypatch.setattr(ip, "TIMEOUT", 0.05)
    with pytest.raises(ip.Timeout, match="TLB invalidation of VMID 0.*GCVM_INVALIDATE_ENG17_ACK"):
        gmc.flush()
    b.on_write[request] = hub  # answering again, so the driver can let the board go


@pytest.mark.parametrize("cleared", ["ENABLE_CONTEXT", "all"])
def test_without_enable_context_every_access_faults(am, cleared):
    """VM context 0 disabled in GCVM_CONTEXT0_CNTL (ENABLE_CONTEXT alone cleared, the table geometry kept; or the
    whole register 0): the next invalidation leaves nothing mapped, so even a live allocation faults; enabled
    again, it maps as before."""
    b, gmc = board(am), am.dev.gmc
    mem = am.alloc(4096)
    cntl = b.address("GC", "GCVM_CONTEXT0_CNTL")
    enabled = int(b.regs[cntl])
    b.bar_write(5, 4 * cntl, enabled & ~b.table("GC", "GCVM_CONTEXT0_CNTL").encode(ENABLE_CONTEXT=1)
                if cleared == "ENABLE_CONTEXT" else 0)
    gmc.flush()
    assert fault_address(b, mem.va) == mem.va and b.mmu.rejected == []
    b.bar_write(5, 4 * cntl, enabled)
    gmc.flush()
    assert b.gpu.mem.read_bytes(mem.va, 4096) == bytes(4096)
