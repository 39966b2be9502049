"""The mock KFD's CDNA GPUs (MOCKGPU_ARCH gfx942: MI300X, gfx950: MI350X) as amdkfd and amdgpu publish them, in SPX
(one topology node of eight XCCs) and CPX (a node per XCC, MOCKGPU_PARTITION=cpx). The figures are worked out here
from the kernel's formulas (linux 6.12 kfd_crat.c, kfd_topology.c, kfd_queue.c; gfx950's cwsr change of "Update cwsr
area size for gfx950") and AMD's published part figures (ROCm's GPU hardware specifications: MI300X 304 CUs in 8
XCDs, LDS 64 KiB, L2 4 MiB per XCD, 256 MiB Infinity Cache, 192 GiB HBM3; MI350X 256 CUs, LDS 160 KiB, 288 GiB)."""

from __future__ import annotations

import ctypes
import os

import pytest

from usergpu.autogen import amd_discovery as hw
from usergpu.autogen import amdgpu_drm as drm
from usergpu.drivers.amd.kfd import KFD, compute_queue_sizes
from usergpu.emu.amd.mock.kfd.kfd import MockKFD
from usergpu.emu.amd.mock.machines import mock_hal
from usergpu.emu.mock.hal import MockHAL
from usergpu.errors import DeviceNotFound
from usergpu.hostmem import PAGE

NODES = "/sys/devices/virtual/kfd/kfd/topology/nodes"
KiB = 1 << 10
# what each part publishes (per XCC where the topology is per partition): CUs, the most CUs of a shader array,
# LDS KiB, device id, gfx_target_version (kgd2kfd_probe: 90402 for GC 9.4.3 with rev_id 1), MEC/SDMA firmware
PART = {"gfx942": {"cus": 304, "cu_per_sh": 10, "lds": 64, "device": 0x74A1, "target": 90402, "gc": (9, 4, 3),
                   "sdma": (4, 4, 2), "nbio": (7, 9, 0), "vram": 192 << 30},
        "gfx950": {"cus": 256, "cu_per_sh": 9, "lds": 160, "device": 0x75A0, "target": 90500, "gc": (9, 5, 0),
                   "sdma": (4, 4, 5), "nbio": (7, 9, 1), "vram": 288 << 30}}
# kfd_queue_ctx_save_restore_size of one XCC (cu_num = simd_count / simd_per_cu / num_xcc, the same in SPX and CPX):
# MI300X: 38 CUs, wave_num = min(38 * 40, 4 arrays * 512) = 1520, ctl_stack = ALIGN(40 + 1520 * 8 + 8, 4 KiB) =
# 12288, wg_data = 38 * (0x80000 VGPRs + 0x4000 SGPRs + 0x10000 LDS + 0x1000 HW regs) = 23191552;
# MI350X: 32 CUs, 1280 waves, ctl_stack ALIGN(10288) = 12288, wg_data = 32 * (0x80000 + 0x4000 + 160 KiB + 0x1000)
CWSR = {"gfx942": (12288, 12288 + 23191552), "gfx950": (12288, 12288 + 22675456)}
# caches (kfd_fill_cache_non_crat_info, gc_info v2.1): a vector L1 per active CU, an instruction and a scalar
# cache per pair of CUs with an active one, one L2, one L3. MI300X: 304 + 2 * 160 + 2 = 626, the count a real
# MI300X node shows; MI350X with the mock's fused-off CUs (every array's ninth): 256 + 2 * 128 + 2
CACHES = {"gfx942": 626, "gfx950": 514}


def machine(tmp_path, arch: str, partition: str = "spx", count: int = 1) -> MockHAL:
    h = MockHAL(tmp_path)
    h.kfd = MockKFD(h, arch, count, partition)
    return h


def props(hal, node: int) -> dict[str, int]:
    text = hal.read_text(f"{NODES}/{node}/properties")
    return {k: int(v) for k, v in (line.split() for line in text.splitlines())}


@pytest.fixture(params=sorted(PART))
def arch(request) -> str:
    return request.param


def test_spx_is_one_node_of_eight_xccs(tmp_path, arch):
    hal, part = machine(tmp_path, arch), PART[arch]
    p = props(hal, 1)
    assert not hal.exists(f"{NODES}/2")
    assert (p["num_xcc"], p["gfx_target_version"], p["device_id"], p["vendor_id"]) == (8, part["target"],
                                                                                      part["device"], 0x1002)
    assert p["simd_count"] == 4 * part["cus"] and p["simd_per_cu"] == 4  # simd_per_cu * cu_info->number / nodes
    # the CRAT's array_count is one XCC's (1 array x 4 engines), node_show prints it times NUM_XCC
    assert (p["array_count"], p["simd_arrays_per_engine"], p["cu_per_simd_array"]) == (32, 1, part["cu_per_sh"])
    assert (p["lds_size_in_kb"], p["wave_front_size"], p["max_waves_per_simd"], p["max_slots_scratch_cu"]) == (
        part["lds"], 64, 8, 32)
    # 16 SDMA engines: kfd_get_num_sdma_engines keeps 2 for PCIe on an XGMI part, the rest are XGMI's
    assert (p["num_sdma_engines"], p["num_sdma_xgmi_engines"], p["num_sdma_queues_per_engine"]) == (2, 14, 8)
    assert p["num_cp_queues"] == 4 * 8 - 8  # MEC 0's 4 pipes x 8 queues, less amdgpu's 8 kernel queues
    assert (p["ctl_stack_size"], p["cwsr_size"]) == CWSR[arch]
    assert p["caches_count"] == CACHES[arch] == len(hal.listdir(f"{NODES}/1/caches"))
    assert (p["simd_id_base"], p["local_mem_size"], p["location_id"], p["drm_render_minor"]) == (0x80001000, 0,
                                                                                               0x300, 128)


def test_cpx_is_a_node_per_xcc(tmp_path, arch):
    hal, part = machine(tmp_path, arch, "cpx", count=2), PART[arch]
    nodes = [props(hal, n) for n in range(1, 17)]
    assert not hal.exists(f"{NODES}/17")
    for i, p in enumerate(nodes):
        assert (p["num_xcc"], p["simd_count"], p["array_count"]) == (1, 4 * part["cus"] // 8, 4)
        # kfd_topology_add_device: a GPU of several nodes has the node's id in location_id's low bits
        assert p["location_id"] == (0x03 + i // 8) << 8 | i % 8 and p["drm_render_minor"] == 128 + i
        assert (p["num_sdma_engines"], p["num_sdma_xgmi_engines"]) == (2, 0)  # 16 / 8 nodes, all PCIe
        assert (p["ctl_stack_size"], p["cwsr_size"]) == CWSR[arch]  # the sizes are per XCC
        assert p["simd_id_base"] == 0x80001000 + i * 4 * part["cu_per_sh"]  # one XCC's ids per node
    assert len({n["unique_id"] for n in nodes}) == 2  # amdgpu's unique_id is the board's
    root = hal.root
    board = root / "sys/bus/pci/devices/0000:03:00.0"
    for minor in range(129, 136):  # the partitions' render nodes all have the board's function as device
        assert os.path.samefile(root / f"sys/class/drm/renderD{minor}/device", board)
    assert os.path.samefile(root / "sys/class/drm/renderD136/device", root / "sys/bus/pci/devices/0000:04:00.0")
    for node in (0, 7, 12):  # each partition is a GPU of its own to the process
        dev = KFD(hal, node)
        ring, pointers = dev.alloc(PAGE, "gtt"), dev.alloc(PAGE, "gtt")
        dev.destroy_queue(dev.create_queue("aql", ring, pointers.va, pointers.va + 8))
        assert dev.arch == arch and hal.kfd.nodes[node].gpu.xccs == 1
        dev.close()


def test_the_driver_works_out_the_queue_sizes_amdkfd_wants(tmp_path, arch):
    """libhsakmt's (and the driver's) sizes for a compute queue are the topology's; the save area is one per XCC."""
    hal = machine(tmp_path, arch)
    dev = KFD(hal)
    sizes = compute_queue_sizes(dev.properties)
    assert (sizes["ctl_stack_size"], sizes["cwsr_size"]) == CWSR[arch]
    ring, pointers = dev.alloc(PAGE, "gtt"), dev.alloc(PAGE, "gtt")
    for kind in ("pm4", "aql", "sdma"):
        dev.destroy_queue(dev.create_queue(kind, ring, pointers.va, pointers.va + 8))
    dev.close()


def cache(hal, node: int, index: int) -> dict[str, str]:
    text = hal.read_text(f"{NODES}/{node}/caches/{index}/properties")
    return dict(line.split(" ", 1) for line in text.splitlines())


def test_caches_as_kfd_cache_show_prints_them(tmp_path):
    hal = machine(tmp_path, "gfx942")
    first = cache(hal, 1, 0)  # the first CU's vector L1: 32 KiB, 128-byte lines, data | HSACU
    assert {k: first[k] for k in ("processor_id_low", "level", "size", "cache_line_size", "type")} == {
        "processor_id_low": str(0x80001000), "level": "1", "size": "32", "cache_line_size": "128", "type": "9"}
    assert first["sibling_map"] == ",".join(["1"] + ["0"] * 31)  # four bytes, one CU
    sqc = cache(hal, 1, 304)  # the first instruction cache: 64 KiB for two CUs, instruction | HSACU
    assert (sqc["size"], sqc["type"], sqc["sibling_map"][:4]) == ("64", "10", "1,1,")
    l2, l3 = cache(hal, 1, 624), cache(hal, 1, 625)
    assert (l2["level"], l2["size"], l3["level"], l3["size"]) == ("2", "4096", "3", str(256 * KiB))
    bits = l2["sibling_map"].split(",")
    assert len(bits) == 8 * 4 * 32  # four bytes for each of the node's 32 arrays
    assert "".join(bits[:32]) == "1" * 10 + "0" * 22  # SE 0's ten CUs
    assert "".join(bits[64:96]) == "1" * 9 + "0" * 23  # the third entry: SE 1's (one behind, as the kernel fills it)


def test_ip_discovery_lists_a_gc_per_xcc(tmp_path, arch):
    """tinygrad reads GC, SDMA0 and NBIF instance 0's versions from the render node's device; amdgpu lists every
    XCC's GC and each SDMA engine."""
    hal = machine(tmp_path, arch)
    base = "/sys/class/drm/renderD128/device/ip_discovery/die/0"
    version = {name: tuple(int(hal.read_text(f"{base}/{hw_id}/0/{part}")) for part in ("major", "minor", "revision"))
               for name, hw_id in (("gc", hw.GC_HWID), ("sdma", hw.SDMA0_HWID), ("nbio", hw.NBIF_HWID))}
    assert version == {k: PART[arch][k] for k in ("gc", "sdma", "nbio")}
    assert sorted(hal.listdir(f"{base}/{hw.GC_HWID}")) == [str(i) for i in range(8)]
    sdma = sum(len(hal.listdir(f"{base}/{h}")) for h in (hw.SDMA0_HWID, hw.SDMA1_HWID, hw.SDMA2_HWID, hw.SDMA3_HWID))
    assert sdma == 16
    assert int(hal.read_text("/sys/class/drm/renderD128/device/mem_info_vram_total")) == PART[arch]["vram"]


def test_dev_info_of_a_cdna_part(tmp_path, arch):
    hal = machine(tmp_path, arch)
    fd = hal.open("/dev/dri/renderD128")
    d = drm.struct_drm_amdgpu_info_device()
    req = drm.struct_drm_amdgpu_info(return_pointer=ctypes.addressof(d), return_size=ctypes.sizeof(d),
                                     query=drm.AMDGPU_INFO_DEV_INFO)
    hal.ioctl(fd, drm.DRM_IOCTL_AMDGPU_INFO.request, req)
    rev = 1 if arch == "gfx942" else 0  # MI300X's rev_id 1; soc15_common_early_init: + 0x46 (GC 9.5.0: + 0x50)
    assert (d.family, d.chip_rev, d.external_rev) == (drm.AMDGPU_FAMILY_AI, rev, rev + (0x46 if rev else 0x50))
    assert (d.num_shader_engines, d.num_shader_arrays_per_engine, d.num_cu_per_sh) == (4, 1, PART[arch]["cu_per_sh"])
    assert d.cu_active_number == PART[arch]["cus"] and d.wave_front_size == 64
    assert sum(bin(d.cu_bitmap[se][0]).count("1") for se in range(4)) == PART[arch]["cus"] // 8  # XCC 0's
    assert (d.vram_type, d.vram_bit_width, d.num_rb_pipes) == (drm.AMDGPU_VRAM_TYPE_HBM, 8192, 0)
    ip = drm.struct_drm_amdgpu_info_hw_ip()
    req = drm.struct_drm_amdgpu_info(return_pointer=ctypes.addressof(ip), return_size=ctypes.sizeof(ip),
                                     query=drm.AMDGPU_INFO_HW_IP_INFO)
    req.query_hw_ip.type = drm.AMDGPU_HW_IP_GFX
    hal.ioctl(fd, drm.DRM_IOCTL_AMDGPU_INFO.request, req)
    assert (ip.hw_ip_version_major, ip.available_rings) == (9, 0)  # gfx_v9_4_3 makes no GFX ring
    hal.close(fd)


def test_cpx_is_cdna_s_and_partition_modes_are_checked(tmp_path, monkeypatch):
    with pytest.raises(DeviceNotFound, match="MOCKGPU_PARTITION 'cpx': gfx1100 partitions as spx"):
        machine(tmp_path, "gfx1100", "cpx")
    monkeypatch.setenv("MOCKGPU_PARTITION", "dpx")
    with pytest.raises(DeviceNotFound, match="MOCKGPU_PARTITION 'dpx': gfx942 partitions as spx, cpx"):
        mock_hal("gfx942", 1)
