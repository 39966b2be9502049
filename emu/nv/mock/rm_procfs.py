"""What nvidia.ko publishes for the mock machine's GPUs, written under the MockHAL's root in the kernel's text
formats: /proc/driver/nvidia/version (nv_procfs_read_version: "NVRM version: " and the module's id string, then the
compiler), /proc/driver/nvidia/gpus/<pci>/information (nv_procfs_read_gpu_info, nv-procfs.c), and each GPU's PCI
function in sysfs (vendor, device, class, subsystem ids) bound to the `nvidia` driver, laid out as the kernel lays
it out (the function under a root port in /sys/devices, linked from /sys/bus/pci/devices and the driver)."""

from __future__ import annotations

from usergpu.emu.mock.hal import link
from usergpu.emu.nv.mock import chips

NVIDIA = 0x10DE
COMPILER = "gcc version 12.2.0 (Debian 12.2.0-14)"  # what Debian bookworm's nvidia-open modules are built with
DMA_BITS = 47  # the DMA mask the driver reports on an x86-64 host


def version_text(release: str) -> str:
    module = f"NVIDIA UNIX Open Kernel Module for x86_64  {release}  Release Build  (usergpu-mock@localhost)  " \
             "Thu Jan  1 00:00:00 UTC 1970"
    return f"NVRM version: {module}\nGCC version:  {COMPILER}\n"


def information_text(machine, index: int) -> str:
    """A GPU's information file. The mock has no VBIOS (its version reads zeros); its GSP firmware is the
    driver's release, as the open modules' GSP firmware is."""
    domain, bus, slot, function = chips.pci(index)
    return (f"Model: \t\t {machine.chip.name}\n"
            f"IRQ:   \t\t {machine.card(index)['interrupt_line']}\n"
            f"GPU UUID: \t {chips.uuid_text(index)}\n"
            f"Video BIOS: \t 00.00.00.00.00\n"
            f"Bus Type: \t PCIe\n"
            f"DMA Size: \t {DMA_BITS} bits\n"
            f"DMA Mask: \t {(1 << DMA_BITS) - 1:#x}\n"
            f"Bus Location: \t {domain:04x}:{bus:02x}:{slot:02x}.{function:x}\n"
            f"Device Minor: \t {index}\n"
            f"GPU Firmware: \t {machine.release}\n"
            f"GPU Excluded:\t No\n")


def publish(machine) -> None:
    root = machine.hal.root
    proc = root / "proc/driver/nvidia"
    (proc / "gpus").mkdir(parents=True, exist_ok=True)
    (proc / "version").write_text(version_text(machine.release))
    sysfs = root / "sys"
    (sysfs / "bus/pci/drivers/nvidia").mkdir(parents=True, exist_ok=True)
    for index in range(machine.count):
        address = chips.pci_name(index)
        (proc / f"gpus/{address}").mkdir(exist_ok=True)
        (proc / f"gpus/{address}/information").write_text(information_text(machine, index))
        function = f"devices/pci0000:00/0000:00:{1 + index // 7:02x}.{1 + index % 7}/{address}"
        fn = sysfs / function
        fn.mkdir(parents=True, exist_ok=True)
        for name, text in (("vendor", f"0x{NVIDIA:04x}"), ("device", f"0x{machine.chip.device_id:04x}"),
                           ("class", f"0x{machine.chip.pci_class:06x}"), ("subsystem_vendor", f"0x{NVIDIA:04x}"),
                           ("subsystem_device", "0x0000")):
            (fn / name).write_text(f"{text}\n")
        link(fn / "driver", "../../../../bus/pci/drivers/nvidia")
        link(sysfs / f"bus/pci/drivers/nvidia/{address}", f"../../../../{function}")
        link(sysfs / f"bus/pci/devices/{address}", f"../../../{function}")
