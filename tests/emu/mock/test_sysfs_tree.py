"""A mock machine's large fixed sysfs directories are held in memory (emu/mock/sysfs_tree.py) and read through the
HAL as the files they stand for: by any path that resolves there (the class, bus and driver links), their links
resolved, read-only as kernfs makes them — and nothing of them is written to disk."""

from __future__ import annotations

import errno
import os

import pytest

from usergpu.emu.amd.mock.kfd.kfd import MockKFD
from usergpu.emu.mock.hal import MockHAL
from usergpu.emu.mock.sysfs_tree import MAX_LINKS, Link

NODES = "/sys/devices/virtual/kfd/kfd/topology/nodes"
SPELLINGS = ["/sys/class/drm/renderD128/device", "/sys/bus/pci/devices/0000:03:00.0",
             "/sys/bus/pci/drivers/amdgpu/0000:03:00.0"]


@pytest.fixture
def hal(tmp_path):
    h = MockHAL(tmp_path)
    h.kfd = MockKFD(h, "gfx950", 2)
    return h


def read(hal, path: str, flags: int = os.O_RDONLY) -> bytes:
    fd = hal.open(path, flags)
    try:
        return hal.pread(fd, 1 << 16, 0)
    finally:
        hal.close(fd)


def test_every_spelling_of_the_function_reaches_one_discovery_table(hal):
    tables = [hal.listdir(f"{s}/ip_discovery/die/0") for s in SPELLINGS]
    assert tables[0] == tables[1] == tables[2] and "GC" in tables[0] and "num_ips" in tables[0]
    majors = {read(hal, f"{s}/ip_discovery/die/0/GC/0/major") for s in SPELLINGS}
    assert majors == {b"9\n"}  # gfx950's GC is 9.5.0
    assert hal.read_text(f"{SPELLINGS[0]}/ip_discovery/die/0/GC/0/minor") == "5\n"


def test_a_block_s_name_is_a_link_to_its_hw_id(hal):
    base = f"{SPELLINGS[0]}/ip_discovery/die/0"
    assert hal.readlink(f"{base}/GC") == "11" and hal.readlink_name(f"{base}/GC") == "11"
    assert hal.listdir(f"{base}/GC") == hal.listdir(f"{base}/11") == [str(i) for i in range(8)]  # one per XCC
    assert hal.read_text(f"{base}/GC/../11/0/hw_id") == "11\n"
    assert hal.readlink_name(f"{base}/11") is None  # a directory, no link


def test_the_caches_of_a_node_list_and_read(hal):
    caches = hal.listdir(f"{NODES}/1/caches")
    props = dict(line.split() for line in hal.read_text(f"{NODES}/1/properties").splitlines())
    assert len(caches) == int(props["caches_count"]) and "0" in caches
    assert "\nlevel 1\n" in hal.read_text(f"{NODES}/1/caches/0/properties")
    assert hal.exists(f"{NODES}/2/caches/0/properties") and not hal.exists(f"{NODES}/2/caches/{len(caches)}")


def test_nothing_of_the_trees_is_on_disk(hal):
    real = hal.host_path(f"{NODES}/1/caches")
    assert real.is_dir() and os.listdir(real) == []  # the mount point only, so its parent lists it
    assert "caches" in hal.listdir(f"{NODES}/1")
    function = os.path.realpath(hal.host_path(SPELLINGS[0]))
    assert os.listdir(os.path.join(function, "ip_discovery")) == []


def test_files_are_read_only_and_directories_unreadable(hal):
    major = f"{SPELLINGS[0]}/ip_discovery/die/0/GC/0/major"
    for flags in (os.O_WRONLY, os.O_RDWR):
        with pytest.raises(OSError) as e:
            hal.open(major, flags)
        assert e.value.errno == errno.EACCES
    with pytest.raises(OSError) as e:
        read(hal, f"{SPELLINGS[0]}/ip_discovery/die/0/GC/0")
    assert e.value.errno == errno.EISDIR
    with pytest.raises(OSError) as e:
        hal.entries(major)
    assert e.value.errno == errno.ENOTDIR
    with pytest.raises(FileNotFoundError):
        hal.open(f"{SPELLINGS[0]}/ip_discovery/die/0/GC/0/nothing", os.O_RDONLY)
    with pytest.raises(FileNotFoundError):
        hal.entries(f"{NODES}/1/caches/nothing")
    assert read(hal, major)[1:] == b"\n"


def test_a_link_loop_is_eloop(tmp_path):
    hal = MockHAL(tmp_path)
    hal.mount("/sys/loop", {"a": Link("b"), "b": Link("a"), "c": Link("d/../x"), "d": {}, "x": "text\n"})
    with pytest.raises(OSError) as e:
        hal.read_text("/sys/loop/a")
    assert e.value.errno == errno.ELOOP and MAX_LINKS == 40
    assert hal.read_text("/sys/loop/c") == "text\n" and hal.readlink("/sys/loop/c") == "d/../x"
