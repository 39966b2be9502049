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
CONFIG_SIZE = 4096  # PCI_CFG_SPACE_EXP_SIZE: a PCIe function's extended config space
DWORD = CONFIG_SIZE - 4  # the bits of a config offset that name its dword
# the type 1 header's registers (PCI-to-PCI Bridge spec ch. 3.2; the names pci_regs.h gives them)
PCI_COMMAND = 0x04
PCI_CACHE_LINE_SIZE = 0x0C
PCI_HEADER_TYPE = 0x0E
PCI_PRIMARY_BUS, PCI_SECONDARY_BUS, PCI_SUBORDINATE_BUS = 0x18, 0x19, 0x1A
PCI_MEMORY_BASE = 0x20  # the memory window's base and limit, 16 bits each
PCI_PREF_MEMORY_BASE = 0x24  # the prefetchable window's
PCI_PREF_BASE_UPPER32, PCI_PREF_LIMIT_UPPER32 = 0x28, 0x2C  # and the upper halves of its base and limit
PCI_CAPABILITY_LIST = 0x34
PCI_INTERRUPT_LINE = 0x3C  # with the bridge control register in its upper half
PCI_STATUS_CAP_LIST = 0x0010  # Status: the function has a capability list
PCI_CLASS_BRIDGE_PCI = 0x060400  # class code: a PCI-to-PCI bridge
PCI_HEADER_TYPE_BRIDGE = 0x01  # header type 1, single function
PCI_CAP_ID_EXP = 0x10  # the PCI Express capability's id
PCI_EXP_FLAGS_VERSION = 2  # its version (PCIe 2.0 and later), in its flags' bits 3..0
PCI_EXP_FLAGS_TYPE_SHIFT = 4  # the Device/Port Type, in the flags' bits 7..4
PCIE_CAP = 0x40  # where each bridge's PCI Express capability sits
COMMAND_MEMORY = 1 << 1  # PCI_COMMAND_MEMORY: the memory-space enable
# a window's base and limit registers hold address bits 31..20 in their bits 15..4: windows are 1 MiB granules
WINDOW_ADDRESS_BITS, WINDOW_SHIFT, WINDOW_GRANULE = 0xFFF0, 16, 1 << 20
# the type 1 header's writable bits by dword (the rest read as they are): Command (I/O, memory, bus master,
# parity, SERR#, INTx disable); cache line size; primary, secondary and subordinate bus numbers; the memory and
# prefetchable windows' base and limit (bits 31..20 of an address; the prefetchable window's low nibble says
# 64-bit and is read-only); the prefetchable window's upper 32 bits; interrupt line and bridge control (parity,
# SERR#, ISA, VGA, VGA 16-bit). No I/O window, no expansion ROM: those registers are read-only zero, as the spec
# lets a bridge that implements neither.
WRITABLE = {PCI_COMMAND: 0x0000_0547, PCI_CACHE_LINE_SIZE: 0x0000_00FF, PCI_PRIMARY_BUS: 0x00FF_FFFF,
            PCI_MEMORY_BASE: 0xFFF0_FFF0, PCI_PREF_MEMORY_BASE: 0xFFF0_FFF0, PCI_PREF_BASE_UPPER32: 0xFFFF_FFFF,
            PCI_PREF_LIMIT_UPPER32: 0xFFFF_FFFF, PCI_INTERRUPT_LINE: 0x001F_00FF}
PREFETCH_64 = 0x0001_0001  # base and limit both say "64-bit prefetchable window"
# the ports' ids (the enclosure's lspci -nn): ASMedia's ASM2461 switch, and the switch on a Navi 31 board
PCI_VENDOR_ASMEDIA, ASM2461 = 0x1B21, 0x2461
PCI_VENDOR_ATI, NAVI31_UPSTREAM, NAVI31_DOWNSTREAM = 0x1002, 0x1478, 0x1479


class Bridge:
    """One PCI-to-PCI bridge (a switch port): a 4 KiB config space with a type 1 header and a PCIe capability."""

    def __init__(self, vendor: int, device: int, port_type: int, revision: int = 0):
        self.config = bytearray(CONFIG_SIZE)
        struct.pack_into("<HHHHI", self.config, 0, vendor, device, 0, PCI_STATUS_CAP_LIST,
                         PCI_CLASS_BRIDGE_PCI << 8 | revision)
        self.config[PCI_HEADER_TYPE] = PCI_HEADER_TYPE_BRIDGE
        self.config[PCI_CAPABILITY_LIST] = PCIE_CAP
        struct.pack_into("<I", self.config, PCI_PREF_MEMORY_BASE, PREFETCH_64)
        flags = PCI_EXP_FLAGS_VERSION | port_type << PCI_EXP_FLAGS_TYPE_SHIFT
        struct.pack_into("<BBH", self.config, PCIE_CAP, PCI_CAP_ID_EXP, 0, flags)  # the last capability: next 0

    def read(self, offset: int) -> int:
        return struct.unpack_from("<I", self.config, offset & DWORD)[0]

    def write(self, offset: int, value: int, byte_enable: int = 0xF) -> None:
        lanes = sum(0xFF << (8 * i) for i in range(4) if byte_enable >> i & 1)
        mask = WRITABLE.get(offset & DWORD, 0) & lanes
        struct.pack_into("<I", self.config, offset & DWORD, self.read(offset) & ~mask | value & mask)

    @property
    def buses(self) -> range:
        """The buses below the bridge: secondary through subordinate (empty until software numbers them)."""
        secondary, subordinate = self.config[PCI_SECONDARY_BUS], self.config[PCI_SUBORDINATE_BUS]
        return range(secondary, subordinate + 1) if secondary else range(0)

    def _window(self, base_at: int, upper: bool) -> tuple[int, int]:
        registers = struct.unpack_from("<HH", self.config, base_at)
        base, limit = ((r & WINDOW_ADDRESS_BITS) << WINDOW_SHIFT for r in registers)
        high_base, high_limit = struct.unpack_from("<II", self.config, PCI_PREF_BASE_UPPER32) if upper else (0, 0)
        return high_base << 32 | base, high_limit << 32 | limit | WINDOW_GRANULE - 1

    def forwards(self, address: int) -> bool:
        """Whether a memory request at address from the primary side goes down through the bridge."""
        if not self.config[PCI_COMMAND] & COMMAND_MEMORY:
            return False
        windows = (self._window(PCI_MEMORY_BASE, False), self._window(PCI_PREF_MEMORY_BASE, True))
        return any(low <= address <= high for low, high in windows)


def enclosure_bridges() -> list[Bridge]:
    """The bridges an ASM2464PD enclosure with a Navi 31 board puts between the bridge chip and the GPU."""
    return [Bridge(PCI_VENDOR_ASMEDIA, ASM2461, UPSTREAM), Bridge(PCI_VENDOR_ASMEDIA, ASM2461, DOWNSTREAM),
            Bridge(PCI_VENDOR_ATI, NAVI31_UPSTREAM, UPSTREAM), Bridge(PCI_VENDOR_ATI, NAVI31_DOWNSTREAM, DOWNSTREAM)]


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
            link = bridge.config[PCI_SECONDARY_BUS]
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
