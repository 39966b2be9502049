"""The PSP bootloader's commands (hand-written, like _regs.py: amdgpu_psp.h's enum psp_bootloader_cmd, a header
that does not parse on its own) and the order amdgpu's psp_hw_start loads the SOS file's parts in. Shared by AM
and the mock PSP."""

from usergpu.autogen import amdgpu_ucode as uc

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
