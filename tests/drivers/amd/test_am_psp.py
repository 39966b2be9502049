"""AM's PSP after the bootloader, on the mock gfx1100 board: the sOS's ring, the TMR and Navi31's firmware through
LOAD_IP_FW in amdgpu's order; what the sOS answers when something is wrong, a ring that never answers, and firmware
files that do not hold what their headers say."""

from __future__ import annotations

import shutil
import struct

import pytest

from usergpu.autogen import amdgpu_ucode as uc
from usergpu.autogen import psp_gfx_if as gfx
from usergpu.drivers.amd.am import firmware, psp_ring
from usergpu.drivers.amd.am.device import AMDevice
from usergpu.drivers.amd.am.firmware import FirmwareError, load, sos_binaries, ucodes
from usergpu.drivers.amd.am.psp import PSP, PSPError, RingMemory
from usergpu.drivers.pci import pci_devices
from usergpu.emu.amd.mock.pci.board import MockPCIGPU
from usergpu.emu.amd.mock.pci.function import install_pci
from usergpu.emu.amd.mock.pci.psp_ring import TOC_TMR_SIZE
from usergpu.emu.mock.hal import MockHAL

MiB = 1 << 20
NAVI31 = ((11, 0, 0), (6, 0, 0), (13, 0, 0))  # GC, SDMA0, MP1


def board(tmp_path):
    """The gfx1100 mock with its sOS up, and a PSP driver on it with the ring's buffers and TMR placed at the top."""
    hal = MockHAL(tmp_path)
    (tmp_path / "tmp").mkdir(parents=True, exist_ok=True)
    mock = MockPCIGPU("gfx1100")
    install_pci(hal, mock, "0000:03:00.0")
    dev = AMDevice(pci_devices(hal, 0x1002)[0], hal, reset=False)
    dev.boot_psp()
    top = dev.vram_size
    psp = PSP(dev.mmio, dev.vram, dev.regs, top - 16 * MiB, dev.fb_base)
    mem = RingMemory(dev.fb_base, top - 20 * MiB, top - 20 * MiB + 0x1000, top - 20 * MiB + 0x2000)
    return mock, dev, psp, mem, top - 48 * MiB


def expected() -> list[tuple[int, int]]:
    """(GFX_FW_TYPE, size) as amdgpu loads Navi31's ucodes, read straight from the files' headers."""
    def head(name, header):
        return header.from_buffer_copy(load(name).data)
    sdma = head("sdma_6_0_0", uc.struct_sdma_firmware_header_v2_0)
    pfp, me, mec = (head(f"gc_11_0_0_{n}", uc.struct_gfx_firmware_header_v2_0) for n in ("pfp", "me", "mec"))
    mes_file = "mes_2" if firmware.find("gc_11_0_0_mes_2") else "mes"  # amdgpu takes the v2 MES where it is
    mes, kiq = (head(f"gc_11_0_0_{n}", uc.struct_mes_firmware_header_v1_0) for n in (mes_file, "mes1"))
    imu = head("gc_11_0_0_imu", uc.struct_imu_firmware_header_v1_0)
    rlc = head("gc_11_0_0_rlc", uc.struct_rlc_firmware_header_v2_3)
    assert rlc.v2_2.v2_1.save_restore_list_cntl_size_bytes == 0  # empty in Debian's file: amdgpu skips it
    return [(gfx.GFX_FW_TYPE_SMU, load("smu_13_0_0").header.ucode_size_bytes),  # before SETUP_TMR on MP0 13.0.0
            (gfx.GFX_FW_TYPE_SDMA_UCODE_TH0, sdma.ctx_ucode_size_bytes),
            (gfx.GFX_FW_TYPE_SDMA_UCODE_TH1, sdma.ctl_ucode_size_bytes),
            (gfx.GFX_FW_TYPE_RS64_PFP, pfp.ucode_size_bytes), (gfx.GFX_FW_TYPE_RS64_ME, me.ucode_size_bytes),
            (gfx.GFX_FW_TYPE_RS64_MEC, mec.ucode_size_bytes),
            (gfx.GFX_FW_TYPE_RS64_PFP_P0_STACK, pfp.data_size_bytes),
            (gfx.GFX_FW_TYPE_RS64_PFP_P1_STACK, pfp.data_size_bytes),
            (gfx.GFX_FW_TYPE_RS64_ME_P0_STACK, me.data_size_bytes),
            (gfx.GFX_FW_TYPE_RS64_ME_P1_STACK, me.data_size_bytes),
            *((gfx.GFX_FW_TYPE_RS64_MEC_P0_STACK + i, mec.data_size_bytes) for i in range(4)),
            (gfx.GFX_FW_TYPE_CP_MES, mes.mes_ucode_size_bytes),
            (gfx.GFX_FW_TYPE_MES_STACK, mes.mes_ucode_data_size_bytes),
            (gfx.GFX_FW_TYPE_CP_MES_KIQ, kiq.mes_ucode_size_bytes),
            (gfx.GFX_FW_TYPE_MES_KIQ_STACK, kiq.mes_ucode_data_size_bytes),
            (gfx.GFX_FW_TYPE_IMU_I, imu.imu_iram_ucode_size_bytes),
            (gfx.GFX_FW_TYPE_IMU_D, imu.imu_dram_ucode_size_bytes),
            (gfx.GFX_FW_TYPE_RLC_RESTORE_LIST_GPM_MEM, rlc.v2_2.v2_1.save_restore_list_gpm_size_bytes),
            (gfx.GFX_FW_TYPE_RLC_RESTORE_LIST_SRM_MEM, rlc.v2_2.v2_1.save_restore_list_srm_size_bytes),
            (gfx.GFX_FW_TYPE_RLC_IRAM, rlc.v2_2.rlc_iram_ucode_size_bytes),
            (gfx.GFX_FW_TYPE_RLC_DRAM_BOOT, rlc.v2_2.rlc_dram_ucode_size_bytes),
            (gfx.GFX_FW_TYPE_RLC_P, rlc.rlcp_ucode_size_bytes), (gfx.GFX_FW_TYPE_RLC_V, rlc.rlcv_ucode_size_bytes),
            (gfx.GFX_FW_TYPE_RLC_G, rlc.v2_2.v2_1.v2_0.header.ucode_size_bytes),
            # the SOS file's register list, last (psp_rl_load after psp_load_fw)
            (gfx.GFX_FW_TYPE_REG_LIST, len(sos_binaries(load("psp_13_0_0_sos"))[uc.PSP_FW_TYPE_PSP_RL]))]


def test_navi31_firmware_goes_in_in_amdgpus_order(tmp_path):
    mock, dev, psp, mem, tmr = board(tmp_path)
    assert not mock.psp.has_firmware(gfx.GFX_FW_TYPE_RS64_MEC)
    assert psp.start(load("psp_13_0_0_sos"), ucodes(*NAVI31), mem, tmr, 24 * MiB) == TOC_TMR_SIZE
    sos = mock.psp.sos
    assert [(t, len(sos.images[t])) for t in mock.psp.loaded_fw] == expected()
    mec = load("gc_11_0_0_mec")
    head = uc.struct_gfx_firmware_header_v2_0.from_buffer_copy(mec.data)
    assert sos.images[gfx.GFX_FW_TYPE_RS64_MEC] == mec.ucode[: head.ucode_size_bytes]  # staged where the MC said
    assert sos.images[gfx.GFX_FW_TYPE_RS64_MEC_P3_STACK] == \
        mec.data[head.data_offset_bytes : head.data_offset_bytes + head.data_size_bytes]
    assert mock.psp.has_firmware(gfx.GFX_FW_TYPE_RS64_MEC) and mock.psp.has_firmware(gfx.GFX_FW_TYPE_SDMA_UCODE_TH0)
    assert sos.autoloaded
    dev.close()


def test_the_ring_can_be_destroyed_and_made_again(tmp_path):
    mock, dev, psp, mem, _ = board(tmp_path)
    psp.create_ring(mem)
    assert psp.tmr_size(load("psp_13_0_0_sos")) == TOC_TMR_SIZE
    psp.ring.destroy()
    psp.create_ring(mem)
    psp.setup_tmr(dev.vram_size - 48 * MiB, TOC_TMR_SIZE)
    dev.close()


def test_what_the_sos_refuses_names_the_command_and_status(tmp_path):
    mock, dev, psp, mem, tmr = board(tmp_path)
    psp.create_ring(mem)
    payload = next(u.payload for u in ucodes(*NAVI31) if u.name == "CP_RS64_MEC")
    with pytest.raises(PSPError, match=rf"LOAD_IP_FW \(RS64_MEC, {len(payload)} bytes at MC 0x[0-9a-f]+\) failed: "
                                       r".*status 0xffff0007"):
        psp.load_ip_fw(gfx.GFX_FW_TYPE_RS64_MEC, payload)  # no TOC, no TMR yet
    psp.tmr_size(load("psp_13_0_0_sos"))
    with pytest.raises(PSPError, match="SETUP_TMR .* failed: .*status 0xffff0006"):
        psp.setup_tmr(tmr, 4 * MiB)  # smaller than the TOC asked for
    with pytest.raises(PSPError, match="SETUP_TMR: the TMR at VRAM 0x[0-9a-f]+ is not 1 MiB-aligned"):
        psp.setup_tmr(tmr + 4096, TOC_TMR_SIZE)
    with pytest.raises(PSPError, match="AUTOLOAD_RLC failed: .*status 0xffff0007"):
        psp.autoload_rlc()  # no RLC_G
    with pytest.raises(PSPError, match="PSP 0x55 failed: .*status 0x00000100"):
        psp.submit(gfx.struct_psp_gfx_cmd_resp(cmd_id=0x55))
    assert mock.psp.loaded_fw == []
    dev.close()


def test_a_ring_the_sos_cannot_take(tmp_path, monkeypatch):
    mock, dev, psp, mem, _ = board(tmp_path)
    with pytest.raises(PSPError, match="ring buffer at VRAM 0x[0-9a-f]+ is not 4 KiB-aligned"):
        psp.create_ring(RingMemory(mem.fb_base, mem.ring + 64, mem.cmd, mem.fence))
    with pytest.raises(PSPError, match=r"creating the KM ring at MC 0x[0-9a-f]+ .*C2PMSG_64 reads 0x80000001: status "
                                       r"0x0001"):
        psp.create_ring(RingMemory(0, mem.ring, mem.cmd, mem.fence))  # an MC address below VRAM
    monkeypatch.setattr(psp_ring, "TIMEOUT", 0.05)
    mock.regs[mock.address("MP0", "MP0_SMN_C2PMSG_64")] = 0  # as before the sOS runs
    with pytest.raises(PSPError, match="waiting for the sOS: MP0_SMN_C2PMSG_64 reads 0x00000000 .*bit 31"):
        psp.create_ring(mem)
    dev.close()


def test_a_ring_that_never_answers_times_out(tmp_path, monkeypatch):
    monkeypatch.setenv("MOCKPCI_FAULT", "psp-ring-hang")
    monkeypatch.setattr(psp_ring, "TIMEOUT", 0.05)
    mock, dev, psp, mem, _ = board(tmp_path)
    psp.create_ring(mem)
    with pytest.raises(PSPError, match=rf"LOAD_TOC .*no answer: the fence at VRAM {mem.fence:#x} \(MC "
                                       rf"{dev.fb_base + mem.fence:#x}\) reads 0x0 after 0.05 s, waiting for 0x1"):
        psp.tmr_size(load("psp_13_0_0_sos"))
    dev.close()


def _damaged(tmp_path, monkeypatch, name: str, at: int, value: int) -> None:
    """The firmware folder with one file's 32-bit field at `at` overwritten."""
    folder = tmp_path / "usergpu/firmware/lib/firmware/amdgpu"
    shutil.copytree(firmware.find(name).parent, folder)
    data = bytearray((folder / f"{name}.bin").read_bytes())
    data[at : at + 4] = struct.pack("<I", value)
    (folder / f"{name}.bin").write_bytes(bytes(data))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))


@pytest.mark.parametrize(("name", "field", "value", "message"), [
    ("gc_11_0_0_mec", uc.struct_gfx_firmware_header_v2_0.data_size_bytes, 1 << 30,
     r"gc_11_0_0_mec.bin: CP_RS64_MEC_P0_STACK: data_size_bytes at data_offset_bytes: expected a non-empty part "
     r"inside 60\.\.\d+, found \d+\.\.\d+"),
    ("sdma_6_0_0", uc.struct_sdma_firmware_header_v2_0.ctl_ucode_size_bytes, 0,
     "sdma_6_0_0.bin: SDMA_UCODE_TH1: ctl_ucode_size_bytes at ctl_ucode_offset: expected a non-empty part"),
    ("gc_11_0_0_imu", uc.struct_common_firmware_header.header_version_major, 2,
     r"gc_11_0_0_imu.bin: header version \(for IMU_I\): expected 1.0 or a later 1.x, found 2.0"),
    ("gc_11_0_0_rlc", uc.struct_common_firmware_header.header_version_major, 4 << 16 | 2,
     "gc_11_0_0_rlc.bin: header version: expected 2.0 to 2.3, found 2.4"),
])
def test_corrupt_firmware_is_refused(tmp_path, monkeypatch, name, field, value, message):
    _damaged(tmp_path, monkeypatch, name, field.offset, value)
    with pytest.raises(FirmwareError, match=message):
        ucodes(*NAVI31)
