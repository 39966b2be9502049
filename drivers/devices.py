"""Find the AMD and NVIDIA GPUs of this machine: PCI functions from sysfs, joined with amdkfd's topology."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from usergpu.drivers.hal import HAL

PCI_DEVICES = "/sys/bus/pci/devices"
KFD_NODES = "/sys/devices/virtual/kfd/kfd/topology/nodes"
VENDORS = {0x1002: "AMD", 0x10DE: "NV"}
GPU_CLASSES = (0x03, 0x12)  # display controller, processing accelerator (Instinct)

# Mock interfaces this build offers (DESIGN.md device strings); each arrives with its driver.
MOCK_INTERFACES: tuple[str, ...] = ("MOCKKFD+AMD", "MOCKPCI+AMD")


@dataclass(frozen=True)
class GPU:
    pci: str  # domain:bus:device.function
    vendor: str  # AMD or NV
    vendor_id: int
    device_id: int
    driver: str | None  # kernel driver bound to the function (amdgpu, vfio-pci, nvidia, ...)
    arch: str | None  # gfx target from amdkfd (gfx1100, gfx942, ...) when amdkfd knows the GPU
    kfd_node: int | None

    def as_dict(self) -> dict:
        return asdict(self)


def gfx_arch(target_version: int) -> str:
    """amdkfd's gfx_target_version (major*10000 + minor*100 + stepping) -> LLVM's name, e.g. 90402 -> gfx942."""
    major, minor, step = target_version // 10000, target_version // 100 % 100, target_version % 100
    return f"gfx{major}{minor:x}{step:x}"


def _properties(text: str) -> dict[str, int]:
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if value.strip().lstrip("-").isdigit():
            out[key] = int(value)
    return out


def kfd_nodes(hal: HAL) -> dict[str, tuple[int, str]]:
    """PCI address -> (node, arch) of each GPU node in amdkfd's topology (CPU nodes have no gfx target)."""
    out = {}
    for node in hal.listdir(KFD_NODES):
        props = _properties(hal.read_text(f"{KFD_NODES}/{node}/properties") or "")
        if props.get("gfx_target_version") and node.isdigit():
            loc = props.get("location_id", 0)  # bus << 8 | device << 3 | function
            pci = f"{props.get('domain', 0):04x}:{loc >> 8:02x}:{(loc >> 3) & 0x1F:02x}.{loc & 7}"
            out[pci] = (int(node), gfx_arch(props["gfx_target_version"]))
    return out


def find(hal: HAL | None = None) -> list[GPU]:
    """Every AMD or NVIDIA GPU function on the PCI bus, in address order."""
    hal = hal or HAL()
    kfd = kfd_nodes(hal)
    gpus = []
    for addr in hal.listdir(PCI_DEVICES):
        base = f"{PCI_DEVICES}/{addr}"
        vendor = int(hal.read_text(f"{base}/vendor") or "0", 16)
        cls = int(hal.read_text(f"{base}/class") or "0", 16)
        if vendor not in VENDORS or cls >> 16 not in GPU_CLASSES:
            continue
        node, arch = kfd.get(addr, (None, None))
        gpus.append(GPU(addr, VENDORS[vendor], vendor, int(hal.read_text(f"{base}/device") or "0", 16),
                        hal.readlink_name(f"{base}/driver"), arch, node))
    return gpus
