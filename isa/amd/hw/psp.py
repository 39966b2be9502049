"""The PSP bootloader's commands (hand-written, like _regs.py: amdgpu_psp.h's enum psp_bootloader_cmd, a header
that does not parse on its own) and the order amdgpu's psp_hw_start loads the SOS file's parts in; then the sOS's
ring protocol (psp_v13_0.c), amdgpu_psp.h's buffer sizes and psp_get_fw_type's table. Shared by AM and the mock
PSP."""

from usergpu.autogen import amdgpu_ucode as uc
from usergpu.autogen import psp_gfx_if as gfx

LOAD_SYSDRV, LOAD_SOSDRV, LOAD_KEY_DATABASE, LOAD_SOCDRV = 0x10000, 0x20000, 0x80000, 0xB0000
LOAD_DBGDRV, LOAD_INTFDRV, LOAD_RASDRV, LOAD_IPKEYMGRDRV, LOAD_TOS_SPL_TABLE = 0xC0000, 0xD0000, 0xE0000, 0xF0000, \
    0x10000000
MBOX_READY = 0x80000000  # C2PMSG_35: the bootloader takes a command; bits 7:0 an error of the last one
# (part of the SOS file, its command), in load order; the sOS itself last
ORDER = ((uc.PSP_FW_TYPE_PSP_KDB, LOAD_KEY_DATABASE), (uc.PSP_FW_TYPE_PSP_SPL, LOAD_TOS_SPL_TABLE),
         (uc.PSP_FW_TYPE_PSP_SYS_DRV, LOAD_SYSDRV), (uc.PSP_FW_TYPE_PSP_SOC_DRV, LOAD_SOCDRV),
         (uc.PSP_FW_TYPE_PSP_INTF_DRV, LOAD_INTFDRV), (uc.PSP_FW_TYPE_PSP_DBG_DRV, LOAD_DBGDRV),
         (uc.PSP_FW_TYPE_PSP_RAS_DRV, LOAD_RASDRV), (uc.PSP_FW_TYPE_PSP_IPKEYMGR_DRV, LOAD_IPKEYMGRDRV),
         (uc.PSP_FW_TYPE_PSP_SOS, LOAD_SOSDRV))

# --- after the bootloader: the sOS's kernel-mode (KM, formerly GPCOM) ring, psp_v13_0.c's ring_create/ring_stop and
# get/set_wptr on bare metal, and amdgpu_psp.h's sizes
RING_TYPE_KM = 2  # enum psp_ring_type; ring creation writes it << 16 to C2PMSG_64
TOS_READY = gfx.GFX_FLAG_RESPONSE  # C2PMSG_64 bit 31: the sOS takes a ring command; bits 15:0 the last one's status
STATUS_MASK = gfx.GFX_CMD_RESPONSE_MASK | gfx.GFX_CMD_STATUS_MASK  # ring_create waits for C2PMSG_64 & it == ready
C2PMSG_CTRL, C2PMSG_WPTR, C2PMSG_RING_LO, C2PMSG_RING_HI, C2PMSG_RING_SIZE = 64, 67, 69, 70, 71  # wptr in dwords
RING_SIZE = 0x1000  # psp_ring_init: one 4 KiB page of frames
CMD_BUFFER_SIZE = FENCE_BUFFER_SIZE = 0x1000  # PSP_CMD_BUFFER_SIZE, PSP_FENCE_BUFFER_SIZE
PRIVATE_SIZE = 1 << 20  # PSP_1_MEG: the private buffer the TOC (and here each ucode) is staged in
TMR_SIZE, TMR_ALIGNMENT = 0x400000, 1 << 20  # PSP_TMR_SIZE (all but Aldebaran) when there is no TOC to ask
# psp_early_init / psp_check_pmfw_centralized_cstate_management, MP0 13.x on bare metal: which load the SMU's
# firmware before SETUP_TMR, and which have no RLC autoload (AUTOLOAD_RLC after RLC_G)
PMFW_BEFORE_TMR = {(13, 0, 0), (13, 0, 2), (13, 0, 7)}
# psp_early_init: MP0 versions whose TMR the firmware set up at boot (boot_time_tmr, no RLC autoload): the driver
# makes none, and SETUP_TMR tells the sOS so with a size of 0
BOOT_TIME_TMR = {(13, 0, 6), (13, 0, 14)}
# psp_v13_0_is_aux_sos_load_required: MP0 13.0.6 takes the SOS file's aux binaries while the SMU firmware, whose
# version MP1_PUB_SCRATCH0 (a byte address on the SMN bus, past BAR5) holds, is older than 85.115.0
MP1_PUB_SCRATCH0, AUX_SOS_BELOW, AUX_SOS_MP0 = 0x3B10090, 0x557300, (13, 0, 6)
NO_RLC_AUTOLOAD = {(13, 0, 2), (13, 0, 6), (13, 0, 14)}

# psp_get_fw_type: AMDGPU_UCODE_ID_<key> -> GFX_FW_TYPE_<value>, for the ucodes AM loads through the PSP
_FW_TYPE_NAMES = {
    "SMC": "SMU", "SDMA_UCODE_TH0": "SDMA_UCODE_TH0", "SDMA_UCODE_TH1": "SDMA_UCODE_TH1",
    "CP_RS64_PFP": "RS64_PFP", "CP_RS64_ME": "RS64_ME", "CP_RS64_MEC": "RS64_MEC",
    "CP_RS64_PFP_P0_STACK": "RS64_PFP_P0_STACK", "CP_RS64_PFP_P1_STACK": "RS64_PFP_P1_STACK",
    "CP_RS64_ME_P0_STACK": "RS64_ME_P0_STACK", "CP_RS64_ME_P1_STACK": "RS64_ME_P1_STACK",
    "CP_RS64_MEC_P0_STACK": "RS64_MEC_P0_STACK", "CP_RS64_MEC_P1_STACK": "RS64_MEC_P1_STACK",
    "CP_RS64_MEC_P2_STACK": "RS64_MEC_P2_STACK", "CP_RS64_MEC_P3_STACK": "RS64_MEC_P3_STACK",
    "CP_MES": "CP_MES", "CP_MES_DATA": "MES_STACK", "CP_MES1": "CP_MES_KIQ", "CP_MES1_DATA": "MES_KIQ_STACK",
    "IMU_I": "IMU_I", "IMU_D": "IMU_D", "RLC_RESTORE_LIST_CNTL": "RLC_RESTORE_LIST_SRM_CNTL",
    "RLC_RESTORE_LIST_GPM_MEM": "RLC_RESTORE_LIST_GPM_MEM", "RLC_RESTORE_LIST_SRM_MEM": "RLC_RESTORE_LIST_SRM_MEM",
    "RLC_IRAM": "RLC_IRAM", "RLC_DRAM": "RLC_DRAM_BOOT", "RLC_P": "RLC_P", "RLC_V": "RLC_V", "RLC_G": "RLC_G",
    "CP_MEC1": "CP_MEC", "CP_MEC1_JT": "CP_MEC_ME1", "P2S_TABLE": "P2S_TABLE",
    **{f"SDMA{i}": f"SDMA{i}" for i in range(8)},
}
FW_TYPE = {ucode: getattr(gfx, f"GFX_FW_TYPE_{name}") for ucode, name in _FW_TYPE_NAMES.items()}
