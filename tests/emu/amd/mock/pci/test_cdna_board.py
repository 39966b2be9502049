"""The mock MI300X/MI350X PCI boards' models that drivers meet beyond the RDNA boards': the GC hub's page tables in
gfx9's translate-further form and from the context's start address (tinygrad's AM writes both), the hubs'
invalidation semaphores, the RLC's safe-mode handshake, the sOS's spatial partitioning and boot-time TMR, and a queue
whose pointers no page maps (a fault of the queue, not of the bus)."""

from __future__ import annotations

import gc
import os

import numpy as np
import pytest

from usergpu.autogen import psp_gfx_if as gfx
from usergpu.emu.amd.mock.pci.board import MockPCIGPU
from usergpu.emu.amd.mock.pci.psp_ring import LOADED, PARTITIONS, TMR_SIZE
from usergpu.errors import Error

VALID, RWX, TF = 1, 1 | 1 << 4 | 1 << 5 | 1 << 6, 1 << 56  # amdgpu_vm.h: AMDGPU_PTE_VALID, R/W/X, AMDGPU_PTE_TF
ROOT, PDB1, PDB0, PTB = 0x10000, 0x11000, 0x12000, 0x13000
START = 0x2000_0000_0000  # tinygrad's AM: its VA range begins here, and so does the context


@pytest.fixture(params=["gfx942", "gfx950"])
def board(request):
    b = MockPCIGPU(request.param)
    b.vram[: 8 << 20] = np.random.default_rng(0).integers(0, 256, 8 << 20, np.uint8)
    b.vram[ROOT : PTB + 4096] = 0
    return b


def entry(b, table: int, index: int, value: int) -> None:
    b.vram[table + 8 * index : table + 8 * index + 8].view(np.uint64)[0] = value


def reg(b, name: str, value: int, block: str = "GC") -> None:
    b.bar_write(5, 4 * b.address(block, name), value)


def context(b, depth: int, block_size: int, start: int = 0) -> None:
    reg(b, "VM_CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32", ROOT | VALID)
    reg(b, "VM_CONTEXT0_PAGE_TABLE_START_ADDR_LO32", start >> 12 & 0xFFFFFFFF)
    reg(b, "VM_CONTEXT0_PAGE_TABLE_START_ADDR_HI32", start >> 44)
    reg(b, "VM_CONTEXT0_CNTL", b.table("GC", "VM_CONTEXT0_CNTL").encode(
        ENABLE_CONTEXT=1, PAGE_TABLE_DEPTH=depth, PAGE_TABLE_BLOCK_SIZE=block_size))
    reg(b, "VM_INVALIDATE_ENG17_REQ", 1)


@pytest.mark.parametrize("start", [0, START])
def test_translate_further_tables_from_the_contexts_start(board, start):
    """Depth 2 with block size 9: PDB0 entries are 2 MiB pages unless TF names a PTB of 4 KiB pages; addresses
    count from the context's start."""
    entry(board, ROOT, 0, PDB1 | VALID)
    entry(board, PDB1, 0, PDB0 | VALID)
    entry(board, PDB0, 0, PTB | VALID | TF)  # [start, +2 MiB): through the PTB
    entry(board, PTB, 1, 0x5000 | RWX)
    entry(board, PDB0, 1, (4 << 20) | RWX)  # [start + 2 MiB, +4 MiB): one 2 MiB page
    context(board, depth=2, block_size=9, start=start)
    mem = board.gpu.mem
    assert mem.read_bytes(start + 0x1010, 4) == bytes(board.vram[0x5010:0x5014])
    assert mem.read_bytes(start + (2 << 20) + 0x1234, 4) == bytes(board.vram[(4 << 20) + 0x1234 : (4 << 20) + 0x1238])
    assert board.mmu.further and not board.mmu.rejected


def test_invalidation_semaphores_are_taken_by_a_read(board):
    at = board.address("MMHUB", "VM_INVALIDATE_ENG17_SEM", 3)  # the fourth IO die's hub
    assert board.bar_read(5, 4 * at) == 1


def test_the_rlc_acknowledges_safe_mode_once_its_firmware_is_in(board):
    mode = board.table("GC", "RLC_SAFE_MODE").encode(CMD=1, MESSAGE=1)
    at = 4 * board.address("GC", "RLC_SAFE_MODE")
    board.bar_write(5, at, mode)
    assert board.bar_read(5, at) & 1  # no RLC firmware: CMD stays set
    board.psp.sos.words[LOADED + gfx.GFX_FW_TYPE_RLC_G // 32] |= 1 << gfx.GFX_FW_TYPE_RLC_G % 32
    board.bar_write(5, at, mode)
    assert board.bar_read(5, at) == mode & ~1


def test_the_sos_partitions_the_xccs_and_keeps_a_boot_time_tmr(board):
    sos = board.psp.sos
    cmd = gfx.struct_psp_gfx_cmd_resp(cmd_id=gfx.GFX_CMD_ID_SRIOV_SPATIAL_PART)
    cmd.cmd.cmd_spatial_part.mode = 3  # does not divide the eight XCCs
    assert sos.commands[cmd.cmd_id](cmd) != 0
    cmd.cmd.cmd_spatial_part.mode = 8
    assert sos.commands[cmd.cmd_id](cmd) == 0 and sos.words[PARTITIONS] == 8
    tmr = gfx.struct_psp_gfx_cmd_resp(cmd_id=gfx.GFX_CMD_ID_SETUP_TMR)  # size 0 at 0: the firmware's own TMR
    assert sos.commands[tmr.cmd_id](tmr) == 0 and sos.words[TMR_SIZE] > 0


def test_a_queue_whose_pointers_no_page_maps_faults_as_a_queue(board):
    from usergpu.emu.amd.mock.pm4 import PM4Queue
    queue = PM4Queue(board.gpu, 0x1000, 4096, 0xDEAD000, 0xDEAD008, "test queue")
    with pytest.raises(Error, match="GPU memory fault: read of 0xdead000"):
        queue.step()
    assert queue.error is not None and not queue.busy


def test_a_board_holds_one_descriptor_while_it_lives_and_none_after(tmp_path):
    """Its register file, activity and firmware words stay mapped, their files closed; VRAM's (parts of it get
    mapped later) closes with the board: a process that makes boards by the hundred keeps no descriptors."""
    def boards_files() -> list[str]:
        """What this process's descriptors of a gfx942 board's state name (a private board's memfds, or files
        under tmp_path)."""
        names = []
        for fd in os.listdir("/proc/self/fd"):
            try:
                names.append(os.readlink(f"/proc/self/fd/{fd}"))
            except OSError:  # closed meanwhile (the listing's own descriptor)
                pass
        return sorted(n for n in names if "mockpci-gfx942-" in n or str(tmp_path) in n)

    gc.collect()  # earlier tests' boards gone
    before = boards_files()
    boards = [MockPCIGPU("gfx942"), MockPCIGPU("gfx942", tmp_path / "board")]
    assert len(boards_files()) == len(before) + 2
    boards[1].regs[0x100] = 7
    del boards
    gc.collect()
    assert boards_files() == before
    assert int(MockPCIGPU("gfx942", tmp_path / "board").regs[0x100]) == 7  # the state outlives its descriptors
