"""usergpu.launch: run a kernel on a device as the bare emulator's launch does, through the runtime."""

from __future__ import annotations

import os

import numpy as np

from usergpu.runtime.device import Device

_devices: dict[tuple, Device] = {}


def open_device(name: str | Device | None) -> Device:
    """The process's Device for a device string (opened once per string and mock shape), or the Device given."""
    if isinstance(name, Device):
        return name
    key = (name or os.environ.get("DEV", ""), os.environ.get("MOCKGPU_ARCH"), os.environ.get("MOCKGPU_COUNT"),
           os.environ.get("MOCKPCI_DIR"), os.environ.get("MOCKPCI_VFIO"))
    if key not in _devices:
        _devices[key] = Device(name)
    return _devices[key]


def launch(co: bytes, kernel: str, grid: tuple, block: tuple, args: list, device: str | Device | None = None,
           stats: dict | None = None) -> list[np.ndarray]:
    """Run a kernel on a device ($DEV by default): numpy arrays become device buffers, copied in before and back
    out after; the list of them (after the kernel) in argument order. Python and numpy scalars go by value as the
    metadata says, bytes as a by-value aggregate, a Buffer as its address. stats receives the kernel's time in
    seconds from the GPU's timestamps."""
    dev = open_device(device)
    prog = dev.load(co)
    bufs = []
    call = []
    for a in args:
        if isinstance(a, np.ndarray) and a.ndim:
            buf = dev.alloc(a.nbytes)
            buf.copyin(a)
            bufs.append((buf, a))
            call.append(buf)
        else:
            call.append(a)
    seconds = prog.kernels[kernel](*call, grid=grid, block=block)
    if stats is not None:
        stats["seconds"] = seconds
    out = [buf.copyout(a.dtype, a.size).reshape(a.shape) for buf, a in bufs]
    for buf, _ in bufs:
        buf.free()
    return out
