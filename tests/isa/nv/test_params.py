"""Kernel parameter layouts and packing (isa/nv/params.py): the layout a stock cubin gives (EIATTR_KPARAM_INFO) is
the one its PTX declares, for every kernel of the CUDA corpus on sm_80, sm_86, sm_89 and sm_90; packing puts each
argument in its slot's bytes, and refuses what a slot cannot hold, naming the argument, the kernel, what the slot
takes and what was given (by the PTX type where it is known, by the size where only the cubin's layout is)."""

from __future__ import annotations

import re

import numpy as np
import nv_corpus  # tests/kernels, on the path by tests/conftest.py
import nv_stock
import pytest

import usergpu
from usergpu.autogen import nv_classes as nvc
from usergpu.errors import CodeObjectError, LaunchError
from usergpu.isa.nv import cubin, params, ptx
from usergpu.isa.nv.param_types import CParam

ARCHS = ("sm_80", "sm_86", "sm_89", "sm_90")
needs_toolchain = pytest.mark.skipif(not nv_corpus.has_toolchain(), reason=nv_corpus.TOOLCHAIN)


@needs_toolchain
@pytest.mark.parametrize(("file", "options", "arch"), [pytest.param(f, o, a, id="-".join((f, *o, a)))
                                                       for f, o in nv_corpus.builds() for a in ARCHS])
def test_a_stock_cubins_parameters_lie_where_its_ptx_declares_them(file, options, arch):
    text = nv_corpus.ptx(file, arch, options)
    co = cubin.parse(nv_stock.cubin(text, arch))
    module = ptx.parse(text.decode())
    assert co.ptx is None and set(co.kernels) == set(module.kernels)
    for name, k in co.kernels.items():
        layout, want = params.of_cubin(k), nv_stock.declared(module.kernels[name])
        assert [(s.offset, s.size) for s in layout.slots] == want, name
        assert layout.size == max((o + s for o, s in want), default=0), name
        assert params.cbank_offset(k, arch) == nvc.CBANK0[arch]["params"], name


@needs_toolchain
def test_a_cubin_whose_ptx_declares_other_parameters_is_refused():
    src = 'extern "C" __global__ void k(int *p, char c) { p[0] = c; }'
    text = usergpu.compile_cuda(src, "sm_90")
    k = cubin.parse(nv_stock.cubin(text, "sm_90")).kernels["k"]
    other = ptx.parse(text.decode().replace(".param .u8 k_param_1", ".param .u64 k_param_1"))
    with pytest.raises(CodeObjectError, match=r"KPARAM_INFO puts its parameters at .*\(8, 1\).*\(8, 8\)"):
        params.of_cubin(k, other)
    with pytest.raises(CodeObjectError, match="kernel k is not in the PTX"):
        params.of_cubin(k, ptx.parse(text.decode().replace(".entry k(", ".entry j(")))


# ---- packing -------------------------------------------------------------------------------------------------------
PTX = """
.version 8.7
.target sm_90
.address_size 64
.visible .entry k(.param .u64 .ptr .align 1 k_p, .param .u8 k_c, .param .f32 k_f, .param .align 8 .b8 k_s[16],
                  .param .f16 k_h, .param .s64 k_q)
{ ret; }
"""
TYPED = params.of_ptx(ptx.parse(PTX).kernels["k"])
STOCK = params.Layout("k", tuple(params.Slot(s.offset, s.size) for s in TYPED.slots), TYPED.size)
ARGS = [0x7000_0000_1000, 200, 1.5, bytes(range(16)), 2.0, -3]


def _no_arrays(a) -> int:
    raise AssertionError("no array was passed")


@pytest.mark.parametrize("layout", [TYPED, STOCK], ids=["typed", "stock"])
def test_arguments_go_in_their_slots_bytes(layout):
    args = ARGS if layout is TYPED else [*ARGS[:4], np.float16(2.0), -3]  # a stock 2-byte slot takes no Python float
    out = params.pack(layout, args, _no_arrays)
    assert [(s.offset, s.size) for s in layout.slots] == [(0, 8), (8, 1), (12, 4), (16, 16), (32, 2), (40, 8)]
    assert out == (b"\x00\x10\x00\x00\x00\x70\x00\x00" + b"\xc8\x00\x00\x00" + np.float32(1.5).tobytes() +
                   bytes(range(16)) + np.float16(2).tobytes() + bytes(6) + (-3).to_bytes(8, "little", signed=True))


def test_an_array_goes_as_the_address_address_of_gives():
    args = [np.zeros(4, np.float32), *ARGS[1:]]
    assert params.pack(TYPED, args, lambda a: 0x1234)[:8] == (0x1234).to_bytes(8, "little")


BAD = [
    # (layout, index, value, says)
    (TYPED, 1, 1.5, r"parameter 1 \(k_c: \.u8, 1 bytes\) of k: cannot pass a float"),
    (TYPED, 1, 256, r"parameter 1 \(k_c: \.u8, 1 bytes\) of k: 256 does not fit in 1 bytes"),
    (TYPED, 1, np.float32(1), r"parameter 1 .* of k: a float32 cannot be passed to it"),
    (TYPED, 2, np.float64(1), r"parameter 2 \(k_f: \.f32, 4 bytes\) of k: a float64 cannot be passed to it"),
    (TYPED, 2, np.zeros(2), r"parameter 2 .* is not a pointer: an array cannot be passed to it"),
    (TYPED, 3, 7, r"parameter 3 \(k_s: \.b8\[16\], 16 bytes\) of k is an aggregate: pass its bytes"),
    (TYPED, 3, bytes(8), r"parameter 3 .* of k takes 16 bytes, 8 given"),
    (TYPED, 5, "3", r"parameter 5 .* of k: cannot pass a str"),
    (STOCK, 1, -129, r"parameter 1 \(1 bytes\) of k: -129 does not fit in 1 bytes"),
    (STOCK, 2, np.float64(1), r"parameter 2 \(4 bytes\) of k: a float64 cannot be passed to it"),
    (STOCK, 4, 2.0, r"parameter 4 \(2 bytes\) of k: cannot pass a float"),
    (STOCK, 1, np.zeros(2), r"parameter 1 \(1 bytes\) of k is not a pointer"),
    (STOCK, 3, bytes(17), r"parameter 3 \(16 bytes\) of k takes 16 bytes, 17 given"),
]


@pytest.mark.parametrize(("layout", "index", "value", "says"), BAD, ids=[s.split(": ")[-1][:30] for *_, s in BAD])
def test_what_a_slot_cannot_hold_is_refused_naming_it(layout, index, value, says):
    args = list(ARGS)
    args[index] = value
    with pytest.raises(LaunchError, match=says):
        params.pack(layout, args, lambda a: 0)


@pytest.mark.parametrize("layout", [TYPED, STOCK], ids=["typed", "stock"])
def test_the_wrong_count_of_arguments_is_refused(layout):
    with pytest.raises(LaunchError, match="kernel k takes 6 parameters, 5 given"):
        params.pack(layout, ARGS[:5], _no_arrays)


@pytest.mark.parametrize("value", [255, -128, -1])
def test_an_int_in_the_signed_or_the_unsigned_range_fits(value):
    args = [ARGS[0], value, *ARGS[2:4], np.float16(2), -3]
    assert params.pack(STOCK, args, _no_arrays)[8] == value & 0xFF


# ---- C types: the source's parameter types check values as on AMD (isa/argtypes.py) --------------------------------
C_TYPED = params.of_ptx(ptx.parse(PTX).kernels["k"], (
    CParam("p", "float*"), CParam("c", "unsigned char"), CParam("f", "float"), CParam("s", "Pair"),
    CParam("h", "half"), CParam("q", "long long")))

BAD_C = [
    (0, np.zeros(4), r"argument 0 \(p\) of k is float\*: expected an array of float32, got float64"),
    (0, np.zeros(4, np.int32), r"argument 0 \(p\) of k is float\*: expected an array of float32, got int32"),
    (1, 1.5, r"argument 1 \(c\) of k is unsigned char: expected an integer, got the float 1.5"),
    (1, 256, r"argument 1 \(c\) of k is unsigned char: 256 is outside 0..255"),
    (1, -1, r"argument 1 \(c\) of k is unsigned char: -1 is outside 0..255"),  # fits 1 byte, not an unsigned char
    (1, np.int8(1), r"argument 1 \(c\) of k is unsigned char: expected uint8, got a int8 scalar"),
    (2, np.float64(1), r"argument 2 \(f\) of k is float: expected float32, got a float64 scalar"),
    (2, True, r"argument 2 \(f\) of k is float: expected a float32 number, got bool"),
    (4, np.float32(2), r"argument 4 \(h\) of k is half: expected float16, got a float32 scalar"),
    (5, 1 << 63, r"argument 5 \(q\) of k is long long: 9223372036854775808 is outside -9223372036854775808\.\."),
    (5, 3.0, r"argument 5 \(q\) of k is long long: expected an integer, got the float 3.0"),
    (2, np.zeros(2, np.float32), r"parameter 2 .* is not a pointer: an array cannot be passed to it"),
]


@pytest.mark.parametrize(("index", "value", "says"), BAD_C, ids=[s.split(": ")[-1][:30] for *_, s in BAD_C])
def test_a_value_its_c_type_cannot_take_is_refused_as_on_amd(index, value, says):
    args = [np.zeros(4, np.float32), *ARGS[1:]]
    args[index] = value
    with pytest.raises(LaunchError, match=says):
        params.pack(C_TYPED, args, lambda a: 0)


@pytest.mark.parametrize("args", [
    [np.zeros(4, np.float32), 200, 1.5, bytes(range(16)), 2.0, -3],
    [np.zeros(4, np.float32), np.uint8(200), np.float32(1.5), bytes(range(16)), np.float16(2), np.int64(-3)],
    [0x7000_0000_1000, 200, 1.5, bytes(range(16)), 2.0, -3],  # a device address for a pointer
])
def test_values_of_their_c_types_go_in_as_without_them(args):
    assert params.pack(C_TYPED, args, lambda a: 0x1234) == params.pack(TYPED, args, lambda a: 0x1234)


SCALE = r"""
__global__ void scale(float *x, int n, float s) { int i = threadIdx.x; if (i < n) x[i] *= s; }
extern "C" __global__ void scale_c(float *x, int n, float s) { int i = threadIdx.x; if (i < n) x[i] *= s; }
"""


@needs_toolchain
@pytest.mark.parametrize("form", ["ptx", "cubin"])
@pytest.mark.parametrize(("index", "value", "says"), [
    (0, np.ones(4), r"argument 0 of _Z5scalePfif is float\*: expected an array of float32, got float64"),
    (1, 4.0, r"argument 1 of _Z5scalePfif is int: expected an integer, got the float 4.0"),
    (1, 1 << 31, r"argument 1 of _Z5scalePfif is int: 2147483648 is outside -2147483648..2147483647"),
    (2, np.float64(2), r"argument 2 of _Z5scalePfif is float: expected float32, got a float64 scalar"),
])
def test_the_emulator_refuses_what_a_cxx_kernels_mangled_name_says_it_cannot_take(form, index, value, says):
    import usergpu.emu.nv

    code = re.sub(rb"// usergpu\.params[^\n]*\n", b"", usergpu.compile_cuda(SCALE, "sm_90"))  # as PTX from elsewhere
    code = usergpu.assemble_ptx(code, "sm_90") if form == "cubin" else code
    args = [np.ones(4, np.float32), 4, 2.0]
    assert (usergpu.emu.nv.launch(code, "scale", (1, 1, 1), (4, 1, 1), args)[0] == 2).all()
    args[index] = value
    with pytest.raises(LaunchError, match=says):
        usergpu.emu.nv.launch(code, "scale", (1, 1, 1), (4, 1, 1), args)


@needs_toolchain
def test_the_emulator_refuses_a_float64_array_for_an_extern_c_kernels_float_pointer():
    import usergpu.emu.nv

    with pytest.raises(LaunchError, match=r"argument 0 \(x\) of scale_c is float\*: expected an array of float32"):
        usergpu.emu.nv.launch(usergpu.compile_cuda(SCALE, "sm_90"), "scale_c", (1, 1, 1), (4, 1, 1),
                              [np.ones(4), 4, 2.0])
