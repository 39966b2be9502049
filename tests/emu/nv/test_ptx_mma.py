"""The PTX emulator's tensor-core instructions on clang-22's kernels (tests/kernels/nv_mma/wmma.cu) for sm_80 and
sm_90: wmma.load/.mma/.store for every shape and operand type clang's builtins have, mma.sync with fragments loaded
by the PTX ISA's layouts, ldmatrix, stmatrix and movmatrix; each against numpy. The references add the exact
products with math.fsum and round once to the accumulator's type, a K step at a time (as the kernels do); 16-bit
values are built from their bits, tf32 operands are f32 values whose low 13 bits the multiply ignores."""

from __future__ import annotations

import math
import shutil
import zlib
from collections.abc import Callable
from functools import cache
from pathlib import Path

import numpy as np
import nv_corpus  # tests/kernels, on the path by tests/conftest.py
import pytest

from usergpu.emu.nv import launch
from usergpu.emu.nv.ptx.semantics import UnsupportedPTX
from usergpu.isa.nv import assemble_ptx, compile_cuda

SRC = (Path(__file__).resolve().parents[2] / "kernels" / "nv_mma" / "wmma.cu").read_text()
ARCHS = ("sm_80", "sm_90")
pytestmark = pytest.mark.skipif(not shutil.which("clang-22"), reason="needs clang-22 (Debian) to compile the kernels")


@cache
def _ptx(arch: str) -> bytes:
    return compile_cuda(SRC, arch)


def _rng(*key) -> np.random.Generator:
    """A test's own random numbers (the same whatever ran before it)."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


# ---- operands ------------------------------------------------------------------------------------------------------
def _f16(rng, shape) -> tuple[np.ndarray, np.ndarray]:
    """(what the kernel gets, the values as float64)"""
    x = rng.standard_normal(shape).astype(np.float16)
    return x, x.astype(np.float64)


def _bf16(rng, shape) -> tuple[np.ndarray, np.ndarray]:
    bits = (rng.standard_normal(shape).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return bits, (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def _tf32(rng, shape) -> tuple[np.ndarray, np.ndarray]:
    x = rng.standard_normal(shape).astype(np.float32)
    return x, (x.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)


def _int8(dtype) -> Callable:
    def make(rng, shape):
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max + 1, shape).astype(dtype)
        return x, x.astype(np.int64)
    return make


def _f32(rng, shape) -> tuple[np.ndarray, np.ndarray]:
    x = rng.standard_normal(shape).astype(np.float32)
    return x, x.astype(np.float64)


def _s32(rng, shape) -> tuple[np.ndarray, np.ndarray]:
    """Within 2**21 of the ends of the range, so that many sums overflow (by less than 2**21: they do not wrap back)."""
    x = np.where(rng.integers(0, 2, shape) == 1, (1 << 31) - (1 << 21), -(1 << 31)) + rng.integers(0, 1 << 21, shape)
    return x.astype(np.int32), x


def _bits(make: Callable, dtype) -> Callable:
    """make's operands passed as their bits (16-bit floats to kernels taking unsigned short, f32 to unsigned)."""
    def bits(rng, shape):
        x, v = make(rng, shape)
        return x.view(dtype), v
    return bits


HALF = _bits(_f16, np.uint16)
IN = {"f16": _f16, "bf16": _bf16, "tf32": _tf32, "s8": _int8(np.int8), "u8": _int8(np.uint8)}
ACC = {"f32": _f32, "f16": _f16, "s32": _s32}
OUT = {"f32": np.float32, "f16": np.float16, "s32": np.int32}


def _round(v: np.ndarray, t: str, satfinite: bool = False) -> np.ndarray:
    """Exact sums (float64 from fsum, or int64) in the accumulator's type: floats to nearest, s32 wrapped or
    clamped."""
    if t != "s32":
        return v.astype(OUT[t])
    if satfinite:
        return np.clip(v, -(1 << 31), (1 << 31) - 1).astype(np.int32)
    return (v & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def _product(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """c + a @ b exactly (integers), or correctly rounded to float64 (math.fsum of the exact products)."""
    if a.dtype.kind == "i":
        return c + a @ b
    out = np.empty(c.shape)
    for i, j in np.ndindex(c.shape):
        out[i, j] = math.fsum([c[i, j], *(a[i] * b[:, j])])
    return out


def _gemm_reference(a, b, c, tk: int, tc: str, td: str, satfinite: bool) -> np.ndarray:
    """D after each K step rounded to D's type, the first step adding to C as C's type."""
    d = _round(c, tc).astype(np.float64 if td != "s32" else np.int64)
    for k in range(0, a.shape[1], tk):
        d = _round(_product(a[:, k:k + tk], b[k:k + tk], d), td, satfinite).astype(d.dtype)
    return d.astype(OUT[td])


# ---- wmma ----------------------------------------------------------------------------------------------------------
# kernel -> (tile m, n, k), operand type, C's type, D's type, A and B column-major, .satfinite
WMMA = {
    **{f"wmma_m16n16k16_f16_f32_{lay}": ((16, 16, 16), "f16", "f32", "f32", lay[0] == "c", lay[1] == "c", False)
       for lay in ("rr", "rc", "cr", "cc")},
    **{f"wmma_{s}_f16_f32_{lay}": (t, "f16", "f32", "f32", lay == "cc", lay == "cc", False)
       for s, t in (("m32n8k16", (32, 8, 16)), ("m8n32k16", (8, 32, 16))) for lay in ("rr", "cc")},
    **{f"wmma_{s}_f16_f16": (t, "f16", "f16", "f16", False, False, False)
       for s, t in (("m16n16k16", (16, 16, 16)), ("m32n8k16", (32, 8, 16)), ("m8n32k16", (8, 32, 16)))},
    "wmma_m16n16k16_c16_d32": ((16, 16, 16), "f16", "f16", "f32", False, False, False),
    "wmma_m16n16k16_c32_d16": ((16, 16, 16), "f16", "f32", "f16", False, False, False),
    "wmma_m16n16k16_bf16_rr": ((16, 16, 16), "bf16", "f32", "f32", False, False, False),
    "wmma_m16n16k16_bf16_cc": ((16, 16, 16), "bf16", "f32", "f32", True, True, False),
    "wmma_m32n8k16_bf16_rr": ((32, 8, 16), "bf16", "f32", "f32", False, False, False),
    "wmma_m8n32k16_bf16_rr": ((8, 32, 16), "bf16", "f32", "f32", False, False, False),
    "wmma_m16n16k8_tf32_rr": ((16, 16, 8), "tf32", "f32", "f32", False, False, False),
    "wmma_m16n16k8_tf32_cc": ((16, 16, 8), "tf32", "f32", "f32", True, True, False),
    "wmma_m16n16k16_s8": ((16, 16, 16), "s8", "s32", "s32", False, False, False),
    "wmma_m16n16k16_u8": ((16, 16, 16), "u8", "s32", "s32", False, False, False),
    "wmma_m32n8k16_s8": ((32, 8, 16), "s8", "s32", "s32", False, False, False),
    "wmma_m8n32k16_s8": ((8, 32, 16), "s8", "s32", "s32", False, False, False),
    "wmma_m16n16k16_s8_satfinite": ((16, 16, 16), "s8", "s32", "s32", False, False, True),
}


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("kernel", WMMA)
def test_wmma_gemm(arch, kernel):
    """D = A @ B + C over a 2 x 2 grid of tiles and two K steps: four warps in two blocks."""
    (tm, tn, tk), tin, tc, td, col_a, col_b, satfinite = WMMA[kernel]
    m, n, k = 2 * tm, 2 * tn, 2 * tk
    rng = _rng(kernel)
    (a, av), (b, bv), (c, cv) = IN[tin](rng, (m, k)), IN[tin](rng, (k, n)), ACC[tc](rng, (m, n))
    args = [a.T.copy() if col_a else a, b.T.copy() if col_b else b, c, np.zeros((m, n), OUT[td]), m, n, k]
    d = launch(_ptx(arch), kernel, 2, 64, args)[3]
    want = _gemm_reference(av, bv, cv, tk, tc, td, satfinite)
    np.testing.assert_array_equal(d.view(f"u{d.itemsize}"), want.view(f"u{want.itemsize}"))
    if td == "f32" and tin != "tf32":  # and near numpy's own f32 product
        np.testing.assert_allclose(d, av.astype(np.float32) @ bv.astype(np.float32) + cv.astype(np.float32),
                                   rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("arch", ARCHS)
def test_wmma_fragments_by_hand(arch):
    """Fragments laid out by hand as sm_80 hardware reads them multiply right; registers 4-7 of A and B (NaNs) are
    not read."""
    rng = _rng("by hand")
    (a, av), (b, bv), (c, cv) = HALF(rng, (16, 16)), HALF(rng, (16, 16)), _f32(rng, (16, 16))
    d = launch(_ptx(arch), "wmma_m16n16k16_by_hand", 1, 32, [a, b, c, np.zeros((16, 16), np.float32)])[3]
    np.testing.assert_array_equal(d, _round(_product(av, bv, cv), "f32"))


@pytest.mark.parametrize("arch", ARCHS)
def test_wmma_shared(arch):
    """A, B and D in shared memory with a padded stride, addressed generically (clang's builtins) and as .shared."""
    rng = _rng("shared")
    (a, av), (b, bv), (c, cv) = _f16(rng, (16, 16)), _f16(rng, (16, 16)), _f32(rng, (16, 16))
    d = launch(_ptx(arch), "wmma_m16n16k16_shared", 1, 32, [a, b, c, np.zeros((16, 16), np.float32)])[3]
    np.testing.assert_array_equal(d, _round(_product(av, bv, cv), "f32"))


# ---- mma.sync --------------------------------------------------------------------------------------------------------
def _fp8(bits: np.ndarray, e_bits: int, m_bits: int) -> np.ndarray:
    """OCP 8-bit floats (E4M3, E5M2) from their bits, as float64."""
    u = bits.astype(np.int64)
    e, mant, neg = (u >> m_bits) & ((1 << e_bits) - 1), u & ((1 << m_bits) - 1), u >> 7
    bias = (1 << (e_bits - 1)) - 1
    mag = np.where(e == 0, mant * 2.0 ** (1 - bias - m_bits), (1 + mant / 2**m_bits) * 2.0 ** (e - bias))
    return np.where(neg == 1, -mag, mag)


def _fp8_operand(e_bits: int, m_bits: int) -> Callable:
    def make(rng, shape):  # every finite code (E4M3: not S.1111.111; E5M2: exponent below 31)
        top = 0x7E if e_bits == 4 else 0x7B
        bits = rng.integers(0, top + 1, shape) | (rng.integers(0, 2, shape) << 7)
        return bits.astype(np.uint8), _fp8(bits, e_bits, m_bits)
    return make


# kernel -> (m, n, k), A's and B's operands, C's and D's type, .satfinite, first arch
MMA = {
    "mma_m16n8k16_f16": ((16, 8, 16), HALF, HALF, "f32", False, 80),
    "mma_m16n8k16_bf16": ((16, 8, 16), _bf16, _bf16, "f32", False, 80),
    "mma_m16n8k16_f16_f16": ((16, 8, 16), HALF, HALF, "f16", False, 80),
    "mma_m16n8k8_f16": ((16, 8, 8), HALF, HALF, "f32", False, 80),
    "mma_m16n8k8_tf32": ((16, 8, 8), _bits(_tf32, np.uint32), _bits(_tf32, np.uint32), "f32", False, 80),
    "mma_m16n8k32_s8": ((16, 8, 32), _int8(np.int8), _int8(np.int8), "s32", False, 80),
    "mma_m16n8k32_u8s8_satfinite": ((16, 8, 32), _int8(np.uint8), _int8(np.int8), "s32", True, 80),
    "mma_m16n8k32_e4m3": ((16, 8, 32), _fp8_operand(4, 3), _fp8_operand(5, 2), "f32", False, 89),
    "mma_ldmatrix_shared": ((16, 8, 16), HALF, HALF, "f32", False, 80),
    "mma_ldmatrix_generic": ((16, 8, 16), HALF, HALF, "f32", False, 80),
}


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("kernel", MMA)
def test_mma_sync(arch, kernel):
    """One warp's m16n8kK product with A, B, C and D in the PTX ISA's fragments (loaded by the kernel by the ISA's
    formulas, or by ldmatrix)."""
    (m, n, k), make_a, make_b, t, satfinite, first = MMA[kernel]
    if int(arch[3:]) < first:
        pytest.skip(f"{kernel} needs sm_{first}")
    rng = _rng(kernel)
    (a, av), (b, bv), (c, cv) = make_a(rng, (m, k)), make_b(rng, (k, n)), ACC[t](rng, (m, n))
    c_in = c.view(np.uint16) if t == "f16" else c
    a, b = (x.view(np.uint8) if x.dtype == np.int8 else x for x in (a, b))  # the kernels take bytes: unsigned char*
    d = launch(_ptx(arch), kernel, 1, 32, [a, b, c_in, np.zeros_like(c_in)])[3]
    want = _round(_product(av, bv, cv), t, satfinite)
    np.testing.assert_array_equal(d.view(f"u{d.itemsize}"), want.view(f"u{want.itemsize}"))


# ---- ldmatrix, stmatrix, movmatrix -----------------------------------------------------------------------------------
def _fragment(mats: np.ndarray, lane: int, trans: bool) -> int:
    """Lane's register for an 8 x 8 matrix: row lane / 4, columns 2 (lane % 4) and one more (of the transpose)."""
    m = mats.T if trans else mats
    row, col = lane // 4, 2 * (lane % 4)
    return int(m[row, col]) | int(m[row, col + 1]) << 16


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("num,trans", [(1, False), (2, False), (4, False), (1, True), (4, True)])
def test_ldmatrix(arch, num, trans):
    mats = _rng(num, trans).integers(0, 1 << 16, (4, 8, 8)).astype(np.uint16)
    kernel = f"ldmatrix_x{num}" + ("_trans" if trans else "")
    out = launch(_ptx(arch), kernel, 1, 32, [mats.reshape(-1), np.zeros(128, np.uint32)])[1].reshape(32, 4)
    want = np.array([[_fragment(mats[i], lane, trans) if i < num else 0 for i in range(4)] for lane in range(32)])
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("arch", ARCHS)
def test_movmatrix(arch):
    mat = _rng("movmatrix").integers(0, 1 << 16, (8, 8)).astype(np.uint16)
    regs = np.array([_fragment(mat, lane, False) for lane in range(32)], np.uint32)
    out = launch(_ptx(arch), "movmatrix_trans", 1, 32, [regs, np.zeros(32, np.uint32)])[1]
    np.testing.assert_array_equal(out, [_fragment(mat, lane, True) for lane in range(32)])


@pytest.mark.parametrize("trans", [False, True])
def test_stmatrix(trans):
    """stmatrix (sm_90) stores each lane's fragments where ldmatrix would have read them."""
    mats = _rng("stmatrix", trans).integers(0, 1 << 16, (4, 8, 8)).astype(np.uint16)
    regs = np.array([[_fragment(mats[i], lane, trans) for i in range(4)] for lane in range(32)], np.uint32)
    kernel = "stmatrix_x4" + ("_trans" if trans else "")
    out = launch(_ptx("sm_90"), kernel, 1, 32, [regs.reshape(-1), np.zeros(256, np.uint16)])[1]
    np.testing.assert_array_equal(out, mats.reshape(-1))


@pytest.mark.skipif(not nv_corpus.tool("bin/ptxas"), reason="needs ptxas (PyPI nvidia-cuda-nvcc, the nv extra)")
@pytest.mark.parametrize("arch", ARCHS)
def test_ptxas_accepts(arch):
    """The kernels' PTX is valid: ptxas assembles it."""
    assert assemble_ptx(_ptx(arch), arch)[:4] == b"\x7fELF"


# ---- what is not implemented -----------------------------------------------------------------------------------------
UNSUPPORTED = {
    "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%fd1, %fd2}, {%fd3}, {%fd4}, {%fd1, %fd2};":
        "mma.sync with a shape and four types",
    "wmma.load.a.sync.aligned.row.m8n8k32.s4 {%r1}, [%rd1], %r2;": "wmma shapes",
    "ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8 {%r1, %r2}, [%r2];": "m8n8 .b16 matrices",
}


@pytest.mark.parametrize("text", UNSUPPORTED)
def test_unsupported_forms(text):
    """A form of these instructions the emulator lacks is an UnsupportedPTX naming the instruction and why."""
    src = (".version 8.7\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 p)\n{\n"
           ".reg .b32 %r<4>;\n.reg .b64 %rd<3>;\n.reg .f64 %fd<5>;\nld.param.u64 %rd1, [p];\n" + text + "\nret;\n}\n")
    with pytest.raises(UnsupportedPTX, match=UNSUPPORTED[text]) as e:
        launch(src, "k", 1, 32, [np.zeros(4, np.uint32)])
    assert text.split()[0] in str(e.value)
