"""The CDNA parts the mocks model: AMD Instinct MI300X (gfx942, GC 9.4.3) and MI350X (gfx950, GC 9.5.0), each eight
XCCs (accelerator complex dies, each a GC with its own command processor and shader engines) behind one PCI
function, and how they partition (amdgpu_xcp.c / aqua_vanjaram.c: SPX is one partition of all the XCCs, CPX one
partition per XCC; amdkfd makes a topology node of each partition).

The shape of an XCC is its gc_info v2.1 as amdgpu_discovery_get_gfx_info reads it: shader engines, shader arrays per
engine, CUs per array (the most; an array's bitmap says which are active), the per-SIMD limits and the cache sizes
kfd_fill_gpu_cache_info_from_gfx_config_v2 publishes. The figures are AMD's (ROCm's GPU hardware specifications
table: MI300X 304 CUs, 38 per XCD, LDS 64 KiB, 4 MiB L2 per XCD, 256 MiB Infinity Cache, 192 GiB HBM3; MI350X 256
CUs, 32 per XCD, LDS 160 KiB, 288 GiB HBM3E). Which CUs a real die has fused off differs die to die; the mock's
pattern is fixed: an MI300X XCD's shader engines 1 and 3 lack their tenth CU (38 of 40), every MI350X shader engine
its ninth (32 of 36)."""

from __future__ import annotations

from dataclasses import dataclass

GiB = 1 << 30
PARTITIONS = ("spx", "cpx")  # MOCKGPU_PARTITION: the compute partition modes the mock models


@dataclass(frozen=True)
class Part:
    """One CDNA GPU as the mock models it."""

    name: str  # the marketing name (amdgpu.ids)
    device_id: int  # the PCI device id
    rev_id: int  # adev->rev_id (NBIO's ATI_REV_ID strap): MI300X's is 1, which makes gfx_target_version 90402
    gfx_target_version: int  # kgd2kfd_probe's
    ips: dict[str, tuple[int, int, int]]  # the blocks of its discovery table and their versions (SDMA: every engine)
    active: tuple[int, ...]  # per shader engine of an XCC (one array each): the bitmap of its active CUs
    cus_per_sh: int  # gc_num_cu_per_sh: CUs an array has room for
    lds_kb: int
    vram: int  # bytes of HBM
    engine_mhz: int  # the top shader clock (max_engine_clk_fcompute)
    mec_fw: int  # the firmware versions the topology reports
    sdma_fw: int
    xccs: int = 8
    sh_per_se: int = 1
    simd_per_cu: int = 4
    waves_per_simd: int = 8
    wave_size: int = 64
    scratch_slots_per_cu: int = 32
    sdma_instances: int = 16  # four per IO die
    vram_width: int = 8192  # bits: eight HBM stacks of 1024
    tcp_kb: int = 32  # the vector L1 of each CU
    cu_per_sqc: int = 2  # CUs an instruction cache and a scalar cache serve
    sqc_inst_kb: int = 64
    sqc_data_kb: int = 16
    tcc_kb: int = 4096  # the L2 of each XCC
    mall_mb: int = 256  # the Infinity Cache (MALL), the whole GPU's

    @property
    def ses(self) -> int:
        return len(self.active)

    @property
    def cus_per_xcc(self) -> int:
        return sum(bin(mask).count("1") for mask in self.active)


PARTS = {
    "gfx942": Part("AMD Instinct MI300X", 0x74A1, 1, 90402,
                   {"GC": (9, 4, 3), "SDMA": (4, 4, 2), "NBIF": (7, 9, 0), "MMHUB": (1, 8, 0), "OSSSYS": (4, 4, 2),
                    "HDP": (4, 4, 2), "MP0": (13, 0, 6), "MP1": (13, 0, 6)},
                   (0x3FF, 0x1FF, 0x3FF, 0x1FF), 10, 64, 192 * GiB, 2100, 192, 25),
    "gfx950": Part("AMD Instinct MI350X", 0x75A0, 0, 90500,
                   {"GC": (9, 5, 0), "SDMA": (4, 4, 5), "NBIF": (7, 9, 1), "MMHUB": (1, 8, 1), "OSSSYS": (4, 4, 5),
                    "HDP": (4, 4, 5), "MP0": (13, 0, 14), "MP1": (13, 0, 14)},
                   (0xFF,) * 4, 9, 160, 288 * GiB, 2200, 41, 12),
}


def xccs_per_partition(part: Part, partition: str) -> int:
    """The XCCs of one compute partition: all of them in SPX, one in CPX."""
    return {"spx": part.xccs, "cpx": 1}[partition]
