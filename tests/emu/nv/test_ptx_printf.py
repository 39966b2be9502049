"""CUDA's device printf (vprintf) on the PTX emulator, on MOCK+NV and in `usergpu run`: each thread's lines, in the
order each thread printed, after the kernel completes; the argument buffer walked by the format's conversions after
C's promotions (char and short as int, float as double, 8-byte longs, strings and pointers)."""

from __future__ import annotations

import numpy as np
import nv_corpus  # tests/kernels, on the path by tests/conftest.py
import pytest

import usergpu
from usergpu.emu.nv import launch
from usergpu.errors import CodeObjectError
from usergpu.tools import cli

pytestmark = pytest.mark.skipif(not nv_corpus.has_toolchain(), reason=nv_corpus.TOOLCHAIN)

SOURCE = r"""
extern "C" __global__ void ids(const float *x) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  printf("thread %d value %f\n", i, x[i]);
}

extern "C" __global__ void ordered(int n) {  // odd threads only, n lines each: divergent printf calls
  if (threadIdx.x & 1)
    for (int k = 0; k < n; k++) printf("%d:%d\n", threadIdx.x, k);
}

extern "C" __global__ void kinds(const char *s, long long big) {
  char c = 'A';
  short h = -3;
  printf("%s|%s|%c|%lld|%hd|%5.2f|%e|%-4x|%p|%*d|%.3s|%llu|%%\n", "lit", s, c, big, h, 3.14159f, 1.5, 255u,
         (void *)0, 6, 42, "abcdef", 18446744073709551615ull);
  printf("no arguments\n");
}
"""
KINDS = ("lit|from host|A|-1234567890123|-3| 3.14|1.500000e+00|ff  |(nil)|    42|abc|18446744073709551615|%\n"
         "no arguments\n")


@pytest.fixture(scope="module")
def code() -> bytes:
    return usergpu.compile_cuda(SOURCE, "sm_90")


def test_each_thread_prints_its_line(code, capfd):
    x = np.arange(64, dtype=np.float32) / 4
    launch(code, "ids", (2, 1, 1), (32, 1, 1), [x])
    assert capfd.readouterr().out.splitlines() == [f"thread {i} value {i / 4:f}" for i in range(64)]


def test_a_threads_lines_keep_their_order(code, capfd):
    launch(code, "ordered", (1, 1, 1), (8, 1, 1), [3])
    lines = capfd.readouterr().out.splitlines()
    assert sorted(lines) == sorted(f"{t}:{k}" for t in (1, 3, 5, 7) for k in range(3))
    for t in (1, 3, 5, 7):
        assert [line for line in lines if line.startswith(f"{t}:")] == [f"{t}:{k}" for k in range(3)]


def test_every_kind_of_argument_as_c_prints_it(code, capfd):
    launch(code, "kinds", (1, 1, 1), (1, 1, 1), [np.frombuffer(b"from host\0", np.int8).copy(), -1234567890123])
    assert capfd.readouterr().out == KINDS


def test_mock_nv_prints_after_the_kernel(code, capfd):
    x = np.arange(32, dtype=np.float32)
    usergpu.launch(usergpu.assemble_ptx(code, "sm_90"), "ids", (1, 1, 1), (32, 1, 1), [x], device="MOCK+NV")
    assert capfd.readouterr().out.splitlines() == [f"thread {i} value {i:f}" for i in range(32)]


def test_usergpu_run_shows_printf_of_cuda_and_opencl(tmp_path, capfd):
    (tmp_path / "hello.cu").write_text('extern "C" __global__ void hello() { printf("cuda %d\\n", threadIdx.x); }')
    (tmp_path / "hello.cl").write_text('kernel void hello() { printf("opencl %d\\n", (int)get_local_id(0)); }')
    for name, dev in (("hello.cu", "emu"), ("hello.cu", "MOCK+NV"), ("hello.cl", "emu"), ("hello.cl", "MOCKKFD+AMD")):
        assert cli.main(["run", str(tmp_path / name), "--grid", "1", "--block", "4", "--dev", dev]) == 0
        lines = capfd.readouterr().out.splitlines()
        lang = "cuda" if name.endswith(".cu") else "opencl"
        assert [line for line in lines if line.startswith(lang)] == [f"{lang} {i}" for i in range(4)], (name, dev)


def test_a_real_gpu_cannot_link_vprintf(code):
    """On hardware CUDA's driver links vprintf's device code, which usergpu does not have: refused at load."""
    from usergpu.isa.nv import cubin
    from usergpu.runtime.nv.program import load_image, relocate

    co = cubin.parse(usergpu.assemble_ptx(code, "sm_90"))
    image, where = load_image(co)
    with pytest.raises(CodeObjectError, match="calls vprintf, which CUDA's driver links from its own library"):
        relocate(co, image, where, 0x10000)
    relocate(co, image, where, 0x10000, from_ptx=True)
