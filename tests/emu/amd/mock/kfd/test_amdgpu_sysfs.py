"""The mock KFD machine publishes what amdgpu publishes next to amdkfd's topology, as a runtime reads it: the render
node's device (/sys/class/drm/renderD<minor>/device) is the GPU's PCI function, holding the IP discovery table
(ip_discovery/die/0/<hw id>/<instance>/, as amdgpu_discovery.c prints it), power_dpm_force_performance_level
(amdgpu_pm.c's levels), unique_id and mem_info_* in amdgpu's formats."""

from __future__ import annotations

import errno
import os

import pytest

from usergpu.autogen import amd_discovery as hw
from usergpu.drivers import devices
from usergpu.drivers.amd.am.discovery import parse
from usergpu.drivers.amd.kfd import KFD
from usergpu.emu.amd.mock import discovery
from usergpu.emu.amd.mock.kfd.kfd import MockKFD
from usergpu.emu.mock.hal import MockHAL
from usergpu.hostmem import PAGE

TOPOLOGY = "/sys/devices/virtual/kfd/kfd/topology/nodes"
# the IP versions of the GPUs the mock models (Navi31; the gfx1200 of the mock's discovery table)
VERSIONS = {"gfx1100": {"GC": (11, 0, 0), "SDMA0": (6, 0, 0), "NBIF": (4, 3, 0)},
            "gfx1200": {"GC": (12, 0, 0), "SDMA0": (7, 0, 0), "NBIF": (6, 3, 1)}}
VRAM = {"gfx1100": 24 << 30, "gfx1200": 16 << 30}
LEVEL = "power_dpm_force_performance_level"


@pytest.fixture(params=sorted(VERSIONS))
def hal(request, tmp_path):
    """conftest's machine of two GPUs, of each arch."""
    h = MockHAL(tmp_path)
    h.kfd = MockKFD(h, request.param, 2)
    return h


def read(hal, path: str) -> str:
    """A file read as tinygrad's FileIOInterface reads it: opened by path, read from its start."""
    fd = hal.open(path, os.O_RDONLY)
    try:
        return hal.pread(fd, 1 << 16, 0).decode()
    finally:
        hal.close(fd)


def write(hal, path: str, text: str) -> int:
    fd = hal.open(path, os.O_WRONLY)
    try:
        return hal.pwrite(fd, text.encode(), 0)
    finally:
        hal.close(fd)


def device(hal, node: int = 1) -> str:
    """KFDIface's dev_sysfs_path: the render node's device, from the node's drm_render_minor."""
    props = dict(line.split() for line in read(hal, f"{TOPOLOGY}/{node}/properties").splitlines())
    return f"/sys/class/drm/renderD{props['drm_render_minor']}/device"


def test_ip_versions_read_as_tinygrad_s_kfd_iface_reads_them(hal):
    """KFDIface lists ip_discovery/die/0, keeps the numeric entries that are GC, SDMA0 or NBIF hw ids, and reads
    major, minor and revision of instance 0 of each."""
    base = f"{device(hal)}/ip_discovery/die/0"
    ids = {hw.GC_HWID: "GC", hw.SDMA0_HWID: "SDMA0", hw.NBIF_HWID: "NBIF"}
    found = [int(e) for e in hal.listdir(base) if e.isnumeric() and int(e) in ids]
    versions = {ids[i]: tuple(int(read(hal, f"{base}/{i}/0/{part}")) for part in ("major", "minor", "revision"))
                for i in found}
    assert versions == VERSIONS[hal.kfd.arch]


def test_ip_discovery_is_the_gpu_s_discovery_table_in_amdgpu_s_format(hal):
    """Every block instance of the table (read back by the AM driver's parser) has its directory, each attribute as
    amdgpu_discovery.c's *_show prints it, and a link from the block's name (MP0 has none in hw_id_names)."""
    base = f"{device(hal, 2)}/ip_discovery/die/0"
    blocks = [b for group in parse(discovery.table(hal.kfd.arch)).values() for b in group]
    assert read(hal, f"{base}/num_ips") == f"{len(blocks)}\n"
    for b in blocks:
        d = f"{base}/{b.hw_id}/{b.instance}"
        assert [read(hal, f"{d}/{a}") for a in ("hw_id", "num_instance", "major", "minor", "revision")] == \
            [f"{v}\n" for v in (b.hw_id, b.instance, *b.version)]
        assert read(hal, f"{d}/harvest") == "0x0\n"
        assert read(hal, f"{d}/num_base_addresses") == f"{len(b.bases)}\n"
        assert read(hal, f"{d}/base_addr") == "".join(f"0x{x:08X}\n" for x in b.bases)
        named = hal.exists(f"{base}/{b.name}/{b.instance}/major")
        assert named == (b.name != "MP0"), b.name
    assert read(hal, f"{base}/GC/0/base_addr").splitlines()[0] == "0x00001260"


def test_the_render_node_s_device_is_the_pci_function(hal):
    """The class link, the render node's device link and the bus link all reach one directory of the PCI function
    the node's location_id names, bound to amdgpu; the machine's GPUs are still found with their arch."""
    root = hal.root
    fn = root / "sys/bus/pci/devices/0000:04:00.0"
    assert os.path.samefile(root / device(hal, 2).lstrip("/"), fn)
    assert os.readlink(root / "sys/class/drm/renderD129").startswith("../../devices/pci0000:00/")
    assert os.readlink(root / "sys/class/drm/renderD129/device") == "../../../0000:04:00.0"
    assert read(hal, "/sys/class/drm/renderD129/dev") == "226:129\n"
    assert [read(hal, f"{device(hal, 2)}/{a}") for a in ("vendor", "class", "revision")] == \
        ["0x1002\n", "0x030000\n", "0xc8\n"]
    assert int(read(hal, f"{device(hal, 2)}/device"), 16) == hal.kfd.nodes[1].props["device_id"]
    assert os.path.samefile(root / "sys/bus/pci/drivers/amdgpu/0000:04:00.0", fn)
    found = [(g.pci, g.driver, g.arch) for g in devices.find(hal)]
    assert found == [(f"0000:0{b}:00.0", "amdgpu", hal.kfd.arch) for b in (3, 4)]


def test_unique_id_and_memory_totals_in_amdgpu_s_formats(hal):
    dev = device(hal)
    assert read(hal, f"{dev}/unique_id") == f"{hal.kfd.nodes[0].props['unique_id']:016x}\n"
    assert read(hal, f"{dev}/mem_info_vram_total") == read(hal, f"{dev}/mem_info_vis_vram_total") == \
        f"{VRAM[hal.kfd.arch]}\n"
    assert read(hal, f"{dev}/mem_info_gtt_total") == f"{hal.kfd.limits['ttm']}\n"


def test_memory_used_is_what_the_process_holds_now(hal):
    dev = device(hal)
    used = [f"{dev}/mem_info_{m}_used" for m in ("vram", "vis_vram", "gtt")]
    assert [read(hal, p) for p in used] == ["0\n"] * 3
    kfd = KFD(hal)
    vram, gtt = kfd.alloc(2 * PAGE), kfd.alloc(PAGE, "gtt")
    KFD(hal, 1).alloc(PAGE, "gtt")  # the other GPU's
    assert [read(hal, p) for p in used] == [f"{2 * PAGE}\n", f"{2 * PAGE}\n", f"{PAGE}\n"]
    kfd.free(vram)
    kfd.free(gtt)
    assert [read(hal, p) for p in used] == ["0\n"] * 3
    with pytest.raises(OSError) as e:
        write(hal, used[0], "0\n")
    assert e.value.errno == errno.EACCES


def test_power_dpm_force_performance_level_takes_amdgpu_s_levels(hal):
    """auto at start; a profile saves the level it was entered from and profile_exit goes back to it; the level
    is the GPU's, whichever path names it, and the tree's copy follows; text amdgpu does not accept is EINVAL."""
    by_class, by_bus = f"{device(hal)}/{LEVEL}", f"/sys/bus/pci/devices/0000:03:00.0/{LEVEL}"
    assert read(hal, by_class) == "auto\n"
    for text, after in (("high\n", "high"), ("profile_standard\n", "profile_standard"),
                        ("profile_peak", "profile_peak"), ("profile_exit\n", "high"), ("manual", "manual"),
                        ("auto\n", "auto")):
        assert write(hal, by_bus, text) == len(text)
        assert read(hal, by_class) == hal.read_text(by_class) == f"{after}\n", text
    assert write(hal, by_class, "") == 0
    for text in ("profile_exit", "perf_determinism", "fast"):
        with pytest.raises(OSError) as e:
            write(hal, by_class, text)
        assert e.value.errno == errno.EINVAL, text
    assert read(hal, by_class) == "auto\n"
    assert read(hal, f"{device(hal, 2)}/{LEVEL}") == "auto\n"
