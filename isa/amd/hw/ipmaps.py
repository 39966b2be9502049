"""Which generated register map serves which IP block (as IP discovery names it) of which version (hand-written,
like _regs.py): the map of the longest version prefix listed (MP 13.0.6, MI300X's, has its own map; other MP 13.x
parts share 13.0.0's). Shared by AM, which finds its registers with it, and the mock PCI GPU, which places its
register models with it."""

from __future__ import annotations

import importlib
from types import ModuleType

# (block, version prefix) -> its map's module in usergpu.autogen, imported when first asked for (the NBIO maps alone
# take a second to import: a mock GPU's process starts without the maps its board does not use). MI300X's (GC 9.4.3)
# and MI350X's (GC 9.5.0) blocks share MI300X's maps, as amdgpu's drivers for them include the same headers (linux
# 6.12 has no 9.5.0 ones).
MAPS: dict[tuple[str, tuple[int, ...]], str] = {
    ("GC", (11,)): "regs_gc_11_0_0", ("GC", (12,)): "regs_gc_12_0_0", ("GC", (9,)): "regs_gc_9_4_3",
    ("MP1", (13,)): "regs_mp_13_0_0", ("MP1", (14,)): "regs_mp_14_0_2", ("MP0", (13,)): "regs_mp_13_0_0",
    ("MP0", (14,)): "regs_mp_14_0_2", ("NBIF", (4,)): "regs_nbio_4_3_0", ("NBIF", (6,)): "regs_nbif_6_3_1",
    ("NBIF", (7,)): "regs_nbio_7_9_0", ("SMUIO", (13,)): "regs_smuio_13_0_6", ("SMUIO", (14,)): "regs_smuio_14_0_2",
    ("MMHUB", (3,)): "regs_mmhub_3_0_0", ("MMHUB", (4,)): "regs_mmhub_4_1_0", ("MMHUB", (1,)): "regs_mmhub_1_8_0",
    ("OSSSYS", (6,)): "regs_osssys_6_0_0", ("OSSSYS", (7,)): "regs_osssys_7_0_0", ("OSSSYS", (4,)): "regs_osssys_4_4_2",
    ("HDP", (6,)): "regs_hdp_6_0_0", ("HDP", (7,)): "regs_hdp_7_0_0", ("HDP", (4,)): "regs_hdp_4_4_2",
    ("SDMA", (4,)): "regs_sdma_4_4_2",
    **{(mp, v): "regs_mp_13_0_6" for mp in ("MP0", "MP1") for v in ((13, 0, 6), (13, 0, 12), (13, 0, 14))},
    ("SMUIO", (13, 0, 3)): "regs_smuio_13_0_3",
}


def regmap(block: str, version: tuple[int, ...]) -> ModuleType | None:
    """The map serving a block version: the longest version prefix's (SDMA0..SDMA3 are SDMA's); None if none."""
    block = "SDMA" if block.startswith("SDMA") else block
    name = next((MAPS[block, version[:n]] for n in range(len(version), 0, -1) if (block, version[:n]) in MAPS), None)
    return None if name is None else importlib.import_module(f"usergpu.autogen.{name}")


def known() -> str:
    """The block versions served, for an error to list."""
    return ", ".join(block + " " + ".".join(map(str, version)) for block, version in MAPS)


def table(block: str, version: tuple[int, ...], name: str):
    """A register's generated description (offset, segment, fields) in the map of that block version; None if no
    map serves it."""
    regs = regmap(block, version)
    return None if regs is None else regs.REGS[name]


def address(block: str, version: tuple[int, ...], bases: tuple[int, ...], name: str) -> int | None:
    """A register's dword address from its block's segment bases; None if no map serves that block version."""
    reg = table(block, version, name)
    return None if reg is None else bases[reg.base_idx] + reg.offset

# GC version prefix -> the family its page tables, hubs and engines follow
FAMILIES = {(11,): "gfx11", (12,): "gfx12", (9, 4): "gfx94", (9, 5): "gfx95"}
# family -> the hubs' FB_LOCATION_BASE/_TOP registers, GC's and MMHUB's (gfx9's hubs have no GC/MM prefix)
FB_LOCATION = {"gfx11": (("GC", "GCMC_VM_FB_LOCATION_"), ("MMHUB", "MMMC_VM_FB_LOCATION_")),
               "gfx12": (("GC", "GCMC_VM_FB_LOCATION_"), ("MMHUB", "MMMC_VM_FB_LOCATION_")),
               "gfx94": (("GC", "MC_VM_FB_LOCATION_"), ("MMHUB", "MC_VM_FB_LOCATION_")),
               "gfx95": (("GC", "MC_VM_FB_LOCATION_"), ("MMHUB", "MC_VM_FB_LOCATION_"))}


def family(gc: tuple[int, ...]) -> str | None:
    """The family of a GC version (None for one no map serves)."""
    return next((f for v, f in FAMILIES.items() if gc[: len(v)] == v), None)


# family -> the MEC's control register, its halt field (what the mock checks) and the fields AM sets to run it:
# RS64 MECs (gfx11/12) run their pipes once active; gfx9's F32 MEC runs once its halt bits are clear
MEC_CNTL = {"gfx11": ("CP_MEC_RS64_CNTL", "MEC_HALT", {f"MEC_PIPE{p}_ACTIVE": 1 for p in range(4)}),
            "gfx12": ("CP_MEC_RS64_CNTL", "MEC_HALT", {f"MEC_PIPE{p}_ACTIVE": 1 for p in range(4)}),
            "gfx94": ("CP_MEC_CNTL", "MEC_ME1_HALT", {}), "gfx95": ("CP_MEC_CNTL", "MEC_ME1_HALT", {})}
# what the SDMA engine's microcontroller is called in its registers (SDMA<n>_F32_CNTL, ..._F32_WPTR_POLL_ENABLE), for
# the families whose SDMA queues are GC registers (SDMA<n>_QUEUE<q>_*); gfx9's engines have registers of their own
SDMA_MICROCONTROLLER = {"gfx11": "F32", "gfx12": "MCU"}
