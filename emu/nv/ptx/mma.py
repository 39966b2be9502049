"""Warp-level matrix instructions: wmma.load/.store/.mma, mma.sync, ldmatrix, stmatrix and movmatrix.

A fragment is a lane's share of a matrix: its registers' elements (lowest bits first) in order, element i of lane
L being entry (row, col) of the matrix as a layout says. mma.sync's layouts are the PTX ISA's (section 9.7.14.5,
"Matrix Fragments for mma.mMnNkK"; g = %laneid >> 2, t = %laneid % 4). wmma's are implementation-defined in the
ISA; here they are mma.sync tiles side by side, as sm_80 and later GPUs read them (tinygrad's
extra/gemm/cuda_matmul.py fills __hmma_m16n16k16 fragments by hand that way, registers 4-7 of A and B left to
whatever follows them, and checks the product on the GPU): a m16n16k16 A fragment is a
m16n8k16 A fragment; B and C/D are two m16n8 tiles, n 0-7 then n 8-15; a m32n8k16 A or C/D is two tiles along m,
a m8n32k16 B or C/D four along n (the 8-row ones the top half of a tile). An f16 A or B fragment has more
registers than elements (8 .f16x2 registers for 8 elements of m16n16k16 A): wmma.load repeats the elements in
the rest and wmma.mma reads the first. The fragments do not depend on .row/.col: those only say how wmma.load and
wmma.store lay the matrix out in memory.

Arithmetic: the products are exact (f16, bf16, tf32, fp8 and 8-bit integers all fit a double's mantissa) and
D = C + sum over k of A[m, k] * B[k, n] is summed in double precision in k order, then rounded once to D's type
(to nearest even); so D is the exact result rounded once unless the terms span more than a double's 53 bits.
tf32 operands keep their top 19 bits (the low 13 are ignored). s32 accumulators wrap, or clamp with .satfinite.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from usergpu.emu import numerics
from usergpu.emu.nv.ptx import fp
from usergpu.emu.nv.ptx.memops import _address
from usergpu.emu.nv.ptx.operands import UINT
from usergpu.emu.nv.ptx.semantics import Inst, Op, UnsupportedPTX
from usergpu.isa.nv import ptx

Fn = Callable  # (g, t, i) -> (row, col), over numpy integer arrays


# ---- layouts -----------------------------------------------------------------------------------------------------
def _a16(g, t, i):  # m16n8k16 .f16/.bf16 A (8 elements)
    return g + 8 * (i >> 1 & 1), 2 * t + (i & 1) + 8 * (i >> 2)


def _b16(g, t, i):  # m16n8k16 .f16/.bf16 B (4)
    return 2 * t + (i & 1) + 8 * (i >> 1), g


def _c(g, t, i):  # m16n8 accumulators C/D (4); also m16n8k8 .f16/.bf16 A
    return g + 8 * (i >> 1), 2 * t + (i & 1)


def _b8(g, t, i):  # m16n8k8 .f16/.bf16 B (2)
    return 2 * t + i, g


def _a_tf8(g, t, i):  # m16n8k8 .tf32 A (4)
    return g + 8 * (i & 1), t + 4 * (i >> 1)


def _b_tf8(g, t, i):  # m16n8k8 .tf32 B (2)
    return t + 4 * i, g


def _a_tf4(g, t, i):  # m16n8k4 .tf32 A (2)
    return g + 8 * i, t


def _b_tf4(g, t, i):  # m16n8k4 .tf32 B (1)
    return t, g


def _a_i16(g, t, i):  # m16n8k16 .s8/.u8 A (8)
    return g + 8 * (i >> 2), 4 * t + (i & 3)


def _b_i16(g, t, i):  # m16n8k16 .s8/.u8 B (4); m8n8k16 B
    return 4 * t + i, g


def _a_i32(g, t, i):  # m16n8k32 .s8/.u8/.e4m3/.e5m2 A (16)
    return g + 8 * (i >> 2 & 1), 4 * t + (i & 3) + 16 * (i >> 3)


def _b_i32(g, t, i):  # m16n8k32 .s8/.u8/.e4m3/.e5m2 B (8)
    return 4 * t + (i & 3) + 16 * (i >> 2), g


def _row8(g, t, i):  # one row of an 8-column tile per four lanes: m8n8 C/D (2), ldmatrix's 8x8 fragments
    return g, 2 * t + i


def _tile(fn: Fn, n: int, dr: int, dc: int) -> Fn:
    """Tiles of fn's n elements one after another, each dr rows and dc columns past the one before."""

    def at(g, t, i):
        r, c = fn(g, t, i % n)
        return r + i // n * dr, c + i // n * dc
    return at


def _pick(fn: Fn, which: tuple[int, ...]) -> Fn:
    """fn's elements `which` (the top half of a 16-row tile)."""
    idx = np.array(which)
    return lambda g, t, i: fn(g, t, idx[i])


class Layout:
    """Element i of lane L is entry (rows[L, i], cols[L, i]) of a rows x cols matrix."""

    def __init__(self, fn: Fn, count: int, shape: tuple[int, int]):
        lane, i = np.arange(32)[:, None], np.arange(count)[None, :]
        r, c = fn(lane >> 2, lane & 3, i)
        self.rows, self.cols = np.broadcast_to(r, (32, count)), np.broadcast_to(c, (32, count))
        self.count, self.shape = count, shape


SHAPES = {"m16n16k16": (16, 16, 16), "m32n8k16": (32, 8, 16), "m8n32k16": (8, 32, 16), "m16n16k8": (16, 16, 8),
          "m16n8k16": (16, 8, 16), "m16n8k8": (16, 8, 8), "m16n8k4": (16, 8, 4), "m16n8k32": (16, 8, 32),
          "m8n8k16": (8, 8, 16)}
FAMILY = {"f16": "h", "bf16": "h", "tf32": "tf32", "s8": "i8", "u8": "i8", "e4m3": "f8", "e5m2": "f8"}
_TOP_A, _TOP_C = (0, 1, 4, 5), (0, 1)
# (shape, family) -> (A's layout, its elements), (B's, its elements); C/D below
WMMA_AB = {
    ("m16n16k16", "h"): ((_a16, 8), (_tile(_b16, 4, 0, 8), 8)),
    ("m32n8k16", "h"): ((_tile(_a16, 8, 16, 0), 16), (_b16, 4)),
    ("m8n32k16", "h"): ((_pick(_a16, _TOP_A), 4), (_tile(_b16, 4, 0, 8), 16)),
    ("m16n16k8", "tf32"): ((_a_tf8, 4), (_tile(_b_tf8, 2, 0, 8), 4)),
    ("m16n16k16", "i8"): ((_a_i16, 8), (_tile(_b_i16, 4, 0, 8), 8)),
    ("m32n8k16", "i8"): ((_tile(_a_i16, 8, 16, 0), 16), (_b_i16, 4)),
    ("m8n32k16", "i8"): ((_pick(_a_i16, (0, 1, 2, 3)), 4), (_tile(_b_i16, 4, 0, 8), 16)),
}
WMMA_C = {"m16n16k16": (_tile(_c, 4, 0, 8), 8), "m16n16k8": (_tile(_c, 4, 0, 8), 8),
          "m32n8k16": (_tile(_c, 4, 16, 0), 8), "m8n32k16": (_tile(_pick(_c, _TOP_C), 2, 0, 8), 8)}
MMA_AB = {
    ("m16n8k16", "h"): ((_a16, 8), (_b16, 4)), ("m16n8k8", "h"): ((_c, 4), (_b8, 2)),
    ("m16n8k8", "tf32"): ((_a_tf8, 4), (_b_tf8, 2)), ("m16n8k4", "tf32"): ((_a_tf4, 2), (_b_tf4, 1)),
    ("m16n8k16", "i8"): ((_a_i16, 8), (_b_i16, 4)), ("m16n8k32", "i8"): ((_a_i32, 16), (_b_i32, 8)),
    ("m16n8k32", "f8"): ((_a_i32, 16), (_b_i32, 8)),
    ("m8n8k16", "i8"): ((_pick(_a_i16, (0, 1, 2, 3)), 4), (_b_i16, 4)),
}
MMA_C = {"m16n8": (_c, 4), "m8n8": (_row8, 2)}


def _layouts(ab: dict, c: dict, shape: str, atype: str, ckey: str, ins: Inst) -> tuple[Layout, Layout, Layout]:
    """The A, B and C/D layouts of a shape with operands of atype."""
    key = (shape, FAMILY.get(atype))
    if key not in ab:
        raise UnsupportedPTX(ins.ins, ins.prog.kernel.name, f"no {shape} shape with .{atype} operands")
    m, n, k = SHAPES[shape]
    (fa, na), (fb, nb) = ab[key]
    return Layout(fa, na, (m, k)), Layout(fb, nb, (k, n)), Layout(*c[ckey], (m, n))


# ---- element types -----------------------------------------------------------------------------------------------
def _float(dt) -> Callable:
    return lambda raw: raw.astype(UINT[np.dtype(dt).itemsize]).view(dt).astype(np.float64)


DECODE = {  # raw element bits (uint64) -> value (float64 or int64)
    "f16": _float(np.float16), "f32": _float(np.float32),
    "bf16": lambda raw: fp.from_bf16(raw.astype(np.uint16)).astype(np.float64),
    "tf32": lambda raw: (raw.astype(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64),
    "s8": lambda raw: raw.astype(np.uint8).view(np.int8).astype(np.int64),
    "u8": lambda raw: raw.astype(np.int64), "s32": lambda raw: raw.astype(np.uint32).view(np.int32).astype(np.int64),
    "e4m3": lambda raw: numerics.fp8_to_f32(raw, "fp8").astype(np.float64),
    "e5m2": lambda raw: numerics.fp8_to_f32(raw, "bf8").astype(np.float64),
}
BITS = {"f16": 16, "bf16": 16, "tf32": 32, "f32": 32, "s32": 32, "s8": 8, "u8": 8, "e4m3": 8, "e5m2": 8}
FLOAT_OUT = {"f32": (np.float32, np.uint32), "f16": (np.float16, np.uint16)}


def _encode(v: np.ndarray, t: str, satfinite: bool) -> np.ndarray:
    """Values of D rounded to t (s32: wrapped, or clamped with .satfinite, which PTX has for integers only), as raw
    bits."""
    if t == "s32":
        if satfinite:
            v = np.clip(v, -(1 << 31), (1 << 31) - 1)
        return (v & 0xFFFFFFFF).astype(np.uint64)
    dt, ut = FLOAT_OUT[t]
    with np.errstate(over="ignore", invalid="ignore"):
        return fp.canonical_nan(v.astype(dt)).view(ut).astype(np.uint64)


# ---- fragments in registers --------------------------------------------------------------------------------------
def _items(ins: Inst, op) -> list:
    if not isinstance(op, ptx.Vec):
        raise UnsupportedPTX(ins.ins, ins.prog.kernel.name, "a fragment is a {...} vector of registers")
    return list(op.items)


def _reader(ins: Inst, op, bits: int) -> tuple[Callable, int]:
    """((st, sel) -> the fragment's elements as raw bits (lanes, elements), how many elements a lane holds)"""
    getters = [ins.o.get(x, "b32") for x in _items(ins, op)]
    per, mask = 32 // bits, np.uint64((1 << bits) - 1)

    def read(st, sel):
        n = st.n if isinstance(sel, slice) else len(sel)
        regs = [np.broadcast_to(np.asarray(g(st, sel)).astype(np.uint64), (n,)) for g in getters]
        return np.stack([(r >> np.uint64(bits * j)) & mask for r in regs for j in range(per)], 1)
    return read, per * len(getters)


def _writer(ins: Inst, op, bits: int) -> tuple[Callable, int]:
    """((st, sel, raw (lanes, elements)) -> None packing the elements into the fragment's registers, how many)"""
    setters = [ins.o.set(x, "b32") for x in _items(ins, op)]
    per = 32 // bits

    def write(st, sel, raw):
        for r, s in enumerate(setters):
            word = np.zeros(raw.shape[0], np.uint64)
            for j in range(per):
                word |= raw[:, r * per + j] << np.uint64(bits * j)
            s(st, sel, word.astype(np.uint32))
    return write, per * len(setters)


def _warps(st, sel) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(the selected lanes, their %laneid, each one's warp among the selected ones' warps, how many warps)"""
    lanes = np.arange(st.n)[sel]
    warps, wi = np.unique(st.warp[lanes], return_inverse=True)
    return lanes, st.laneid[lanes].astype(np.int64), wi, len(warps)


def _gather(values: np.ndarray, lay: Layout, lane, wi, nw: int) -> np.ndarray:
    """Each warp's matrix (warps, rows, cols) from its lanes' first lay.count elements."""
    out = np.zeros((nw, *lay.shape), values.dtype)
    out[wi[:, None], lay.rows[lane], lay.cols[lane]] = values[:, :lay.count]
    return out


def _scatter(mats: np.ndarray, lay: Layout, lane, wi, elements: int) -> np.ndarray:
    """Each lane's elements of its warp's matrix (a layout's elements repeated to fill the fragment)."""
    i = np.arange(elements) % lay.count
    return mats[wi[:, None], lay.rows[lane][:, i], lay.cols[lane][:, i]]


def _check(ins: Inst, elements: int, lay: Layout, what: str) -> None:
    """A fragment holds the layout's elements (A and B: possibly repeated, to fill more registers)."""
    if elements != lay.count and (what in "CD" or elements % lay.count):
        raise UnsupportedPTX(ins.ins, ins.prog.kernel.name, f"the {what} fragment has {elements} elements, the "
                             f"shape's layout {lay.count} a lane")


# ---- the multiply-accumulate -------------------------------------------------------------------------------------
def _mma_op(ins: Inst, lays: tuple[Layout, Layout, Layout], types: list[str]) -> Op:
    """d = a @ b + c over each warp's fragments."""
    la, lb, lc = lays
    td, ta, tb, tc = types
    (d, nd), (a, na), (b, nb), (c, nc) = (_writer(ins, ins.ops[0], BITS[td]), _reader(ins, ins.ops[1], BITS[ta]),
                                          _reader(ins, ins.ops[2], BITS[tb]), _reader(ins, ins.ops[3], BITS[tc]))
    for n, lay, what in ((na, la, "A"), (nb, lb, "B"), (nc, lc, "C"), (nd, lc, "D")):
        _check(ins, n, lay, what)
    satfinite = ins.has("satfinite")

    def run(st, sel):
        _, lane, wi, nw = _warps(st, sel)
        ma = _gather(DECODE[ta](a(st, sel)), la, lane, wi, nw)
        mb = _gather(DECODE[tb](b(st, sel)), lb, lane, wi, nw)
        acc = _gather(DECODE[tc](c(st, sel)), lc, lane, wi, nw)
        if acc.dtype.kind == "i":
            acc = acc + np.matmul(ma, mb)
        else:
            with np.errstate(all="ignore"):
                for k in range(ma.shape[2]):
                    acc = acc + ma[:, :, k, None] * mb[:, None, k, :]
        d(st, sel, _encode(_scatter(acc, lc, lane, wi, nd), td, satfinite))
    return run


def _types(ins: Inst) -> list[str]:
    return [m for m in ins.mods if m in BITS]


def mma(ins: Inst) -> Op:
    """mma.sync.aligned.shape.row.col{.satfinite}.dtype.atype.btype.ctype d, a, b, c."""
    shape = next((m for m in ins.mods if m in SHAPES), None)
    types = _types(ins)
    if shape is None or ins.mods[0] != "sync" or len(types) != 4:
        raise UnsupportedPTX(ins.ins, ins.prog.kernel.name, "mma.sync with a shape and four types is supported")
    return _mma_op(ins, _layouts(MMA_AB, MMA_C, shape, types[1], shape[:shape.index("k")], ins),
                   types)


def wmma(ins: Inst) -> Op:
    return {"load": _wmma_load, "store": _wmma_store, "mma": _wmma_mma}[ins.mods[0]](ins)


def _wmma_shape(ins: Inst) -> str:
    shape = next((m for m in ins.mods if m in WMMA_C), None)
    if shape is None:
        raise UnsupportedPTX(ins.ins, ins.prog.kernel.name, f"wmma shapes: {', '.join(WMMA_C)}")
    return shape


def _wmma_mma(ins: Inst) -> Op:
    """wmma.mma.sync.aligned.alayout.blayout.shape.dtype.ctype (f16 operands) or .dtype.atype.btype.ctype."""
    shape, types = _wmma_shape(ins), _types(ins)
    if len(types) == 2:
        types = [types[0], "f16", "f16", types[1]]
    return _mma_op(ins, _layouts(WMMA_AB, WMMA_C, shape, types[1], shape, ins), types)


def _wmma_fragment(ins: Inst) -> tuple[Layout, str, str]:
    """The layout, element type and name (A, B, C, D) of a wmma.load/.store's fragment."""
    shape, what, t = _wmma_shape(ins), ins.mods[1].upper(), _types(ins)[-1]
    if what in "CD":
        m, n, _ = SHAPES[shape]
        return Layout(*WMMA_C[shape], (m, n)), t, what
    return _layouts(WMMA_AB, WMMA_C, shape, t, shape, ins)["AB".index(what)], t, what


def _addresses(ins: Inst, lay: Layout, addr: Callable) -> Callable:
    """(st, sel, lane, elements) -> each lane's elements' addresses, from the matrix's (addr), its layout in memory
    (.row or .col) and the stride (elements between rows or columns; by default the matrix's width or height)."""
    col = ins.has("col")
    default = np.uint32(lay.shape[0 if col else 1])
    stride = ins.o.get(ins.ops[2], "u32") if len(ins.ops) > 2 else (lambda st, sel: default)

    def at(st, sel, lane, elements, size):
        i = np.arange(elements) % lay.count
        r, c = lay.rows[lane][:, i], lay.cols[lane][:, i]
        s = np.asarray(stride(st, sel)).astype(np.int64).reshape(-1, 1)
        base = np.asarray(addr(st, sel)).astype(np.uint64).reshape(-1, 1)
        return (base + (((c * s + r) if col else (r * s + c)) * size).astype(np.uint64)).reshape(-1)
    return at


def _wmma_load(ins: Inst) -> Op:
    """wmma.load.{a,b,c}.sync.aligned.layout.shape{.ss}.type r, [p]{, stride}."""
    lay, t, what = _wmma_fragment(ins)
    dst, n = _writer(ins, ins.ops[0], BITS[t])
    _check(ins, n, lay, what)
    at, space = _address(ins, ins.ops[1])
    addresses, size = _addresses(ins, lay, at), BITS[t] // 8

    def run(st, sel):
        lanes, lane, _, _ = _warps(st, sel)
        raw = st.load(space, addresses(st, sel, lane, n, size), size, np.repeat(lanes, n))
        dst(st, sel, np.ascontiguousarray(raw).view(f"<u{size}").reshape(len(lanes), n).astype(np.uint64))
    return run


def _wmma_store(ins: Inst) -> Op:
    """wmma.store.d.sync.aligned.layout.shape{.ss}.type [p], r{, stride}."""
    lay, t, what = _wmma_fragment(ins)
    src, n = _reader(ins, ins.ops[1], BITS[t])
    _check(ins, n, lay, what)
    at, space = _address(ins, ins.ops[0])
    addresses, size = _addresses(ins, lay, at), BITS[t] // 8

    def run(st, sel):
        lanes, lane, _, _ = _warps(st, sel)
        data = src(st, sel).astype(f"<u{size}").reshape(-1, 1).view(np.uint8)
        st.store(space, addresses(st, sel, lane, n, size), data, np.repeat(lanes, n))
    return run


# ---- 8x8 matrices of 16-bit elements: ldmatrix, stmatrix, movmatrix -------------------------------------------------
ROW8 = Layout(_row8, 2, (8, 8))


def _matrix_form(ins: Inst, vec) -> tuple[int, bool]:
    """(how many 8x8 matrices, transposed) of an m8n8 .b16 instruction whose fragments are vec."""
    num = next((int(m[1:]) for m in ins.mods if m in ("x1", "x2", "x4")), 1)
    if not ins.has("m8n8") or not ins.has("b16") or len(_items(ins, vec)) != num:
        raise UnsupportedPTX(ins.ins, ins.prog.kernel.name, "m8n8 .b16 matrices, one register each, are supported")
    return num, ins.has("trans")


def _split(words: list[np.ndarray]) -> np.ndarray:
    """32-bit registers -> their two 16-bit halves (lanes, 2 * registers), low first."""
    w = np.stack([np.asarray(x).astype(np.uint64) for x in words], 1)
    return np.stack([w & np.uint64(0xFFFF), w >> np.uint64(16)], 2).reshape(w.shape[0], -1)


def ldmatrix(ins: Inst) -> Op:
    """ldmatrix.sync.aligned.m8n8.num{.trans}{.shared}.b16 r, [p]: lanes 8i..8i+7 give the addresses of matrix i's
    rows (16 bytes each); register i of lane L holds row L/4, columns 2(L%4) and 2(L%4)+1 of matrix i (transposed
    with .trans)."""
    num, trans = _matrix_form(ins, ins.ops[0])
    dsts = [ins.o.set(x, "b32") for x in _items(ins, ins.ops[0])]
    addr, space = _address(ins, ins.ops[1])

    def run(st, sel):
        lanes, lane, wi, nw = _warps(st, sel)
        at = np.broadcast_to(np.asarray(addr(st, sel)).astype(np.uint64), lanes.shape)
        rows = np.zeros((nw, 8 * num, 8), np.uint64)
        give = lane < 8 * num
        data = st.load(space, at[give], 16, lanes[give])
        rows[wi[give], lane[give]] = np.ascontiguousarray(data).view("<u2").astype(np.uint64)
        mats = rows.reshape(nw * num, 8, 8)
        for i, d in enumerate(dsts):
            m = mats[i::num] if not trans else mats[i::num].transpose(0, 2, 1)
            half = _scatter(m, ROW8, lane, wi, 2)
            d(st, sel, (half[:, 0] | half[:, 1] << np.uint64(16)).astype(np.uint32))
    return run


def stmatrix(ins: Inst) -> Op:
    """stmatrix.sync.aligned.m8n8.num{.trans}{.shared}.b16 [p], r: ldmatrix's inverse."""
    num, trans = _matrix_form(ins, ins.ops[1])
    srcs = [ins.o.get(x, "b32") for x in _items(ins, ins.ops[1])]
    addr, space = _address(ins, ins.ops[0])

    def run(st, sel):
        lanes, lane, wi, nw = _warps(st, sel)
        halves = _split([np.broadcast_to(g(st, sel), lanes.shape) for g in srcs])
        mats = np.stack([_gather(halves[:, 2 * i:2 * i + 2], ROW8, lane, wi, nw) for i in range(num)], 1)
        if trans:
            mats = mats.transpose(0, 1, 3, 2)
        rows = mats.reshape(nw, 8 * num, 8)
        give = lane < 8 * num
        at = np.broadcast_to(np.asarray(addr(st, sel)).astype(np.uint64), lanes.shape)[give]
        data = np.ascontiguousarray(rows[wi[give], lane[give]].astype("<u2")).view(np.uint8)
        st.store(space, at, data, lanes[give])
    return run


def movmatrix(ins: Inst) -> Op:
    """movmatrix.sync.aligned.m8n8.trans.b16 d, a: the warp's 8x8 matrix (in ldmatrix's fragments) transposed."""
    if not (ins.has("m8n8") and ins.has("trans") and ins.has("b16")):
        raise UnsupportedPTX(ins.ins, ins.prog.kernel.name, "movmatrix.sync.aligned.m8n8.trans.b16 is supported")
    src, dst = ins.o.get(ins.ops[1], "b32"), ins.o.set(ins.ops[0], "b32")

    def run(st, sel):
        lanes, lane, wi, nw = _warps(st, sel)
        m = _gather(_split([np.broadcast_to(src(st, sel), lanes.shape)]), ROW8, lane, wi, nw)
        half = _scatter(m.transpose(0, 2, 1), ROW8, lane, wi, 2)
        dst(st, sel, (half[:, 0] | half[:, 1] << np.uint64(16)).astype(np.uint32))
    return run
