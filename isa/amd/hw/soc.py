"""The register layout of the SOCs the mocks and the runtime know, by family (an arch's first five characters: gfx94
and gfx95 are the CDNA3/CDNA4 parts, gfx11 and gfx12 RDNA3/RDNA4): the GC register map and the GC segment base
addresses (dword addresses); a register's address is base[base_idx] + offset (amdgpu's SOC15_REG_OFFSET).

RDNA's bases are what the IP discovery tables of SOC21 (gfx11) and SOC24 (gfx12) give. CDNA's are the XCC-local GC
space every XCC's command processor addresses (vega10_ip_offset.h's GC_BASE, 0x2000 and 0xA000: soc15d.h's
PACKET3_SET_SH_REG_START 0x2c00 is COMPUTE_* at GC 9.4.3's offset 0xe00 and on, SET_UCONFIG_REG_START 0xc000
GRBM_GFX_INDEX's segment); gfx950's GC 9.5.0 has no register headers in linux 6.12, and its dispatch registers are
GC 9.4.3's (gfx_v9_4_3.c drives both)."""

from __future__ import annotations

import functools

from usergpu.autogen import pm4_nv, pm4_soc15, regs_gc_9_4_3, regs_gc_11_0_0, regs_gc_12_0_0, sdma_v4, sdma_v6

TIMESTAMP_HZ = 100_000_000  # the GPU timestamp counter (RELEASE_MEM, SDMA TIMESTAMP): the 100 MHz reference clock
RDNA_BASES = (0x1260, 0xA000, 0x1C000, 0x2402C00)
CDNA_BASES = (0x2000, 0xA000)
GC_BASES = {"gfx94": CDNA_BASES, "gfx95": CDNA_BASES, "gfx11": RDNA_BASES, "gfx12": RDNA_BASES}
GC_REGS = {"gfx94": regs_gc_9_4_3.REGS, "gfx95": regs_gc_9_4_3.REGS, "gfx11": regs_gc_11_0_0.REGS,
           "gfx12": regs_gc_12_0_0.REGS}
# the packet definitions a family's engines take: PM4 (soc15d.h for gfx9, nvd.h for gfx10+) and SDMA (SDMA 4.4.x's
# vega10_sdma_pkt_open.h, SDMA 6/7's sdma_v6_0_0_pkt_open.h)
PM4 = {"gfx94": pm4_soc15, "gfx95": pm4_soc15, "gfx11": pm4_nv, "gfx12": pm4_nv}
SDMA = {"gfx94": sdma_v4, "gfx95": sdma_v4, "gfx11": sdma_v6, "gfx12": sdma_v6}


def family(arch: str) -> str:
    """The key of an arch in the tables above (gfx942 -> gfx94); KeyError for one they lack."""
    if arch[:5] not in GC_REGS:
        raise KeyError(f"{arch}: the SOC tables know {', '.join(GC_REGS)}")
    return arch[:5]


@functools.lru_cache(maxsize=4096)
def register_address(arch: str, name: str) -> int:
    """A GC register's dword address on the arch (the MMIO byte address is 4x)."""
    return GC_REGS[family(arch)][name].address(GC_BASES[family(arch)])


def vgt_event(arch: str, name: str) -> int:
    """A VGT event's number (EVENT_WRITE's EVENT_TYPE): PA_SC_BINNER_EVENT_CNTL_0..3 give every event a 2-bit field
    at its position, 16 events per register, so the field's place is the number (THREAD_TRACE_FINISH -> 0x37)."""
    regs = GC_REGS[family(arch)]
    for i in range(4):
        field = regs[f"PA_SC_BINNER_EVENT_CNTL_{i}"].fields.get(name)
        if field:
            return 16 * i + field[0] // 2
    raise KeyError(f"no VGT event {name} on {arch}")
