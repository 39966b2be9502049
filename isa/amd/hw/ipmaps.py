"""Which generated register map serves which IP block (as IP discovery names it) of which major version
(hand-written, like _regs.py). Shared by AM, which finds its registers with it, and the mock PCI GPU, which places
its register models with it."""

from __future__ import annotations

from types import ModuleType

from usergpu.autogen import (
    regs_gc_11_0_0,
    regs_gc_12_0_0,
    regs_hdp_6_0_0,
    regs_hdp_7_0_0,
    regs_mmhub_3_0_0,
    regs_mmhub_4_1_0,
    regs_mp_13_0_0,
    regs_mp_14_0_2,
    regs_nbif_6_3_1,
    regs_nbio_4_3_0,
    regs_osssys_6_0_0,
    regs_osssys_7_0_0,
    regs_smuio_13_0_6,
    regs_smuio_14_0_2,
)

MAPS: dict[tuple[str, int], ModuleType] = {
    ("GC", 11): regs_gc_11_0_0, ("GC", 12): regs_gc_12_0_0, ("MP1", 13): regs_mp_13_0_0, ("MP1", 14): regs_mp_14_0_2,
    ("MP0", 13): regs_mp_13_0_0, ("MP0", 14): regs_mp_14_0_2, ("NBIF", 4): regs_nbio_4_3_0,
    ("NBIF", 6): regs_nbif_6_3_1, ("SMUIO", 13): regs_smuio_13_0_6, ("SMUIO", 14): regs_smuio_14_0_2,
    ("MMHUB", 3): regs_mmhub_3_0_0, ("MMHUB", 4): regs_mmhub_4_1_0, ("OSSSYS", 6): regs_osssys_6_0_0,
    ("OSSSYS", 7): regs_osssys_7_0_0, ("HDP", 6): regs_hdp_6_0_0, ("HDP", 7): regs_hdp_7_0_0}


def table(block: str, version: tuple[int, ...], name: str):
    """A register's generated description (offset, segment, fields) in the map of that block version; None if no
    map serves it."""
    regs = MAPS.get((block, version[0]))
    return None if regs is None else regs.REGS[name]


def address(block: str, version: tuple[int, ...], bases: tuple[int, ...], name: str) -> int | None:
    """A register's dword address from its block's segment bases; None if no map serves that block version."""
    reg = table(block, version, name)
    return None if reg is None else bases[reg.base_idx] + reg.offset

# what the SDMA engine's microcontroller is called in its registers (SDMA<n>_F32_CNTL, ..._F32_WPTR_POLL_ENABLE)
SDMA_MICROCONTROLLER = {"gfx11": "F32", "gfx12": "MCU"}
