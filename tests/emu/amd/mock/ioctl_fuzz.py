"""A raw fuzzer of the mock device files: random calls through the MockHAL (ioctl, pread, pwrite, mmap, mmio; USB
transfers on the mock bridge's pyusb backend) with request numbers that are mostly the real ones (autogen.kfd,
autogen.vfio), random payloads, random pointers inside the structs and arguments of the wrong Python type. Every
answer must be a success or an errno (OSError with errno, DriverError, usb.core.USBError); anything else is
counted with an example. Each file runs in a process of its own, so a signal that kills one is a crash.

    python tests/emu/amd/mock/ioctl_fuzz.py [--count N] [--seed S] [--file NAME]... [--json]

Pointers are drawn so that the fuzzer never hands the mock an address of memory it does not own: valid ones
point into its own scratch pages (a guard page after them), the rest are NULL, unmapped, PROT_NONE, read-only,
non-canonical, in the kernel half or wrapping, so that a copy the mock made by dereferencing would crash.
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import errno
import faulthandler
import json
import subprocess
import sys
import tempfile
import time
from array import array
from pathlib import Path

import numpy as np
from usb.core import USBError

from usergpu.autogen import kfd, vfio
from usergpu.autogen._support import Ioctl
from usergpu.errors import DriverError
from usergpu.hostmem import MAP_ANONYMOUS, MAP_PRIVATE, MAP_SHARED, PAGE, PROT_NONE, PROT_READ, PROT_WRITE, os_mmap

MAP_NORESERVE = 0x4000
KFD_IOCTLS = [v for k, v in vars(kfd).items() if k.startswith("AMDKFD_IOC_") and isinstance(v, Ioctl)]
VFIO_IOCTLS = sorted({v for k, v in vars(vfio).items() if isinstance(v, int) and v >> 8 == vfio.VFIO_TYPE})
VFIO_STRUCTS = [vfio.struct_vfio_group_status, vfio.struct_vfio_region_info, vfio.struct_vfio_iommu_type1_dma_map,
                vfio.struct_vfio_iommu_type1_dma_unmap, vfio.struct_vfio_device_info]
BAD_TYPES = [None, "str", 1.5, b"bytes", [1, 2], object()]


class Memory:
    """The fuzzer's own pages: scratch (random bytes, where copies may land) with a guard page after it, a
    read-only page, and quiet pages nothing writes (user pages for USERPTR objects and DMA mappings)."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        total = 16 * PAGE + PAGE + PAGE + 16 * PAGE + PAGE
        base = os_mmap(0, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        self.scratch, self.guard = base, base + 16 * PAGE
        self.readonly, self.quiet = self.guard + PAGE, self.guard + 2 * PAGE
        os_mmap(self.scratch, 16 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | 0x10, -1, 0)
        os_mmap(self.readonly, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | 0x10, -1, 0)
        os_mmap(self.quiet, 16 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | 0x10, -1, 0)
        ctypes.memmove(self.scratch, rng.bytes(16 * PAGE), 16 * PAGE)

    def bad(self) -> int:
        """An address no copy may succeed at (a whole struct's worth from it, at least)."""
        r = self.rng
        return int(r.choice([0, 8, PAGE, self.guard + int(r.integers(PAGE)), 0xFFFF_8000_0000_0000 + int(r.integers(
            1 << 40)), (1 << 64) - int(r.integers(1, 64)), (1 << 47) + int(r.integers(1 << 30)),
            (1 << 47) - PAGE - int(r.integers(1, 16)), self.scratch + 16 * PAGE - int(r.integers(1, 16))]))

    def pointer(self) -> int:
        """A pointer for a field the mock reads or writes through: mostly into scratch, else a bad one or the
        read-only page (readable, not writable)."""
        r = self.rng.random()
        if r < 0.6:
            return self.scratch + int(self.rng.integers(16 * PAGE - 512)) // 8 * 8
        return self.readonly + int(self.rng.integers(PAGE // 2)) if r < 0.7 else self.bad()

    def user_pages(self) -> int:
        """Pages for a USERPTR object or a DMA mapping (pinned, never written by the fuzzer)."""
        r = self.rng.random()
        if r < 0.6:
            return self.quiet + int(self.rng.integers(8)) * PAGE
        return self.readonly if r < 0.7 else self.bad() & ~(PAGE - 1)

    def fill(self, words: list[int]) -> None:
        """The second half of scratch repeats words (uint32): what a pointer into it reads there is one of them
        (a GPU's id for a device array, an event's id for event data)."""
        pattern = np.resize(np.asarray(words, np.uint32), 8 * PAGE // 4)
        ctypes.memmove(self.scratch + 8 * PAGE, pattern.tobytes(), 8 * PAGE)

    def place(self, data: bytes) -> int:
        """data copied into scratch at a random place (cut at the guard page): its address."""
        at = self.scratch + int(self.rng.integers(16 * PAGE))
        n = min(len(data), self.guard - at)
        ctypes.memmove(at, data, n)
        return at


class Fuzzer:
    """Counts what each call answers; the targets below make the calls."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.mem = Memory(self.rng)
        self.calls = self.ok = 0
        self.errnos: collections.Counter = collections.Counter()
        self.other: collections.Counter = collections.Counter()
        self.examples: dict[str, str] = {}

    def call(self, what: str, fn, *args):
        """fn(*args), its answer counted: the result, or None for an errno."""
        self.calls += 1
        try:
            got = fn(*args)
        except (OSError, DriverError, USBError) as e:
            if e.errno is None:
                return self._other(what, e, args)
            self.errnos[errno.errorcode.get(e.errno, str(e.errno))] += 1
            return None
        except Exception as e:  # noqa: BLE001 - what the fuzzer is for: every other exception is a finding
            return self._other(what, e, args)
        self.ok += 1
        return got

    def _other(self, what: str, e: BaseException, args) -> None:
        key = f"{what}: {type(e).__name__}"
        self.other[key] += 1
        self.examples.setdefault(key, f"{e!r} with {args!r}"[:400])
        return None

    # ---- values -------------------------------------------------------------------------------------------------
    def choice(self, values):
        return values[int(self.rng.integers(len(values)))]

    def integer(self, bits: int) -> int:
        r = self.rng
        return int(self.choice([0, 1, 2, 7, 8, 4096, 8192, 0x8000, 1 << 20, (1 << bits) - 1, 1 << (bits - 1),
                                int(r.integers(1 << min(bits, 62))), int(r.integers(256)), (1 << 32) - 1,
                                1 << 31, 1 << 63, (1 << 64) - 1]))

    def struct(self, ctype: type, pools: dict[str, list], pointer_fields: tuple[str, ...] = ("ptr",),
               seed: bytes | None = None):
        """An instance of ctype: a seed (what a driver really passed) with a field or two changed, or random bytes
        or zeros with most integer fields from their pools (the first pool whose key the field's name contains)
        or random. Fields the mock dereferences always get a fuzzer pointer."""
        size = ctypes.sizeof(ctype)
        if seed is not None:
            value, change = ctype.from_buffer_copy(seed[:size].ljust(size, b"\0")), 0.2
        else:
            value, change = ctype.from_buffer_copy(self.rng.bytes(size) if self.rng.random() < 0.3 else
                                                   bytes(size)), 0.9
        for name, ftype, *_ in ctype._fields_:
            if not issubclass(ftype, ctypes._SimpleCData):
                continue
            if any(p in name for p in pointer_fields):
                setattr(value, name, self.mem.pointer())
            elif self.rng.random() < change:
                pool = next((v for k, v in pools.items() if k in name), None)
                setattr(value, name, self.choice(pool) if pool and self.rng.random() < 0.9 else
                        self.integer(8 * ctypes.sizeof(ftype)))
        return value

    def argument(self, struct):
        """What the ioctl gets: mostly the struct, else a pointer to it (or to nothing), a buffer of another
        size, or something that is no ioctl argument at all."""
        r = self.rng.random()
        if r < 0.75:
            return struct
        if r < 0.85:
            return self.mem.place(bytes(struct)) if self.rng.random() < 0.6 else self.mem.bad()
        if r < 0.95:
            return (ctypes.c_uint8 * int(self.rng.integers(0, 300)))()
        return self.choice(BAD_TYPES)

    def request(self, real: list[int], kind: int) -> int:
        """A request number: mostly a real one, else one with its size, type or number changed, a random one, or
        one that is no request number at all."""
        r = self.rng.random()
        base = self.choice(real)
        if r < 0.7:
            return base
        if r < 0.8:
            return base & ~(0x3FFF << 16) | int(self.rng.integers(0x4000)) << 16
        if r < 0.85:
            return base & ~0xFF00 | int(self.rng.integers(256)) << 8
        if r < 0.92:
            return 3 << 30 | 8 << 16 | kind << 8 | int(self.rng.integers(256))
        if r < 0.97:
            return int(self.rng.integers(1 << 32))
        return self.choice([-1, 1 << 32, None, "x", 1.0])

    # ---- the generic file operations --------------------------------------------------------------------------
    def file_ops(self, hal, fd: int, offsets: list[int], lengths: list[int]) -> None:
        """One of pread, pwrite, mmap, mmio on fd, with offsets and lengths from the pools (and bad ones)."""
        offset = self.choice(offsets + [-1, -PAGE, 1 << 63, (1 << 64) - PAGE, 1.5, None])
        length = self.choice(lengths + [0, 1, 3, 4, PAGE + 1, 1 << 31, (1 << 63) - 1, -1, None])
        op = self.choice(["pread", "pwrite", "mmap", "mmio"])
        if op == "pread":
            self.call("pread", hal.pread, fd, length, offset)
        elif op == "pwrite":
            data = self.rng.bytes(int(self.rng.integers(0, 12))) if self.rng.random() < 0.9 else self.choice(
                BAD_TYPES)
            self.call("pwrite", hal.pwrite, fd, data, offset)
        elif op == "mmap":
            flags = self.choice([MAP_SHARED, MAP_PRIVATE, MAP_SHARED | MAP_NORESERVE, 0, "x"])
            prot = self.choice([PROT_READ, PROT_READ | PROT_WRITE, PROT_NONE, 7, None])
            address = self.call("mmap", hal.mmap, fd, length, offset, prot, flags)
            if address is not None:
                hal.munmap(address, length)
        else:
            width = self.choice([4, 8, 4, 2, 4.0])
            view = self.call("mmio", hal.mmio, fd, length, offset, width)
            for _ in range(3 if view is not None else 0):
                self.call("mmio read", view.__getitem__, int(self.rng.integers(max(length // width, 1))))

    def summary(self, name: str, seconds: float) -> dict:
        return {"file": name, "calls": self.calls, "ok": self.ok, "errno": dict(self.errnos.most_common()),
                "other": dict(self.other), "examples": self.examples, "seconds": round(seconds, 2)}


# ---- the targets: each sets a device file up, then makes `count` random calls on it ---------------------------
def recording(hal, seeds: dict[int, bytes]):
    """hal.ioctl, keeping the first struct each request was made with (a seed the fuzz mutates)."""
    real = hal.ioctl

    def ioctl(fd, request, arg):
        if isinstance(arg, ctypes.Structure):
            seeds.setdefault(request, bytes(arg))
        return real(fd, request, arg)
    return ioctl


def kfd_machine(tmp: Path):
    """Two mock GPUs, each opened by the driver (its VM acquired), an event page and event, a PM4 queue; the
    structs the driver passed on the way, as seeds."""
    from usergpu.drivers.amd.kfd import KFD
    from usergpu.emu.amd.mock.kfd.kfd import MockKFD
    from usergpu.emu.mock.hal import MockHAL

    hal = MockHAL(tmp)
    hal.kfd = MockKFD(hal, "gfx1100", 2)
    hal.seeds = {}
    hal.ioctl = recording(hal, hal.seeds)
    driver, other = KFD(hal), KFD(hal, 1)
    page = driver.alloc(8 * PAGE, "gtt")
    driver.create_event(page)
    ring, pointers = driver.alloc(PAGE, "gtt"), driver.alloc(PAGE, "gtt")
    driver.create_queue("pm4", ring, pointers.va, pointers.va + 8)
    other.map(ring)
    driver.wait_events([1], 0)
    del hal.ioctl
    return hal, driver


def kfd_pools(f: Fuzzer, hal, driver, reserve: int) -> dict[str, list]:
    """Values the mock knows (its GPUs, objects, events, queues, files), near misses and absurd ones."""
    from usergpu.emu.amd.mock.kfd.kfd_queues import ctx_save_restore_sizes

    m = hal.kfd
    sizes = ctx_save_restore_sizes(m.nodes[0].props)
    vas = [b.va + 8 * int(f.rng.integers(PAGE // 8)) for b in m.bos.values()] or [0]
    gpu_ids = [n.gpu_id for n in m.nodes] + [0, 0x1234]
    handles = list(m.bos) + [0, 0x1234, gpu_ids[0] << 32 | 0xFFFF]
    return {"gpu_id": gpu_ids, "handle": handles, "event_page_offset": handles,
            "event_id": list(m.events) + [0, 0x40000000], "queue_id": list(m.held) + [0, 1023, 1024],
            "drm_fd": [driver.drm_fd, driver.fd, driver.drm_fd + 1, 0, 1 << 30],
            "address": vas + [f.mem.user_pages(), f.mem.bad()], "va_addr": [reserve + PAGE * int(f.rng.integers(
                256)), vas[0], 1 << 48, (1 << 64) - PAGE, 1],
            "mmap_offset": [f.mem.user_pages(), 0, 1], "queue_type": [0, 1, 2, 3, 4],
            "size": [PAGE, 2 * PAGE, 8 * PAGE, 1 << 30, 1 << 63, (1 << 64) - 1, 0, 24 << 30, sizes["cwsr_size"],
                     sizes["ctl_stack_size"], 100],
            "flags": [kfd.KFD_IOC_ALLOC_MEM_FLAGS_GTT, kfd.KFD_IOC_ALLOC_MEM_FLAGS_VRAM,
                      kfd.KFD_IOC_ALLOC_MEM_FLAGS_USERPTR, kfd.KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL, 0, 0xFFFFFFFF],
            "n_devices": [1, 2, 3, (1 << 32) - 1, 1 << 20, 0], "n_success": [0, 1, 2],
            "num_events": [0, 1, 2, 100, (1 << 32) - 1, 1 << 17], "num_of_nodes": [0, 1, 2, 3, 4, (1 << 32) - 1],
            "event_type": [0, 1, 5, 8, 99], "xnack": [0, 1, -1], "policy": [0, 1, 2]}


def fuzz_kfd(f: Fuzzer, tmp: Path, count: int) -> None:
    hal, driver = kfd_machine(tmp)
    reserve = os_mmap(0, 256 * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
    for i in range(count):
        if i % 50 == 0:
            pools = kfd_pools(f, hal, driver, reserve)
            f.mem.fill([hal.kfd.nodes[0].gpu_id, *list(hal.kfd.events)[:1], hal.kfd.nodes[1].gpu_id])
        r = f.rng.random()
        if r < 0.9:
            ioc = f.choice(KFD_IOCTLS)
            request = f.request([ioc.request], kfd.AMDKFD_IOCTL_BASE) if r < 0.85 else f.request(
                [i.request for i in KFD_IOCTLS], kfd.AMDKFD_IOCTL_BASE)
            seed = hal.seeds.get(ioc.request) if f.rng.random() < 0.4 else None
            f.call("ioctl", hal.ioctl, driver.fd, request, f.argument(f.struct(ioc.struct, pools, seed=seed)))
        else:
            doorbell = 3 << 62 | driver.gpu_id << 46
            f.file_ops(hal, driver.fd, [doorbell, 2 << 62, 0, doorbell + PAGE], [0x2000, 0x8000, PAGE, 0x10000])
        if len(hal.kfd.bos) > 64:  # keep the objects few, as a process frees what it is done with
            for bo in list(hal.kfd.bos.values())[8:]:
                if not bo.mapped and bo is not hal.kfd.event_page:
                    hal.kfd.release(bo)


def fuzz_render(f: Fuzzer, tmp: Path, count: int) -> None:
    hal, driver = kfd_machine(tmp)
    for _ in range(count):
        if f.rng.random() < 0.3:
            f.call("ioctl", hal.ioctl, driver.drm_fd, f.request([0xC0106440, 0xC0186444, 0x40086409], 0x64),
                   f.argument((ctypes.c_uint8 * 32)()))
        else:
            bos = list(hal.kfd.bos.values())
            f.file_ops(hal, driver.drm_fd, [b.handle * PAGE for b in bos] + [0, PAGE],
                       [b.size for b in bos] + [b.size + PAGE for b in bos])


def vfio_machine(tmp: Path):
    from usergpu.drivers.vfio import VFIOPCIDevice
    from usergpu.emu.amd.mock.pci.machine import bus, machine

    hal = machine("gfx1200", directory=tmp, vfio=True)
    return hal, VFIOPCIDevice(hal, bus(0))


def vfio_repair(hal, dev) -> None:
    """Put the group back in the container with its IOMMU, as a driver would after the fuzz undid it."""
    group = hal.device(dev.group)
    if group.container is None:
        hal.ioctl(dev.group, vfio.VFIO_GROUP_SET_CONTAINER, ctypes.c_int(dev.container))
    if group.container.iommu is None:
        hal.ioctl(dev.container, vfio.VFIO_SET_IOMMU, vfio.VFIO_TYPE1v2_IOMMU)


def vfio_pools(f: Fuzzer, hal, dev) -> dict[str, list]:
    name = f.mem.place(dev.name.encode() + b"\0")
    return {"argsz": [8, 16, 24, 32, 0, 7, 4096, (1 << 32) - 1], "index": list(range(10)) + [0xFFFFFFFF],
            "vaddr": [f.mem.user_pages(), f.mem.user_pages(), 0], "iova": [0x10_0000_0000, 0, 0xFEE0_0000, 1 << 48,
                                                                           (1 << 64) - PAGE, 0x10_0000_0800],
            "size": [PAGE, 2 * PAGE, 0, 1 << 63, (1 << 64) - 1, 100], "flags": [0, 1, 2, 3, 4, 7, 0xFFFFFFFF],
            "fd": [dev.container, dev.group, dev.device, 0, -1, 1 << 30], "name": [name]}


def fuzz_vfio(which: str):
    def fuzz(f: Fuzzer, tmp: Path, count: int) -> None:
        hal, dev = vfio_machine(tmp)
        fds = {"vfio-container": dev.container, "vfio-group": dev.group, "vfio-device": dev.device}
        opened = []
        for i in range(count):
            if i % 20 == 0:
                vfio_repair(hal, dev)
                pools = vfio_pools(f, hal, dev)
            fd = fds[which]
            if which == "vfio-device" and f.rng.random() < 0.5:
                f.file_ops(hal, fd, [n << 40 for n in range(10)] + [7 << 40 | 0xFFC, 7 << 40 | 0x1000, 1 << 40 | PAGE],
                           [4, 2, 1, 8, 0x1000, 2 << 20, 8 << 30])
                continue
            request = f.request(VFIO_IOCTLS, vfio.VFIO_TYPE)
            r = f.rng.random()
            if r < 0.6:
                arg = f.argument(f.struct(f.choice(VFIO_STRUCTS), pools, ()))
            elif r < 0.8:  # a value, or what GET_DEVICE_FD and SET_CONTAINER read: a name, an fd
                arg = f.choice([f.choice(pools["name"]), f.mem.place(ctypes.c_int(f.choice(pools["fd"])).value
                                                                     .to_bytes(4, "little", signed=True)),
                                f.mem.bad(), vfio.VFIO_TYPE1v2_IOMMU, vfio.VFIO_TYPE1_IOMMU, 0, 99])
            else:
                arg = f.choice([ctypes.c_int(f.choice(pools["fd"])), ctypes.create_string_buffer(dev.name.encode()),
                                ctypes.create_string_buffer(b"x" * 5000), *BAD_TYPES])
            got = f.call("ioctl", hal.ioctl, fd, request, arg)
            if got is not None and got >= hal.FIRST_FD and got not in fds.values():
                opened.append(got)  # a device descriptor GET_DEVICE_FD handed out
                if len(opened) > 4:
                    hal.close(opened.pop(0))
    return fuzz


def fuzz_pci(which: str):
    def fuzz(f: Fuzzer, tmp: Path, count: int) -> None:
        from usergpu.emu.amd.mock.pci.machine import bus, machine

        hal = machine("gfx1200", directory=tmp)
        base = f"/sys/bus/pci/devices/{bus(0)}"
        fds = [hal.open(f"{base}/config")] if which == "pci-config" else [
            hal.open(f"{base}/resource{n}") for n in (0, 2, 5)]
        for _ in range(count):
            fd = f.choice(fds)
            if f.rng.random() < 0.1:
                f.call("ioctl", hal.ioctl, fd, f.request(VFIO_IOCTLS, 0x3B), f.argument((ctypes.c_uint8 * 8)()))
            else:
                f.file_ops(hal, fd, [0, 4, 0x10, 0x3C, 0xFFC, 0xFFF, 0x1000, PAGE, 1 << 20],
                           [1, 2, 4, 8, 64, 0x1000, 2 << 20, 8 << 30])
    return fuzz


def fuzz_usb(f: Fuzzer, tmp: Path, count: int) -> None:
    from usergpu.emu.amd.mock.flash.board import Navi31Board
    from usergpu.emu.amd.mock.usb.asm24 import ASM24Backend
    from usergpu.isa.amd.hw import asm24 as asm

    backend = ASM24Backend(Navi31Board(tmp / "flash.bin", fault="", gated=False))
    handle = backend.open_device(0)
    requests = [(asm.IN, asm.XDATA_READ), (asm.OUT, asm.XDATA_WRITE), (asm.OUT, asm.TLP), (asm.IN, asm.TLP),
                (asm.OUT, asm.POWER)]
    modes = [asm.SINGLE, asm.WRITE_STREAM, asm.READ_STREAM]
    tlps = [asm.MRD32, asm.MRD64, asm.MWR32, asm.MWR64, asm.CFGRD0, asm.CFGRD1, asm.CFGWR0, asm.CFGWR1]
    addresses = [0x10_0000_0000, 0x10_0000_0002, 0xFCC0_0000, 0xFCC0_0000 + 0x5C, 0x0100_0000, 0, 1 << 63]
    for _ in range(count):
        r = f.rng.random()
        if r < 0.7:
            kind, request = f.choice(requests) if f.rng.random() < 0.8 else (
                int(f.rng.integers(256)), int(f.rng.integers(256)))
            value = f.choice([0, 1, asm.LINK_STATUS, 0xFFFF, 1 << 16, -1, f.choice(tlps) | 0xF << 8,
                              int(f.rng.integers(1 << 16))])
            index = f.choice([0, 1, 2, f.choice(modes), 0xFF, 1 << 20, int(f.rng.integers(1 << 16))])
            if kind & 0x80:
                data = array("B", bytes(f.choice([0, 1, 8, 255, 256, 12])))
            elif request == asm.TLP and f.rng.random() < 0.7:
                address = f.choice(addresses)
                data = array("B", (address & 0xFFFFFFFF).to_bytes(4, "little") + (address >> 32 & 0xFFFFFFFF)
                             .to_bytes(4, "little") + f.choice([4, 64, 0, 3, 1 << 16, 0xFFFFFFFF, 0x12345678])
                             .to_bytes(4, "little"))
            else:
                data = array("B", f.rng.bytes(int(f.rng.integers(0, 16))))
            f.call("ctrl_transfer", backend.ctrl_transfer, handle, kind, request, value, index, data, 1000)
        elif r < 0.85:
            data = array("B", f.rng.bytes(f.choice([0, 4, 8, 64, 6, 4096])))
            f.call("bulk_write", backend.bulk_write, handle, f.choice([asm.BULK_OUT, asm.BULK_IN, 0, 0x102]), 0,
                   data, 1000)
        else:
            buff = array("B", bytes(f.choice([0, 4, 512, 4096])))
            f.call("bulk_read", backend.bulk_read, handle, f.choice([asm.BULK_IN, asm.BULK_OUT, 0x181]), 0, buff, 1000)


TARGETS = {"kfd": fuzz_kfd, "render": fuzz_render, "vfio-container": fuzz_vfio("vfio-container"),
           "vfio-group": fuzz_vfio("vfio-group"), "vfio-device": fuzz_vfio("vfio-device"),
           "pci-config": fuzz_pci("pci-config"), "pci-resource": fuzz_pci("pci-resource"), "usb": fuzz_usb}


def run_one(name: str, count: int, seed: int) -> dict:
    faulthandler.enable()
    f = Fuzzer(seed)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="usergpu-fuzz-") as tmp:
        TARGETS[name](f, Path(tmp), count)
    return f.summary(name, time.monotonic() - start)


def run_each(names: list[str], count: int, seed: int) -> list[dict]:
    """Each file in a process of its own: a signal that kills it is a crash."""
    out = []
    for name in names:
        p = subprocess.run([sys.executable, __file__, "--file", name, "--count", str(count), "--seed", str(seed),
                            "--json"], capture_output=True, text=True)
        if p.returncode < 0 or not p.stdout.strip():
            out.append({"file": name, "crash": p.returncode, "stderr": p.stderr[-2000:]})
        else:
            out.append(json.loads(p.stdout.splitlines()[-1]) | {"crash": 0})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=2000, help="calls per device file")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--file", action="append", choices=list(TARGETS), help="only this device file (repeatable)")
    parser.add_argument("--json", action="store_true", help="one JSON object per file")
    args = parser.parse_args(argv)
    names = args.file or list(TARGETS)
    results = ([run_one(names[0], args.count, args.seed)] if args.file and len(names) == 1 and args.json else
               run_each(names, args.count, args.seed))
    for r in results:
        if args.json:
            print(json.dumps(r))
        else:
            print(f"{r['file']:15} calls {r.get('calls', '-'):>6}  ok {r.get('ok', '-'):>6}  crash {r['crash']}  "
                  f"other {sum(r.get('other', {}).values())}  errno {r.get('errno', r.get('stderr'))}")
            for key, example in r.get("examples", {}).items():
                print(f"    {key}: {example}")
    return int(any(r.get("crash") or r.get("other") for r in results))


if __name__ == "__main__":
    sys.exit(main())
