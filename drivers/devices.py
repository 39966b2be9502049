"""Find the AMD and NVIDIA GPUs of this machine: PCI functions from sysfs, joined with amdkfd's topology (AMD) or
with what the NVIDIA driver says of each GPU it drives (model, sm version, memory, release)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from usergpu.drivers.hal import HAL

PCI_DEVICES = "/sys/bus/pci/devices"
KFD_NODES = "/sys/devices/virtual/kfd/kfd/topology/nodes"
VENDORS = {0x1002: "AMD", 0x10DE: "NV"}
GPU_CLASSES = (0x03, 0x12)  # display controller, processing accelerator (Instinct)

# Mock interfaces this build offers (DESIGN.md device strings); each arrives with its driver.
MOCK_INTERFACES: tuple[str, ...] = ("MOCKKFD+AMD", "MOCKPCI+AMD", "MOCK+NV")


@dataclass(frozen=True)
class GPU:
    pci: str  # domain:bus:device.function
    vendor: str  # AMD or NV
    vendor_id: int
    device_id: int
    driver: str | None  # kernel driver bound to the function (amdgpu, vfio-pci, nvidia, ...)
    arch: str | None  # gfx target from amdkfd (gfx1100, gfx942, ...) or sm version from the NVIDIA driver (sm_90)
    kfd_node: int | None
    model: str | None = None  # the NVIDIA driver's name of the GPU
    memory: int | None = None  # bytes of video memory (NVIDIA)
    release: str | None = None  # the NVIDIA driver's release
    bindings: str | None = None  # the generated bindings that speak to it (and why, where not its own release's)

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


def nvidia_gpus(hal: HAL) -> dict[str, dict]:
    """PCI address -> (arch, model, memory, release) of each GPU the NVIDIA driver drives, asked of the driver
    (opened and closed again); {} where no NVIDIA driver answers."""
    from usergpu.drivers.nv.gpu import NV
    from usergpu.errors import Error

    if not hal.exists("/dev/nvidiactl"):
        return {}
    out = {}
    for index in range(64):
        try:
            nv = NV(hal, index)
        except Error:
            break
        try:
            p = nv.card.pci_info
            out[f"{p.domain:04x}:{p.bus:02x}:{p.slot:02x}.{p.function}"] = {
                "arch": nv.arch, "model": nv.name, "memory": nv.memory_size, "release": nv.release,
                "bindings": nv.abi.used}
        finally:
            nv.close()
    return out


def find(hal: HAL | None = None) -> list[GPU]:
    """Every AMD or NVIDIA GPU function on the PCI bus, in address order, then the AMD GPUs of the remote servers
    the HAL names (REMOTE: their address remote:HOST:PORT:N, their memory BAR0's size)."""
    hal = hal or HAL()
    kfd = kfd_nodes(hal)
    nv = nvidia_gpus(hal)
    gpus = []
    for addr in hal.listdir(PCI_DEVICES):
        base = f"{PCI_DEVICES}/{addr}"
        vendor = int(hal.read_text(f"{base}/vendor") or "0", 16)
        cls = int(hal.read_text(f"{base}/class") or "0", 16)
        if vendor not in VENDORS or cls >> 16 not in GPU_CLASSES:
            continue
        node, arch = kfd.get(addr, (None, None))
        info = nv.get(addr, {})
        gpus.append(GPU(addr, VENDORS[vendor], vendor, int(hal.read_text(f"{base}/device") or "0", 16),
                        hal.readlink_name(f"{base}/driver"), info.get("arch", arch), node, info.get("model"),
                        info.get("memory"), info.get("release"), info.get("bindings")))
    return gpus + remote_gpus(hal)


def remote_gpus(hal: HAL) -> list[GPU]:
    from usergpu.drivers.remote.client import remote_functions

    return [GPU(f.name, "AMD", f.vendor_id, f.device_id, None, None, None, memory=f.bar(0).size)
            for f in remote_functions(hal.remote_servers(), 0x1002) if f.config_read(8) >> 24 in GPU_CLASSES]
