"""The IP discovery table a mock GPU keeps at the top of its VRAM, as amdgpu reads it (discovery.h, packed
little-endian): a binary header with the table list and checksums, then the IP discovery table — its header, a die
header and one ip_v3 entry per IP block instance (hw id, instance, version, register base addresses).

The layout is packed by hand here (struct formats from the header), so reading it back through the generated
bindings (drivers/amd/am/discovery.py) checks both. The IP lists are the mock's own hardware: the blocks and
versions of Navi31 (gfx1100), Navi44 (gfx1200) and Navi48 (gfx1201) as amdgpu knows them, with segment bases the
mock places its register models at (GC's are isa/amd/hw/soc.py's), and of the CDNA parts of cdna.py: a GC instance
per XCC, each at the XCC-local bases its command processor addresses (the mock's XCCs have no CPU register apertures
of their own), and every SDMA engine as an instance of SDMA0 (sixteen, four an IO die: sdma_v4_4_2.c finds engine
i's registers at SDMA0's instance i). The GC table is gc_info v1.0 for RDNA and v2.1 (shader arrays and CUs per
array, the cache sizes) for CDNA, the versions those GPUs' tables have."""

from __future__ import annotations

import struct

from usergpu.autogen import amd_discovery as hw  # only the hardware ids (soc15_hw_ip.h)
from usergpu.emu.amd.mock.cdna import PARTS, Part
from usergpu.emu.amd.mock.profiler import TOPOLOGY
from usergpu.isa.amd.hw.soc import GC_BASES

BINARY_SIGNATURE, DISCOVERY_TABLE_SIGNATURE = 0x28211407, 0x53445049
DISCOVERY_TMR_OFFSET = 64 << 10  # the table sits this far below the top of VRAM
TOTAL_TABLES = 6
# NBIF's six segments, as Navi2x/3x/4x place them (amdgpu's *_ip_offset.h NBIO_BASE): the PCIe port registers
# (NBIO 4.3's PCIEP_*, BASE_IDX 5) sit in the last one
NBIF_BASES = (0x0, 0x14, 0xD20, 0x10400, 0x0241B000, 0x04040000)
# arch -> [(block, instance, (major, minor, revision), segment bases)]
IPS = {
    "gfx1100": [("GC", 0, (11, 0, 0), GC_BASES["gfx11"]), ("SDMA0", 0, (6, 0, 0), GC_BASES["gfx11"]),
                ("SDMA1", 0, (6, 0, 0), GC_BASES["gfx11"]), ("MMHUB", 0, (3, 0, 0), (0x1A000, 0x2408800)),
                ("ATHUB", 0, (3, 0, 0), (0xC00, 0x2408C00)), ("NBIF", 0, (4, 3, 0), NBIF_BASES),
                ("OSSSYS", 0, (6, 0, 0), (0x10A0, 0x240A000)), ("HDP", 0, (6, 0, 0), (0xF20, 0x240A400)),
                ("MP0", 0, (13, 0, 0), (0x16000, 0x243FC00)), ("MP1", 0, (13, 0, 0), (0x16000, 0x243FC00)),
                ("SMUIO", 0, (13, 0, 0), (0x16800, 0x16A00)), ("THM", 0, (13, 0, 2), (0x16600,)),
                ("DF", 0, (4, 3, 0), (0x7000, 0x240B800))],
    "gfx1200": [("GC", 0, (12, 0, 0), GC_BASES["gfx12"]), ("SDMA0", 0, (7, 0, 0), GC_BASES["gfx12"]),
                ("SDMA1", 0, (7, 0, 0), GC_BASES["gfx12"]), ("MMHUB", 0, (4, 1, 0), (0x1A000, 0x2408800)),
                ("ATHUB", 0, (4, 1, 0), (0xC00, 0x2408C00)), ("NBIF", 0, (6, 3, 1), NBIF_BASES),
                ("OSSSYS", 0, (7, 0, 0), (0x10A0, 0x240A000)), ("HDP", 0, (7, 0, 0), (0xF20, 0x240A400)),
                ("MP0", 0, (14, 0, 2), (0x16000, 0x16200)), ("MP1", 0, (14, 0, 2), (0x16000, 0x16200)),
                ("SMUIO", 0, (14, 0, 2), (0x16800, 0x16A00)), ("THM", 0, (14, 0, 2), (0x16600,)),
                ("DF", 0, (4, 8, 0), (0x7000, 0x240B800))],
}
# CDNA's blocks other than GC and SDMA: the bases the mock places them at; NBIO's first six are vega10_ip_offset.h's
# NBIO_BASE (where tinygrad's gfx9 runtime finds the HDP flush pair), and NBIO 7.9's map names three segments more
# (its strap and config-space shadows), which the mock places past BAR5 (reached through the SMN index/data pair)
CDNA_BLOCKS = {"NBIF": (*NBIF_BASES, 0x07C00000, 0x0A000000, 0x0C000000), "MMHUB": (0x1A000, 0x2408800),
               "OSSSYS": (0x10A0, 0x240A000),
               "HDP": (0xF20, 0x240A400), "MP0": (0x16000, 0x243FC00), "MP1": (0x16000, 0x243FC00)}
AIDS = 4  # the CDNA parts' IO dies, each with its MMHUB (at one register aperture in the mock, as its XCCs share one)
SDMA_STRIDE = 0x600  # dwords between the register segments of consecutive SDMA engines (vega10's SDMA0 -> SDMA1)


def _cdna_ips(part: Part, arch: str) -> list:
    gc = [("GC", xcc, part.ips["GC"], GC_BASES[arch[:5]]) for xcc in range(part.xccs)]
    sdma = [("SDMA0", inst, part.ips["SDMA"], (0x1260 + SDMA_STRIDE * inst,)) for inst in range(part.sdma_instances)]
    hubs = [("MMHUB", aid, part.ips["MMHUB"], CDNA_BLOCKS["MMHUB"]) for aid in range(1, AIDS)]  # one an IO die
    return gc + sdma + [(name, 0, part.ips[name], bases) for name, bases in CDNA_BLOCKS.items()] + hubs


# Navi48 (gfx1201): Navi44's blocks, with its own GC, SDMA and MP versions (amdgpu_discovery.c's Navi48 entries)
NAVI48 = {"GC": (12, 0, 1), "SDMA0": (7, 0, 1), "SDMA1": (7, 0, 1), "MP0": (14, 0, 3), "MP1": (14, 0, 3)}
IPS["gfx1201"] = [(block, inst, NAVI48.get(block, version), bases) for block, inst, version, bases in IPS["gfx1200"]]
IPS.update({arch: _cdna_ips(part, arch) for arch, part in PARTS.items()})
HEADER = struct.Struct("<IHHHH")  # binary_header before its table list
TABLE_INFO = struct.Struct("<HHHH")  # offset, checksum, size, padding
IP_DISCOVERY_HEADER = struct.Struct("<IHHIH" + "HH" * 16 + "H")  # ..., num_dies, die_info[16], padding
DIE_HEADER = struct.Struct("<HH")
IP_V3 = struct.Struct("<HBBBBBB")  # hw_id, instance, num_base_address, major, minor, revision, sub_rev|variant
GC_INFO_V1_0 = struct.Struct("<IHHI" + "I" * 19)  # gpu_info_header, then gc_num_se ... gc_num_gl2a
GC_INFO_V2_1 = struct.Struct("<IHHI" + "I" * 24)  # gpu_info_header, then gc_num_se ... gc_tcc_size
GC_TABLE_ID = 0x4347  # "GC"
# arch -> the GC's shape as gc_info gives it: the mock GPU's own (emu/amd/mock/profiler.py TOPOLOGY: shader engines,
# shader arrays per engine, WGPs per array), with RDNA's per-SIMD limits
WAVES_PER_SIMD, SCRATCH_SLOTS_PER_CU, LDS_KB = 16, 32, 64


def byte_sum(data: bytes) -> int:
    return sum(data) & 0xFFFF


def gc_info(arch: str) -> bytes:
    """The GC table (gc_info v1.0; v2.1 for CDNA): the shape amdgpu reads its shader engines, arrays and CUs from."""
    if arch in PARTS:
        return _gc_info_v2(PARTS[arch])
    ses, sas, wgps = TOPOLOGY[arch[:5]]
    fields = {"se": ses, "wgp0_per_sa": wgps, "wgp1_per_sa": 0, "rb_per_se": 4, "gl2c": 16, "gprs": 1536,
              "max_gs_thds": 32, "gs_table_depth": 32, "gsprim_buff_depth": 1792, "parameter_cache_depth": 1024,
              "double_offchip_lds_buffer": 1, "wave_size": 32, "max_waves_per_simd": WAVES_PER_SIMD,
              "max_scratch_slots_per_cu": SCRATCH_SLOTS_PER_CU, "lds_size": LDS_KB, "sc_per_se": 1, "sa_per_se": sas,
              "packer_per_sc": 4, "gl2a": 4}
    return GC_INFO_V1_0.pack(GC_TABLE_ID, 1, 0, GC_INFO_V1_0.size, *fields.values())


def _gc_info_v2(part: Part) -> bytes:
    """gc_info v2.1 of one XCC (amdgpu reads every figure per XCC: gc_tcc_size "per XCD"), the cache sizes in KiB."""
    fields = {"se": part.ses, "cu_per_sh": part.cus_per_sh, "sh_per_se": part.sh_per_se, "rb_per_se": 0, "tccs": 16,
              "gprs": 512, "max_gs_thds": 0, "gs_table_depth": 0, "gsprim_buff_depth": 0, "parameter_cache_depth": 0,
              "double_offchip_lds_buffer": 0, "wave_size": part.wave_size, "max_waves_per_simd": part.waves_per_simd,
              "max_scratch_slots_per_cu": part.scratch_slots_per_cu, "lds_size": part.lds_kb, "sc_per_se": 0,
              "packer_per_sc": 0, "tcp_per_sh": part.cus_per_sh, "tcp_size_per_cu": part.tcp_kb,
              "sdp_interface": 16, "cu_per_sqc": part.cu_per_sqc, "instruction_cache_size_per_sqc": part.sqc_inst_kb,
              "scalar_data_cache_size_per_sqc": part.sqc_data_kb, "tcc_size": part.tcc_kb}
    return GC_INFO_V2_1.pack(GC_TABLE_ID, 2, 1, GC_INFO_V2_1.size, *fields.values())


def table(arch: str) -> bytes:
    """The discovery binary for an arch (ip_discovery_header version 3, one die)."""
    ips = b"".join(IP_V3.pack(getattr(hw, f"{block}_HWID"), inst, len(bases), *version, 0)
                   + struct.pack(f"<{len(bases)}I", *bases) for block, inst, version, bases in IPS[arch])
    first = HEADER.size + TOTAL_TABLES * TABLE_INFO.size
    die_offset = first + IP_DISCOVERY_HEADER.size
    body_size = IP_DISCOVERY_HEADER.size + DIE_HEADER.size + len(ips)
    dies = [0, die_offset] + [0, 0] * 15
    body = IP_DISCOVERY_HEADER.pack(DISCOVERY_TABLE_SIGNATURE, 3, body_size, 0, 1, *dies, 0)
    body += DIE_HEADER.pack(0, len(IPS[arch])) + ips
    gc = gc_info(arch)
    tables = [TABLE_INFO.pack(first, byte_sum(body), len(body), 0),
              TABLE_INFO.pack(first + len(body), byte_sum(gc), len(gc), 0)] + [TABLE_INFO.pack(0, 0, 0, 0)] * 4
    rest = b"".join(tables) + body + gc
    size = HEADER.size + len(rest)
    # the binary checksum covers everything after its own field (the size field onwards)
    after = struct.pack("<H", size) + rest
    return HEADER.pack(BINARY_SIGNATURE, 1, 0, byte_sum(after), size) + rest
