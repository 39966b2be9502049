"""The generated hardware modules (PM4, SDMA, the registers of GC and its neighbour IP blocks) from
linux-source-6.12's amdgpu headers."""

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


MP_NOTE = "MP0 (PSP; MPASP in 14.0.x) registers are relative to MP0_HWIP's bases, MP1 (SMU) ones to MP1_HWIP's."

# The IP blocks around GC that the AM driver programs, by toolchain.REG_BLOCKS entry: what uses them in linux 6.12,
# the docstring's example register and field, and the amd_hw_ip_block_type (<BLOCK>_HWIP unless given).
_BLOCKS: dict[str, tuple[str, tuple[str, str], str | None]] = {
    "mmhub/mmhub_3_0_0": ("Navi31 (GC 11.0.0; mmhub_v3_0.c includes these)", ("MMVM_L2_CNTL", "ENABLE_L2_CACHE"), None),
    "nbio/nbio_4_3_0": ("Navi31 (GC 11.0.0; nbio_v4_3.c includes these)", ("BIF_BX_PF0_GPU_HDP_FLUSH_REQ", "CP0"),
                        "NBIO_HWIP"),
    "oss/osssys_6_0_0": ("Navi31 (GC 11.0.0; ih_v6_0.c includes these)", ("IH_RB_CNTL", "RB_ENABLE"), "OSSSYS_HWIP"),
    "mp/mp_13_0_0": ("Navi31 (MP0/MP1 13.0.0; smu_v13_0_0_ppt.c includes these)", ("MP1_SMN_C2PMSG_66", "CONTENT"),
                     "MP1_HWIP"),
    "mp/mp_13_0_2": ("Navi31's PSP (MP0 13.0.0 is driven by psp_v13_0.c, which includes these 13.0.2 headers)",
                     ("MP0_SMN_C2PMSG_64", "CONTENT"), "MP0_HWIP"),
    "hdp/hdp_6_0_0": ("Navi31 (GC 11.0.0; hdp_v6_0.c includes these)", ("HDP_MEM_POWER_CTRL", "RC_MEM_POWER_LS_EN"),
                      None),
    "smuio/smuio_13_0_6": ("Navi31 (SMUIO 13.0.6; smuio_v13_0_6.c includes these)", ("SMUIO_MCM_CONFIG", "DIE_ID"),
                           None),
    "mmhub/mmhub_4_1_0": ("Navi48 (GC 12.0.1; mmhub_v4_1_0.c includes these)", ("MMVM_L2_CNTL", "ENABLE_L2_CACHE"),
                          None),
    "nbif/nbif_6_3_1": ("Navi48 (GC 12.0.1, NBIO 6.3.1; nbif_v6_3_1.c includes these)",
                        ("BIF_BX_PF0_GPU_HDP_FLUSH_REQ", "CP0"), "NBIO_HWIP"),
    "oss/osssys_7_0_0": ("Navi48 (GC 12.0.1; ih_v7_0.c includes these)", ("IH_RB_CNTL", "RB_ENABLE"), "OSSSYS_HWIP"),
    "mp/mp_14_0_2": ("Navi48 (MP0/MP1 14.0.2; psp_v14_0.c and smu_v14_0_2_ppt.c include these)",
                     ("MP1_SMN_C2PMSG_66", "CONTENT"), "MP1_HWIP"),
    "hdp/hdp_7_0_0": ("Navi48 (GC 12.0.1; hdp_v7_0.c includes these)", ("HDP_MEM_POWER_CTRL", "RC_MEM_POWER_LS_EN"),
                      None),
    "smuio/smuio_14_0_2": ("Navi48 (SMUIO 14.0.2; smuio_v14_0_2.c includes these)", ("SMUIO_MCM_CONFIG", "DIE_ID"),
                           None),
    "mmhub/mmhub_1_8_0": ("MI300X (GC 9.4.3; mmhub_v1_8.c includes these)", ("VM_L2_CNTL", "ENABLE_L2_CACHE"), None),
    "nbio/nbio_7_9_0": ("MI300X (GC 9.4.3; nbio_v7_9.c includes these)", ("BIF_BX_PF0_GPU_HDP_FLUSH_REQ", "CP0"),
                        "NBIO_HWIP"),
    "oss/osssys_4_4_2": ("MI300X (GC 9.4.3; vega20_ih.c includes these)", ("IH_RB_CNTL", "RB_ENABLE"), "OSSSYS_HWIP"),
    "mp/mp_13_0_6": ("MI300X (MP0/MP1 13.0.6; psp_v13_0.c and smu_v13_0_6_ppt.c include these)",
                     ("MP1_SMN_C2PMSG_66", "CONTENT"), "MP1_HWIP"),
    "hdp/hdp_4_4_2": ("MI300X (GC 9.4.3; hdp_v4_0.c includes these)", ("HDP_MMHUB_CNTL", "HDP_MMHUB_RO"), None),
    "sdma/sdma_4_4_2": ("MI300X (SDMA 4.4.2; sdma_v4_4_2.c includes these)", ("SDMA_F32_CNTL", "HALT"), "SDMA0_HWIP"),
    "smuio/smuio_13_0_3": ("MI300X (SMUIO 13.0.3; smuio_v13_0_3.c includes these)",
                           ("SMUIO_MCM_CONFIG", "SOCKET_ID"), None),
}


def _block(entry: str) -> Module:
    """The module of a toolchain.REG_BLOCKS entry, e.g. regs_mmhub_3_0_0 from mmhub/mmhub_3_0_0."""
    folder, stem = entry.split("/")
    prefix, version = stem.split("_", 1)
    arch, example, hwip = _BLOCKS[entry]
    note = MP_NOTE if prefix == "mp" else ""
    return Module(f"regs_{stem}", toolchain.LINUX_SOURCE,
                  lambda: regs.render(version, arch, folder, prefix, hwip, example, note))


MODULES: list[Module] = [_row(*row) for row in _HW] + [
    Module(f"regs_gc_{v}", toolchain.LINUX_SOURCE, lambda v=v, a=a: regs.render(v, a))
    for v, a in (
        ("11_0_0", "gfx11 (gfx1100; linux 6.12's gfx_v11_0.c includes these)"),
        ("12_0_0", "gfx12 (gfx1200; gfx_v12_0.c and sdma_v7_0.c include these)"),
        ("9_4_3", "GC 9.4.3/9.4.4 (gfx942; gfx_v9_4_3.c includes these)"),
    )
] + [_block(b) for b in toolchain.REG_BLOCKS]
