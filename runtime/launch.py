"""usergpu.launch: run a kernel on a device as the bare emulator's launch does, through the runtime."""

from __future__ import annotations

import os

import numpy as np

from usergpu.errors import CodeObjectError
from usergpu.runtime.device import Device

_devices: dict[tuple, Device] = {}
MOCK_SHAPE = ("MOCKGPU_ARCH", "MOCKGPU_COUNT", "MOCKGPU_PARTITION", "MOCKPCI_DIR", "MOCKPCI_VFIO", "MOCKGPU_NV_ARCH",
              "MOCKGPU_NV_RELEASE")  # a mock's make


def open_device(name: str | Device | None) -> Device:
    """The process's Device for a device string (opened once per string and mock shape, again after a close), or
    the Device given."""
    if isinstance(name, Device):
        return name
    key = (name or os.environ.get("DEV", ""), *map(os.environ.get, MOCK_SHAPE))
    if key not in _devices or _devices[key].closed:
        _devices[key] = Device(name)
    return _devices[key]


def launch(co: bytes | str, kernel: str, grid: tuple, block: tuple, args: list, device: str | Device | None = None,
           stats: dict | None = None, shared: int = 0) -> list[np.ndarray]:
    """Run a kernel of a code object (an AMDGPU ELF; a cubin on an NVIDIA device) on a device ($DEV by default):
    numpy arrays become device buffers, copied in before and back out after; the list of them (after the kernel)
    in argument order. Python and numpy scalars go by value as the metadata says, bytes as a by-value aggregate, a
    Buffer as its address. Arguments are checked against the kernel's metadata before anything runs. Each array's
    buffer ends where its pages do, so a kernel writing past the array faults. The code object stays loaded on the
    device for the next launch. stats receives the kernel's time in seconds from the GPU's timestamps. shared:
    dynamic shared memory bytes (an NVIDIA kernel's extern __shared__ array)."""
    if not isinstance(co, bytes | bytearray | str):
        raise CodeObjectError(f"a code object is bytes (an ELF file's contents) or PTX text, not {type(co).__name__}")
    dev = open_device(device)
    k = dev.program(co.encode() if isinstance(co, str) else bytes(co)).kernel(kernel)
    k.check(list(args))
    bufs = []
    try:
        call = []
        for a in args:
            if isinstance(a, np.ndarray) and a.ndim:
                buf = dev.alloc(a.nbytes, at_end=True)
                bufs.append((buf, a))
                buf.copyin(a)
                call.append(buf)
            else:
                call.append(a)
        seconds = k(*call, grid=grid, block=block, shared=shared)
        if stats is not None:
            stats["seconds"] = seconds
        return [buf.copyout(a.dtype, a.size).reshape(a.shape) for buf, a in bufs]
    finally:
        for buf, _ in bufs:
            buf.free()
