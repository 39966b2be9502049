"""/dev/nvidiactl and /dev/nvidiaN of the mock machine: nvidia.ko's file operations (kernel-open/nvidia/nv.c,
nv-mmap.c, nv-usermap.c).

The ioctl entry is nvidia_ioctl's: the request's _IOC_NR picks the escape and _IOC_SIZE is the size of the caller's
struct (nvidia.ko looks at neither its type nor its direction), copied in whole (EFAULT if it cannot be), handled,
and copied back (unless the copy-in faulted) whether the escape succeeded or not; NV_ESC_IOCTL_XFER_CMD carries
another escape's number, size and pointer (its own size must be exact, the other's at most 16 KiB, else EINVAL).
The escapes nv.c answers itself are here (CARD_INFO, CHECK_VERSION_STR, SYS_PARAMS, ATTACH_GPUS_TO_FD and, from 555,
WAIT_OPEN_COMPLETE); the rest go to the RM (rm.py).

mmap maps what the descriptor's mapping context (left by NV_ESC_RM_MAP_MEMORY) names: on /dev/nvidiactl system
memory (ERANGE past the object), on /dev/nvidiaN video memory (the length must be the context's, else ENXIO); no
context, or a page offset other than 0, is EINVAL (nvidia_mmap_helper). The usermode registers are mapped with
mmio (a write of a work-submit token at NOTIFY_CHANNEL_PENDING (+0x90) rings the GPU's doorbell at once) or with
mmap, as a client that stores to them through memory does (tinygrad): shared memory the doorbell agent watches."""

from __future__ import annotations

import ctypes
import errno

from usergpu.emu.mock.uaccess import copy_from_user, copy_to_user
from usergpu.emu.nv.mock import chips
from usergpu.emu.nv.mock.rm import MapContext
from usergpu.hostmem import MAP_SHARED, CallbackMMIO, os_mmap

MAX_IOCTL_SIZE = 16384  # NV_ABSOLUTE_MAX_IOCTL_SIZE
DOORBELL, TIME_0, TIME_1 = 0x90, 0x80, 0x84  # NV_USERMODE_NOTIFY_CHANNEL_PENDING, NV_USERMODE_TIME_0/1 (offsets)


def _errno(code: int, why: str) -> OSError:
    return OSError(code, f"nvidia ioctl: {why}")


class NVFile:
    """An open /dev/nvidiactl (index None) or /dev/nvidia<index>."""

    def __init__(self, machine, index: int | None):
        self.m, self.index = machine, index
        self.ctl = index is None
        self.ctl_file: NVFile | None = None  # the control descriptor NV_ESC_REGISTER_FD linked this one to
        self.context: MapContext | None = None
        self.attached: list[int] = []  # NV_ESC_ATTACH_GPUS_TO_FD's gpu ids
        u = machine.uvm
        self.escapes = {u.NV_ESC_CARD_INFO: self.card_info, u.NV_ESC_CHECK_VERSION_STR: self.check_version,
                        u.NV_ESC_SYS_PARAMS: self.sys_params, u.NV_ESC_ATTACH_GPUS_TO_FD: self.attach_gpus}
        if hasattr(u, "NV_ESC_WAIT_OPEN_COMPLETE"):
            self.escapes[u.NV_ESC_WAIT_OPEN_COMPLETE] = self.wait_open_complete
        machine.opened(self)

    @property
    def owner(self) -> NVFile:
        """Whose clients the RM objects made through this descriptor are (the registered control descriptor's)."""
        return self.ctl_file or self

    def close(self) -> None:
        with self.m.lock:
            self.m.closed(self)

    # ---- ioctl -------------------------------------------------------------------------------------------------
    def ioctl(self, request: int, arg: int) -> None:
        u = self.m.uvm
        nr, size, pointer = request & 0xFF, (request >> 16) & 0x3FFF, arg
        if nr == u.NV_ESC_IOCTL_XFER_CMD:
            if size != ctypes.sizeof(u.nv_ioctl_xfer_t):
                raise _errno(errno.EINVAL, f"XFER of {size} bytes")
            xfer = u.nv_ioctl_xfer_t.from_buffer(copy_from_user(arg, size, "NV_ESC_IOCTL_XFER_CMD"))
            nr, size, pointer = xfer.cmd, xfer.size, xfer.ptr or 0
            if size > MAX_IOCTL_SIZE:
                raise _errno(errno.EINVAL, f"XFER of an escape of {size} bytes")
        data = copy_from_user(pointer, size, f"nvidia escape {nr:#x}")
        try:
            with self.m.lock:
                if nr in self.escapes:
                    self.escapes[nr](data)
                else:
                    self.m.resman.ioctl(self, nr, data)
        finally:
            copy_to_user(pointer, data, f"nvidia escape {nr:#x}")

    def _ctl_only(self, what: str) -> None:
        if not self.ctl:
            raise _errno(errno.EINVAL, f"{what} is for /dev/nvidiactl")

    def card_info(self, data: bytearray) -> None:
        """nvidia_read_card_info: one nv_ioctl_card_info_t per GPU, as many as fit (EINVAL if fewer than the GPUs);
        the rest zeroed."""
        self._ctl_only("NV_ESC_CARD_INFO")
        struct = self.m.uvm.nv_ioctl_card_info_t
        cards = (struct * (len(data) // ctypes.sizeof(struct))).from_buffer(data)
        ctypes.memset(cards, 0, ctypes.sizeof(cards))
        if len(cards) < self.m.count:
            raise _errno(errno.EINVAL, f"CARD_INFO room for {len(cards)} of {self.m.count} GPUs")
        for index in range(self.m.count):
            card, facts = cards[index], self.m.card(index)
            card.valid = 1
            domain, bus, slot, _ = chips.pci(index)
            card.pci_info.domain, card.pci_info.bus, card.pci_info.slot = domain, bus, slot
            card.pci_info.vendor_id, card.pci_info.device_id = 0x10DE, self.m.chip.device_id
            card.gpu_id, card.minor_number = chips.gpu_id(index), index
            for name in ("reg_address", "reg_size", "fb_address", "fb_size", "interrupt_line"):
                setattr(card, name, facts[name])

    def check_version(self, data: bytearray) -> None:
        """RmPerformVersionCheck: reply RECOGNIZED; QUERY gets the release string; STRICT compares the whole string,
        RELAXED up to the first '.'; a mismatch (or a struct of another size) is EINVAL, the release string in the
        struct."""
        self._ctl_only("NV_ESC_CHECK_VERSION_STR")
        u, release = self.m.uvm, self.m.release.encode()
        if len(data) != ctypes.sizeof(u.nv_ioctl_rm_api_version_t):
            raise _errno(errno.EINVAL, f"CHECK_VERSION_STR of {len(data)} bytes")
        a = u.nv_ioctl_rm_api_version_t.from_buffer(data)
        a.reply = u.NV_RM_API_VERSION_REPLY_RECOGNIZED
        if a.cmd == u.NV_RM_API_VERSION_CMD_QUERY:
            a.versionString = release
            return
        theirs = bytes(a.versionString).split(b"\0")[0]
        if theirs == release or a.cmd == u.NV_RM_API_VERSION_CMD_RELAXED and theirs.split(b".")[0] == \
                release.split(b".")[0] and b"." in theirs:
            return
        a.versionString = release
        raise _errno(errno.EINVAL, f"the client is {theirs.decode(errors='replace')}, the driver {self.m.release}")

    def sys_params(self, data: bytearray) -> None:
        """NV_ESC_SYS_PARAMS: the NUMA memory block size, set once (EBUSY for another one after)."""
        self._ctl_only("NV_ESC_SYS_PARAMS")
        u = self.m.uvm
        if len(data) != ctypes.sizeof(u.nv_ioctl_sys_params_t):
            raise _errno(errno.EINVAL, f"SYS_PARAMS of {len(data)} bytes")
        size = u.nv_ioctl_sys_params_t.from_buffer(data).memblock_size
        if self.m.memblock_size not in (0, size):
            raise _errno(errno.EBUSY, f"the memory block size is {self.m.memblock_size:#x}")
        self.m.memblock_size = size

    def attach_gpus(self, data: bytearray) -> None:
        """NV_ESC_ATTACH_GPUS_TO_FD: gpu ids (0 skipped), once per descriptor; an unknown one is EINVAL."""
        self._ctl_only("NV_ESC_ATTACH_GPUS_TO_FD")
        ids = list((ctypes.c_uint32 * (len(data) // 4)).from_buffer(data))
        known = {chips.gpu_id(i) for i in range(self.m.count)}
        if not ids or self.attached or len(data) % 4 or any(g and g not in known for g in ids):
            raise _errno(errno.EINVAL, f"ATTACH_GPUS_TO_FD of {ids}")
        self.attached = ids

    def wait_open_complete(self, data: bytearray) -> None:
        """555's NV_ESC_WAIT_OPEN_COMPLETE: the mock's opens complete at once (rc 0, adapter status NV_OK)."""
        data[:8] = bytes(min(len(data), 8))

    # ---- mmap and mmio -----------------------------------------------------------------------------------------
    def _context(self, length: int, offset: int) -> MapContext:
        ctx = self.context
        if ctx is None or offset != 0:
            raise OSError(errno.EINVAL, "nvidia mmap: no mapping context on the descriptor, or a page offset")
        if not self.ctl and length != ctx.length:
            raise OSError(errno.ENXIO, f"nvidia mmap of {length:#x} bytes: the context is {ctx.length:#x}")
        return ctx

    def mmap(self, length: int, offset: int, prot: int, flags: int, address: int) -> int:
        ctx = self._context(length, offset)
        if ctx.kind == "usermode":
            page = self.m.usermode_page(self.m.gpu(ctx.memory.state).index, length)
            mapped = os_mmap(address, length, prot, flags | MAP_SHARED, page, 0)
            self.m.agent.trap(mapped, length)  # a doorbell stored through a memoryview runs the channels at once
            return mapped
        if ctx.offset + length > ctx.memory.state.size:
            raise OSError(errno.ERANGE, f"nvidia mmap of {length:#x} bytes at {ctx.offset:#x}")
        return ctx.memory.state.pages.map_into(address, length, ctx.offset, prot, flags)

    def mmio(self, length: int, offset: int, width: int) -> CallbackMMIO:
        """The usermode registers: TIME_0/1 read the GPU's nanosecond clock, a write at NOTIFY_CHANNEL_PENDING
        rings the doorbell with the token written; other registers read 0 and ignore writes."""
        ctx = self._context(length, offset)
        if ctx.kind != "usermode":
            raise OSError(errno.EINVAL, "nvidia mmio: the descriptor maps memory, not registers")
        gpu = self.m.gpu(ctx.memory.state)

        def read(index: int) -> int:
            now = gpu.timestamp()
            words = {TIME_0: now & 0xFFFFFFE0, TIME_1: now >> 32 & 0x1FFFFFFF}
            if width == 8:
                return words.get(index * 8, 0) | words.get(index * 8 + 4, 0) << 32
            return words.get(index * 4, 0)

        def write(index: int, value: int) -> None:
            if index * width == DOORBELL:
                with self.m.lock:
                    gpu.doorbell(value & 0xFFFFFFFF)
        return CallbackMMIO(read, write)

