"""tinygrad's FileIOInterface served by the mock machine (emu/mock/tinygrad/fileio.py): files by path under the
machine's root, its device files through MockHAL (errno included), the static helpers; DEV picks the machine."""

from __future__ import annotations

import errno
import os

import pytest

from usergpu.autogen import kfd
from usergpu.emu.amd.mock import machines
from usergpu.emu.mock.tinygrad import fileio
from usergpu.errors import DeviceNotFound

TOPOLOGY = "/sys/devices/virtual/kfd/kfd/topology/nodes"


@pytest.fixture
def io(monkeypatch):
    monkeypatch.setenv("DEV", "MOCKKFD+AMD")
    monkeypatch.setenv("MOCKGPU_COUNT", "2")
    monkeypatch.setattr(machines, "_machines", {})  # a machine of its own: like amdkfd, the mock KFD keeps one
    fileio.machine.cache_clear()                      # process state (its VM acquired or not) per process
    yield fileio.MockFileIOInterface
    fileio.machine.cache_clear()


@pytest.mark.parametrize(("dev", "machine"), [("MOCKKFD+AMD", "MOCKKFD+AMD"), ("MOCK+AMD", "MOCKKFD+AMD"),
                                              ("mockkfd:0,1+AMD:LLVM", "MOCKKFD+AMD"), ("MOCKPCI+AMD", "MOCKPCI+AMD"),
                                              ("MOCK+NV", "MOCK+NV"), ("MOCK+NV:PTX", "MOCK+NV")])
def test_dev_names_the_machine(dev, machine):
    assert fileio.interface(dev) == machine


@pytest.mark.parametrize("dev", ["AMD", "KFD+AMD", "MOCKNV+AMD", "MOCKKFD+NV", ""])
def test_a_dev_that_names_no_mock_is_refused(dev):
    with pytest.raises(DeviceNotFound, match="usergpu's mocks serve"):
        fileio.interface(dev)


def test_the_topology_reads_as_tinygrad_reads_it(io):
    nodes = io(TOPOLOGY).listdir()
    assert sorted(nodes) == ["0", "1", "2"]
    gpu_ids = [int(io(f"{TOPOLOGY}/{n}/gpu_id").read()) for n in sorted(nodes)]
    assert gpu_ids[0] == 0 and all(gpu_ids[1:])
    props = dict(line.split() for line in io(f"{TOPOLOGY}/1/properties").read().splitlines())
    assert props["gfx_target_version"] == "110000" and props["drm_render_minor"] == "128"
    assert io.exists("/dev/kfd") and io.exists(f"{TOPOLOGY}/1") and not io.exists("/dev/nothing")
    assert io.readlink("/sys/class/drm/renderD128/device").endswith("0000:03:00.0")


@pytest.mark.parametrize(("dev", "arch"), [("MOCKKFD+AMD", None), ("MOCKKFD+AMD:LLVM", None),
                                          ("MOCKKFD+AMD::gfx1201", "gfx1201"),
                                          ("MOCKKFD:0,1+AMD:LLVM:gfx950", "gfx950")])
def test_dev_names_the_arch_as_tinygrad_parses_it(dev, arch):
    assert fileio.target_arch(dev) == arch


def test_the_machine_is_the_one_tinygrads_own_mock_gives_dev(io, monkeypatch):
    """Without MOCKGPU_COUNT, six GPUs (tinygrad's KFD mock has six; its multi-GPU tests use them); the arch DEV
    names (Navi48 here, gfx_target_version 12.0.1)."""
    monkeypatch.delenv("MOCKGPU_COUNT")
    monkeypatch.setenv("DEV", "MOCKKFD+AMD:LLVM:gfx1201")
    fileio.machine.cache_clear()
    nodes = sorted(io(TOPOLOGY).listdir())
    assert nodes == [str(i) for i in range(7)]  # the CPU node and six GPUs
    props = dict(line.split() for line in io(f"{TOPOLOGY}/6/properties").read().splitlines())
    assert props["gfx_target_version"] == "120001" and props["device_id"] == str(0x7550)


def test_the_ip_discovery_table_reads_as_kfd_iface_reads_it(io):
    """A directory the machine holds in memory (emu/mock/sysfs_tree.py) opens, lists and reads like the rest."""
    base = "/sys/class/drm/renderD128/device/ip_discovery/die/0"
    assert "11" in io(base).listdir() and io(f"{base}/11/0/major").read() == "11\n"
    assert io.readlink(f"{base}/GC") == "11" and io.exists(f"{base}/GC/0/minor")
    with pytest.raises(NotADirectoryError):
        io(f"{base}/num_ips").listdir()


def test_a_missing_file_is_file_not_found(io):
    with pytest.raises(FileNotFoundError):
        io(f"{TOPOLOGY}/9/gpu_id")


def test_device_files_answer_through_the_mock(io):
    f = io("/dev/kfd", os.O_RDWR)
    assert f.fd >= fileio.MockHAL.FIRST_FD
    got = kfd.struct_kfd_ioctl_get_version_args()
    assert f.ioctl(kfd.AMDKFD_IOC_GET_VERSION.request, got) == 0
    assert (got.major_version, got.minor_version) == (kfd.KFD_IOCTL_MAJOR_VERSION, kfd.KFD_IOCTL_MINOR_VERSION)
    with pytest.raises(OSError) as e:  # no VM acquired yet
        f.ioctl(kfd.AMDKFD_IOC_ALLOC_MEMORY_OF_GPU.request, kfd.struct_kfd_ioctl_alloc_memory_of_gpu_args(
            size=4096, gpu_id=int(io(f"{TOPOLOGY}/1/gpu_id").read()), flags=kfd.KFD_IOC_ALLOC_MEM_FLAGS_GTT))
    assert e.value.errno == errno.ENODEV


def test_a_device_attribute_reads_at_its_position(io):
    f = io("/sys/class/drm/renderD128/device/mem_info_vram_used")
    first = f.read()
    assert first.strip().isdigit() and f.read() == ""  # at the end of file now
    f.seek(0)
    assert f.read() == first


def test_eventfd_and_anonymous_memory(io):
    ev = io.eventfd(0, 0)
    os.write(ev.fd, (1).to_bytes(8, "little"))
    assert int.from_bytes(os.read(ev.fd, 8), "little") == 1
    address = io.anon_mmap(0, 4096, 3, 0x22, 0)  # PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS
    io.munmap(address, 4096)
