"""Which register map serves which IP block version: the longest version prefix listed."""

from usergpu.autogen import regs_gc_9_4_3, regs_mp_13_0_0, regs_mp_13_0_6, regs_nbio_7_9_0, regs_sdma_4_4_2
from usergpu.isa.amd.hw import ipmaps


def test_a_version_takes_the_map_of_its_longest_listed_prefix():
    assert ipmaps.regmap("MP0", (13, 0, 0)) is regs_mp_13_0_0  # Navi31's PSP
    assert ipmaps.regmap("MP0", (13, 0, 6)) is regs_mp_13_0_6  # MI300X's: other offsets, its own map
    assert ipmaps.regmap("MP1", (13, 0, 12)) is regs_mp_13_0_6  # MI350X's SMU, as smu_v13_0_6_ppt.c drives it
    assert ipmaps.regmap("GC", (9, 5, 0)) is regs_gc_9_4_3
    assert ipmaps.regmap("SDMA3", (4, 4, 2)) is regs_sdma_4_4_2  # every SDMA engine's block
    assert ipmaps.regmap("VCN", (4, 0, 3)) is None


def test_addresses_come_from_the_blocks_bases():
    bases = (0x0, 0x14, 0xD20, 0x10400)
    reg = regs_nbio_7_9_0.REGS["BIF_BX_PF0_GPU_HDP_FLUSH_REQ"]
    assert ipmaps.address("NBIF", (7, 9, 0), bases, "BIF_BX_PF0_GPU_HDP_FLUSH_REQ") == bases[reg.base_idx] + reg.offset
    assert ipmaps.address("VCN", (4, 0, 3), bases, "ANY") is None
    assert "MP0 13.0.6" in ipmaps.known()
