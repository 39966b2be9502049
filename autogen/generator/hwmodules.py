"""The generated hardware modules (PM4, SDMA, GC registers) from linux-source-6.12's amdgpu headers."""

from __future__ import annotations

from collections.abc import Callable

from usergpu.autogen.generator import pm4, regs, sdma, toolchain
from usergpu.autogen.generator.spec import Module

PM4_DOC = """PM4 packets of {gfx}, from amdgpu's {header}.

{users}.
Opcodes and constants, and the bit-field helper macros as FieldMacro (`PACKET3(PACKET3_NOP, 0)` equals
the C macro)."""
SDMA_DOC = """SDMA {ips} packets, from amdgpu's {header}.

{users}.
Opcodes and constants, the helper macros as FieldMacro, and one ctypes structure per packet (c_uint32
bit fields in dword order; `bytes(pkt)` is the packet as the engine reads it). No dword of these packets
has alternative (overlapping) layouts: the generator checks, and would stop rather than drop one."""

_HW: list[tuple[str, Callable[[str, str], str], str, dict[str, str]]] = [
    ("pm4_nv", pm4.render, "amdgpu/nvd.h", {
        "gfx": "gfx10, gfx11 and gfx12", "users": "In linux 6.12 gfx_v10_0.c, gfx_v11_0.c and gfx_v12_0.c include it",
    }),
    ("pm4_soc15", pm4.render, "amdgpu/soc15d.h", {
        "gfx": "gfx9 and CDNA", "users": "In linux 6.12 gfx_v9_0.c and gfx_v9_4_3.c (GC 9.4.3/9.4.4, gfx942) include it",
    }),
    ("sdma_v6", sdma.render, "amdgpu/sdma_v6_0_0_pkt_open.h", {
        "ips": "6.x and 7.x",
        "users": "In linux 6.12 sdma_v6_0.c and sdma_v7_0.c (SDMA 7.0 of gfx12) both include this v6 header",
    }),
    ("sdma_v4", sdma.render, "amdgpu/vega10_sdma_pkt_open.h", {
        "ips": "4.x (4.4.x of CDNA included)",
        "users": "In linux 6.12 sdma_v4_0.c and sdma_v4_4_2.c (SDMA 4.4.2/4.4.5 of gfx942-class CDNA) include it.\n"
        "Its bare SDMA_PKT_HEADER_op/_sub_op defines (the dword every packet starts with) are class SDMA_PKT_HEADER",
    }),
]


def _row(name: str, render: Callable[[str, str], str], rel: str, fmt: dict[str, str]) -> Module:
    doc = (PM4_DOC if render is pm4.render else SDMA_DOC).format(header=rel.split("/")[-1], **fmt)
    return Module(name, toolchain.LINUX_SOURCE, lambda: render(rel, doc))


MODULES: list[Module] = [_row(*row) for row in _HW] + [
    Module(f"regs_gc_{v}", toolchain.LINUX_SOURCE, lambda v=v, a=a: regs.render(v, a))
    for v, a in (
        ("11_0_0", "gfx11 (gfx1100; linux 6.12's gfx_v11_0.c includes these)"),
        ("12_0_0", "gfx12 (gfx1200; gfx_v12_0.c and sdma_v7_0.c include these)"),
        ("9_4_3", "GC 9.4.3/9.4.4 (gfx942; gfx_v9_4_3.c includes these)"),
    )
]
