"""OpenCL C printf on the bare emulator: every work-item's lines on stdout after the kernel, in its own order."""

from __future__ import annotations

import numpy as np
import pytest
from printf_kernels import printf_kernels

from usergpu.emu.amd import launch
from usergpu.isa.amd.codeobj import compile_opencl, printf

ARCHS = ("gfx1100", "gfx942")  # wave32 and wave64
KINDS = ("lit|???|A|-1099511627776|-3| 3.14|1.500000e+00|ff|(nil)\n"  # a non-constant %s is stored as "???"
         "1.000000,2.000000,3.000000,4.000000|5,-6|1,-2,3|7,8\n"
         "colon: tab\t quote\" 100%\n"
         "no newline then one\n")


@pytest.mark.parametrize("arch", ARCHS)
def test_each_of_64_threads_prints_its_id_and_float(arch, capfd):
    x = (np.arange(64, dtype=np.float32) - 10) * 0.25
    launch(printf_kernels(arch), "ids", grid=(2, 1, 1), block=(32, 1, 1), args=[x])
    lines = capfd.readouterr().out.splitlines()
    assert sorted(lines) == sorted(f"thread {i} value {v:f}" for i, v in enumerate(x))


@pytest.mark.parametrize("arch", ARCHS)
def test_a_thread_s_lines_keep_its_order_and_a_launch_prints_only_its_own(arch, capsys):
    co = printf_kernels(arch)
    for n in (3, 1):
        launch(co, "ordered", grid=(1, 1, 1), block=(64, 1, 1), args=[np.array([n], np.int32)])
        lines = [tuple(map(int, line.split(":"))) for line in capsys.readouterr().out.splitlines()]
        assert sorted(lines) == [(i, k) for i in range(64) for k in range(n)]
        for i in range(64):
            assert [k for t, k in lines if t == i] == list(range(n))


@pytest.mark.parametrize("arch", ARCHS)
def test_every_stored_kind_prints_as_c_does(arch, capsys):
    launch(printf_kernels(arch), "kinds", grid=(1, 1, 1), block=(1, 1, 1),
           args=[np.frombuffer(b"dyn\0", np.int8).copy(), -(1 << 40)])
    assert capsys.readouterr().out == KINDS


def test_a_full_buffer_drops_whole_records(monkeypatch, capsys):
    """__printf_alloc returns NULL once a record does not fit: 248 bytes after the header hold 20 of 64 records of
    12 bytes; none is cut."""
    monkeypatch.setattr(printf, "BUFFER_BYTES", 256)
    x = np.ones(64, np.float32)
    launch(printf_kernels("gfx1100"), "ids", grid=(1, 1, 1), block=(64, 1, 1), args=[x])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 20 and all(line.endswith("value 1.000000") for line in lines)


def test_a_kernel_without_printf_makes_no_buffer(monkeypatch, capfd):
    co = compile_opencl("kernel void k(global int *a) { a[0] = 7; }", "gfx1100")
    monkeypatch.setattr(printf, "new_buffer", lambda *a: pytest.fail("a printf buffer for a kernel without printf"))
    assert launch(co, "k", grid=(1, 1, 1), block=(1, 1, 1), args=[np.zeros(1, np.int32)])[0][0] == 7
    assert capfd.readouterr().out == ""


@pytest.mark.parametrize("version", [4, 5, 6])
def test_every_code_object_version_finds_its_buffer_without_libclc(version, tmp_path, capsys):
    """hidden_printf_buffer is implicit-argument word 3 in v4 and 9 in v5 and v6; a kernel calling no OpenCL C
    library function links nothing but __printf_alloc."""
    src = 'kernel void k(void) { printf("wi %d\\n", (int)__builtin_amdgcn_workitem_id_x()); }'
    opts = [f"-mcode-object-version={version}", *printf.compile_options(tmp_path, version)]
    launch(compile_opencl(src, "gfx1100", opts), "k", grid=(1, 1, 1), block=(3, 1, 1), args=[])
    assert capsys.readouterr().out == "wi 0\nwi 1\nwi 2\n"
