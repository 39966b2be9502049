"""The mock NVIDIA machine: mock_nv_hal's arch, count and release (from the environment too), the device files it
installs, the /proc and sysfs files in the kernel's formats (so usergpu.drivers.devices.find lists the GPUs), the
chip facts per arch, the bindings a release is answered with, and the GPUs made only when needed."""

from __future__ import annotations

import re

import pytest
from rmrig import RMRig

from usergpu.autogen import nv_rm_535, nv_rm_570, nv_rm_595, nv_uvm_560, nv_uvm_595
from usergpu.drivers import devices
from usergpu.emu.nv.mock import chips
from usergpu.emu.nv.mock.machine import DEFAULT_RELEASE, mock_nv_hal
from usergpu.errors import DeviceNotFound
from usergpu.isa.nv.releases import bindings


def test_mock_nv_hal_from_the_environment(monkeypatch):
    monkeypatch.setenv("MOCKGPU_NV_ARCH", "sm_89")
    monkeypatch.setenv("MOCKGPU_COUNT", "2")
    monkeypatch.setenv("MOCKGPU_NV_RELEASE", "555.58.02")
    hal = mock_nv_hal()
    assert (hal.nv.arch, hal.nv.count, hal.nv.release) == ("sm_89", 2, "555.58.02")
    assert hal is mock_nv_hal("sm_89", 2, "555.58.02")  # one machine per (arch, count, release)
    assert hal is not mock_nv_hal("sm_89", 1, "555.58.02")
    for path in ("/dev/nvidiactl", "/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia-uvm"):
        assert hal.exists(path), path
    assert not hal.exists("/dev/nvidia2")


def test_defaults(monkeypatch):
    for name in ("MOCKGPU_NV_ARCH", "MOCKGPU_COUNT", "MOCKGPU_NV_RELEASE"):
        monkeypatch.delenv(name, raising=False)
    machine = mock_nv_hal().nv
    assert (machine.arch, machine.count, machine.release) == ("sm_90", 1, "595.45.04")  # the newest bound
    assert machine.chip.name == "NVIDIA H200" and machine.chip.device_id == 0x2335


def test_refused_shapes():
    with pytest.raises(DeviceNotFound, match="sm_86.*sm_90"):
        mock_nv_hal("sm_75")
    with pytest.raises(DeviceNotFound, match="MOCKGPU_COUNT"):
        mock_nv_hal("sm_90", 0)
    with pytest.raises(DeviceNotFound, match="63 bytes"):
        mock_nv_hal("sm_90", 1, "5" * 64)
    with pytest.raises(DeviceNotFound, match=r"MOCKGPU_NV_RELEASE '610\.1\.2'.*branch usergpu has no bindings for.*"
                                             r"535 \(535\.261\.03\).*595 \(595\.45\.04\)"):
        mock_nv_hal("sm_90", 1, "610.1.2")
    with pytest.raises(DeviceNotFound, match="driver release 550.163.01 does not drive GB202"):
        mock_nv_hal("sm_120", 1, "550.163.01")  # Blackwell's first driver is 570


def test_bindings_per_release():
    exact = bindings("595.45.04")
    assert (exact.rm, exact.uvm, exact.bound, exact.note) == (nv_rm_595, nv_uvm_595, "595.45.04", "")
    older = bindings("570.86.15")
    assert (older.rm, older.bound) == (nv_rm_570, "570.211.01") and "570.86.15 is older than 570.211.01" in older.note
    shared = bindings("565.77")
    assert shared.uvm is nv_uvm_560 and shared.modules == "nv_rm_565 + nv_uvm_560"  # 560 and 565 agree on UVM
    assert bindings("535.54.03").describe() == ("535.54.03 (bindings nv_rm_535 + nv_uvm_535; 535.54.03 is older than "
                                                "535.261.03, the release bound for branch 535: it speaks its ABI)")


def test_proc_files(tmp_path):
    rig = RMRig(tmp_path, "sm_86", count=2, release="555.58.02")
    version = rig.hal.read_text("/proc/driver/nvidia/version")
    assert re.fullmatch(r"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  555\.58\.02  Release Build  "
                        r"\(.+\)  .+\nGCC version:  gcc version .+\n", version)
    for index in range(2):
        info = rig.hal.read_text(f"/proc/driver/nvidia/gpus/0000:{0x41 + index:02x}:00.0/information")
        fields = dict(line.split(":", 1) for line in info.splitlines())
        assert fields["Model"].strip() == "NVIDIA GeForce RTX 3090"
        assert fields["GPU UUID"].strip() == chips.uuid_text(index)
        assert fields["Bus Location"].strip() == f"0000:{0x41 + index:02x}:00.0"
        assert fields["Device Minor"].strip() == str(index)
        assert info.startswith("Model: \t\t ") and "\nGPU UUID: \t GPU-" in info  # nv-procfs.c's spacing


@pytest.mark.parametrize("arch", ["sm_86", "sm_90", "sm_120"])
def test_sysfs_and_devices_find(tmp_path, arch):  # of the default release
    rig = RMRig(tmp_path, arch, count=2)
    chip = chips.chip(arch)
    base = "/sys/bus/pci/devices/0000:42:00.0"
    assert rig.hal.read_text(f"{base}/vendor").strip() == "0x10de"
    assert int(rig.hal.read_text(f"{base}/device"), 16) == chip.device_id
    assert int(rig.hal.read_text(f"{base}/class"), 16) == chip.pci_class
    assert rig.hal.readlink_name(f"{base}/driver") == "nvidia"
    found = devices.find(rig.hal)  # through the RM driver, as `usergpu devices` lists NVIDIA GPUs
    assert [(g.pci, g.vendor, g.device_id, g.driver) for g in found] == [
        (f"0000:{0x41 + i:02x}:00.0", "NV", chip.device_id, "nvidia") for i in range(2)]
    assert {(g.arch, g.model, g.memory, g.release, g.bindings) for g in found} == {
        (arch, chip.name, chip.vram, DEFAULT_RELEASE, "bindings nv_rm_595 + nv_uvm_595")}


def test_chip_facts():
    expected = {"sm_80": (0x20B2, 0x800), "sm_86": (0x2204, 0x806), "sm_89": (0x2684, 0x809),
                "sm_90": (0x2335, 0x900), "sm_120": (0x2B85, 0xC00)}
    assert {a: (c.device_id, c.sm_version) for a, c in chips.CHIPS.items()} == expected
    uuids = {chips.uuid(i) for i in range(64)}
    assert len(uuids) == 64 and all(len(u) == 16 for u in uuids) and chips.uuid(3) == chips.uuid(3)
    assert chips.uuid_text(0) == "GPU-" + "-".join(chips.uuid(0).hex()[a:b] for a, b in
                                                   ((0, 8), (8, 12), (12, 16), (16, 20), (20, 32)))
    assert chips.pci_name(5) == "0000:46:00.0" and chips.gpu_id(5) == 0x4600
    blackwell = chips.chip("sm_120").classes(nv_rm_570, "570.211.01")
    assert 0xCEC0 in blackwell and 0xCAB5 in blackwell and 0xC761 in blackwell and 0xCBC0 not in blackwell
    with pytest.raises(DeviceNotFound, match="535.261.03 does not drive GB202"):
        chips.chip("sm_120").classes(nv_rm_535, "535.261.03")


def test_gpus_are_made_when_needed(tmp_path):
    rig = RMRig(tmp_path)
    device, _ = rig.open_device()
    assert rig.m.gpus == []  # a client, a device and its controls need no GPU model
    rig.make(device, rig.rm.FERMI_VASPACE_A, rig.rm.NV_VASPACE_ALLOCATION_PARAMETERS())
    assert [g.index for g in rig.m.gpus] == [0]
