"""The runtime on MOCKKFD+AMD: the kernel driver, the mock KFD, its command processor and the emulator end to end.
The whole emulator corpus runs through Device / Program / the PM4 queue and matches numpy."""

from __future__ import annotations

import copy
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from usergpu.runtime.launch import launch

_spec = importlib.util.spec_from_file_location("corpus", Path(__file__).parents[1] / "kernels" / "corpus.py")
corpus = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(corpus)
CONFIGS = [(c, arch, wave) for c in corpus.cases.CASES for arch in c.archs for wave in c.waves]


@pytest.mark.parametrize(("case", "arch", "wave"),
                         [pytest.param(c, a, w, id=f"{c.name}-{a}-w{w}") for c, a, w in CONFIGS])
def test_corpus_through_the_runtime(case, arch, wave, monkeypatch):
    monkeypatch.setenv("MOCKGPU_ARCH", arch)
    args = case.args(np.random.default_rng(0))
    want = case.reference(copy.deepcopy(args))
    got = launch(corpus.code_object(case.file, arch, wave), case.kernel, case.grid, case.block, args, "MOCKKFD+AMD")
    for out, ref in zip(got, want, strict=True):
        if ref is None:
            continue
        if out.dtype.kind == "f":
            np.testing.assert_allclose(out, ref, rtol=case.rtol, atol=case.atol, equal_nan=True)
        else:
            np.testing.assert_array_equal(out, ref)


ERRORS = """
__kernel void oob(__global int *a, int n) { a[__builtin_amdgcn_workitem_id_x() * n] = 1; }
__kernel void fill(__global int *a, int v) { a[__builtin_amdgcn_workitem_id_x()] = v; }
"""


def test_a_faulting_kernel_names_address_and_pc_and_the_device_keeps_working():
    import usergpu
    from usergpu.errors import GPUFault

    dev = usergpu.Device("MOCKKFD+AMD")
    prog = dev.load(usergpu.compile_opencl(ERRORS, dev.arch))
    buf = dev.alloc(4096)
    with pytest.raises(GPUFault) as e:
        prog.kernels["oob"](buf, 1 << 20, grid=(1, 1, 1), block=(32, 1, 1))
    assert e.value.kernel == "oob" and e.value.access == "write"
    assert e.value.address == buf.va + 4 * (1 << 20) and prog.buf.va <= e.value.pc < prog.buf.va + prog.buf.size
    seconds = prog.kernels["fill"](buf, 5, grid=(1, 1, 1), block=(64, 1, 1))
    assert seconds > 0 and list(buf.copyout(np.int32, 64)) == [5] * 64


def test_device_api_buffers_programs_and_timestamps():
    import usergpu

    dev = usergpu.Device("MOCKKFD+AMD")
    prog = dev.load(usergpu.compile_opencl(ERRORS, dev.arch))
    buf = dev.alloc(256)
    buf.copyin(np.arange(64, dtype=np.int32))
    assert list(buf.copyout(np.int32)) == list(range(64))
    prog.kernels["fill"](buf, 9, grid=(1, 1, 1), block=(32, 1, 1), wait=False)
    dev.synchronize()
    assert list(buf.copyout(np.int32)) == [9] * 32 + list(range(32, 64))
