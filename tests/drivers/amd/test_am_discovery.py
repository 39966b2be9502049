"""AM reads a GPU's IP discovery table through BAR5 and BAR0, as amdgpu does, from the mock PCI GPU (installed as a
native sysfs function): the blocks, versions and register bases the mock built its table from; damage refused."""

from __future__ import annotations

import pytest

from usergpu.drivers.amd.am import discovery
from usergpu.drivers.pci import pci_devices
from usergpu.emu.amd.mock import discovery as table
from usergpu.emu.amd.mock.pci.board import RCC_CONFIG_MEMSIZE, MockPCIGPU
from usergpu.emu.amd.mock.pci.function import install_pci
from usergpu.emu.mock.hal import MockHAL


@pytest.fixture(params=["gfx1100", "gfx1200"])
def gpu(request, tmp_path):
    hal = MockHAL(tmp_path)
    mock = MockPCIGPU(request.param)
    install_pci(hal, mock, "0000:03:00.0")
    (dev,) = pci_devices(hal, 0x1002)
    return mock, dev


def test_the_blocks_the_gpu_has(gpu):
    mock, dev = gpu
    blocks = discovery.read(dev.map_bar(5), dev.map_bar(0))
    want = {}
    for block, inst, version, bases in table.IPS[mock.arch]:
        want.setdefault(block, []).append((inst, version, tuple(bases)))
    assert {k: [(b.instance, b.version, b.bases) for b in v] for k, v in blocks.items()} == want
    assert blocks["GC"][0].version == ((11, 0, 0) if mock.arch == "gfx1100" else (12, 0, 0))


def test_damage_is_refused_with_what_and_where(gpu):
    mock, dev = gpu
    top = mock.vram_size - table.DISCOVERY_TMR_OFFSET
    mock.vram[top + 100] ^= 0xFF
    with pytest.raises(discovery.DiscoveryError, match=r"binary checksum \(VRAM 0x[0-9a-f]+, \d+ bytes\): expected"):
        discovery.read(dev.map_bar(5), dev.map_bar(0))
    mock.vram[top : top + 4] = 0
    with pytest.raises(discovery.DiscoveryError, match="no IP discovery table at VRAM .*signature 0x00000000"):
        discovery.read(dev.map_bar(5), dev.map_bar(0))
    mock.regs[RCC_CONFIG_MEMSIZE] = 0
    with pytest.raises(discovery.DiscoveryError, match="RCC_CONFIG_MEMSIZE .* reads 0x0"):
        discovery.read(dev.map_bar(5), dev.map_bar(0))


def test_the_gc_shape_matches_the_mock_kfds_node(gpu):
    """The GC table gives the same shader engines, arrays and CUs as the mock KFD publishes for this GPU, so the
    runtime (the profiler's trace units) sees one GPU whichever driver runs it."""
    from usergpu.drivers.amd.am.driver import node_properties
    from usergpu.emu.amd.mock.kfd.kfd import Node

    mock, dev = gpu
    gc = discovery.read_gc_info(dev.map_bar(5), dev.map_bar(0))
    version = discovery.read(dev.map_bar(5), dev.map_bar(0))["GC"][0].version
    am, kfd = node_properties(version, gc), Node(0, mock.arch).props
    assert am == {k: kfd[k] for k in am}


def test_a_damaged_gc_table_is_refused(gpu):
    mock, dev = gpu
    top = mock.vram_size - table.DISCOVERY_TMR_OFFSET
    offset = table.HEADER.size + table.TABLE_INFO.size  # the GC table's entry in the table list
    gc_at = int.from_bytes(bytes(mock.vram[top + offset : top + offset + 2]), "little")
    mock.vram[top + gc_at + 12] ^= 0x01  # gc_num_se
    with pytest.raises(discovery.DiscoveryError, match=r"GC table checksum \(VRAM 0x[0-9a-f]+, \d+ bytes\)"):
        discovery.read_gc_info(dev.map_bar(5), dev.map_bar(0))
