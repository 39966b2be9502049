"""The sOS's kernel-mode ring, as psp_v13_0.c and amdgpu_psp.c drive it on bare metal: the ring's MC address goes to
C2PMSG_69/70, its size to C2PMSG_71 and KM << 16 to C2PMSG_64, which reads bit 31 with a status in bits 15:0 once
the sOS took it. A command is a psp_gfx_cmd_resp in the command buffer and a psp_gfx_rb_frame (its address, a fence
address and value) at the write pointer (C2PMSG_67, in dwords); the sOS answers in the command buffer's resp and
writes the value to the fence."""

from __future__ import annotations

import ctypes
import time
from dataclasses import dataclass

from usergpu.autogen import psp_gfx_if as gfx
from usergpu.errors import Error
from usergpu.isa.amd.hw import psp as _psp

TIMEOUT = 2.0  # amdgpu: psp_timeout polls of 60-100 us
HANDSHAKE = 0.02  # amdgpu waits 20 ms after a ring command before polling ("handshake issue with hardware")
PAGE = 4096
FRAME_DW = ctypes.sizeof(gfx.struct_psp_gfx_rb_frame) // 4


class PSPError(Error):
    """The PSP refused a step or never answered: which step, which register or fence, what it read."""


@dataclass(frozen=True)
class RingMemory:
    """Where the ring's buffers are: VRAM offsets (4 KiB-aligned, 4 KiB each) and where VRAM starts in the MC
    address space (what the PSP is given: fb_base + offset)."""

    fb_base: int
    ring: int
    cmd: int
    fence: int


COMMANDS = {c.value: c.name.removeprefix("GFX_CMD_ID_") for c in gfx.psp_gfx_cmd_id}


class Ring:
    def __init__(self, mmio, vram, regs, mem: RingMemory):
        for name in ("ring", "cmd", "fence"):
            if getattr(mem, name) % PAGE:
                raise PSPError(f"PSP ring: the {name} buffer at VRAM {getattr(mem, name):#x} is not 4 KiB-aligned")
        self.mmio, self.vram, self.mem = mmio, vram, mem
        self.reg = {n: 4 * regs.address("MP0", f"MP0_SMN_C2PMSG_{n}")
                    for n in (_psp.C2PMSG_CTRL, _psp.C2PMSG_WPTR, _psp.C2PMSG_RING_LO, _psp.C2PMSG_RING_HI,
                              _psp.C2PMSG_RING_SIZE)}
        self.fence_value = 0

    def create(self) -> None:
        """Hand the sOS a fresh KM ring (waiting first for it to take ring commands)."""
        self._wait("ring creation: waiting for the sOS", check=False)
        for offset, size in ((self.mem.ring, _psp.RING_SIZE), (self.mem.fence, _psp.FENCE_BUFFER_SIZE)):
            self.vram.write(offset, bytes(size))
        mc = self.mem.fb_base + self.mem.ring
        self.mmio.write32(self.reg[_psp.C2PMSG_RING_LO], mc & 0xFFFFFFFF)
        self.mmio.write32(self.reg[_psp.C2PMSG_RING_HI], mc >> 32)
        self.mmio.write32(self.reg[_psp.C2PMSG_RING_SIZE], _psp.RING_SIZE)
        self._control(_psp.RING_TYPE_KM << 16, f"creating the KM ring at MC {mc:#x} ({_psp.RING_SIZE:#x} bytes)")
        self.fence_value = 0

    def destroy(self) -> None:
        self._control(gfx.GFX_CTRL_CMD_ID_DESTROY_RINGS, "destroying the rings")

    def submit(self, cmd: gfx.struct_psp_gfx_cmd_resp, what: str = "") -> gfx.struct_psp_gfx_resp:
        """Run one command; its response. PSPError when the fence never comes or the status is not 0 (amdgpu
        only warns on bare metal; a load that failed would surface later, far from its cause)."""
        step = f"PSP {COMMANDS.get(cmd.cmd_id, hex(cmd.cmd_id))}" + (f" ({what})" if what else "")
        self.vram.write(self.mem.cmd, bytes(cmd) + bytes(_psp.CMD_BUFFER_SIZE - ctypes.sizeof(cmd)))
        self.fence_value = self.fence_value % 0xFFFFFFFF + 1
        cmd_mc, fence_mc = self.mem.fb_base + self.mem.cmd, self.mem.fb_base + self.mem.fence
        frame = gfx.struct_psp_gfx_rb_frame(cmd_buf_addr_lo=cmd_mc & 0xFFFFFFFF, cmd_buf_addr_hi=cmd_mc >> 32,
                                            fence_addr_lo=fence_mc & 0xFFFFFFFF, fence_addr_hi=fence_mc >> 32,
                                            fence_value=self.fence_value)
        ring_dw = _psp.RING_SIZE // 4
        wptr = self.mmio.read32(self.reg[_psp.C2PMSG_WPTR]) % ring_dw
        if wptr % FRAME_DW:
            raise PSPError(f"{step}: MP0_SMN_C2PMSG_67 (write pointer) is {wptr:#x} dwords, not at a "
                           f"{FRAME_DW}-dword frame")
        self.vram.write(self.mem.ring + 4 * wptr, bytes(frame))
        self.mmio.write32(self.reg[_psp.C2PMSG_WPTR], (wptr + FRAME_DW) % ring_dw)
        deadline = time.monotonic() + TIMEOUT
        while (got := self.vram.read32(self.mem.fence)) != self.fence_value:
            if time.monotonic() > deadline:
                raise PSPError(f"{step}: no answer: the fence at VRAM {self.mem.fence:#x} (MC {fence_mc:#x}) reads "
                               f"{got:#x} after {TIMEOUT} s, waiting for {self.fence_value:#x} (the frame at write "
                               f"pointer {wptr:#x}, MP0_SMN_C2PMSG_67)")
            time.sleep(0.0001)
        size = ctypes.sizeof(gfx.struct_psp_gfx_cmd_resp)
        resp = gfx.struct_psp_gfx_cmd_resp.from_buffer_copy(self.vram.read(self.mem.cmd, size)).resp
        if resp.status:
            raise PSPError(f"{step} failed: the sOS answered status {resp.status:#010x}")
        return resp

    def _control(self, value: int, step: str) -> None:
        self.mmio.write32(self.reg[_psp.C2PMSG_CTRL], value)
        time.sleep(HANDSHAKE)
        self._wait(step, check=True)

    def _wait(self, step: str, check: bool) -> None:
        """Until C2PMSG_64's bit 31 (the sOS answered); check: its status bits must be 0."""
        deadline = time.monotonic() + TIMEOUT
        while not (value := self.mmio.read32(self.reg[_psp.C2PMSG_CTRL])) & _psp.TOS_READY:
            if time.monotonic() > deadline:
                raise PSPError(f"PSP {step}: MP0_SMN_C2PMSG_64 reads {value:#010x} after {TIMEOUT} s, waiting for "
                               f"bit 31 (sOS ready)")
            time.sleep(0.0005)
        if check and value & _psp.STATUS_MASK != _psp.TOS_READY:
            raise PSPError(f"PSP {step}: MP0_SMN_C2PMSG_64 reads {value:#010x}: status {value & 0xFFFF:#06x}")
