"""What amdgpu knows of a GPU of the mock KFD machine (its struct amdgpu_device): the IP blocks and versions it reads
from the GPU's IP discovery table, the gfx configuration from its gc_info (both the mock's own, discovery.py), the
board's memory, and what its memory managers hold. The render node (render.py) and amdgpu's sysfs attributes
(amdgpu_sysfs.py) report these."""

from __future__ import annotations

from dataclasses import dataclass

from usergpu.autogen import amd_discovery as hw
from usergpu.autogen import amdgpu_drm as drm
from usergpu.autogen import kfd
from usergpu.emu.amd.mock import discovery
from usergpu.emu.amd.mock.cdna import PARTS

# the boards' VRAM bytes
VRAM = {"gfx1100": 24 << 30, "gfx1200": 16 << 30, "gfx1201": 16 << 30, **{a: p.vram for a, p in PARTS.items()}}
# arch -> the VRAM's type and bus width (atomfirmware's vram_info): GDDR6 on 384 bits (Navi31), 256 (Navi48); the
# CDNA parts' HBM stacks (amdgpu reports HBM3 and HBM3E as AMDGPU_VRAM_TYPE_HBM)
VRAM_BUS = {"gfx1100": (drm.AMDGPU_VRAM_TYPE_GDDR6, 384), "gfx1200": (drm.AMDGPU_VRAM_TYPE_GDDR6, 256),
            "gfx1201": (drm.AMDGPU_VRAM_TYPE_GDDR6, 256),
            **{a: (drm.AMDGPU_VRAM_TYPE_HBM, p.vram_width) for a, p in PARTS.items()}}
VM_RESERVED_VRAM = 8 << 20  # AMDGPU_VM_RESERVED_VRAM (amdgpu_vm.h): what each VM keeps back for its page tables
PCI_REVISION = 0xC8  # the mock boards' PCI revision (pci_gpu.py's config space: the RX 7900 XTX's)
REV_ID = 0  # adev->rev_id: NBIO's strap ATI_REV_ID, which the mock RDNA GPUs read as 0 (a CDNA part has its own)
SDMA_HWIDS = (hw.SDMA0_HWID, hw.SDMA1_HWID, hw.SDMA2_HWID, hw.SDMA3_HWID)  # each entry is one SDMA instance
GTT_KINDS = kfd.KFD_IOC_ALLOC_MEM_FLAGS_GTT | kfd.KFD_IOC_ALLOC_MEM_FLAGS_USERPTR  # objects TTM places in GTT


@dataclass(frozen=True)
class IP:
    """One IP block instance of the discovery table."""

    name: str  # the block as discovery.h names its hw id (GC, SDMA0, NBIF, ...)
    hw_id: int
    instance: int
    version: tuple[int, int, int]  # major, minor, revision
    bases: tuple[int, ...]  # register segment base addresses (dwords)


class AmdgpuDevice:
    """amdgpu's view of one node of a MockKFD: read when asked, so usage is what the process holds now."""

    def __init__(self, kfd_, node):
        self.kfd, self.node = kfd_, node
        self.ips = [IP(name, getattr(hw, f"{name}_HWID"), instance, version, tuple(bases))
                    for name, instance, version, bases in discovery.IPS[node.arch]]
        self.config = gfx_config(discovery.gc_info(node.arch))
        self.rev_id = PARTS[node.arch].rev_id if node.arch in PARTS else REV_ID

    @property
    def xccs(self) -> int:
        """The GC instances of the discovery table (one per XCC)."""
        return sum(ip.hw_id == hw.GC_HWID for ip in self.ips)

    def active_cus(self, se: int) -> int:
        """The bitmap of the active CUs of each shader array of an engine: every CU (RDNA), or cdna.py's."""
        part = PARTS.get(self.node.arch)
        return part.active[se] if part else (1 << self.config["max_cu_per_sh"]) - 1

    def version(self, hw_id: int) -> tuple[int, int, int]:
        """amdgpu_ip_version(adev, <ip>, 0): the first instance's version."""
        return next(ip.version for ip in self.ips if ip.hw_id == hw_id)

    @property
    def sdma_instances(self) -> int:
        """adev->sdma.num_instances: amdgpu_discovery_reg_base_init counts every SDMA entry of the table."""
        return sum(ip.hw_id in SDMA_HWIDS for ip in self.ips)

    # ---- memory ---------------------------------------------------------------------------------------------------
    @property
    def vram_size(self) -> int:
        """adev->gmc.real_vram_size."""
        return VRAM[self.node.arch]

    @property
    def visible_vram_size(self) -> int:
        """adev->gmc.visible_vram_size: the BAR's size, which is the whole VRAM (a resizable BAR, as the mock PCI
        board has)."""
        return self.vram_size

    @property
    def gtt_size(self) -> int:
        """The GTT manager's size: TTM's page limit (amdgpu_ttm_init with amdgpu_gtt_size -1), half of RAM, as the
        mock KFD's TTM limit is."""
        return self.kfd.limits["ttm"]

    def usage(self) -> dict[str, int]:
        """ttm_resource_manager_usage of the VRAM and GTT managers: the bytes of this GPU's memory objects (every
        compute partition's) in each domain (the first of its flags amdgpu_amdkfd_gpuvm_alloc_memory_of_gpu picks:
        VRAM, then GTT or user pages; doorbell and MMIO objects are in neither). All VRAM is visible, so its usage is
        VRAM's."""
        gpu_ids = {n.gpu_id for n in self.kfd.nodes if n.board == self.node.board}
        with self.kfd.lock:  # the process's calls change the objects
            bos = [b for b in self.kfd.bos.values() if b.gpu_id in gpu_ids]
        vram = sum(b.size for b in bos if b.flags & kfd.KFD_IOC_ALLOC_MEM_FLAGS_VRAM)
        gtt = sum(b.size for b in bos if not b.flags & kfd.KFD_IOC_ALLOC_MEM_FLAGS_VRAM and b.flags & GTT_KINDS)
        return {"vram": vram, "vis_vram": vram, "gtt": gtt}


def gfx_config(blob: bytes) -> dict[str, int]:
    """What amdgpu_discovery_get_gfx_info makes of a GC table, v1.x or v2.x: adev->gfx.config's and cu_info's figures
    (max_cu_per_sh: a v1 WGP is two CUs)."""
    if hw.struct_gpu_info_header.from_buffer_copy(blob).version_major == 1:
        g = hw.struct_gc_info_v1_0.from_buffer_copy(blob)
        arrays, cus, tccs = g.gc_num_sa_per_se, 2 * (g.gc_num_wgp0_per_sa + g.gc_num_wgp1_per_sa), g.gc_num_gl2c
    else:
        g = hw.struct_gc_info_v2_1.from_buffer_copy(blob)
        arrays, cus, tccs = g.gc_num_sh_per_se, g.gc_num_cu_per_sh, g.gc_num_tccs
    return {"max_shader_engines": g.gc_num_se, "max_sh_per_se": arrays, "max_cu_per_sh": cus,
            "max_backends_per_se": g.gc_num_rb_per_se, "max_texture_channel_caches": tccs, "max_gprs": g.gc_num_gprs,
            "max_gs_threads": g.gc_num_max_gs_thds, "gs_vgt_table_depth": g.gc_gs_table_depth,
            "gs_prim_buffer_depth": g.gc_gsprim_buff_depth, "double_offchip_lds_buf": g.gc_double_offchip_lds_buffer,
            "wave_front_size": g.gc_wave_size}
