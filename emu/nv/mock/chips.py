"""The NVIDIA chips the mock machine models, one per arch: what the driver tells a client of them (PCI ids, name,
SM version, the GR unit counts and the class list) and how each mock GPU is told apart (PCI address, gpu id, UUID).

Sources: PCI device ids and marketing names from the PCI ID repository (pci-ids.ucw.cz, vendor 10de); unit counts
(GPCs, TPCs per GPC, SMs per TPC: the full die's, which the LITTER_* indices report) and warps per SM from
NVIDIA's architecture whitepapers (A100, GA102, AD102, H100, RTX Blackwell) and the CUDA programming guide's
compute-capability table (max resident warps per SM: 64 on 8.0 and 9.0, 48 on 8.6, 8.9 and 12.0); memory sizes,
memory bandwidths (A100 80GB 2039 GB/s, RTX 3090 936, RTX 4090 1008, H200 4.8 TB/s, RTX 5090 1792) and host
interfaces (PCIe 4.0 x16 up to Ada, 5.0 x16 on H200 and the RTX 5090) and boost clocks (A100 1410 MHz, RTX 3090
1695, RTX 4090 2520, H200 1980, RTX 5090 2407) from the products' data sheets. SM
versions are the NV2080_CTRL_GR_INFO_SM_VERSION_* of ctrl2080gr.h (12_00 =
0xC00 from the 570 header; 535/555 stop at 9_00). Class lists are CHIP_CLASSES of the release's RM bindings
(g_gpu_class_list.c): GB202 has one from 570 on, and an older release drives no GB202."""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

from usergpu.errors import DeviceNotFound

GIB = 1 << 30
VGA, CONTROLLER_3D = 0x030000, 0x030200  # PCI class codes: a GeForce's display controller, a datacenter part's
SCHEDULERS_PER_SM = 4  # warp schedulers (SM sub-partitions) per SM, Ampere to Blackwell
UUID_PREFIX = b"usergpu-mock-nv"  # 15 bytes; the 16th is the GPU's index, so each mock GPU's UUID is its own


@dataclass(frozen=True)
class Chip:
    arch: str
    chip: str  # the RM's chip name (CHIP_CLASSES key)
    name: str
    device_id: int
    pci_class: int
    sm_version: int
    gpcs: int
    tpc_per_gpc: int
    sm_per_tpc: int
    warps_per_sm: int
    vram: int  # bytes
    copy_rate: float  # bytes/s a copy engine moves within VRAM: half the memory bandwidth (each byte read and written)
    bus_rate: float  # bytes/s over the host bus (PCIe 4.0 x16: 32 GB/s, 5.0: 64 GB/s), where an end is system memory
    clock_hz: float  # the boost clock: each SM's four schedulers issue a warp-instruction a cycle at it

    @property
    def warp_rate(self) -> float:
        """Warp-instructions a second over the whole chip, the rate a launch's time is modelled at."""
        return self.gpcs * self.tpc_per_gpc * self.sm_per_tpc * SCHEDULERS_PER_SM * self.clock_hz

    def classes(self, rm: ModuleType, release: str) -> tuple[int, ...]:
        """The class ids the chip offers (NV0080_CTRL_CMD_GPU_GET_CLASSLIST), from the release's RM bindings; a
        release older than the chip does not drive it (its class list names no such chip)."""
        if self.chip not in rm.CHIP_CLASSES:
            drive = list(rm.CHIP_CLASSES)
            raise DeviceNotFound(f"MOCKGPU_NV_ARCH {self.arch}: driver release {release} does not drive {self.chip} "
                                 f"({self.name}); it drives {', '.join(drive)} of the chips the mock models")
        return rm.CHIP_CLASSES[self.chip]

    def gr_info(self) -> dict[str, int]:
        """NV2080_CTRL_GR_INFO_INDEX_* name -> value, for the indices the mock answers."""
        return {"SM_VERSION": self.sm_version, "LITTER_NUM_GPCS": self.gpcs,
                "LITTER_NUM_TPC_PER_GPC": self.tpc_per_gpc, "LITTER_NUM_SM_PER_TPC": self.sm_per_tpc,
                "MAX_WARPS_PER_SM": self.warps_per_sm, "MAX_THREADS_PER_WARP": 32}


CHIPS = {c.arch: c for c in (
    Chip("sm_80", "GA100", "NVIDIA A100-SXM4-80GB", 0x20B2, CONTROLLER_3D, 0x800,
         8, 8, 2, 64, 80 * GIB, 1020e9, 32e9, 1410e6),
    Chip("sm_86", "GA102", "NVIDIA GeForce RTX 3090", 0x2204, VGA, 0x806,
         7, 6, 2, 48, 24 * GIB, 468e9, 32e9, 1695e6),
    Chip("sm_89", "AD102", "NVIDIA GeForce RTX 4090", 0x2684, VGA, 0x809,
         12, 6, 2, 48, 24 * GIB, 504e9, 32e9, 2520e6),
    Chip("sm_90", "GH100", "NVIDIA H200", 0x2335, CONTROLLER_3D, 0x900,
         8, 9, 2, 64, 141 * GIB, 2400e9, 64e9, 1980e6),
    Chip("sm_120", "GB202", "NVIDIA GeForce RTX 5090", 0x2B85, VGA, 0xC00,
         12, 8, 2, 48, 32 * GIB, 896e9, 64e9, 2407e6),
)}


def chip(arch: str) -> Chip:
    """The chip of an arch; DeviceNotFound naming the ones the mock offers."""
    if arch not in CHIPS:
        raise DeviceNotFound(f"MOCKGPU_NV_ARCH {arch!r}: the mock NVIDIA machine models {', '.join(CHIPS)}")
    return CHIPS[arch]


def pci(index: int) -> tuple[int, int, int, int]:
    """(domain, bus, slot, function) of mock GPU index."""
    return 0, 0x41 + index, 0, 0


def pci_name(index: int) -> str:
    domain, bus, slot, function = pci(index)
    return f"{domain:04x}:{bus:02x}:{slot:02x}.{function}"


def gpu_id(index: int) -> int:
    """The RM's gpu id of a GPU: gpuGenerate32BitId (gpu.c), domain << 16 | bus << 8 | slot."""
    domain, bus, slot, _ = pci(index)
    return (domain & 0xFFFF) << 16 | bus << 8 | slot


def uuid(index: int) -> bytes:
    """The 16 bytes of mock GPU index's UUID (NV2080_CTRL_CMD_GPU_GET_GID_INFO in binary format)."""
    return UUID_PREFIX + bytes([index & 0xFF])


def uuid_text(index: int) -> str:
    """The UUID as the driver prints it (GID_INFO's ASCII format, /proc's GPU UUID): GPU-8-4-4-4-12 hex digits."""
    h = uuid(index).hex()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
