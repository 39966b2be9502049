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

VRAM = {"gfx1100": 24 << 30, "gfx1200": 16 << 30}  # the boards' VRAM bytes
# arch -> the VRAM's type and bus width (atomfirmware's vram_info): GDDR6 on 384 bits (Navi31), 256 (Navi48)
VRAM_BUS = {"gfx1100": (drm.AMDGPU_VRAM_TYPE_GDDR6, 384), "gfx1200": (drm.AMDGPU_VRAM_TYPE_GDDR6, 256)}
VM_RESERVED_VRAM = 8 << 20  # AMDGPU_VM_RESERVED_VRAM (amdgpu_vm.h): what each VM keeps back for its page tables
PCI_REVISION = 0xC8  # the mock boards' PCI revision (pci_gpu.py's config space: the RX 7900 XTX's)
REV_ID = 0  # adev->rev_id: NBIO's strap ATI_REV_ID, which the mock GPUs read as 0
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
        self.gc = hw.struct_gc_info_v1_0.from_buffer_copy(discovery.gc_info(node.arch))

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
        """ttm_resource_manager_usage of the VRAM and GTT managers: the bytes of this GPU's memory objects in each
        domain (the first of its flags amdgpu_amdkfd_gpuvm_alloc_memory_of_gpu picks: VRAM, then GTT or user
        pages; doorbell and MMIO objects are in neither). All VRAM is visible, so its usage is VRAM's."""
        with self.kfd.lock:  # the process's calls change the objects
            bos = [b for b in self.kfd.bos.values() if b.gpu_id == self.node.gpu_id]
        vram = sum(b.size for b in bos if b.flags & kfd.KFD_IOC_ALLOC_MEM_FLAGS_VRAM)
        gtt = sum(b.size for b in bos if not b.flags & kfd.KFD_IOC_ALLOC_MEM_FLAGS_VRAM and b.flags & GTT_KINDS)
        return {"vram": vram, "vis_vram": vram, "gtt": gtt}
