"""The mock render node answers DRM_IOCTL_AMDGPU_INFO as amdgpu_info_ioctl (amdgpu_kms.c, Linux 6.12) does, with the
facts of the mock GPU its KFD topology also gives (and those amdgpu has of the boards it models), through the DRM
core's ioctl entry (drm_ioctl.c): ENOTTY for a request that is not DRM's, EINVAL for a DRM number with no ioctl,
EINVAL for a query without a place to answer or unknown, EFAULT for an answer that cannot be written."""

from __future__ import annotations

import ctypes
import errno

import pytest

from usergpu.autogen import amdgpu_drm as drm
from usergpu.drivers.amd.kfd import KFD
from usergpu.emu.amd.mock.kfd.kfd import MockKFD
from usergpu.emu.mock.hal import MockHAL
from usergpu.hostmem import MAP_ANONYMOUS, MAP_PRIVATE, PAGE, PROT_READ, os_mmap, os_munmap

ARCHS = ("gfx1100", "gfx1200")
BAD_POINTERS = [0xFFFF_8000_0000_0000, (1 << 64) - 16, 1 << 47, 0x800]
# what amdgpu 6.12 reports for these GPUs: their family, rev_id + soc21/soc24's offset, the boards' VRAM (bytes,
# GDDR6, bus width), the GC and SDMA IP block driver majors and their discovery versions (major.minor.revision)
BOARD = {"gfx1100": {"family": drm.AMDGPU_FAMILY_GC_11_0_0, "external_rev": 0x1,
                     "vram": (24 << 30, drm.AMDGPU_VRAM_TYPE_GDDR6, 384), "gc": 11, "sdma": 6,
                     "gc_ip": 0x0B_00_00, "sdma_ip": 0x06_00_00},
         "gfx1200": {"family": drm.AMDGPU_FAMILY_GC_12_0_0, "external_rev": 0x40,
                     "vram": (16 << 30, drm.AMDGPU_VRAM_TYPE_GDDR6, 256), "gc": 12, "sdma": 7,
                     "gc_ip": 0x0C_00_00, "sdma_ip": 0x07_00_00}}
DEV_INFO_6_12 = 440  # sizeof(struct drm_amdgpu_info_device) in 6.12's uapi (libdrm 2.4.114's: 368)
RESERVED = 8 << 20  # AMDGPU_VM_RESERVED_VRAM


@pytest.fixture(params=ARCHS)
def hal(request, tmp_path):
    """conftest's machine of two GPUs, of each arch."""
    h = MockHAL(tmp_path)
    h.kfd = MockKFD(h, request.param, 2)
    return h


@pytest.fixture
def render(hal) -> int:
    return hal.open("/dev/dri/renderD128")


def props(hal, node: int = 1) -> dict[str, int]:
    """A GPU node's properties as a runtime reads them from the topology."""
    text = hal.read_text(f"/sys/devices/virtual/kfd/kfd/topology/nodes/{node}/properties")
    return {k: int(v) for k, v in (line.split() for line in text.splitlines())}


def info(hal, fd: int, query: int, answer, size: int | None = None, **union):
    """DRM_IOCTL_AMDGPU_INFO into answer (a ctypes object); answer."""
    req = drm.struct_drm_amdgpu_info(return_pointer=ctypes.addressof(answer), query=query,
                                     return_size=ctypes.sizeof(answer) if size is None else size)
    for name, fields in union.items():
        for field, value in fields.items():
            setattr(getattr(req, name), field, value)
    hal.ioctl(fd, drm.DRM_IOCTL_AMDGPU_INFO.request, req)
    return answer


def refused(code: int, hal, fd: int, request: int, arg) -> None:
    with pytest.raises(OSError) as e:
        hal.ioctl(fd, request, arg)
    assert e.value.errno == code, errno.errorcode.get(e.value.errno)


def dev_info(hal, fd: int) -> drm.struct_drm_amdgpu_info_device:
    return info(hal, fd, drm.AMDGPU_INFO_DEV_INFO, drm.struct_drm_amdgpu_info_device())


# ---- DEV_INFO -------------------------------------------------------------------------------------------------
def test_dev_info_is_the_node_of_the_topology(hal, render):
    p, d, board = props(hal), dev_info(hal, render), BOARD[hal.kfd.arch]
    assert d.device_id == p["device_id"] and d.family == board["family"]
    assert (d.chip_rev, d.external_rev, d.pci_rev) == (0, board["external_rev"], 0xC8)
    assert d.num_shader_arrays_per_engine == p["simd_arrays_per_engine"]
    assert d.num_shader_engines * d.num_shader_arrays_per_engine == p["array_count"]
    assert d.num_cu_per_sh == p["cu_per_simd_array"]
    assert d.cu_active_number == p["simd_count"] // p["simd_per_cu"]
    assert d.wave_front_size == p["wave_front_size"]
    assert d.max_engine_clock == p["max_engine_clk_fcompute"] * 1000  # kHz
    assert d.gpu_counter_freq == 100_000  # the GPU timestamp's 100 MHz, in kHz
    assert (d.vram_type, d.vram_bit_width) == board["vram"][1:]
    assert d.num_hw_gfx_contexts == 8 and d.gc_double_offchip_lds_buf == 1
    assert d.num_rb_pipes == 4 * d.num_shader_engines and d.enabled_rb_pipes_mask == (1 << d.num_rb_pipes) - 1
    assert (d.virtual_address_offset, d.virtual_address_max) == (1 << 16, 1 << 47)
    assert (d.high_va_offset, d.high_va_max) == (0xFFFF_8000_0000_0000, 0xFFFF_FFFF_FFBF_0000)
    assert (d.virtual_address_alignment, d.gart_page_size, d.pte_fragment_size) == (PAGE, PAGE, 2 << 20)


def test_every_wgp_of_the_shape_is_active_as_tinygrad_reads_it(hal, render):
    """tinygrad's is_wgp_active: WGP w of SE s, SA a is active when cu_bitmap[s % 4][a + s // 4 * 2] has both its
    CUs' bits (2w, 2w + 1); gfx11's layout puts SEs 4..7 in the last two columns."""
    d, p = dev_info(hal, render), props(hal)
    wgps = p["cu_per_simd_array"] // 2
    active = {(se, sa, w) for se in range(8) for sa in range(2) for w in range(8)
              if (d.cu_bitmap[se % 4][sa + se // 4 * 2] >> 2 * w) & 3 == 3}
    assert active == {(se, sa, w) for se in range(d.num_shader_engines) for sa in range(d.num_shader_arrays_per_engine)
                      for w in range(wgps)}


def test_dev_info_answers_6_12_s_whole_struct(hal, render):
    """A caller whose struct is newer (tinygrad 0.14's is 448 bytes) gets 6.12's 440: min(return_size, sizeof). Its
    fields past libdrm 2.4.114's end are written too, as amdgpu derives them from the mock's facts: the cache sizes
    and MALL of a gc_info v1.0 table without MALL_INFO, no gfx11 shadow outside SR-IOV, 0 where there is no source."""
    buf = (ctypes.c_uint8 * 448)(*[0xAA] * 448)
    info(hal, render, drm.AMDGPU_INFO_DEV_INFO, buf)
    raw = bytes(buf)
    assert ctypes.sizeof(drm.struct_drm_amdgpu_info_device) == DEV_INFO_6_12
    assert raw[DEV_INFO_6_12:] == b"\xaa" * (448 - DEV_INFO_6_12)
    assert raw[368:DEV_INFO_6_12] == bytes(DEV_INFO_6_12 - 368)  # min_engine_clock ... csa_alignment
    d = drm.struct_drm_amdgpu_info_device.from_buffer_copy(raw[:DEV_INFO_6_12])
    assert d.device_id == props(hal)["device_id"] and (d.pcie_gen, d.pcie_num_lanes) == (0, 0)


def test_a_short_return_size_gets_that_many_bytes(hal, render):
    d = drm.struct_drm_amdgpu_info_device()
    ctypes.memset(ctypes.addressof(d), 0xAA, ctypes.sizeof(d))
    info(hal, render, drm.AMDGPU_INFO_DEV_INFO, d, size=6)
    raw = bytes(d)
    assert raw[:4] == props(hal)["device_id"].to_bytes(4, "little") and raw[4:6] == b"\0\0"
    assert raw[6:] == b"\xaa" * (len(raw) - 6)


# ---- firmware, IP blocks, memory ------------------------------------------------------------------------------
def fw(hal, fd: int, fw_type: int, index: int = 0, ip_instance: int = 0) -> drm.struct_drm_amdgpu_info_firmware:
    return info(hal, fd, drm.AMDGPU_INFO_FW_VERSION, drm.struct_drm_amdgpu_info_firmware(),
                query_fw={"fw_type": fw_type, "index": index, "ip_instance": ip_instance})


def test_fw_version_is_the_topology_s_and_refuses_what_amdgpu_refuses(hal, render):
    p = props(hal)
    assert fw(hal, render, drm.AMDGPU_INFO_FW_GFX_MEC).ver == p["fw_version"]
    assert [fw(hal, render, drm.AMDGPU_INFO_FW_SDMA, i).ver for i in range(2)] == [p["sdma_fw_version"]] * 2
    assert fw(hal, render, drm.AMDGPU_INFO_FW_GFX_ME).ver == 0  # firmware the mock does not run
    for fw_type, index, instance in ((drm.AMDGPU_INFO_FW_SDMA, 2, 0), (drm.AMDGPU_INFO_FW_GFX_MEC, 2, 0),
                                     (drm.AMDGPU_INFO_FW_GFX_MEC, 0, 1), (drm.AMDGPU_INFO_FW_TA, 0, 0), (0x99, 0, 0)):
        with pytest.raises(OSError) as e:
            fw(hal, render, fw_type, index, instance)
        assert e.value.errno == errno.EINVAL, (fw_type, index, instance)


def hw_ip(hal, fd: int, kind: int, instance: int = 0) -> drm.struct_drm_amdgpu_info_hw_ip:
    return info(hal, fd, drm.AMDGPU_INFO_HW_IP_INFO, drm.struct_drm_amdgpu_info_hw_ip(),
                query_hw_ip={"type": kind, "ip_instance": instance})


def test_hw_ip_info_of_gfx_compute_and_dma(hal, render):
    board = BOARD[hal.kfd.arch]
    expect = {drm.AMDGPU_HW_IP_GFX: (board["gc"], 0x1, 32, 32), drm.AMDGPU_HW_IP_COMPUTE: (board["gc"], 0xF, 32, 32),
              drm.AMDGPU_HW_IP_DMA: (board["sdma"], 0x3, 256, 4)}
    discovery = {drm.AMDGPU_HW_IP_GFX: board["gc_ip"], drm.AMDGPU_HW_IP_COMPUTE: board["gc_ip"],
                 drm.AMDGPU_HW_IP_DMA: board["sdma_ip"]}
    for kind, (major, rings, start, size) in expect.items():
        ip = hw_ip(hal, render, kind)
        assert (ip.hw_ip_version_major, ip.hw_ip_version_minor, ip.available_rings) == (major, 0, rings), kind
        assert ip.ip_discovery_version == discovery[kind], kind  # 6.12's field, a pad in libdrm 2.4.114's
        assert (ip.ib_start_alignment, ip.ib_size_alignment, ip.capabilities_flags) == (start, size, 0), kind
    assert bytes(hw_ip(hal, render, drm.AMDGPU_HW_IP_VCN_DEC)) == bytes(32)  # no VCN block: zeros, no error
    count = {kind: info(hal, render, drm.AMDGPU_INFO_HW_IP_COUNT, ctypes.c_uint32(), query_hw_ip={"type": kind}).value
             for kind in expect}
    assert count == {drm.AMDGPU_HW_IP_GFX: 1, drm.AMDGPU_HW_IP_COMPUTE: 1, drm.AMDGPU_HW_IP_DMA: 2}
    for query, kind, instance in ((drm.AMDGPU_INFO_HW_IP_INFO, 99, 0), (drm.AMDGPU_INFO_HW_IP_INFO, 0, 1),
                                  (drm.AMDGPU_INFO_HW_IP_COUNT, drm.AMDGPU_HW_IP_VCN_DEC, 0)):
        with pytest.raises(OSError) as e:
            info(hal, render, query, drm.struct_drm_amdgpu_info_hw_ip(),
                 query_hw_ip={"type": kind, "ip_instance": instance})
        assert e.value.errno == errno.EINVAL, (query, kind, instance)


def test_vram_gtt_is_the_board_less_the_vm_reserve_and_ttm_s_gtt(hal, render):
    vram = BOARD[hal.kfd.arch]["vram"][0]
    got = info(hal, render, drm.AMDGPU_INFO_VRAM_GTT, drm.struct_drm_amdgpu_info_vram_gtt())
    assert (got.vram_size, got.vram_cpu_accessible_size) == (vram - RESERVED, vram - RESERVED)
    assert got.gtt_size == hal.kfd.limits["ttm"] and hal.kfd.limits["vram"] <= got.vram_size


def test_memory_and_usage_follow_the_process_s_objects(hal, render):
    def usage() -> tuple[int, int, int]:
        mem = info(hal, render, drm.AMDGPU_INFO_MEMORY, drm.struct_drm_amdgpu_memory_info())
        assert mem.vram.usable_heap_size == mem.vram.total_heap_size - RESERVED
        assert mem.gtt.max_allocation == mem.gtt.usable_heap_size * 3 // 4
        single = [info(hal, render, q, ctypes.c_uint64()).value for q in
                  (drm.AMDGPU_INFO_VRAM_USAGE, drm.AMDGPU_INFO_VIS_VRAM_USAGE, drm.AMDGPU_INFO_GTT_USAGE)]
        heaps = [mem.vram.heap_usage, mem.cpu_accessible_vram.heap_usage, mem.gtt.heap_usage]
        assert single == heaps
        return tuple(heaps)

    assert usage() == (0, 0, 0)
    dev = KFD(hal)
    vram, gtt = dev.alloc(3 * PAGE), dev.alloc(PAGE, "gtt")
    KFD(hal, 1).alloc(PAGE)  # the other GPU's
    assert usage() == (3 * PAGE, 3 * PAGE, PAGE)
    dev.free(vram)
    dev.free(gtt)
    assert usage() == (0, 0, 0)


def test_timestamp_and_accel_working(hal, render):
    before = info(hal, render, drm.AMDGPU_INFO_TIMESTAMP, ctypes.c_uint64()).value
    assert before == hal.kfd.nodes[0].gpu.timestamp()
    assert info(hal, render, drm.AMDGPU_INFO_ACCEL_WORKING, ctypes.c_uint32()).value == 1


# ---- the ioctl entry --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("pointer", BAD_POINTERS, ids=hex)
def test_an_answer_that_cannot_be_written_is_efault(hal, render, pointer):
    req = drm.struct_drm_amdgpu_info(return_pointer=pointer, return_size=64, query=drm.AMDGPU_INFO_DEV_INFO)
    refused(errno.EFAULT, hal, render, drm.DRM_IOCTL_AMDGPU_INFO.request, req)


def test_a_read_only_answer_buffer_is_efault(hal, render):
    page = os_mmap(0, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
    try:
        req = drm.struct_drm_amdgpu_info(return_pointer=page, return_size=8, query=drm.AMDGPU_INFO_VRAM_GTT)
        refused(errno.EFAULT, hal, render, drm.DRM_IOCTL_AMDGPU_INFO.request, req)
    finally:
        os_munmap(page, PAGE)


@pytest.mark.parametrize("fields", [{"query": 0x7F}, {"query": drm.AMDGPU_INFO_DEV_INFO, "return_size": 0},
                                    {"query": drm.AMDGPU_INFO_DEV_INFO, "return_pointer": 0}], ids=str)
def test_an_unknown_query_or_no_place_to_answer_is_einval(hal, render, fields):
    answer = ctypes.create_string_buffer(512)
    req = drm.struct_drm_amdgpu_info(**({"return_pointer": ctypes.addressof(answer), "return_size": 512} | fields))
    refused(errno.EINVAL, hal, render, drm.DRM_IOCTL_AMDGPU_INFO.request, req)


def test_the_drm_entry_refuses_as_drm_ioctl(hal, render):
    req = drm.struct_drm_amdgpu_info()
    refused(errno.ENOTTY, hal, render, drm.DRM_IOCTL_AMDGPU_INFO.request & ~0xFF00 | ord("K") << 8, req)  # not 'd'
    refused(errno.EINVAL, hal, render, drm.DRM_IOCTL_AMDGPU_INFO.request & ~0xFF | 0x56, req)  # past amdgpu's table
    refused(errno.EINVAL, hal, render, drm.DRM_IOCTL_AMDGPU_INFO.request & ~0xFF | 0x4A, req)  # a hole in it
    refused(errno.ENOTTY, hal, render, drm.DRM_IOCTL_AMDGPU_GEM_CREATE.request, drm.union_drm_amdgpu_gem_create())
    refused(errno.EFAULT, hal, render, drm.DRM_IOCTL_AMDGPU_INFO.request, 0x800)  # the struct itself unreadable
