"""What a user of the runtime hits first, made to hold: no use after free, no leaks, arguments checked against the
kernel's metadata, hangs bounded by the Device's timeout, and only usergpu errors for bad input."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import usergpu
from usergpu.emu.amd import launch as emu_launch
from usergpu.errors import Error, GPUFault, GPUHang
from usergpu.runtime.buffer import BufferError
from usergpu.runtime.launch import launch

KERNELS = """
__kernel void scale(__global float *a, float s) { a[__builtin_amdgcn_workitem_id_x()] *= s; }
__kernel void count(__global int *a, int n, uchar small) { a[__builtin_amdgcn_workitem_id_x()] = n + small; }
__kernel void spin(__global volatile int *a) { while (a[0] == 0) {} }
__kernel void past(__global int *a, int n) { a[n] = 7; }
"""


@pytest.fixture(scope="module")
def co():
    return usergpu.compile_opencl(KERNELS, "gfx1100", ["-cl-kernel-arg-info"])


# ---- use after free, close ---------------------------------------------------------------------------------------
def test_a_freed_buffer_refuses_every_use(open_device, co):
    dev = open_device()
    buf = dev.alloc(256)
    buf.free()
    for use in (buf.view, lambda: buf.copyin(b"x"), buf.copyout, lambda: buf.va, buf.free,
                lambda: dev.load(co).kernels["scale"](buf, 2.0, grid=(1,), block=(32,))):
        with pytest.raises(BufferError, match="freed"):
            use()
    assert "freed" in repr(buf)


def test_closing_a_device_frees_what_it_holds_and_refuses_more(open_device, co):
    dev = open_device()
    buf, prog = dev.alloc(4096), dev.load(co)
    dev.close()
    with pytest.raises(BufferError, match="device was closed"):
        buf.copyout()
    with pytest.raises(BufferError):
        prog.kernels["scale"](prog.buf, 1.0)
    with pytest.raises(usergpu.DeviceNotFound, match="closed"):
        dev.alloc(16)
    dev.close()  # twice: nothing more to do


def test_copies_past_the_end_and_bad_sizes_are_refused(open_device):
    dev = open_device()
    buf = dev.alloc(64)
    with pytest.raises(BufferError, match="runs past the end"):
        buf.copyout(np.float32, 17)
    with pytest.raises(BufferError, match="runs past the end"):
        buf.copyin(np.zeros(65, np.uint8))
    with pytest.raises(BufferError, match="runs past the end"):
        buf.copyin(b"abcd", offset=61)
    assert list(buf.copyout(np.uint8, 4, offset=60)) == [0] * 4
    for size in (-1, 1.5, "8", None, 1 << 63):
        with pytest.raises(BufferError):
            dev.alloc(size)


LEAK_CHECK = """
import glob, os, resource, tempfile, numpy as np, usergpu
co = usergpu.compile_opencl(open({src!r}).read(), "gfx1100", ["-cl-kernel-arg-info"])
def counts():
    return (len(os.listdir("/proc/self/fd")), len(open("/proc/self/maps").read().splitlines()),
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
a = np.ones(64, np.float32)
def cycle():
    d = usergpu.Device({dev!r}); d.alloc(1 << 16); d.load(co); d.close()
for _ in range(20):  # warm up: imports, the mock machine, caches
    cycle()
    usergpu.launch(co, "scale", (1,), (64,), [a, 2.0], {dev!r})
before = counts()
for _ in range({cycles}):
    cycle()
for _ in range({launches}):
    usergpu.launch(co, "scale", (1,), (64,), [a, 2.0], {dev!r})
print(*before, *counts())
"""


@pytest.mark.parametrize("dev", ["MOCKKFD+AMD", "MOCKPCI+AMD"])
def test_open_close_cycles_and_launches_hold_fds_maps_and_memory_flat(dev, tmp_path):
    src = tmp_path / "k.cl"
    src.write_text(KERNELS)
    env = os.environ | {"TMPDIR": str(tmp_path)}
    script = LEAK_CHECK.format(src=str(src), dev=dev, cycles=100, launches=1000)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    fds0, maps0, rss0, fds1, maps1, rss1 = map(int, out.stdout.split())
    assert fds1 == fds0
    assert maps1 - maps0 <= 2  # Python's own allocator arenas come and go; a leak would add one per cycle
    assert rss1 - rss0 < 32 << 10  # KiB: allocator noise, not a leak of 1,100 devices' or launches' memory
    left = [p.name for p in tmp_path.iterdir() if p.name.startswith("usergpu-mock-")]
    assert left == []  # the mock KFD's sysfs folder went with the process


# ---- arguments against the metadata -------------------------------------------------------------------------------
BAD_ARGS = [
    ("scale", [np.ones(64, np.float64), 2.0], "expected an array of float32, got float64"),
    ("scale", [np.ones(64, np.int32), 2.0], "expected an array of float32, got int32"),
    ("scale", [np.ones(64, np.float32), "2"], "expected a float32 number, got str"),
    ("scale", [np.ones(64, np.float32), np.float64(2)], "expected float32, got a float64 scalar"),
    ("scale", [np.ones(64, np.float32)], "takes 2 arguments"),
    ("scale", [2.0, 2.0], "is a pointer"),
    ("count", [np.zeros(64, np.int32), 1.5, 1], "expected an integer, got the float 1.5"),
    ("count", [np.zeros(64, np.int32), 1 << 31, 1], "outside -2147483648..2147483647"),
    ("count", [np.zeros(64, np.int32), 1, 256], "outside 0..255"),
    ("count", [np.zeros(64, np.int32), 1, -1], "outside 0..255"),
    ("count", [np.zeros(64, np.uint32), 1, 1], "expected an array of int32, got uint32"),
]


@pytest.mark.parametrize("where", ["emulator", "runtime"])
@pytest.mark.parametrize(("kernel", "args", "says"), BAD_ARGS, ids=[f"{k}-{s[:24]}" for k, _, s in BAD_ARGS])
def test_arguments_the_metadata_refuses(co, kernel, args, says, where):
    run = emu_launch if where == "emulator" else lambda *a: launch(*a, device="MOCKKFD+AMD")
    with pytest.raises(Error, match=says.replace("(", r"\(").replace("*", r"\*")):
        run(co, kernel, (1, 1, 1), (64, 1, 1), args)


@pytest.mark.parametrize(("grid", "says"), [(4, "tuple of 1 to 3 ints"), ("4", "tuple of 1 to 3 ints"),
                                            ((1.0, 1, 1), "tuple of 1 to 3 ints"), ((0, 1, 1), "at least one"),
                                            ((1 << 32, 1, 1), "2\\^32"), ((1, 1, 1, 1), "tuple of 1 to 3")])
def test_bad_grids_are_refused(co, grid, says):
    with pytest.raises(Error, match=says):
        launch(co, "scale", grid, (64,), [np.ones(64, np.float32), 1.0], "MOCKKFD+AMD")


def test_python_api_refuses_bad_input_with_usergpu_errors(co):
    with pytest.raises(Error, match="no kernel 'nope'.*scale"):
        launch(co, "nope", (1,), (64,), [], "MOCKKFD+AMD")
    for name in ("MOCKKFD+AMD:-1", "MOCKKFD+AMD:abc", "NOPE+AMD", 3):
        with pytest.raises(usergpu.DeviceNotFound):
            usergpu.Device(name)
    with pytest.raises(Error, match="bytes"):
        launch("not a code object", "scale", (1,), (64,), [], "MOCKKFD+AMD")
    with pytest.raises(Error, match="built for gfx1100; it cannot run as gfx1200"):
        emu_launch(co, "scale", (1,), (64,), [np.ones(64, np.float32), 1.0], arch="gfx1200")


def test_mock_count_must_be_a_count(monkeypatch):
    from usergpu.emu.amd.mock.machines import mock_hal

    for bad in ("abc", "0", "-1", "100000"):
        monkeypatch.setenv("MOCKGPU_COUNT", bad)
        with pytest.raises(usergpu.DeviceNotFound, match="MOCKGPU_COUNT"):
            mock_hal()


def test_writing_past_an_undersized_array_faults_on_the_mock_as_on_the_emulator(co):
    a = np.zeros(100, np.int32)  # 400 bytes: the page holds 3,696 more the kernel may not touch
    assert launch(co, "past", (1,), (1,), [a, 99], "MOCKKFD+AMD")[0][99] == 7
    for run in (emu_launch, lambda *args: launch(*args, device="MOCKKFD+AMD")):
        with pytest.raises(GPUFault) as e:
            run(co, "past", (1, 1, 1), (1, 1, 1), [a, 100])
        assert e.value.access == "write" and e.value.kernel == "past"


# ---- hangs --------------------------------------------------------------------------------------------------------
def test_a_kernel_that_never_ends_is_a_hang_within_the_timeout_naming_it(open_device, co, monkeypatch):
    monkeypatch.setenv("MOCKGPU_BUDGET", str(1 << 50))  # no instruction budget: the runtime's timeout ends it
    dev = open_device(timeout=2)
    prog = dev.program(co)
    buf = dev.alloc(4096)
    start = time.monotonic()
    with pytest.raises(GPUHang) as e:
        prog.kernels["spin"](buf, grid=(1, 1, 1), block=(32, 1, 1))
    took = time.monotonic() - start
    assert 2 <= took < 4, took
    assert e.value.kernel == "spin" and "Device(timeout=...)" in str(e.value)
    start = time.monotonic()
    prog.kernels["count"](buf, 3, 0, grid=(1, 1, 1), block=(32, 1, 1))  # the next launch runs at once
    assert time.monotonic() - start < 1 and list(buf.copyout(np.int32, 32)) == [3] * 32


def test_after_an_sdma_fault_the_next_copy_and_launch_run_at_once(open_device, co):
    dev = open_device(timeout=30)
    buf = dev.alloc(4 << 20)
    with pytest.raises(Error, match="memory fault: read of 0x10000"):
        dev.dma_copy(buf.va, 0x10000, 4096)  # nothing is mapped at 64 KiB
    start = time.monotonic()
    buf.copyin(np.arange(1 << 20, dtype=np.int32))  # 4 MiB: through SDMA
    dev.program(co).kernels["count"](buf, 5, 1, grid=(1, 1, 1), block=(32, 1, 1))
    assert time.monotonic() - start < 5
    assert list(buf.copyout(np.int32, 33)) == [6] * 32 + [32]


def test_the_hang_message_is_not_self_contradictory():
    code = textwrap.dedent("""
        import usergpu
        from usergpu.runtime.amd.pm4 import Packets
        dev = usergpu.Device("MOCKKFD+AMD", timeout=0.2)
        value = dev.next_timeline_value()
        dev.compute.submit(Packets().wait(dev.signal(), 1).signal(dev.timeline, value, dev.event))
        try:
            dev.synchronize()
        except usergpu.GPUHang as e:
            print(e)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "is 0, waited for 1" in out.stdout, out.stdout + out.stderr
