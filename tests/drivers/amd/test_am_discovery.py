"""AM reads a GPU's IP discovery table through BAR5 and BAR0, as amdgpu does, from the mock PCI GPU (installed as a
native sysfs function): the blocks, versions and register bases the mock built its table from; damage refused."""

from __future__ import annotations

import pytest

from usergpu.drivers.amd.am import discovery
from usergpu.drivers.hal import MockHAL
from usergpu.drivers.pci import pci_devices
from usergpu.emu.amd.mock import discovery as table
from usergpu.emu.amd.mock.pci_function import install_pci
from usergpu.emu.amd.mock.pci_gpu import RCC_CONFIG_MEMSIZE, MockPCIGPU


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
