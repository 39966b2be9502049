"""The render node of a mock GPU (/dev/dri/renderD<128+i>, amdgpu's DRM file): the process maps memory objects'
pages through it, ACQUIRE_VM makes its VM the process's on that GPU, and it answers DRM_IOCTL_AMDGPU_INFO as
amdgpu_info_ioctl (amdgpu_kms.c, Linux 6.12) does, from what amdgpu knows of the mock GPU (amdgpu_device.py).

The ioctl entry is drm_ioctl's (drm_ioctl.c): a request of another type than DRM's is ENOTTY; its number picks an
entry of amdgpu's table (from DRM_COMMAND_BASE) or the core's, and a number with none is EINVAL; the caller's
struct is copied in by the size its request encodes (zero-filled up to the kernel's own) and back only where the
request and the kernel's definition both say so, failure or not. An ioctl the mock does not model is ENOTTY.

The structs are 6.12's uapi (usergpu.autogen.amdgpu_drm, from linux-source-6.12's amdgpu_drm.h), so DEV_INFO answers
6.12's drm_amdgpu_info_device (440 bytes) and HW_IP_INFO its ip_discovery_version.
"""

from __future__ import annotations

import ctypes
import errno

from usergpu.autogen import amd_discovery as hw
from usergpu.autogen import amdgpu_drm as drm
from usergpu.autogen import amdgpu_ucode as ucode
from usergpu.autogen._support import Ioctl
from usergpu.emu.amd.mock.kfd.amdgpu_device import PCI_REVISION, VM_RESERVED_VRAM, VRAM_BUS, AmdgpuDevice
from usergpu.emu.mock.uaccess import IOC_IN, IOC_OUT, copy_to_user, fail, with_user_struct
from usergpu.hostmem import MAP_SHARED, PAGE, CallbackMMIO, os_mmap
from usergpu.isa.amd.hw.soc import TIMESTAMP_HZ

# DRM's ioctl numbers, amdgpu's and the core's (drm_ioctls, amdgpu_ioctls_kms: the entries of 6.12's uapi headers)
IOCTL_NAMES = {(v.request if isinstance(v, Ioctl) else v) & 0xFF: name.removeprefix("DRM_IOCTL_")
               for name, v in vars(drm).items() if name.startswith("DRM_IOCTL_") and name != "DRM_IOCTL_BASE"}
# amdgpu_discovery.c's family by GC version (every GC 9 is AMDGPU_FAMILY_AI)
FAMILY = {(9, 4, 3): drm.AMDGPU_FAMILY_AI, (9, 5, 0): drm.AMDGPU_FAMILY_AI, (11, 0, 0): drm.AMDGPU_FAMILY_GC_11_0_0,
          (12, 0, 0): drm.AMDGPU_FAMILY_GC_12_0_0, (12, 0, 1): drm.AMDGPU_FAMILY_GC_12_0_0}
# soc15/soc21/soc24 common_early_init: external_rev_id is rev_id + it
EXTERNAL_REV = {(9, 4, 3): 0x46, (9, 5, 0): 0x50, (11, 0, 0): 0x1, (12, 0, 0): 0x40, (12, 0, 1): 0x50}
MAX_HW_CONTEXTS = 8  # gfx_v9_4_3/gfx_v11_0/gfx_v12_0_gpu_early_init
NO_GFX_RINGS = ("gfx94", "gfx95")  # gfx_v9_4_3 makes compute rings only: a CDNA GFX block has no ring
# the GPUVM of gmc_v11/v12 (amdgpu_vm_adjust_size(adev, 256 * 1024, 9, 3, 48)): 256 TiB in 2 MiB PTE fragments,
# less what amdgpu_vm.h reserves at the bottom and the top (the trap handler, SEQ64 and CSA areas), split around
# the GMC hole (amdgpu_gmc.h)
VM_SIZE, FRAGMENT_SIZE = 1 << 48, 9
VA_RESERVED_BOTTOM, VA_RESERVED_TOP = 1 << 16, (1 << 16) + (2 << 20) + (2 << 20)
GMC_HOLE_START, GMC_HOLE_END = 0x0000_8000_0000_0000, 0xFFFF_8000_0000_0000
# AMDGPU_HW_IP_* of the mock GPUs' blocks -> (the block's hw id, the rings amdgpu makes (None: one per SDMA
# instance), the most a context may use (amdgpu_ctx_num_entities), IB start and size alignment)
HW_IPS = {drm.AMDGPU_HW_IP_GFX: (hw.GC_HWID, 1, 1, 32, 32),  # GFX11/12_NUM_GFX_RINGS
          drm.AMDGPU_HW_IP_COMPUTE: (hw.GC_HWID, 8, 4, 32, 32),  # amdgpu_gfx_get_num_kcq's default
          drm.AMDGPU_HW_IP_DMA: (hw.SDMA0_HWID, None, 2, 256, 4)}
# the types whose blocks the mock GPUs' discovery tables lack (no UVD, VCE, VCN, JPEG or VPE): no IP block
ABSENT_IPS = (drm.AMDGPU_HW_IP_UVD, drm.AMDGPU_HW_IP_VCE, drm.AMDGPU_HW_IP_UVD_ENC, drm.AMDGPU_HW_IP_VCN_DEC,
              drm.AMDGPU_HW_IP_VCN_ENC, drm.AMDGPU_HW_IP_VCN_JPEG, drm.AMDGPU_HW_IP_VPE)
FW_TYPES = {v for name, v in vars(drm).items()
            if name.startswith("AMDGPU_INFO_FW_") and name != "AMDGPU_INFO_FW_VERSION"}


class RenderFile:
    """A render node of one GPU, opened."""

    def __init__(self, kfd_, node):
        self.kfd, self.node = kfd_, node
        self.adev = AmdgpuDevice(kfd_, node)
        self.vm: int | None = None  # the gpu_id whose process VM this file's VM became
        self.handlers = {drm.DRM_IOCTL_AMDGPU_INFO.nr: (drm.DRM_IOCTL_AMDGPU_INFO, self.info)}
        usage = self.adev.usage
        self.queries = {
            drm.AMDGPU_INFO_ACCEL_WORKING: lambda a: ctypes.c_uint32(1),
            drm.AMDGPU_INFO_HW_IP_INFO: self.hw_ip_info, drm.AMDGPU_INFO_HW_IP_COUNT: self.hw_ip_count,
            drm.AMDGPU_INFO_TIMESTAMP: lambda a: ctypes.c_uint64(node.gpu.timestamp()),
            drm.AMDGPU_INFO_FW_VERSION: self.firmware,
            drm.AMDGPU_INFO_VRAM_USAGE: lambda a: ctypes.c_uint64(usage()["vram"]),
            drm.AMDGPU_INFO_VIS_VRAM_USAGE: lambda a: ctypes.c_uint64(usage()["vis_vram"]),
            drm.AMDGPU_INFO_GTT_USAGE: lambda a: ctypes.c_uint64(usage()["gtt"]),
            drm.AMDGPU_INFO_VRAM_GTT: self.vram_gtt, drm.AMDGPU_INFO_MEMORY: self.memory,
            drm.AMDGPU_INFO_DEV_INFO: self.dev_info,
        }

    # ---- the ioctl entry, as drm_ioctl() runs it --------------------------------------------------------------
    def ioctl(self, request: int, arg: int) -> None:
        nr, usize, udir = request & 0xFF, (request >> 16) & 0x3FFF, request >> 30
        if (request >> 8) & 0xFF != drm.DRM_IOCTL_BASE:
            raise fail(errno.ENOTTY, f"render node ioctl {request:#x}: not a DRM request")
        if nr not in IOCTL_NAMES:
            raise fail(errno.EINVAL, f"render node ioctl {request:#x}: DRM has no ioctl {nr:#x}")
        if nr not in self.handlers:
            raise fail(errno.ENOTTY, f"{IOCTL_NAMES[nr]}: the mock render node does not model this ioctl")
        ioc, handler = self.handlers[nr]
        with self.kfd.lock:
            with_user_struct(arg, ioc.struct, usize if udir & ioc.dir & IOC_IN else 0,
                             usize if udir & ioc.dir & IOC_OUT else 0, IOCTL_NAMES[nr], handler)

    def info(self, a) -> None:
        """amdgpu_info_ioctl: EINVAL without a return pointer and size, or for a query the mock does not answer;
        else the answer's first min(return_size, its size) bytes at return_pointer (EFAULT where they cannot be
        written)."""
        what = f"AMDGPU_INFO query {a.query:#x}"
        if not a.return_size or not a.return_pointer:
            raise fail(errno.EINVAL, f"{what}: return_pointer {a.return_pointer:#x}, return_size {a.return_size}")
        if a.query not in self.queries:
            raise fail(errno.EINVAL, f"{what}: the mock answers queries {', '.join(map(hex, sorted(self.queries)))}")
        answer = bytes(self.queries[a.query](a))
        copy_to_user(a.return_pointer, answer[: a.return_size], what)

    # ---- queries --------------------------------------------------------------------------------------------------
    def hw_ip_info(self, a) -> drm.struct_drm_amdgpu_info_hw_ip:
        """amdgpu_hw_ip_info: the block's version (its IP block driver's: the discovery major, minor 0) and its
        first instance's discovery version (IP_VERSION_MAJ_MIN_REV: major << 16 | minor << 8 | revision), the rings
        a context may use and the IB alignments; all zero for a type whose block the GPU lacks; EINVAL for an
        instance past the first or an unknown type."""
        q = a.query_hw_ip
        if q.ip_instance >= drm.AMDGPU_HW_IP_INSTANCE_MAX_COUNT or q.type not in (*HW_IPS, *ABSENT_IPS):
            raise fail(errno.EINVAL, f"AMDGPU_INFO_HW_IP_INFO: type {q.type}, instance {q.ip_instance}")
        if q.type in ABSENT_IPS:
            return drm.struct_drm_amdgpu_info_hw_ip()
        hw_id, rings, entities, start, size = HW_IPS[q.type]
        rings = min(entities, self.adev.sdma_instances if rings is None else rings)
        if q.type == drm.AMDGPU_HW_IP_GFX and self.node.arch[:5] in NO_GFX_RINGS:
            rings = 0
        major, minor, revision = self.adev.version(hw_id)
        return drm.struct_drm_amdgpu_info_hw_ip(hw_ip_version_major=major, ib_start_alignment=start,
                                                ib_size_alignment=size, available_rings=(1 << rings) - 1,
                                                ip_discovery_version=major << 16 | minor << 8 | revision)

    def hw_ip_count(self, a) -> ctypes.c_uint32:
        """The instances of a type's block: one GFX (for GFX and COMPUTE), an SDMA per instance; EINVAL for a type
        whose block the GPU lacks."""
        if a.query_hw_ip.type not in HW_IPS:
            raise fail(errno.EINVAL, f"AMDGPU_INFO_HW_IP_COUNT: the GPU has no block of type {a.query_hw_ip.type}")
        return ctypes.c_uint32(self.adev.sdma_instances if a.query_hw_ip.type == drm.AMDGPU_HW_IP_DMA else 1)

    def firmware(self, a) -> drm.struct_drm_amdgpu_info_firmware:
        """amdgpu_firmware_info: the versions of the firmware the mock GPU runs as its KFD topology gives them (MEC's,
        every SDMA instance's); the rest it does not run and reads 0, as amdgpu reports firmware it has not loaded.
        EINVAL for an instance but 0, an unknown type, or an index the type lacks (MEC 0 and 1, an SDMA instance, a
        TA type)."""
        fw, props, sdmas = a.query_fw, self.node.props, self.adev.sdma_instances
        indices = {drm.AMDGPU_INFO_FW_GFX_MEC: range(2), drm.AMDGPU_INFO_FW_SDMA: range(sdmas),
                   drm.AMDGPU_INFO_FW_TA: range(ucode.TA_FW_TYPE_PSP_XGMI, ucode.TA_FW_TYPE_MAX_INDEX)}
        if fw.ip_instance or fw.fw_type not in FW_TYPES or fw.index not in indices.get(fw.fw_type, [fw.index]):
            raise fail(errno.EINVAL, f"AMDGPU_INFO_FW_VERSION: type {fw.fw_type}, instance {fw.ip_instance}, "
                                     f"index {fw.index}")
        versions = {(drm.AMDGPU_INFO_FW_GFX_MEC, 0): props["fw_version"],
                    **{(drm.AMDGPU_INFO_FW_SDMA, i): props["sdma_fw_version"] for i in range(sdmas)}}
        return drm.struct_drm_amdgpu_info_firmware(ver=versions.get((fw.fw_type, fw.index), 0))

    def _usable_vram(self) -> int:
        """VRAM less what is pinned (nothing, on the mock) and AMDGPU_VM_RESERVED_VRAM."""
        return self.adev.vram_size - VM_RESERVED_VRAM

    def vram_gtt(self, a) -> drm.struct_drm_amdgpu_info_vram_gtt:
        usable = self._usable_vram()
        return drm.struct_drm_amdgpu_info_vram_gtt(vram_size=usable, gtt_size=self.adev.gtt_size,
                                                   vram_cpu_accessible_size=min(self.adev.visible_vram_size, usable))

    def memory(self, a) -> drm.struct_drm_amdgpu_memory_info:
        """Each heap's total, what of it is usable, its usage, and the largest allocation (3/4 of the usable)."""
        adev, usage, usable = self.adev, self.adev.usage(), self._usable_vram()
        heaps = {"vram": (adev.vram_size, usable), "cpu_accessible_vram": (adev.visible_vram_size,
                 min(adev.visible_vram_size, usable)), "gtt": (adev.gtt_size, adev.gtt_size)}
        used = {"vram": usage["vram"], "cpu_accessible_vram": usage["vis_vram"], "gtt": usage["gtt"]}
        return drm.struct_drm_amdgpu_memory_info(**{
            heap: drm.struct_drm_amdgpu_heap_info(total, usable_, used[heap], usable_ * 3 // 4)
            for heap, (total, usable_) in heaps.items()})

    def dev_info(self, a) -> drm.struct_drm_amdgpu_info_device:
        """DEV_INFO as amdgpu fills it for a dGPU with DPM: the PCI ids and revisions, the family, the gfx shape of
        gc_info with its active CUs (the mock RDNA GPUs harvest none; a CDNA part's are cdna.py's), each shader
        array's bitmap in gfx11's layout (SE s, SA a at [s % 4][a + s // 4 * 2], which is gfx_v9_4_3's [s][a] for its
        four engines; CDNA's is the first XCC's, cu_info.bitmap[0], and cu_active_number every XCC's), the clocks in
        kHz (the 100 MHz counter, the topology's top engine clock), the GPUVM layout and the VRAM bus. Of 6.12's
        fields after tcc_disabled_mask, amdgpu reads the cache sizes from gc_info v1.2 and mall_size from a
        MALL_INFO table: the mock's tables have gc_info v1.0 or v2.1 and no MALL_INFO, so they are 0 as amdgpu
        leaves them; so are the gfx11 shadow and CSA sizes
        (gfx_v11_0 gives them only under SR-IOV, gfx12 not at all) and enabled_rb_pipes_mask_hi (6.12 never sets
        it). What the mock has no source for stays 0: the memory clock and the minimum clocks (the SMU's DPM levels),
        the PCIe link (pcie_gen, pcie_num_lanes: the link capabilities of the GPU and its ports), the flags (no APU,
        MCBP or TMZ; TA_CNTL2's truncate-coord mode), the CE RAM (none on gfx11/12)."""
        adev, props, c = self.adev, self.node.props, self.adev.config
        gfx = adev.version(hw.GC_HWID)
        ses, sas, rbs = c["max_shader_engines"], c["max_sh_per_se"], c["max_backends_per_se"] * c["max_shader_engines"]
        vm_size = VM_SIZE - VA_RESERVED_TOP
        vram_type, vram_width = VRAM_BUS[self.node.arch]
        info = drm.struct_drm_amdgpu_info_device(
            device_id=props["device_id"], chip_rev=adev.rev_id, external_rev=adev.rev_id + EXTERNAL_REV[gfx],
            pci_rev=PCI_REVISION, family=FAMILY[gfx], num_shader_engines=ses, num_shader_arrays_per_engine=sas,
            gpu_counter_freq=TIMESTAMP_HZ // 1000, max_engine_clock=props["max_engine_clk_fcompute"] * 1000,
            enabled_rb_pipes_mask=(1 << rbs) - 1, num_rb_pipes=rbs, num_hw_gfx_contexts=MAX_HW_CONTEXTS,
            virtual_address_offset=VA_RESERVED_BOTTOM, virtual_address_max=min(vm_size, GMC_HOLE_START),
            virtual_address_alignment=PAGE, pte_fragment_size=(1 << FRAGMENT_SIZE) * PAGE, gart_page_size=PAGE,
            vram_type=vram_type, vram_bit_width=vram_width, gc_double_offchip_lds_buf=c["double_offchip_lds_buf"],
            wave_front_size=c["wave_front_size"], num_shader_visible_vgprs=c["max_gprs"],
            num_cu_per_sh=c["max_cu_per_sh"], num_tcc_blocks=c["max_texture_channel_caches"],
            gs_vgt_table_depth=c["gs_vgt_table_depth"], gs_prim_buffer_depth=c["gs_prim_buffer_depth"],
            max_gs_waves_per_vgt=c["max_gs_threads"], high_va_offset=GMC_HOLE_END, high_va_max=GMC_HOLE_END | vm_size)
        for se in range(ses):
            for sa in range(sas):
                info.cu_bitmap[se % 4][sa + se // 4 * 2] = adev.active_cus(se)
        info.cu_active_number = adev.xccs * sum(bin(adev.active_cus(se)).count("1") for se in range(ses)) * sas
        return info

    # ---- mmaps ----------------------------------------------------------------------------------------------------
    def mmap(self, length: int, offset: int, prot: int, flags: int, address: int) -> int:
        bo = self.kfd.bos.get(offset // PAGE) if offset % PAGE == 0 else None  # the offset is handle * PAGE
        if bo is None or bo.memfd is None or length > bo.size:
            raise fail(errno.EINVAL, f"mmap of {length:#x} bytes at offset {offset:#x}: no such memory object")
        return os_mmap(address, length, prot, flags | MAP_SHARED, bo.memfd, 0)

    def mmio(self, length: int, offset: int, width: int) -> CallbackMMIO:
        raise fail(errno.EINVAL, "a render node has no MMIO")
