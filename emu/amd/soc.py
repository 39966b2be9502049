"""The register layout of the SOCs the mocks and the runtime know: the GC register map per gfx family and the GC
segment base addresses (dword addresses) that the IP discovery table gives for SOC21 (gfx11) and SOC24 (gfx12);
a register's address is base[base_idx] + offset (amdgpu's SOC15_REG_OFFSET)."""

from __future__ import annotations

from usergpu.autogen import regs_gc_11_0_0, regs_gc_12_0_0

TIMESTAMP_HZ = 100_000_000  # the GPU timestamp counter (RELEASE_MEM, SDMA TIMESTAMP) of gfx11 and gfx12
GC_BASES = {"gfx11": (0x1260, 0xA000, 0x1C000, 0x2402C00), "gfx12": (0x1260, 0xA000, 0x1C000, 0x2402C00)}
GC_REGS = {"gfx11": regs_gc_11_0_0.REGS, "gfx12": regs_gc_12_0_0.REGS}


def register_address(arch: str, name: str) -> int:
    """A GC register's dword address on the arch (the MMIO byte address is 4x)."""
    return GC_REGS[arch[:5]][name].address(GC_BASES[arch[:5]])


def vgt_event(arch: str, name: str) -> int:
    """A VGT event's number (EVENT_WRITE's EVENT_TYPE): PA_SC_BINNER_EVENT_CNTL_0..3 give every event a 2-bit field
    at its position, 16 events per register, so the field's place is the number (THREAD_TRACE_FINISH -> 0x37)."""
    regs = GC_REGS[arch[:5]]
    for i in range(4):
        field = regs[f"PA_SC_BINNER_EVENT_CNTL_{i}"].fields.get(name)
        if field:
            return 16 * i + field[0] // 2
    raise KeyError(f"no VGT event {name} on {arch}")
