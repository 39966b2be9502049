"""OpenCL C printf through the runtime (MOCKKFD+AMD: gfx1100 on its PM4 queue, gfx942 on AQL over 8 XCCs): a
waited launch prints what every work-item wrote, once; a printf kernel's buffer is made at its first launch and
given back with its program."""

from __future__ import annotations

import numpy as np
import pytest
from printf_kernels import printf_kernels

import usergpu

ARCHS = ("gfx1100", "gfx942")


@pytest.fixture(params=ARCHS)
def dev(request, monkeypatch):
    monkeypatch.setenv("MOCKGPU_ARCH", request.param)
    d = usergpu.Device("MOCKKFD+AMD")
    yield d
    d.close()


def expected(x: np.ndarray) -> list[str]:
    return sorted(f"thread {i} value {v:f}" for i, v in enumerate(x))


def test_each_of_64_threads_prints_its_id_and_float(dev, capfd):
    x = np.arange(64, dtype=np.float32) * 1.5 - 7
    usergpu.launch(printf_kernels(dev.arch), "ids", grid=(2, 1, 1), block=(32, 1, 1), args=[x], device=dev)
    assert sorted(capfd.readouterr().out.splitlines()) == expected(x)


def test_each_waited_launch_prints_its_own_lines_once(dev, capsys):
    k = dev.load(printf_kernels(dev.arch)).kernels["ids"]
    x = np.arange(64, dtype=np.float32)
    buf = dev.alloc(x.nbytes)
    buf.copyin(x)
    for _ in range(2):
        k(buf, grid=(1, 1, 1), block=(64, 1, 1))
        assert sorted(capsys.readouterr().out.splitlines()) == expected(x)


def test_a_launch_not_waited_for_prints_with_the_next_waited_one(dev, capsys):
    k = dev.load(printf_kernels(dev.arch)).kernels["ordered"]
    n = dev.alloc(4)
    n.copyin(np.array([1], np.int32))
    k(n, grid=(1, 1, 1), block=(2, 1, 1), wait=False)
    k(n, grid=(1, 1, 1), block=(2, 1, 1))
    assert sorted(capsys.readouterr().out.splitlines()) == ["0:0", "0:0", "1:0", "1:0"]


def test_a_launch_not_waited_for_prints_at_synchronize(dev, capsys):
    k = dev.load(printf_kernels(dev.arch)).kernels["ordered"]
    n = dev.alloc(4)
    n.copyin(np.array([2], np.int32))
    k(n, grid=(1, 1, 1), block=(2, 1, 1), wait=False)
    dev.synchronize()
    assert sorted(capsys.readouterr().out.splitlines()) == ["0:0", "0:1", "1:0", "1:1"]
    dev.synchronize()  # printed once
    assert capsys.readouterr().out == ""


def test_the_buffer_is_made_once_and_freed_with_the_program(dev):
    prog = dev.load(printf_kernels(dev.arch))
    k = prog.kernels["ids"]
    assert k.printf_buffer is None
    x = dev.alloc(256)
    k(x, grid=(1, 1, 1), block=(1, 1, 1))
    first = k.printf_buffer
    k(x, grid=(1, 1, 1), block=(1, 1, 1))
    assert k.printf_buffer is first
    prog.free()
    with pytest.raises(usergpu.Error, match="freed"):
        first.view()


def test_a_kernel_the_gpu_stops_prints_nothing_and_leaves_an_empty_buffer(dev, capsys):
    prog = dev.load(printf_kernels(dev.arch))
    p = dev.alloc(4)
    with pytest.raises(usergpu.GPUFault):
        prog.kernels["faults"](p, grid=(1, 1, 1), block=(1, 1, 1))
    assert capsys.readouterr().out == ""
    assert prog.kernels["faults"].printf_buffer.view()[:4].tobytes() == bytes(4)
