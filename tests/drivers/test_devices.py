"""GPU discovery from sysfs, on a sysfs tree laid out as the kernel lays it out."""

from __future__ import annotations

from usergpu.drivers import devices
from usergpu.drivers.hal import HAL

NAVI31_NODE = """cpu_cores_count 0
simd_count 192
gfx_target_version 110000
vendor_id 4098
device_id 29772
location_id 768
domain 0
drm_render_minor 128
"""
CPU_NODE = "cpu_cores_count 16\nsimd_count 0\ngfx_target_version 0\nlocation_id 0\ndomain 0\n"


def test_finds_amd_and_nvidia_gpus_and_joins_kfd_topology(sysfs):
    hal = sysfs(
        [
            ("0000:00:00.0", 0x8086, 0x1234, 0x060000, None),  # host bridge: not a GPU
            ("0000:03:00.0", 0x1002, 0x744C, 0x030000, "amdgpu"),  # Navi31
            ("0000:03:00.1", 0x1002, 0xAB30, 0x040300, "snd_hda_intel"),  # its HDMI audio: not a GPU
            ("0000:41:00.0", 0x1002, 0x74A1, 0x120000, "vfio-pci"),  # MI300X, accelerator class
            ("0000:c1:00.0", 0x10DE, 0x2335, 0x030200, "nvidia"),  # H200
        ],
        [("0", CPU_NODE), ("1", NAVI31_NODE)],
    )
    gpus = devices.find(hal)
    assert [g.pci for g in gpus] == ["0000:03:00.0", "0000:41:00.0", "0000:c1:00.0"]
    navi, mi300, h200 = gpus
    assert (navi.vendor, navi.device_id, navi.driver) == ("AMD", 0x744C, "amdgpu")
    assert (navi.arch, navi.kfd_node) == ("gfx1100", 1)
    assert (mi300.driver, mi300.arch, mi300.kfd_node) == ("vfio-pci", None, None)
    assert (h200.vendor, h200.driver) == ("NV", "nvidia")


def test_gfx_target_version_names():
    assert [devices.gfx_arch(v) for v in (110000, 120001, 90402, 90500, 90010)] == [
        "gfx1100", "gfx1201", "gfx942", "gfx950", "gfx90a"]


def test_no_sysfs_is_no_gpu(tmp_path):
    assert devices.find(HAL(tmp_path)) == []
