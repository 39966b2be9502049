"""What am_smi shows of a board AM drives, read without taking the board from its owner: BAR5 registers and BAR0
VRAM mapped alongside the owner's, IP discovery to find the registers, the SMU's mailbox for its version, metrics
table and power limit (the table lands in the buffer AM keeps for it at the top of VRAM), the PCI power state from
sysfs, the VRAM AM's allocator handed out (GC SCRATCH_REG6) and the owning process from the lock file.

A remote board (remote:HOST:PORT:N) is read on a connection of its own, closed at once; its server answers only
the client that holds it, so a board another client drives shows who holds it instead of its state."""

from __future__ import annotations

from usergpu.drivers.amd.am import discovery, lock
from usergpu.drivers.amd.am.device import VRAM_USED, read_metrics, vram_size
from usergpu.drivers.amd.am.ip import RegisterMap, Registers
from usergpu.drivers.amd.am.smu import SMU
from usergpu.drivers.devices import PCI_DEVICES
from usergpu.drivers.hal import HAL
from usergpu.drivers.pci import SysfsPCIDevice
from usergpu.drivers.remote.client import remote_board
from usergpu.errors import DriverError

NAMES = {0x744C: "Radeon RX 7900 XTX", 0x7448: "Radeon Pro W7900", 0x7550: "Radeon RX 9070 XT",
         0x7590: "Radeon RX 9060 XT", 0x74A1: "Instinct MI300X", 0x75A0: "Instinct MI350X"}


def status(hal: HAL, bus: str) -> dict:
    """One board's identity, power state, firmware, metrics, VRAM use and owner."""
    who = lock.owner(hal, bus) if bus in {o.bus for o in lock.held(hal)} else None
    out = {"bus": bus, "pid": who.pid if who else None, "command": who.command if who else None}
    if not bus.startswith("remote:"):
        return out | _state(SysfsPCIDevice(hal, bus), (hal.read_text(f"{PCI_DEVICES}/{bus}/power_state") or
                                                       "unknown").strip())
    pci = remote_board(bus)
    try:
        return out | _state(pci, "remote")
    except DriverError as e:
        return out | {"name": "AMD GPU", "power_state": f"remote; {e.detail.rpartition(': ')[2]}"}
    finally:
        pci.link.close()


def _state(pci, power: str) -> dict:
    out = {"name": NAMES.get(pci.device_id, f"AMD GPU {pci.device_id:04x}"), "power_state": power}
    if power.startswith("D3"):  # powered down: its registers answer all ones
        return out
    mmio, vram = pci.map_bar(5), pci.map_bar(0)
    regs = Registers(mmio, RegisterMap(discovery.read(mmio, vram)))
    smu = SMU(mmio, regs.map)
    major, minor, rev = smu.version()
    return out | {"smu_version": f"{major}.{minor}.{rev}", **read_metrics(smu, vram, regs),
                  "power_limit": smu.power_limit(), "vram_used": regs.read("GC", VRAM_USED) << 20,
                  "vram_total": vram_size(mmio)}
