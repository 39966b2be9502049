"""A stock cubin (ptxas's alone, no .usergpu.ptx section) on MOCK+NV: the mock GPU runs kernels from the PTX a cubin
carries, so loading one is refused at load with one CodeObjectError that says how to get a cubin that carries it,
its memory given back; where a GPU runs the SASS (the HAL does not ask for PTX), the same cubin loads and its
parameters pack to the same bytes as those of the cubin carrying its PTX."""

from __future__ import annotations

import numpy as np
import nv_corpus  # tests/kernels, on the path by tests/conftest.py
import nv_stock
import pytest

import usergpu
from usergpu.emu.nv import launch as emu_launch
from usergpu.errors import CodeObjectError
from usergpu.isa.nv import cubin, params
from usergpu.isa.nv import ptx as ptx_module

pytestmark = pytest.mark.skipif(not nv_corpus.has_toolchain(), reason=nv_corpus.TOOLCHAIN)

SRC = r"""
struct Pair { char c; double d; };
extern "C" __global__ void fill(unsigned *out, unsigned value) { out[threadIdx.x] = value + threadIdx.x; }
extern "C" __global__ void mixed(char c, Pair p, short h, float f, double d, unsigned long long q, float *out) {
  out[threadIdx.x] = c + p.c + p.d + h + f + d + q;
}
__global__ void scaled(float *out, float by) { out[threadIdx.x] *= by; }
"""
ARCH = "sm_90"
SAYS = [r"PTX emulator", r"\.usergpu\.ptx", r"has none \(a stock ptxas or nvcc cubin\)",
        r"usergpu\.assemble_ptx\(ptx, arch\)", r"usergpu\.compile_cuda\(src, arch\)", r"usergpu run FILE\.cu"]


def ptx() -> bytes:
    return usergpu.compile_cuda(SRC, ARCH)


@pytest.fixture
def dev(monkeypatch):
    monkeypatch.setenv("MOCKGPU_NV_ARCH", ARCH)
    dev = usergpu.Device("MOCK+NV")
    yield dev
    dev.close()


def test_mock_nv_refuses_a_stock_cubin_at_load_and_gives_its_memory_back(dev):
    used = dev.hal.nv.vram_used[dev.index]
    with pytest.raises(CodeObjectError) as e:
        dev.load(nv_stock.cubin(ptx(), ARCH))
    for says in SAYS:
        assert e.match(says)
    assert dev.hal.nv.vram_used[dev.index] == used


def test_usergpu_launch_of_a_stock_cubin_on_mock_nv_is_refused_too(dev):
    with pytest.raises(CodeObjectError, match=SAYS[2]):
        usergpu.launch(nv_stock.cubin(ptx(), ARCH), "fill", (1, 1, 1), (32, 1, 1), [np.zeros(32, np.uint32), 1],
                       device=dev)


def test_a_stock_cubin_packs_its_parameters_as_the_cubin_carrying_its_ptx(dev, monkeypatch):
    monkeypatch.setattr(dev.hal, "kernels_from_ptx", False)  # a GPU that runs the SASS: what NVK+NV loads
    stock, carried = dev.load(nv_stock.cubin(ptx(), ARCH)), dev.load(usergpu.assemble_ptx(ptx(), ARCH))
    out = dev.alloc(4096)
    calls = {"fill": [out, np.uint32(7)], "mixed": [np.int8(-3), bytes(range(16)), -2, 1.5, 2.5, 1 << 63, out],
             "scaled": [out.va, 0.5]}
    for name, args in calls.items():
        a, b = stock.kernel(name), carried.kernel(name)  # scaled: its C++ name
        assert a.name == b.name and a.params_at == b.params_at and a.static_shared == b.static_shared
        assert all(s.decl is None for s in a.layout.slots) and all(s.decl is not None for s in b.layout.slots)
        a.check(args)
        addresses = [x.va if x is out else x for x in args]
        assert params.pack(a.layout, addresses, None) == params.pack(b.layout, addresses, None), name


def test_the_bare_emulator_refuses_a_stock_cubin_with_the_same_error():
    with pytest.raises(CodeObjectError) as e:
        emu_launch(nv_stock.cubin(ptx(), ARCH), "fill", (1, 1, 1), (32, 1, 1), [np.zeros(32, np.uint32), 1])
    assert e.match("^the PTX emulator runs a cubin's kernels")
    for says in SAYS[1:]:
        assert e.match(says)


@pytest.mark.parametrize("arch", ["sm_80", "sm_86", "sm_89", "sm_90"])
def test_an_nvcc_cubin_lays_its_parameters_out_as_nvccs_ptx_declares_and_loads_where_sass_runs(arch, monkeypatch):
    """nvcc's own cubin of the source: the layout KPARAM_INFO gives is the one nvcc's PTX declares, the cubin
    loads on a GPU that runs the SASS (the HAL does not ask for PTX) and is refused on the mock."""
    monkeypatch.setenv("MOCKGPU_NV_ARCH", arch)
    stock = nv_stock.nvcc(SRC, arch)
    declared = ptx_module.parse(nv_stock.nvcc(SRC, arch, "ptx")).kernels
    co = cubin.parse(stock)
    assert co.ptx is None and co.arch == arch and set(co.kernels) == set(declared)
    for name, k in co.kernels.items():
        assert [(s.offset, s.size) for s in params.of_cubin(k).slots] == nv_stock.declared(declared[name]), name
    dev = usergpu.Device("MOCK+NV")
    try:
        with pytest.raises(CodeObjectError, match=SAYS[2]):
            dev.load(stock)
        monkeypatch.setattr(dev.hal, "kernels_from_ptx", False)
        prog = dev.load(stock)
        out = dev.alloc(4096)
        prog.kernel("fill").check([out, 7])
        prog.kernel("scaled").check([out, 0.5])  # by its C++ name
    finally:
        dev.close()
