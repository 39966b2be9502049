"""The PCIe hierarchy between a USB–PCIe bridge chip and a GPU in an external enclosure, as a pcie.Target: a chain
of PCI-to-PCI bridges (type 1 headers) with the GPU function at its end. Behind an ASM2464PD with an RX 7900 XTX it
is (the enclosure's PCIe scan):

    bus 0  1b21:2461  ASM2461 switch upstream port       (inside the ASM2464PD)
    bus 1  1b21:2461  ASM2461 switch downstream port     (inside the ASM2464PD)
    bus 2  1002:1478  Navi 31 upstream port              (on the GPU board)
    bus 3  1002:1479  Navi 31 downstream port            (on the GPU board)
    bus 4  1002:744c  Navi 31 GPU

Requests are routed as bridges route them (PCI-to-PCI Bridge spec): a config request to bus 0 is the first bridge's
(type 0); one to a higher bus goes down through each bridge whose secondary..subordinate range holds it and reaches
device 0 of the link whose bus it names; a memory request goes down through each bridge whose memory-space enable
is set and whose memory or prefetchable window holds the address. Anything that finds no way down completes with
Unsupported Request. At power-on every bridge's bus numbers and windows are zero, so software (tinygrad's
pci_setup_usb_bars, lspci's setpci) must number the buses and open the windows before it reaches the GPU."""

from __future__ import annotations

import struct
from collections.abc import Sequence

from usergpu.emu.amd.mock.pci.function import BUS as FUNCTION_BUS
from usergpu.emu.amd.mock.pci.pcie import UR, CompletionError, Target

UPSTREAM, DOWNSTREAM = 0x5, 0x6  # PCIe Capabilities' Device/Port Type of a switch's upstream and downstream ports
PCIE_CAP = 0x40  # where each bridge's PCI Express capability sits
COMMAND_MEMORY = 1 << 1
# the type 1 header's writable bits by dword (the rest read as they are): Command (I/O, memory, bus master,
# parity, SERR#, INTx disable); cache line size; primary, secondary and subordinate bus numbers; the memory and
# prefetchable windows' base and limit (bits 31..20 of an address; the prefetchable window's low nibble says
# 64-bit and is read-only); the prefetchable window's upper 32 bits; interrupt line and bridge control (parity,
# SERR#, ISA, VGA, VGA 16-bit). No I/O window, no expansion ROM: those registers are read-only zero, as the spec
# lets a bridge that implements neither.
WRITABLE = {0x04: 0x0000_0547, 0x0C: 0x0000_00FF, 0x18: 0x00FF_FFFF, 0x20: 0xFFF0_FFF0, 0x24: 0xFFF0_FFF0,
            0x28: 0xFFFF_FFFF, 0x2C: 0xFFFF_FFFF, 0x3C: 0x001F_00FF}
PREFETCH_64 = 0x0001_0001  # base and limit both say "64-bit prefetchable window"


class Bridge:
    """One PCI-to-PCI bridge (a switch port): a 4 KiB config space with a type 1 header and a PCIe capability."""

    def __init__(self, vendor: int, device: int, port_type: int, revision: int = 0):
        self.config = bytearray(4096)
        struct.pack_into("<HHHHI", self.config, 0, vendor, device, 0, 0x0010, 0x060400 << 8 | revision)
        self.config[0x0E] = 0x01  # header type 1, single function
        self.config[0x34] = PCIE_CAP
        struct.pack_into("<I", self.config, 0x24, PREFETCH_64)
        struct.pack_into("<BBH", self.config, PCIE_CAP, 0x10, 0, 2 | port_type << 4)  # capability version 2

    def read(self, offset: int) -> int:
        return struct.unpack_from("<I", self.config, offset & 0xFFC)[0]

    def write(self, offset: int, value: int, byte_enable: int = 0xF) -> None:
        lanes = sum(0xFF << (8 * i) for i in range(4) if byte_enable >> i & 1)
        mask = WRITABLE.get(offset & 0xFFC, 0) & lanes
        struct.pack_into("<I", self.config, offset & 0xFFC, self.read(offset) & ~mask | value & mask)

    @property
    def buses(self) -> range:
        """The buses below the bridge: secondary through subordinate (empty until software numbers them)."""
        secondary, subordinate = self.config[0x19], self.config[0x1A]
        return range(secondary, subordinate + 1) if secondary else range(0)

    def _window(self, base_at: int, upper: bool) -> tuple[int, int]:
        base, limit = struct.unpack_from("<HH", self.config, base_at)
        high_base, high_limit = struct.unpack_from("<II", self.config, 0x28) if upper else (0, 0)
        return high_base << 32 | (base & 0xFFF0) << 16, high_limit << 32 | (limit & 0xFFF0) << 16 | 0xFFFFF

    def forwards(self, address: int) -> bool:
        """Whether a memory request at address from the primary side goes down through the bridge."""
        if not self.config[0x04] & COMMAND_MEMORY:
            return False
        return any(low <= address <= high for low, high in (self._window(0x20, False), self._window(0x24, True)))


def enclosure_bridges() -> list[Bridge]:
    """The bridges an ASM2464PD enclosure with a Navi 31 board puts between the bridge chip and the GPU."""
    return [Bridge(0x1B21, 0x2461, UPSTREAM), Bridge(0x1B21, 0x2461, DOWNSTREAM),
            Bridge(0x1002, 0x1478, UPSTREAM), Bridge(0x1002, 0x1479, DOWNSTREAM)]


class Hierarchy:
    """bridges, each on the secondary bus of the one before (the first on bus 0), and the function at the end."""

    def __init__(self, bridges: Sequence[Bridge], function: Target):
        self.bridges, self.function = list(bridges), function

    def _node(self, bus: int, devfn: int) -> Bridge | None:
        """The bridge that a config request to bus:devfn reaches (None: the function); UR if none does."""
        link = 0  # the bus number of the link being looked at
        for bridge in [*self.bridges, None]:
            if bus == link:
                if devfn >> 3 or bridge is not None and devfn & 7:  # a link has device 0; bridges function 0
                    break
                return bridge
            if bridge is None or bus not in bridge.buses:
                break
            link = bridge.config[0x19]
        raise CompletionError(UR, f"no function at {bus:02x}:{devfn >> 3:02x}.{devfn & 7}")

    # ---- pcie.Target ------------------------------------------------------------------------------------------------
    def config_read(self, bus: int, devfn: int, offset: int) -> int:
        node = self._node(bus, devfn)
        return self.function.config_read(FUNCTION_BUS, devfn, offset) if node is None else node.read(offset)

    def config_write(self, bus: int, devfn: int, offset: int, value: int, byte_enable: int = 0xF) -> None:
        node = self._node(bus, devfn)
        if node is None:  # the function takes a type 0 request on its own link, whatever bus number it carries
            self.function.config_write(FUNCTION_BUS, devfn, offset, value, byte_enable)
        else:
            node.write(offset, value, byte_enable)

    def _down(self, address: int) -> Target:
        for n, bridge in enumerate(self.bridges):
            if not bridge.forwards(address):
                raise CompletionError(UR, f"memory request at {address:#x}: bridge {n} does not forward it")
        return self.function

    def mem_read(self, address: int) -> int:
        return self._down(address).mem_read(address)

    def mem_write(self, address: int, value: int, byte_enable: int = 0xF) -> None:
        self._down(address).mem_write(address, value, byte_enable)
