"""AM's whole bring-up on the mock PCI GPU (gfx1100, gfx1200): from cold, as a partial boot that keeps the loaded
firmware, with AM_RESET; and the failures a person must be told about, each naming the GPU, the block and the
step."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from usergpu.drivers.amd.am import discovery as disc
from usergpu.drivers.amd.am import ip, psp_ring, smu
from usergpu.drivers.amd.am.device import AM_MARKER, TMR_SIZE, AMDevice
from usergpu.drivers.amd.am.driver import AM
from usergpu.drivers.amd.am.firmware import FirmwareError, search_path
from usergpu.drivers.amd.am.lock import DeviceBusy
from usergpu.drivers.amd.am.psp import PSPError
from usergpu.emu.amd.mock import discovery
from usergpu.emu.amd.mock.pci import psp_ring as psp_ring_mock
from usergpu.emu.amd.mock.pci.machine import machine

BUS = "0000:03:00.0"


def reg(board, name: str) -> int:
    return int(board.regs[board.address("GC", name)])


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200"])
def test_cold_then_partial_boot_then_reset(arch, tmp_path, monkeypatch):
    monkeypatch.delenv("AM_RESET", raising=False)
    hal = machine(arch, directory=tmp_path)
    board = hal.boards[0]
    am = AM(hal)
    assert not am.dev.partial and am.arch == arch and reg(board, "SCRATCH_REG7") == AM_MARKER
    loads = len(board.psp.loaded_fw) if board.psp else 0
    if arch == "gfx1100":  # the PSP took every Navi31 ucode and the TMR; AM kept its size for a partial boot
        assert loads == 28 and reg(board, TMR_SIZE) == int(board.firmware[psp_ring_mock.TMR_SIZE]) > 0
    am.close()
    again = AM(hal)  # the board is up: its firmware stays, the rest is set up anew and works
    assert again.dev.partial and (len(board.psp.loaded_fw) if board.psp else 0) == loads
    check_copy_through_sdma(again)
    again.close()
    monkeypatch.setenv("AM_RESET", "1")
    reset = AM(hal)
    assert not reset.dev.partial
    if board.psp:
        assert len(board.psp.loaded_fw) == 2 * loads  # loaded again
    check_copy_through_sdma(reset)
    reset.close()


def check_copy_through_sdma(am: AM, kind: str = "vram"):
    """A copy on the SDMA ring into memory of a kind (its ring and pointers that kind too), its trap seen on the IH
    ring: the engines, the page tables and interrupts work. The copy's destination."""
    from usergpu.runtime.amd.ring import RING_SIZE
    from usergpu.runtime.amd.sdma import SDMAPackets

    src, dst, ring, pointers = am.alloc(8192), am.alloc(8192, kind), am.alloc(RING_SIZE, kind), am.alloc(4096, kind)
    np.frombuffer(src.view(), np.uint8)[:] = np.arange(8192) % 251
    queue = am.create_queue("sdma", ring, pointers.va, pointers.va + 8)
    event = am.create_event()
    packets = SDMAPackets().copy(dst.va, src.va, 8192).trap(event)
    ring.view().cast("I")[: len(packets)] = np.array(packets, np.uint32)
    pointers.view().cast("Q")[1] = 4 * len(packets)
    queue.ring(4 * len(packets))
    assert am.wait_events([event], timeout_ms=1000) == [event]
    assert bytes(dst.view()) == bytes(src.view())
    am.destroy_queue(queue)
    board = am.hal.boards[0]  # the HDP was flushed before each doorbell, through NBIO's remap of its flush register
    assert board.hdp.flushes >= 1 and board.hdp.unflushed == 0
    return dst


def test_a_board_another_process_drives_is_refused_politely(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from usergpu.emu.amd.mock.pci.machine import machine; "
         "from usergpu.drivers.amd.am.driver import AM; "
         f"am = AM(machine('gfx1200', directory={str(tmp_path)!r})); print('up', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "up"
        with pytest.raises(DeviceBusy, match=rf"the GPU at {BUS} is driven by process {holder.pid} \(-c\); stop "
                                             "that process first"):
            AM(machine("gfx1200", directory=tmp_path))
    finally:
        holder.communicate("")
    AM(machine("gfx1200", directory=tmp_path)).close()  # its lock went with it


def test_psp_never_ready(tmp_path, monkeypatch):
    monkeypatch.setenv("MOCKPCI_FAULT", "psp-never-ready")
    monkeypatch.setattr("usergpu.drivers.amd.am.psp.TIMEOUT", 0.05)
    with pytest.raises(PSPError, match=rf"^{BUS}: PSP: bootloader and sOS: PSP bootloader, before loading \w+ .*"
                                       r"MP0_SMN_C2PMSG_35 reads 0x00000000 .*waiting for 0x80000000"):
        AM(machine("gfx1100", directory=tmp_path))


def test_psp_ring_never_answers(tmp_path, monkeypatch):
    monkeypatch.setenv("MOCKPCI_FAULT", "psp-ring-hang")
    monkeypatch.setattr(psp_ring, "TIMEOUT", 0.05)
    with pytest.raises(PSPError, match=rf"^{BUS}: PSP: ring, TMR and firmware loads: .*fence"):
        AM(machine("gfx1100", directory=tmp_path))


def test_smu_not_answering(tmp_path, monkeypatch):
    monkeypatch.setenv("MOCKPCI_FAULT", "smu-silent")
    monkeypatch.setattr(smu, "TIMEOUT", 0.05)
    with pytest.raises(smu.SMUError, match=rf"^{BUS}: SMU: firmware version: SMU: GetSmuVersion: "
                                           "MP1_SMN_C2PMSG_90 stayed 0"):
        AM(machine("gfx1200", directory=tmp_path))


def test_missing_discovery_table(tmp_path):
    hal = machine("gfx1200", directory=tmp_path)
    top = hal.boards[0].vram_size - discovery.DISCOVERY_TMR_OFFSET
    hal.boards[0].vram[top : top + 4096] = 0  # as on a board whose VBIOS never placed it
    with pytest.raises(disc.DiscoveryError, match=rf"^{BUS}: discovery: IP discovery table at the top of VRAM: "
                                                  ".*signature"):
        AM(hal)


def test_corrupt_firmware_file(tmp_path, monkeypatch):
    import shutil

    folder = tmp_path / "cache/usergpu/firmware/lib/firmware/amdgpu"
    shutil.copytree(search_path()[0], folder)
    data = bytearray((folder / "gc_11_0_0_pfp.bin").read_bytes())
    data[0:4] = (len(data) + 4096).to_bytes(4, "little")  # size_bytes: more than the file holds
    (folder / "gc_11_0_0_pfp.bin").write_bytes(bytes(data))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with pytest.raises(FirmwareError, match=rf"^{BUS}: PSP: ring, TMR and firmware loads: .*gc_11_0_0_pfp.bin.*"
                                            "size_bytes"):
        AM(machine("gfx1100", directory=tmp_path / "board"))


def test_queues_need_the_mec_firmware(tmp_path, monkeypatch):
    """Without the PSP's firmware loads the MEC does not run: activating a queue names the register and the step."""
    monkeypatch.setattr(AMDevice, "load_firmware", AMDevice.boot_psp)
    monkeypatch.setattr(ip, "TIMEOUT", 0.05)
    am = AM(machine("gfx1100", directory=tmp_path))
    ring, pointers = am.alloc(4096), am.alloc(4096)
    with pytest.raises(ip.Timeout, match=r"GC: activating compute queue \(ME 1, pipe 0, queue 0\): is the MEC firmware "
                                         "loaded and running\\?: CP_HQD_ACTIVE reads 0x00000000 after 0.05 s, waiting "
                                         "for 0x1"):
        am.create_queue("pm4", ring, pointers.va, pointers.va + 8)
    am.close()


def test_a_bar_smaller_than_vram_is_explained(tmp_path):
    from usergpu.drivers.amd.am.device import SmallBAR
    from usergpu.emu.amd.mock.pci.board import MockPCIGPU
    from usergpu.emu.amd.mock.pci.function import install_pci
    from usergpu.emu.mock.hal import MockHAL

    board = MockPCIGPU("gfx1200")
    board.bars[0] = (board.bars[0][0], 256 << 20, True, True)  # a 256 MiB window, as without Resizable BAR
    hal = MockHAL(tmp_path)
    (tmp_path / "tmp").mkdir()
    install_pci(hal, board, BUS)
    with pytest.raises(SmallBAR, match=rf"{BUS}: BAR0 shows 256 MiB of the 8192 MiB of VRAM; .*Resizable BAR"):
        AM(hal)


def test_a_board_reset_since_am_brought_it_up_boots_fully(tmp_path, monkeypatch):
    """SCRATCH_REG7 says AM was here, but the sOS is not alive (the board was reset): the firmware goes in again."""
    monkeypatch.delenv("AM_RESET", raising=False)
    hal = machine("gfx1100", directory=tmp_path)
    board = hal.boards[0]
    AM(hal).close()
    loads = len(board.psp.loaded_fw)
    board.power_on()  # power cycled: registers back to their reset state, but SCRATCH_REG7 kept by the test
    board.regs[board.address("GC", "SCRATCH_REG7")] = AM_MARKER
    board.regs[board.address("MP0", "MP0_SMN_C2PMSG_81")] = 0
    am = AM(hal)
    assert am.dev.partial and len(board.psp.loaded_fw) == 2 * loads
    check_copy_through_sdma(am)
    am.close()


def test_a_vm_fault_comes_through_the_ih_ring(tmp_path):
    """An SDMA copy from an unmapped page: the GC hub latches the fault and raises the UTCL2 interrupt, and AM's wait
    reports it with the page and the access (the mock also stops the queue at the doorbell, as MOCKKFD does)."""
    from usergpu.drivers.amd.am.gmc import VMFault
    from usergpu.emu.amd.mock.gpu import QueueError
    from usergpu.runtime.amd.ring import RING_SIZE
    from usergpu.runtime.amd.sdma import SDMAPackets

    hal = machine("gfx1200", directory=tmp_path)
    board, am = hal.boards[0], AM(hal)
    dst, ring, pointers = am.alloc(4096), am.alloc(RING_SIZE), am.alloc(4096)
    gone = am.alloc(8192)
    am.dev.gmc.unmap(gone.va + 4096, 4096)
    am.dev.gmc.flush()
    queue = am.create_queue("sdma", ring, pointers.va, pointers.va + 8)
    packets = SDMAPackets().copy(dst.va, gone.va + 4096 + 64, 256)
    ring.view().cast("I")[: len(packets)] = np.array(packets, np.uint32)
    pointers.view().cast("Q")[1] = 4 * len(packets)
    with pytest.raises(QueueError, match="GPU memory fault"):
        queue.ring(4 * len(packets))
    with pytest.raises(VMFault, match=rf"read of page {gone.va + 4096:#x} reported by the GC hub .*MAPPING_ERROR 0x1") \
            as e:
        am.wait_events([am.create_event()], timeout_ms=10)
    assert e.value.address == gone.va + 4096 and e.value.access == "read"
    assert reg(board, "GCVM_L2_PROTECTION_FAULT_STATUS_LO32") == 0  # cleared for the next fault
    assert am.wait_events([am.create_event()], timeout_ms=10) is None  # reported once
    am.close()


def test_letting_the_board_go_takes_the_blocks_down(tmp_path):
    """close() runs each block's fini, last first: queues dequeued, IH ring off, VM context 0 off (nothing mapped)."""
    hal = machine("gfx1200", directory=tmp_path)
    board, am = hal.boards[0], AM(hal)
    ring, pointers = am.alloc(4096), am.alloc(4096)
    am.create_queue("pm4", ring, pointers.va, pointers.va + 8)
    am.create_queue("sdma", ring, pointers.va + 16, pointers.va + 24)
    assert len(board.cp.queues) == 2 and len(board.gpu.mem._bases) > 0
    am.close()
    assert not board.cp.queues and not board.gpu.mem._bases
    assert int(board.regs[board.address("OSSSYS", "IH_RB_CNTL")]) == 0
    assert reg(board, "GCVM_CONTEXT0_CNTL") == 0


def test_through_vfio_the_runtimes_gtt_memory_is_system_memory(tmp_path):
    """Bound to vfio-pci, AM opens the function through VFIO and its "gtt" buffers are this process's pages, which
    the IOMMU maps at the same address for the GPU: SDMA writes them, the CPU reads its own memory."""
    from usergpu.drivers.vfio import VFIOPCIDevice

    hal = machine("gfx1200", directory=tmp_path, vfio=True)
    board, am = hal.boards[0], AM(hal)
    assert isinstance(am.pci, VFIOPCIDevice)
    dst = check_copy_through_sdma(am, "gtt")
    assert board.iommu.translate(dst.va, dst.size) == dst.va
    am.free(dst)
    assert board.iommu.translate(dst.va, 4096) is None  # unmapped from the IOMMU with it
    am.close()


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200"])
def test_a_compute_event_comes_only_from_a_pipe_whose_eop_interrupts_are_on(arch, tmp_path):
    """A RELEASE_MEM asking for an interrupt: AM turned its pipes' EOP interrupts on (TIME_STAMP_INT_ENABLE, as
    amdgpu does), so the event comes through the IH ring; with the pipe's enable cleared the write still lands but
    no interrupt does (tinygrad's AM sets none: a stray EOP entry would read to it as an error)."""
    from usergpu.runtime.amd.pm4 import DATA_SEL_VALUE64, Packets
    from usergpu.runtime.amd.ring import RING_SIZE

    hal = machine(arch, directory=tmp_path)
    board, am = hal.boards[0], AM(hal)
    out, ring, pointers = am.alloc(4096), am.alloc(RING_SIZE), am.alloc(4096)
    queue = am.create_queue("pm4", ring, pointers.va, pointers.va + 8)
    assert reg(board, "CP_ME1_PIPE0_INT_CNTL") & board.table("GC", "CP_ME1_PIPE0_INT_CNTL").encode(
        TIME_STAMP_INT_ENABLE=1)
    put = 0
    for value, enabled in ((7, True), (9, False)):
        if not enabled:
            board.regs[board.address("GC", "CP_ME1_PIPE0_INT_CNTL")] = 0
        event = am.create_event()
        packets = Packets(arch).release_mem(out.va, value, DATA_SEL_VALUE64, interrupt_ctx=event)
        ring.view().cast("I")[put // 4: put // 4 + len(packets)] = np.array(packets, np.uint32)
        put += 4 * len(packets)
        pointers.view().cast("Q")[1] = put // 4
        queue.ring(put // 4)
        assert am.wait_events([event], timeout_ms=200) == ([event] if enabled else None)
        assert np.frombuffer(out.view(), np.uint64)[0] == value
    am.close()
