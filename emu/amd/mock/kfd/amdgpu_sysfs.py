"""What amdgpu publishes in sysfs for the GPUs of the mock KFD machine, next to amdkfd's topology: each GPU's PCI
function bound to amdgpu, laid out as the kernel lays it out (the function under a root port in /sys/devices,
linked from /sys/bus/pci/devices and from the driver), its render node (/sys/class/drm/renderD<minor>, whose
`device` is the function), and the function's amdgpu attributes in the kernel's text formats: the IP discovery
table (ip_discovery/die/0/<hw id>/<instance>/, amdgpu_discovery.c; held in memory, emu/mock/sysfs_tree.py),
power_dpm_force_performance_level and unique_id (amdgpu_pm.c), mem_info_* (amdgpu_vram_mgr.c, amdgpu_gtt_mgr.c).

Links are relative, so the tree resolves under a MockHAL root as it would under /. An attribute whose value
changes (the memory in use, the performance level) is a device file of the HAL at each path a reader may name it
by (through the class link, the bus link, or the function itself): a read gives its value now, as sysfs calls the
attribute's show. The tree holds a copy of it too, as it was at publish or last written, so that a listing shows
it (MockHAL.read_text reads that copy)."""

from __future__ import annotations

import errno
from collections.abc import Callable
from pathlib import Path

from usergpu.emu.amd.mock.kfd.amdgpu_device import PCI_REVISION, AmdgpuDevice
from usergpu.emu.mock.hal import link
from usergpu.emu.mock.sysfs_tree import Link, Tree
from usergpu.emu.mock.uaccess import fail
from usergpu.hostmem import PAGE

DRM_MAJOR = 226
DISPLAY_CLASS = 0x030000  # a VGA-compatible display controller
NAMELESS = {"MP0"}  # blocks amdgpu_discovery.c's hw_id_names does not name: die/<n> has no link to them
HARVEST = 0  # the harvest attribute of every block: the mock GPUs harvest no GC, SDMA, VCN or DMU instance
# the levels amdgpu_set_power_dpm_force_performance_level accepts, in the order it matches them (by prefix)
LEVELS = ("low", "high", "auto", "manual", "profile_exit", "profile_standard", "profile_min_sclk", "profile_min_mclk",
          "profile_peak", "perf_determinism")
PROFILES = ("profile_standard", "profile_min_sclk", "profile_min_mclk", "profile_peak")  # profile_mode_mask


class PerformanceLevel:
    """The DPM level of a GPU's SMU (amdgpu_dpm_force_performance_level and swsmu's smu_enable_umd_pstate): auto
    at start; entering a profile level saves the level it came from and profile_exit returns to it (EINVAL outside
    a profile); asking for the level it is at changes nothing; perf_determinism is EINVAL (SMU 13 and 14's
    set_performance_level refuse it), as is any other text."""

    def __init__(self):
        self.level = self.saved = "auto"

    def show(self) -> str:
        return f"{self.level}\n"

    def store(self, text: str) -> None:
        level = next((name for name in LEVELS if text.startswith(name)), None)
        if level in (None, "perf_determinism") or level == "profile_exit" and self.level not in PROFILES:
            raise fail(errno.EINVAL, f"power_dpm_force_performance_level {text.strip()!r} at {self.level}")
        if level == "profile_exit":
            level = self.saved
        elif level in PROFILES and self.level not in PROFILES:
            self.saved = self.level
        self.level = level


class Attribute:
    """An amdgpu attribute whose value changes, open: a read at an offset gives that part of what its show gives
    now; a write hands its store the text (at most a page, as kernfs passes it) and refreshes the tree's copy; a
    read-only one refuses writes with EACCES, as kernfs refuses opening it for writing; an empty write is 0."""

    def __init__(self, copy: Path, show: Callable[[], str], store: Callable[[str], None] | None = None):
        self.copy, self.show, self.store = copy, show, store
        copy.write_text(show())

    def pread(self, length: int, offset: int) -> bytes:
        return self.show().encode()[offset : offset + length]

    def pwrite(self, data: bytes, offset: int) -> int:
        if self.store is None:
            raise fail(errno.EACCES, f"{self.copy.name} is read-only")
        data = data[:PAGE]
        if not data:  # sysfs_kf_write stores nothing
            return 0
        self.store(data.decode(errors="replace"))
        self.copy.write_text(self.show())
        return len(data)


def pci_address(domain: int, loc: int) -> str:
    """The PCI function a domain and a location (bus << 8 | device << 3 | function) name."""
    return f"{domain:04x}:{loc >> 8:02x}:{(loc >> 3) & 0x1F:02x}.{loc & 7}"


def publish(kfd_) -> None:
    """amdgpu's sysfs for every GPU of a MockKFD, under its HAL's root. Each GPU's function sits behind a root port
    of its own, numbered as AMD's hosts number theirs (00:01.1 to 00:01.7, then 00:02.1, ...); the render nodes of
    a partitioned GPU's compute partitions (amdgpu_xcp.c's, one per partition) all have its function as device."""
    sysfs = kfd_.hal.root / "sys"
    (sysfs / "bus/pci/drivers/amdgpu").mkdir(parents=True, exist_ok=True)
    for n in kfd_.nodes:
        props = n.props
        domain, address, minor = props["domain"], pci_address(props["domain"], n.pci), props["drm_render_minor"]
        function = f"devices/pci{domain:04x}:00/{domain:04x}:00:{1 + n.board // 7:02x}.{1 + n.board % 7}/{address}"
        fn = sysfs / function
        render = fn / f"drm/renderD{minor}"
        render.mkdir(parents=True, exist_ok=True)
        (render / "dev").write_text(f"{DRM_MAJOR}:{minor}\n")
        link(render / "device", f"../../../{address}")
        link(sysfs / f"class/drm/renderD{minor}", f"../../{function}/drm/renderD{minor}")
        if n.partition:  # the function's own files are its first partition's
            continue
        for name, text in (("vendor", f"0x{props['vendor_id']:04x}"), ("device", f"0x{props['device_id']:04x}"),
                           ("class", f"0x{DISPLAY_CLASS:06x}"), ("revision", f"0x{PCI_REVISION:02x}")):
            (fn / name).write_text(f"{text}\n")
        link(fn / "driver", "../../../../bus/pci/drivers/amdgpu")
        link(sysfs / f"bus/pci/drivers/amdgpu/{address}", f"../../../../{function}")
        link(sysfs / f"bus/pci/devices/{address}", f"../../../{function}")
        adev = AmdgpuDevice(kfd_, n)
        kfd_.hal.mount(f"/sys/{function}/ip_discovery", _ip_discovery(adev))
        renders = [f"/sys/class/drm/renderD{m.props['drm_render_minor']}/device" for m in kfd_.nodes
                   if m.board == n.board]
        _attributes(kfd_.hal, fn, [f"/sys/{function}", f"/sys/bus/pci/devices/{address}", *renders], adev)


def _ip_discovery(adev: AmdgpuDevice) -> Tree:
    """amdgpu_discovery_sysfs_recurse on the GPU's discovery table (one die): a directory per hw id (linked from its
    name) holding one per instance, each attribute as its *_show prints it."""
    die: Tree = {"num_ips": f"{len(adev.ips)}\n"}
    for ip in adev.ips:
        major, minor, revision = ip.version
        attributes = {name: f"{value}\n" for name, value in (
            ("hw_id", ip.hw_id), ("num_instance", ip.instance), ("major", major), ("minor", minor),
            ("revision", revision), ("num_base_addresses", len(ip.bases)))}
        attributes["harvest"] = f"0x{HARVEST:01X}\n"
        attributes["base_addr"] = "".join(f"0x{base:08X}\n" for base in ip.bases)
        die.setdefault(str(ip.hw_id), {})[str(ip.instance)] = attributes
        if ip.name not in NAMELESS:
            die[ip.name] = Link(str(ip.hw_id))
    return {"die": {"0": die}}


def _attributes(hal, fn: Path, spellings: list[str], adev: AmdgpuDevice) -> None:
    """unique_id and the memory totals as files; the usage and the performance level as Attributes, installed at
    every spelling of the function's path."""
    unique_id = adev.node.props["unique_id"]
    (fn / "unique_id").write_text(f"{unique_id:016x}\n" if unique_id else "")  # amdgpu_get_unique_id
    for name, size in (("vram", adev.vram_size), ("vis_vram", adev.visible_vram_size), ("gtt", adev.gtt_size)):
        (fn / f"mem_info_{name}_total").write_text(f"{size}\n")
    level = PerformanceLevel()
    live = {f"mem_info_{name}_used": (lambda name=name: f"{adev.usage()[name]}\n", None)
            for name in ("vram", "vis_vram", "gtt")}
    live["power_dpm_force_performance_level"] = (level.show, level.store)
    for name, (show, store) in live.items():
        attribute = Attribute(fn / name, show, store)
        for path in spellings:
            hal.install(f"{path}/{name}", lambda attribute=attribute: attribute)
