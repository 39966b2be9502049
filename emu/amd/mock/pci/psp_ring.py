"""The mock sOS, the PSP's trusted OS once the bootloader started it: C2PMSG_64 reads 0x80000000 (ready for a ring
command). Ring creation (MC address in C2PMSG_69/70, size in 71, KM << 16 written to 64) is answered in C2PMSG_64
with a status in bits 15:0, the model's codes: RING_BAD_ADDRESS (outside VRAM or not 4 KiB-aligned), RING_BAD_SIZE
(not a whole number of 64-byte frames), RING_BAD_COMMAND. A write of C2PMSG_67 (the write pointer, in dwords) runs
the frames up to it: each frame's command buffer is read and executed, its resp.status written back, then the fence
value written to the fence address. A frame whose command or fence buffer is outside VRAM is dropped unanswered.

Commands: LOAD_TOC answers a TMR size; SETUP_TMR records the TMR (inside VRAM, 1 MiB-aligned, at least the TOC's
size — PSP_TMR_SIZE where the SOS file has no TOC — its VRAM offset as the system address; on those boards a TMR
of size 0 at 0 keeps the one their firmware set up at boot); LOAD_IP_FW needs the
TOC (where there is one), and the TMR for all but the SMU's firmware
(amdgpu loads that one before SETUP_TMR on MP0 13.0.0), a known type and a payload inside VRAM, not all zeros;
AUTOLOAD_RLC needs RLC_G; SRIOV_SPATIAL_PART (the CDNA parts only) takes a number of compute partitions that
divides the XCCs. Failures answer GlobalPlatform TEE codes (which one is the model's choice), anything else
PSP_ERR_UNKNOWN_COMMAND. Nothing is authenticated. What other blocks ask (which firmware is in, whether the RLC
autoload ran) lives in the board's firmware words, so another process opening the board sees it.
MOCKPCI_FAULT=psp-ring-hang: frames are taken and never answered."""

from __future__ import annotations

import ctypes

import numpy as np

from usergpu.autogen import psp_gfx_if as gfx
from usergpu.emu.amd.mock.cdna import PARTS
from usergpu.isa.amd.hw import psp as _psp

RING_BAD_ADDRESS, RING_BAD_SIZE, RING_BAD_COMMAND = 0x1, 0x2, 0x3
TOC_SOS = ("gfx1100", "gfx1200")  # the boards whose SOS file carries a TOC (LOAD_TOC sizes their TMR)
TEE_ERROR_BAD_PARAMETERS, TEE_ERROR_BAD_STATE = 0xFFFF0006, 0xFFFF0007
TOC_TMR_SIZE = 0x1000000  # the model's answer to LOAD_TOC (the real sOS sizes the TMR from what the TOC lists)
FRAME, CMD = ctypes.sizeof(gfx.struct_psp_gfx_rb_frame), ctypes.sizeof(gfx.struct_psp_gfx_cmd_resp)
RESP, RESP_SIZE = gfx.struct_psp_gfx_cmd_resp.resp.offset, ctypes.sizeof(gfx.struct_psp_gfx_resp)
FW_TYPES = {t.value for t in gfx.psp_gfx_fw_type} - {gfx.GFX_FW_TYPE_NONE, gfx.GFX_FW_TYPE_MAX}
# the board's firmware words the sOS keeps: ring MC address, size, read pointer (dwords); the TOC's TMR size; TMR
# MC address, size; RLC autoload done; the compute partitions asked for (0: none asked); from LOADED, one bit per
# GFX_FW_TYPE loaded (32 a word)
RING, RING_SIZE, RPTR, TOC, TMR, TMR_SIZE, AUTOLOADED, PARTITIONS, LOADED = 16, 17, 18, 19, 20, 21, 22, 23, 24
WORDS = slice(RING, LOADED + gfx.GFX_FW_TYPE_MAX // 32 + 1)


CTRL, WPTR, LO, HI, SIZE = (_psp.C2PMSG_CTRL, _psp.C2PMSG_WPTR, _psp.C2PMSG_RING_LO, _psp.C2PMSG_RING_HI,
                             _psp.C2PMSG_RING_SIZE)
ALIVE = 81  # C2PMSG_81: the sOS's sign of life


def _mc(lo: int, hi: int) -> int:
    return hi << 32 | lo


class MockSOS:
    def __init__(self, gpu, hang: bool = False):
        self.gpu, self.hang = gpu, hang
        self.words = gpu.firmware
        self.reg = {n: gpu.address("MP0", f"MP0_SMN_C2PMSG_{n}") for n in (CTRL, WPTR, LO, HI, SIZE, ALIVE)}
        self.loaded_fw: list[int] = []  # GFX_FW_TYPE_* in the order LOAD_IP_FW took them (this process's)
        self.images: dict[int, bytes] = {}  # GFX_FW_TYPE_* -> the payload it was handed
        self.commands = {gfx.GFX_CMD_ID_LOAD_TOC: self._load_toc, gfx.GFX_CMD_ID_SETUP_TMR: self._setup_tmr,
                         gfx.GFX_CMD_ID_LOAD_IP_FW: self._load_ip_fw, gfx.GFX_CMD_ID_AUTOLOAD_RLC: self._autoload}
        if gpu.arch in PARTS:  # the parts of several XCCs split them into compute partitions
            self.commands[gfx.GFX_CMD_ID_SRIOV_SPATIAL_PART] = self._spatial_partition
        gpu.on_write[self.reg[CTRL]] = self.control
        gpu.on_write[self.reg[WPTR]] = self.doorbell

    def power_on(self) -> None:
        self.gpu.regs[self.reg[CTRL]] = self.gpu.regs[self.reg[WPTR]] = 0
        self.words[WORDS] = 0

    def start(self) -> None:
        """The bootloader started the sOS: it takes ring commands. An sOS whose SOS file has no TOC (MI300X's,
        MI350X's) sizes the TMR itself, as amdgpu does without one: LOAD_TOC is not needed first."""
        self.gpu.regs[self.reg[CTRL]] = _psp.TOS_READY
        if self.gpu.arch not in TOC_SOS:
            self.words[TOC] = _psp.TMR_SIZE

    def has_firmware(self, fw_type: int) -> bool:
        return bool(int(self.words[LOADED + fw_type // 32]) >> fw_type % 32 & 1)

    @property
    def autoloaded(self) -> bool:
        return bool(self.words[AUTOLOADED])

    def control(self, value: int) -> None:
        if not self.gpu.regs[self.reg[ALIVE]]:
            return  # no sOS to answer
        status = 0
        if value == gfx.GFX_CTRL_CMD_ID_DESTROY_RINGS:
            self.words[RING_SIZE] = 0
        elif value == _psp.RING_TYPE_KM << 16:
            status = self._create()
        else:
            status = RING_BAD_COMMAND
        self.gpu.regs[self.reg[CTRL]] = _psp.TOS_READY | status

    def _create(self) -> int:
        regs = self.gpu.regs
        mc, size = _mc(int(regs[self.reg[LO]]), int(regs[self.reg[HI]])), int(regs[self.reg[SIZE]])
        if not size or size % FRAME:
            return RING_BAD_SIZE
        if mc % 4096 or self._vram(mc, size) is None:
            return RING_BAD_ADDRESS
        self.words[RING], self.words[RING_SIZE] = mc, size
        self.words[RPTR] = int(regs[self.reg[WPTR]]) % (size // 4)  # frames start at the write pointer as it is
        return 0

    def doorbell(self, wptr: int) -> None:
        size = int(self.words[RING_SIZE])
        if not size or self.hang or wptr >= size // 4 or wptr % (FRAME // 4):
            return
        ring, rptr = self._vram(int(self.words[RING]), size), int(self.words[RPTR])
        while rptr != wptr:
            at = ring + 4 * rptr
            self._run(gfx.struct_psp_gfx_rb_frame.from_buffer_copy(bytes(self.gpu.vram[at : at + FRAME])))
            rptr = (rptr + FRAME // 4) % (size // 4)
        self.words[RPTR] = rptr

    def _run(self, frame: gfx.struct_psp_gfx_rb_frame) -> None:
        at = self._vram(_mc(frame.cmd_buf_addr_lo, frame.cmd_buf_addr_hi), CMD)
        fence = self._vram(_mc(frame.fence_addr_lo, frame.fence_addr_hi), 4)
        if at is None or fence is None:
            return
        vram = self.gpu.vram
        cmd = gfx.struct_psp_gfx_cmd_resp.from_buffer_copy(bytes(vram[at : at + CMD]))
        run = self.commands.get(cmd.cmd_id)
        cmd.resp.status = run(cmd) if run else gfx.PSP_ERR_UNKNOWN_COMMAND
        vram[at + RESP : at + RESP + RESP_SIZE] = np.frombuffer(bytes(cmd.resp), np.uint8)
        vram[fence : fence + 4] = np.frombuffer(frame.fence_value.to_bytes(4, "little"), np.uint8)

    def _vram(self, mc: int, size: int) -> int | None:
        try:
            return self.gpu.mc_to_vram(mc, size)
        except ValueError:
            return None

    def _payload(self, mc: int, size: int) -> bytes | None:
        """What the driver staged at mc: None when empty, outside VRAM or all zeros."""
        at = self._vram(mc, size) if size else None
        data = None if at is None else self.gpu.vram[at : at + size]
        return bytes(data) if data is not None and data.any() else None

    def _load_toc(self, cmd: gfx.struct_psp_gfx_cmd_resp) -> int:
        toc = cmd.cmd.cmd_load_toc
        if self._payload(_mc(toc.toc_phy_addr_lo, toc.toc_phy_addr_hi), toc.toc_size) is None:
            return TEE_ERROR_BAD_PARAMETERS
        self.words[TOC] = cmd.resp.tmr_size = TOC_TMR_SIZE
        return 0

    def _setup_tmr(self, cmd: gfx.struct_psp_gfx_cmd_resp) -> int:
        tmr = cmd.cmd.cmd_setup_tmr
        mc, size = _mc(tmr.buf_phy_addr_lo, tmr.buf_phy_addr_hi), tmr.buf_size
        if size == 0 and mc == 0 and self.gpu.arch not in TOC_SOS:  # keep the TMR the firmware set up at boot
            self.words[TMR], self.words[TMR_SIZE] = 0, _psp.TMR_SIZE
            return 0
        at = self._vram(mc, size) if size else None
        system = _mc(tmr.system_phy_addr_lo, tmr.system_phy_addr_hi)
        if at is None or mc % _psp.TMR_ALIGNMENT or size < int(self.words[TOC]) or \
                (tmr.bitfield.virt_phy_addr and system != at):
            return TEE_ERROR_BAD_PARAMETERS
        self.words[TMR], self.words[TMR_SIZE] = mc, size
        return 0

    def _load_ip_fw(self, cmd: gfx.struct_psp_gfx_cmd_resp) -> int:
        fw = cmd.cmd.cmd_load_ip_fw
        if not self.words[TOC] or (fw.fw_type != gfx.GFX_FW_TYPE_SMU and not self.words[TMR_SIZE]):
            return TEE_ERROR_BAD_STATE
        payload = self._payload(_mc(fw.fw_phy_addr_lo, fw.fw_phy_addr_hi), fw.fw_size)
        if fw.fw_type not in FW_TYPES or payload is None:
            return TEE_ERROR_BAD_PARAMETERS
        self.words[LOADED + fw.fw_type // 32] = int(self.words[LOADED + fw.fw_type // 32]) | 1 << fw.fw_type % 32
        self.loaded_fw.append(fw.fw_type)
        self.images[fw.fw_type] = payload
        return 0

    def _spatial_partition(self, cmd: gfx.struct_psp_gfx_cmd_resp) -> int:
        """SRIOV_SPATIAL_PART: the XCCs split into `mode` compute partitions (psp_spatial_partition), a divisor of
        their number."""
        mode, xccs = cmd.cmd.cmd_spatial_part.mode, PARTS[self.gpu.arch].xccs
        if not 0 < mode <= xccs or xccs % mode:
            return TEE_ERROR_BAD_PARAMETERS
        self.words[PARTITIONS] = mode
        return 0

    def _autoload(self, cmd: gfx.struct_psp_gfx_cmd_resp) -> int:
        if not self.has_firmware(gfx.GFX_FW_TYPE_RLC_G):
            return TEE_ERROR_BAD_STATE
        self.words[AUTOLOADED] = 1
        return 0
