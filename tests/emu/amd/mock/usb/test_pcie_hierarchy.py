"""The enclosure's PCIe hierarchy routes as bridges do: nothing below a bridge is reachable until software numbers its
buses and opens its windows; read-only header fields stay as they are."""

from __future__ import annotations

import struct

import pytest

from usergpu.emu.amd.mock.pci.function import PCIFunction
from usergpu.emu.amd.mock.pci.pcie import UR, CompletionError
from usergpu.emu.amd.mock.usb.pcie_hierarchy import DOWNSTREAM, PCIE_CAP, UPSTREAM, Hierarchy, enclosure_bridges

BAR0 = 0x80_0000_0000
GPU_BUS = 4


class Memory(PCIFunction):
    """A function whose BAR0 is 1 MiB of memory."""

    def __init__(self):
        super().__init__({0: (BAR0, 1 << 20, True, True)}, (0x1002, 0x744C, 0x030000 << 8, 0))
        self.memory: dict[int, int] = {}

    def bar_read(self, bar: int, offset: int) -> int:
        return self.memory.get(offset, 0)

    def bar_write(self, bar: int, offset: int, value: int) -> None:
        self.memory[offset] = value


@pytest.fixture
def tree() -> Hierarchy:
    return Hierarchy(enclosure_bridges(), Memory())


def unsupported(fn, *args) -> None:
    with pytest.raises(CompletionError) as e:
        fn(*args)
    assert e.value.status == UR


def number(tree: Hierarchy, upto: int = GPU_BUS) -> None:
    """What pci_setup_usb_bars writes first: each bridge's primary, secondary and subordinate bus."""
    for bus in range(upto):
        tree.config_write(bus, 0, 0x18, (bus + 1) << 8 | GPU_BUS << 16)


def open_windows(tree: Hierarchy, base: int = BAR0) -> None:
    """Every bridge forwards memory from base up (the prefetchable window) and has memory space enabled."""
    for bus in range(GPU_BUS):
        tree.config_write(bus, 0, 0x24, 0xFFF0 << 16 | (base >> 16 & 0xFFF0))
        tree.config_write(bus, 0, 0x28, base >> 32)
        tree.config_write(bus, 0, 0x2C, 0xFFFF_FFFF)
        tree.config_write(bus, 0, 0x04, 0x0006)


def test_each_bus_is_reached_once_the_bridges_above_it_are_numbered(tree):
    assert tree.config_read(0, 0, 0) == 0x2461_1B21  # bus 0: the first bridge, reached with type 0
    unsupported(tree.config_read, 1, 0, 0)
    ids = []
    for bus in range(1, GPU_BUS + 1):
        number(tree, bus)
        ids.append(tree.config_read(bus, 0, 0))
        if bus < GPU_BUS:
            unsupported(tree.config_read, bus + 1, 0, 0)
    assert ids == [0x2461_1B21, 0x1478_1002, 0x1479_1002, 0x744C_1002]
    unsupported(tree.config_read, GPU_BUS + 1, 0, 0)  # past the subordinate bus
    unsupported(tree.config_read, 2, 1 << 3, 0)  # a link has device 0 only
    unsupported(tree.config_read, 2, 1, 0)  # the bridges are single-function


def test_the_bridges_are_switch_ports_with_a_pcie_capability(tree):
    number(tree)
    ports = []
    for bus in range(GPU_BUS):
        header = tree.config_read(bus, 0, 0x0C) >> 16 & 0x7F, tree.config_read(bus, 0, 0x08) >> 8
        cap = tree.config_read(bus, 0, tree.config_read(bus, 0, 0x34) & 0xFC)
        assert header == (1, 0x060400) and tree.config_read(bus, 0, 0x04) >> 16 & 0x10  # capabilities list
        assert cap & 0xFF == 0x10 and tree.config_read(bus, 0, 0x34) == PCIE_CAP
        ports.append(cap >> 20 & 0xF)
    assert ports == [UPSTREAM, DOWNSTREAM, UPSTREAM, DOWNSTREAM]


def test_read_only_fields_keep_their_value(tree):
    bridge = tree.bridges[0]
    tree.config_write(0, 0, 0x00, 0xFFFF_FFFF)
    tree.config_write(0, 0, 0x20, 0xFFFF_FFFF)
    tree.config_write(0, 0, 0x24, 0xFFFF_FFFF)
    tree.config_write(0, 0, 0x38, 0xFFFF_FFFF)  # no expansion ROM
    assert [bridge.read(o) for o in (0x00, 0x20, 0x24, 0x38)] == [0x2461_1B21, 0xFFF0_FFF0, 0xFFF1_FFF1, 0]
    tree.config_write(0, 0, 0x20, 0x1000, 0b0011)  # a 2-byte write: the memory base alone
    assert bridge.read(0x20) == 0xFFF0_1000


def test_memory_goes_down_only_through_open_windows(tree):
    number(tree)
    unsupported(tree.mem_read, BAR0)  # windows closed, memory space disabled
    open_windows(tree)
    tree.mem_write(BAR0 + 8, 0x1234_5678)
    assert tree.mem_read(BAR0 + 8) == 0x1234_5678 and tree.function.memory == {8: 0x1234_5678}
    unsupported(tree.mem_read, BAR0 - 4)  # below the window
    tree.config_write(2, 0, 0x04, 0x0004, 0b0001)  # the Navi upstream port's memory space off
    unsupported(tree.mem_read, BAR0 + 8)


def test_the_non_prefetchable_window_is_32_bit(tree):
    """The memory window covers bits 31..20 only: one set at 0x1000_0000 forwards registers placed there."""
    number(tree)
    for bus in range(GPU_BUS):
        tree.config_write(bus, 0, 0x20, 0xFFF0_1000)
        tree.config_write(bus, 0, 0x04, 0x0002)
    assert all(b.forwards(0x1000_0000) and b.forwards(0xFFFF_FFFC) for b in tree.bridges)
    assert not any(b.forwards(0x0FFF_FFFC) or b.forwards(1 << 32) for b in tree.bridges)
    assert struct.unpack_from("<I", tree.bridges[0].config, 0x20)[0] == 0xFFF0_1000
