"""Navi31 BAR5 registers the rescue tools use, as byte offsets (hand-written, like _regs.py: not generated). The
SMUIO ROM controller: amdgpu's smuio_13_0_6 offsets and fields (SMUIO 13.0.x) x4 at Navi31's SMUIO base, dword
0x16800. The MP0 boot-firmware mailbox (C2PMSG_115/116 and C2PMSG_73 at MP0's base, dword 0x16000): linux 6.12's
mp_13_0_0 headers stop short of those. Shared by the drivers and the mock board (the lowest layer both import)."""

# SMUIO: the ROM controller and the GPIO pads
ROM_CNTL, PAGE_MIRROR_CNTL, ROM_INDEX, ROM_DATA = 0x5A380, 0x5A384, 0x5A390, 0x5A394
ROM_SW_CNTL, ROM_SW_STATUS, ROM_SW_COMMAND, ROM_SW_DATA = 0x5A3A0, 0x5A3A4, 0x5A3A8, 0x5A3B0
ROM_SW_WINDOW = 256  # ROM_SW_DATA_1 .. ROM_SW_DATA_64
SMU_GPIOPAD_MASK, SMU_GPIOPAD_A, SMU_GPIOPAD_EN = 0x5A504, 0x5A508, 0x5A510
# ROM_CNTL fields
SCK_PRESCALE_REFCLK_SHIFT, SCK_PRESCALE_REFCLK_MASK, SCK_PRESCALE_REFCLK_OVERRIDE = 24, 0x0F000000, 1 << 28
# ROM_SW_CNTL fields
DATA_SIZE_MASK, COMMAND_SIZE_SHIFT, COMMAND_SIZE_MASK, ROM_SW_RETURN_DATA_ENABLE = 0xFFFF, 16, 0x70000, 1 << 19
ROM_SW_DONE = 1  # ROM_SW_STATUS
ROM_SW_GATED = 0x04000800  # what ROM_SW_STATUS reads once the firmware owns the engine

# MP0: the boot-firmware mailbox (C2PMSG registers)
MP0_COMMAND, MP0_COMMAND_DATA, MP0_DOORBELL = 0x582CC, 0x582D0, 0x58224
MP0_READY = 1 << 31  # COMMAND: the firmware is ready / finished; its error code is in the low 16 bits
PSP_BOOT_PARTITION, PSP_FB_STATE, PSP_TRANSFER_TYPE = 0x01, 0x06, 0x07
PSP_START_TRANSFER, PSP_TRANSFER_DATA, PSP_END_TRANSFER, PSP_SPI_MODEL_ID = 0x08, 0x09, 0x0A, 0x0B
# How the mailbox's IFWI transfer is driven (the mock's model of it, emu/amd/mock/flash/psp_boot.py): transfer type
# IFWI_ALL; the firmware's requests read `phase << 24 | size_4k << 12 | offset_4k`, the last one phase TERMINAL.
PSP_IFWI_ALL, PSP_PHASE_TERMINAL = 0x1, 0xFF
