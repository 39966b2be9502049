"""What am_smi shows of a board AM drives, read without taking the board from its owner: BAR5 registers and BAR0
VRAM mapped alongside the owner's, IP discovery to find the registers, the SMU's mailbox for its version, metrics
table and power limit (the table lands in the buffer AM keeps for it at the top of VRAM), the PCI power state from
sysfs, the VRAM AM's allocator handed out (GC SCRATCH_REG6) and the owning process from the lock file."""

from __future__ import annotations

from usergpu.drivers.amd.am import discovery, lock
from usergpu.drivers.amd.am.device import VRAM_USED, read_metrics, vram_size
from usergpu.drivers.amd.am.ip import RegisterMap, Registers
from usergpu.drivers.amd.am.smu import SMU
from usergpu.drivers.devices import PCI_DEVICES
from usergpu.drivers.hal import HAL
from usergpu.drivers.pci import SysfsPCIDevice

NAMES = {0x744C: "Radeon RX 7900 XTX", 0x7448: "Radeon Pro W7900", 0x7550: "Radeon RX 9070 XT",
         0x7590: "Radeon RX 9060 XT"}


def status(hal: HAL, bus: str) -> dict:
    """One board's identity, power state, firmware, metrics, VRAM use and owner."""
    pci = SysfsPCIDevice(hal, bus)
    who = lock.owner(hal, bus) if bus in {o.bus for o in lock.held(hal)} else None
    power = (hal.read_text(f"{PCI_DEVICES}/{bus}/power_state") or "unknown").strip()
    out = {"bus": bus, "name": NAMES.get(pci.device_id, f"AMD GPU {pci.device_id:04x}"), "power_state": power,
           "pid": who.pid if who else None, "command": who.command if who else None}
    if power.startswith("D3"):  # powered down: its registers answer all ones
        return out
    mmio, vram = pci.map_bar(5), pci.map_bar(0)
    regs = Registers(mmio, RegisterMap(discovery.read(mmio, vram)))
    smu = SMU(mmio, regs.map)
    major, minor, rev = smu.version()
    return out | {"smu_version": f"{major}.{minor}.{rev}", **read_metrics(smu, vram, regs),
                  "power_limit": smu.power_limit(), "vram_used": regs.read("GC", VRAM_USED) << 20,
                  "vram_total": vram_size(mmio)}
