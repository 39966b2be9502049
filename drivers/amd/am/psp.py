"""The PSP (MP0) bootloader, as psp_v13_0.c drives it: each part of the SOS firmware file is copied to a 1 MiB-aligned
buffer, its MC address (>> 20) written to C2PMSG_36 and the bootloader's command to C2PMSG_35, which reads 0x80000000
again when the bootloader is ready for the next (bits 7:0: an error). After the sOS, its sign of life appears in
C2PMSG_81 and its version in C2PMSG_58. A board whose sOS is alive already is left as it is.

Then, as psp_hw_start and psp_load_non_psp_fw go on: the sOS's ring (psp_ring.py), the TMR's size (LOAD_TOC with the SOS
file's TOC), SETUP_TMR, and each ucode through LOAD_IP_FW, staged in the same 1 MiB buffer (the PSP copies it into the
TMR before it answers), with AUTOLOAD_RLC once RLC_G is in, and the SOS file's register list last. On MI300X and MI350X
the firmware set the TMR up at boot: SETUP_TMR only says so (size 0)."""

from __future__ import annotations

import time

from usergpu.autogen import amdgpu_ucode as uc
from usergpu.autogen import psp_gfx_if as gfx
from usergpu.drivers.amd.am.firmware import Firmware, Ucode, sos_binaries
from usergpu.drivers.amd.am.ip import Registers, UnsupportedGPU
from usergpu.drivers.amd.am.nbio import smn_read
from usergpu.drivers.amd.am.psp_ring import PSPError, Ring, RingMemory
from usergpu.isa.amd.hw import psp as _psp

TIMEOUT = 2.0
PARTS = {v: k.removeprefix("PSP_FW_TYPE_PSP_") for k, v in vars(uc).items() if k.startswith("PSP_FW_TYPE_PSP_")}
FW_TYPES = {t.value: t.name.removeprefix("GFX_FW_TYPE_") for t in gfx.psp_gfx_fw_type}


class PSP:
    def __init__(self, mmio, vram, regs, staging: int, fb_base: int):
        """staging: the VRAM offset (1 MiB-aligned) parts are copied to: the bootloader's, the TOC and ucodes;
        fb_base: where VRAM starts in the MC address space (the bootloader is given MC addresses)."""
        if staging % (1 << 20):
            raise PSPError(f"PSP staging buffer at {staging:#x} is not 1 MiB-aligned")
        version = regs.ip("MP0").version
        if version[0] != 13:
            raise UnsupportedGPU(f"MP0 {'.'.join(map(str, version))}: AM drives the PSP 13.x bootloader (Navi31) so "
                                 "far")
        self.mmio, self.vram, self.regs, self.staging, self.version = mmio, vram, regs, staging, version
        self.fb_base = fb_base
        self.ring: Ring | None = None
        self.reg = {n: 4 * regs.address("MP0", f"MP0_SMN_C2PMSG_{n}") for n in (35, 36, 58, 81)}

    def sos_alive(self) -> bool:
        return self.mmio.read32(self.reg[81]) != 0

    def boot(self, sos: Firmware) -> int:
        """Load the SOS file's parts in order, then the sOS; its version (also when it was up already)."""
        if not self.sos_alive():
            parts = sos_binaries(sos, aux=self.aux_sos())
            for kind, command in _psp.ORDER:
                if kind in parts:
                    self._load(parts[kind], command, f"loading {PARTS[kind]} ({len(parts[kind])} bytes)")
            deadline = time.monotonic() + TIMEOUT
            while not self.sos_alive():
                if time.monotonic() > deadline:
                    raise PSPError(f"PSP: no sOS sign of life: MP0_SMN_C2PMSG_81 stayed 0 for {TIMEOUT} s after "
                                   "the SOS was loaded")
                time.sleep(0.0005)
        return self.mmio.read32(self.reg[58])

    def aux_sos(self) -> bool:
        """Whether the SOS file's aux binaries are the ones to load (MI300X with older SMU firmware)."""
        if self.version != _psp.AUX_SOS_MP0:
            return False
        return smn_read(Registers(self.mmio, self.regs), _psp.MP1_PUB_SCRATCH0) < _psp.AUX_SOS_BELOW

    def _ready(self, step: str) -> None:
        deadline = time.monotonic() + TIMEOUT
        while (value := self.mmio.read32(self.reg[35])) != _psp.MBOX_READY:
            if value & 0xFF and value & _psp.MBOX_READY:
                raise PSPError(f"PSP bootloader, {step}: error {value & 0xFF:#04x} in MP0_SMN_C2PMSG_35 "
                               f"({value:#010x})")
            if time.monotonic() > deadline:
                raise PSPError(f"PSP bootloader, {step}: MP0_SMN_C2PMSG_35 reads {value:#010x} after {TIMEOUT} s, "
                               f"waiting for {_psp.MBOX_READY:#010x} (ready)")
            time.sleep(0.0005)

    def _load(self, data: bytes, command: int, step: str) -> None:
        self._ready(f"before {step}")
        self.vram.write(self.staging, data + bytes(-len(data) % 4))
        self.mmio.write32(self.reg[36], (self.fb_base + self.staging) >> 20)  # an MC address (fw_pri_mc_addr)
        self.mmio.write32(self.reg[35], command)
        self._ready(step)

    def create_ring(self, mem: RingMemory) -> None:
        """The sOS's KM ring on the buffers `mem` places (after boot())."""
        self.ring = Ring(self.mmio, self.vram, self.regs, mem)
        self.ring.create()

    def submit(self, cmd: gfx.struct_psp_gfx_cmd_resp, what: str = "") -> gfx.struct_psp_gfx_resp:
        """One command through the ring; its response (PSPError on a non-zero status or no answer)."""
        return self._ring().submit(cmd, what)

    def tmr_size(self, sos: Firmware) -> int:
        """What the TMR needs: the sOS's answer to LOAD_TOC with the SOS file's TOC, else amdgpu's fixed size."""
        toc = sos_binaries(sos, aux=self.aux_sos()).get(uc.PSP_FW_TYPE_PSP_TOC)
        if toc is None:
            return _psp.TMR_SIZE
        mc = self._stage(toc, "the TOC")
        cmd = gfx.struct_psp_gfx_cmd_resp(cmd_id=gfx.GFX_CMD_ID_LOAD_TOC)
        cmd.cmd.cmd_load_toc = gfx.struct_psp_gfx_cmd_load_toc(mc & 0xFFFFFFFF, mc >> 32, len(toc))
        size = self.submit(cmd, f"{len(toc)} bytes at MC {mc:#x}").tmr_size
        if not size:
            raise PSPError("PSP LOAD_TOC: the sOS answered a TMR size of 0")
        return size

    def setup_tmr(self, offset: int, size: int) -> None:
        """The trusted memory region at this VRAM offset (1 MiB-aligned), `size` bytes; a size of 0 (and address 0)
        keeps the TMR the firmware set up at boot (psp_prep_tmr_cmd_buf without a TMR buffer)."""
        if offset % _psp.TMR_ALIGNMENT:
            raise PSPError(f"PSP SETUP_TMR: the TMR at VRAM {offset:#x} is not 1 MiB-aligned")
        mc = self._mc(offset) if size else 0
        cmd = gfx.struct_psp_gfx_cmd_resp(cmd_id=gfx.GFX_CMD_ID_SETUP_TMR)
        tmr = cmd.cmd.cmd_setup_tmr
        tmr.buf_phy_addr_lo, tmr.buf_phy_addr_hi, tmr.buf_size = mc & 0xFFFFFFFF, mc >> 32, size
        tmr.bitfield.virt_phy_addr = 1  # the PSP is given the VRAM offset too
        tmr.system_phy_addr_lo, tmr.system_phy_addr_hi = offset & 0xFFFFFFFF, offset >> 32  # 0 for a boot-time TMR
        self.submit(cmd, f"{size:#x} bytes at MC {mc:#x}")

    def load_ip_fw(self, fw_type: int, payload: bytes) -> None:
        """One ucode (GFX_FW_TYPE_*), staged and handed over with LOAD_IP_FW."""
        what = f"{FW_TYPES.get(fw_type, hex(fw_type))}, {len(payload)} bytes"
        mc = self._stage(payload, what)
        cmd = gfx.struct_psp_gfx_cmd_resp(cmd_id=gfx.GFX_CMD_ID_LOAD_IP_FW)
        cmd.cmd.cmd_load_ip_fw = gfx.struct_psp_gfx_cmd_load_ip_fw(mc & 0xFFFFFFFF, mc >> 32, len(payload), fw_type)
        self.submit(cmd, f"{what} at MC {mc:#x}")

    def autoload_rlc(self) -> None:
        self.submit(gfx.struct_psp_gfx_cmd_resp(cmd_id=gfx.GFX_CMD_ID_AUTOLOAD_RLC))

    def start(self, sos: Firmware, loads: list[Ucode], mem: RingMemory, tmr: int, tmr_room: int) -> int:
        """After boot(), psp_hw_start's and psp_load_non_psp_fw's order: the ring, the TMR's size, the SMU's
        firmware (before SETUP_TMR where the PMFW manages DF C-states), SETUP_TMR at VRAM `tmr` (`tmr_room` bytes
        free there), then the other ucodes, AUTOLOAD_RLC after RLC_G. The TMR's size, for the caller to keep."""
        self.create_ring(mem)
        boot_time = self.version in _psp.BOOT_TIME_TMR
        size = 0 if boot_time else self.tmr_size(sos)
        if size > tmr_room:
            raise PSPError(f"PSP: the sOS wants a {size:#x}-byte TMR, {tmr_room:#x} bytes are free at VRAM {tmr:#x}")
        early = [u for u in loads if u.name == "SMC" and self.version in _psp.PMFW_BEFORE_TMR]
        for ucode in early:
            self.load_ip_fw(ucode.fw_type, ucode.payload)
        self.setup_tmr(0 if boot_time else tmr, size)
        for ucode in loads:
            if ucode not in early:
                self.load_ip_fw(ucode.fw_type, ucode.payload)
                if ucode.name == "RLC_G" and self.version not in _psp.NO_RLC_AUTOLOAD:
                    self.autoload_rlc()
        register_list = sos_binaries(sos, aux=self.aux_sos()).get(uc.PSP_FW_TYPE_PSP_RL)
        if register_list:  # psp_rl_load, after the other firmware
            self.load_ip_fw(gfx.GFX_FW_TYPE_REG_LIST, register_list)
        return size

    def _ring(self) -> Ring:
        if self.ring is None:
            raise PSPError("PSP: no ring yet: create_ring() after boot()")
        return self.ring

    def _mc(self, offset: int) -> int:
        return self._ring().mem.fb_base + offset

    def _stage(self, data: bytes, what: str) -> int:
        """Copy data to the staging buffer; its MC address."""
        if len(data) > _psp.PRIVATE_SIZE:
            raise PSPError(f"PSP: {what} does not fit the {_psp.PRIVATE_SIZE:#x}-byte staging buffer")
        self.vram.write(self.staging, data + bytes(-len(data) % 4))
        return self._mc(self.staging)
