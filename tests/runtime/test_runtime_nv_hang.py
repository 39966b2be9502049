"""A kernel that never ends on MOCK+NV: the mock GPU runs it a slice at a time on its worker while the runtime only
polls memory, so the runtime's wait raises GPUHang at the device's timeout, naming the kernel, and the device goes on
(its channels made anew); a device closed while the kernel runs stops it."""

from __future__ import annotations

import threading
import time
from functools import cache

import numpy as np
import nv_corpus  # tests/kernels, on the path by tests/conftest.py
import pytest

import usergpu
from usergpu.emu.nv.mock.compute import LAUNCH_SLICE
from usergpu.errors import GPUHang

pytestmark = pytest.mark.skipif(not nv_corpus.has_toolchain(), reason=nv_corpus.TOOLCHAIN)

SRC = r"""
extern "C" __global__ void spin(volatile int *x) { while (x[0] == 0) x[2] = x[2] + 1; }
extern "C" __global__ void fill(unsigned *out, unsigned value) { out[threadIdx.x] = value + threadIdx.x; }
"""
MARGIN = 0.75  # seconds for a loaded machine: the device's channels made anew, the GIL shared with the worker


@pytest.fixture
def dev(monkeypatch):
    monkeypatch.setenv("MOCKGPU_NV_ARCH", "sm_90")
    monkeypatch.delenv("MOCKGPU_NV_BUDGET", raising=False)  # the default budget: the spin outlives every wait here
    device = usergpu.Device("MOCK+NV", timeout=2)
    yield device
    device.close()


def _workers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("usergpu-nv-gpu")]


@cache
def _cubin(arch: str) -> bytes:
    return usergpu.assemble_ptx(usergpu.compile_cuda(SRC, arch), arch)


def _program(dev):
    return dev.load(_cubin(dev.arch))


def _fill_works(dev, prog, value: int) -> None:
    buf = dev.alloc(4096)
    prog.kernel("fill")(buf, np.uint32(value), grid=(1, 1, 1), block=(32, 1, 1))
    assert (buf.copyout(np.uint32, 32) == value + np.arange(32)).all()


def test_a_spinning_kernel_is_a_gpu_hang_at_the_timeout_and_the_device_goes_on(dev):
    prog = _program(dev)
    flag = dev.alloc(4096)
    start = time.monotonic()
    with pytest.raises(GPUHang) as e:
        prog.kernel("spin")(flag, grid=(1, 1, 1), block=(1, 1, 1))
    took = time.monotonic() - start
    assert e.value.kernel == "spin" and "after 2 s" in str(e.value) and "Device(timeout=...)" in str(e.value)
    # the doorbell's own slice, the 2 s wait, the slice the worker was in when the channels were torn down
    assert 2 <= took < 2 + 2 * LAUNCH_SLICE + MARGIN
    assert flag.copyout(np.int32, 3)[2] > 0  # it did run meanwhile
    _fill_works(dev, prog, 7)
    deadline = time.monotonic() + 2 * LAUNCH_SLICE + 1
    while _workers() and time.monotonic() < deadline:  # the channel torn down: the worker has nothing left
        time.sleep(0.01)
    assert not _workers()


def test_a_kernel_released_by_the_host_ends_while_the_runtime_waits(dev):
    prog = _program(dev)
    flag = dev.alloc(4096)
    prog.kernel("spin")(flag, grid=(1, 1, 1), block=(1, 1, 1), wait=False)
    deadline = time.monotonic() + LAUNCH_SLICE + MARGIN  # the doorbell's slice ends by the clock: later when loaded
    while not _workers() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _workers()  # the worker runs it: the doorbell gave the caller back control
    words = flag.view().cast("i")  # the host's mapping: read and written with no wait for the GPU
    counted = words[2]
    words[0] = 1
    dev.synchronize()
    assert words[2] >= counted > 0
    _fill_works(dev, prog, 3)


def test_closing_the_device_stops_its_running_kernel(monkeypatch):
    monkeypatch.setenv("MOCKGPU_NV_ARCH", "sm_90")
    device = usergpu.Device("MOCK+NV", timeout=2)
    prog = _program(device)
    flag = device.alloc(4096)
    prog.kernel("spin")(flag, grid=(1, 1, 1), block=(1, 1, 1), wait=False)
    gpu = device.hal.nv.gpu(device.index)
    assert gpu.launching()
    start = time.monotonic()
    device.close()
    assert time.monotonic() - start < LAUNCH_SLICE + MARGIN
    assert not gpu.launching()
