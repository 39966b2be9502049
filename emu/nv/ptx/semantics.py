"""What each PTX instruction does: one table from the opcode (the mnemonic's first part) to a builder that turns an
instruction, its modifiers and types into a function over (state, lanes).

A built function returns None when its lanes go on to the next instruction, a target index (or an array of
them) when it branches, or STOP when it changed its lanes' status (a barrier, an exit); the executor does the rest.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from usergpu.emu import numerics
from usergpu.emu.nv.ptx import fp
from usergpu.emu.nv.ptx.operands import NP, SINT, UINT, Operands, signed
from usergpu.emu.nv.ptx.program import Program
from usergpu.errors import CodeObjectError
from usergpu.isa.nv import ptx

STOP = -1
ROUNDING = {"rn", "rz", "rm", "rp"}
INT_ROUNDING = {"rni", "rzi", "rmi", "rpi"}
Op = Callable


class Inst:
    """An instruction being built: its operands compiler, modifiers and types."""

    def __init__(self, prog: Program, fn: str, ins: ptx.Instruction, index: int):
        self.prog, self.fn, self.ins, self.index = prog, fn, ins, index
        parts = ins.opcode.split(".")
        self.base = parts[0]
        self.mods = parts[1:]
        self.types = [m for m in self.mods if m in NP]
        self.o = Operands(prog, fn, ins)
        self.ops = ins.operands

    @property
    def t(self) -> str:
        if not self.types:
            raise self.o.error(f"{self.ins.opcode} has no type")
        return self.types[-1]

    def has(self, *mods: str) -> bool:
        return any(m in self.mods for m in mods)

    def mode(self, default: str = "rn") -> str:
        return next((m for m in self.mods if m in ROUNDING | INT_ROUNDING | {"rna"}), default)

    def srcs(self, t: str | None = None, first: int = 1) -> list:
        return [self.o.get(x, t or self.t) for x in self.ops[first:]]

    def dst(self, t: str | None = None, i: int = 0):
        return self.o.set(self.ops[i], t or self.t)


def _op(ins: Inst, fn: Callable, t: str | None = None) -> Op:
    """dst = fn(*srcs) with the operands read and written as type t."""
    srcs, dst = ins.srcs(t), ins.dst(t)
    if len(srcs) == 1:
        a, = srcs
        return lambda st, sel: dst(st, sel, fn(a(st, sel)))
    if len(srcs) == 2:
        a, b = srcs
        return lambda st, sel: dst(st, sel, fn(a(st, sel), b(st, sel)))
    return lambda st, sel: dst(st, sel, fn(*(g(st, sel) for g in srcs)))


# ---- integers --------------------------------------------------------------------------------------------------
def _wrap(t: str) -> Callable:
    dt = NP[t]
    return lambda x: np.asarray(x).astype(np.int64 if signed(t) else np.uint64).astype(dt)


def _hi(a, b, t: str):
    """The high half of the double-width product."""
    size = np.dtype(NP[t]).itemsize
    if size < 8:
        wide = np.asarray(a).astype(np.int64) * np.asarray(b).astype(np.int64)
        return (wide >> (8 * size)).astype(NP[t])
    x, y = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    exact = [(int(u) * int(v)) >> 64 for u, v in zip(x.reshape(-1), y.reshape(-1), strict=True)]
    return np.array([e & ((1 << 64) - 1) for e in exact], np.uint64).view(NP[t]).reshape(x.shape)


def _wide_t(t: str) -> str:
    return t[0] + str(int(t[1:]) * 2)


def _mul(ins: Inst) -> Op:
    t = ins.t
    if t[0] == "f" or t in ("bf16", "f16x2", "bf16x2"):
        return _float_op(ins, "mul")
    if ins.has("wide"):
        wt = _wide_t(t)
        a, b = ins.srcs(t)
        dst = ins.dst(wt)
        return lambda st, sel: dst(st, sel, np.asarray(a(st, sel)).astype(NP[wt]) * np.asarray(b(st, sel)).astype(
            NP[wt]))
    if ins.has("hi"):
        return _op(ins, lambda a, b: _hi(a, b, t))
    return _op(ins, lambda a, b: np.multiply(a, b, dtype=NP[t]))


def _mad(ins: Inst) -> Op:
    t = ins.t
    if t[0] == "f" or t in ("bf16", "f16x2", "bf16x2"):
        return _float_op(ins, "fma")
    if ins.has("cc"):
        return _carry(ins, 1)
    a, b, c = ins.srcs(t)
    if ins.has("wide"):
        wt = _wide_t(t)
        c = ins.o.get(ins.ops[3], wt)
        dst = ins.dst(wt)
        return lambda st, sel: dst(st, sel, np.asarray(a(st, sel)).astype(NP[wt]) * np.asarray(b(st, sel)).astype(
            NP[wt]) + c(st, sel))
    dst = ins.dst(t)
    if ins.has("hi") and ins.has("sat"):  # s32: the high word plus c, clamped to the int32 range
        return lambda st, sel: dst(st, sel, numerics.sat(np.asarray(_hi(a(st, sel), b(st, sel), t)).astype(np.int64)
                                                        + np.asarray(c(st, sel)).astype(np.int64), np.int32))
    if ins.has("hi"):
        return lambda st, sel: dst(st, sel, np.add(_hi(a(st, sel), b(st, sel), t), c(st, sel), dtype=NP[t]))
    if ins.has("sat"):
        return lambda st, sel: dst(st, sel, numerics.sat(
            (np.asarray(a(st, sel)).astype(np.int64) * b(st, sel) + c(st, sel)), NP[t]))
    return lambda st, sel: dst(st, sel, np.add(np.multiply(a(st, sel), b(st, sel), dtype=NP[t]), c(st, sel),
                                               dtype=NP[t]))


def _addsub(ins: Inst, sign: int) -> Op:
    t = ins.t
    if t[0] == "f" or t in ("bf16", "f16x2", "bf16x2"):
        return _float_op(ins, "add" if sign > 0 else "sub")
    if ins.has("sat"):  # s32 only: clamped to the int32 range
        return _op(ins, lambda a, b: numerics.sat(np.asarray(a).astype(np.int64) + sign * np.asarray(b).astype(
            np.int64), np.int32))
    if ins.has("cc") or ins.base in ("addc", "subc"):
        return _carry(ins, sign)
    return _op(ins, (lambda a, b: np.add(a, b, dtype=NP[t])) if sign > 0 else
               (lambda a, b: np.subtract(a, b, dtype=NP[t])))


def _carry(ins: Inst, sign: int) -> Op:
    """add.cc/addc/sub.cc/subc and mad.cc/madc (lo or hi product plus c): the carry (borrow) flag is one per
    thread, CC.CF."""
    t, set_out = ins.t, ins.has("cc")
    use_in = ins.base in ("addc", "subc", "madc")
    srcs = ins.srcs(t)
    dst = ins.dst(t)
    size = np.dtype(NP[t]).itemsize * 8
    mask = (1 << size) - 1
    hi = ins.has("hi")

    def run(st, sel):
        cf = np.atleast_1d(st.register("%cc", np.bool_)[sel] if use_in else np.zeros(1, bool))
        *vals, cf = np.broadcast_arrays(*(np.atleast_1d(np.asarray(g(st, sel))) for g in srcs), cf)
        out, carry = [], []
        for k in range(vals[0].size):
            x = [int(v.reshape(-1)[k]) & mask for v in vals]
            if len(x) == 3:  # mad: the product's low or high half, then + c
                prod = (int(vals[0].reshape(-1)[k]) * int(vals[1].reshape(-1)[k]))
                x = [(prod >> size if hi else prod) & mask, x[2]]
            r = x[0] + x[1] + int(cf.reshape(-1)[k]) if sign > 0 else x[0] - x[1] - int(cf.reshape(-1)[k])
            out.append(r & mask)
            carry.append(r >> size != 0 if sign > 0 else r < 0)
        if set_out:
            st.register("%cc", np.bool_)[sel] = np.array(carry, bool).reshape(vals[0].shape)
        dst(st, sel, np.array(out, np.uint64).astype(UINT[size // 8]).view(NP[t]).reshape(vals[0].shape))
    return run


def _divrem(ins: Inst, rem: bool) -> Op:
    t = ins.t
    if t[0] == "f":
        return _float_op(ins, "div")
    dt = NP[t]
    size = np.dtype(dt).itemsize

    def f(a, b):
        a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
        zero = b == 0
        if signed(t):  # C's truncating division on magnitudes, as unsigned 64-bit (INT_MIN / -1 wraps)
            ua = np.where(a < 0, -a.astype(np.int64).view(np.uint64), a.astype(np.int64).view(np.uint64))
            ub = np.where(b < 0, -b.astype(np.int64).view(np.uint64), b.astype(np.int64).view(np.uint64))
            ub = np.where(zero, np.uint64(1), ub)
            q, r = ua // ub, ua % ub
            q = np.where((a < 0) != (b < 0), -q.view(np.int64), q.view(np.int64))
            r = np.where(a < 0, -r.view(np.int64), r.view(np.int64))
            q = np.where(zero, -1, q)  # what the hardware gives for x / 0 (PTX leaves it unspecified)
        else:
            ub = np.where(zero, 1, b)
            q, r = a // ub, a % ub
            q = np.where(zero, np.iinfo(dt).max, q)
        out = np.where(zero, a, r) if rem else q
        return out.astype(np.int64 if signed(t) else np.uint64).astype(UINT[size]).view(dt)
    return _op(ins, f)


def _minmax(ins: Inst, which: str) -> Op:
    t = ins.t
    if t[0] == "f" or t in ("bf16", "f16x2", "bf16x2"):
        return _float_op(ins, which)
    fn = np.minimum if which == "min" else np.maximum
    if ins.has("relu"):
        return _op(ins, lambda a, b: np.maximum(fn(a, b), 0).astype(NP[t]))
    return _op(ins, lambda a, b: fn(a, b).astype(NP[t]))


def _shift(ins: Inst, left: bool) -> Op:
    t = ins.t
    a = ins.o.get(ins.ops[1], t)
    b = ins.o.get(ins.ops[2], "u32")
    dst = ins.dst(t)
    size = np.dtype(NP[t]).itemsize * 8

    def run(st, sel):
        x, n = np.asarray(a(st, sel)), np.asarray(b(st, sel)).astype(np.uint64)
        big = n >= size  # PTX clamps the shift amount: everything shifted out (a signed right shift: the sign)
        n = np.minimum(n, size - 1).astype(x.dtype if x.dtype.kind == "u" else np.int64)
        if left:
            r = np.where(big, 0, x << n.astype(x.dtype))
        elif signed(t):
            r = x >> n.astype(x.dtype)  # big shifts clamp to size-1: the sign bit everywhere
        else:
            r = np.where(big, 0, x >> n.astype(x.dtype))
        dst(st, sel, np.asarray(r).astype(NP[t]))
    return run


def _shf(ins: Inst) -> Op:
    """shf.l/.r.wrap/.clamp.b32: the funnel shift of hi:lo."""
    lo, hi, n = ins.srcs("u32")
    dst = ins.dst("u32")
    left, clamp = ins.has("l"), ins.has("clamp")

    def run(st, sel):
        s = np.asarray(n(st, sel)).astype(np.uint64)
        s = np.minimum(s, 32) if clamp else s & np.uint64(31)
        pair = (np.asarray(hi(st, sel)).astype(np.uint64) << np.uint64(32)) | np.asarray(lo(st, sel)).astype(
            np.uint64)
        r = (pair << s) >> np.uint64(32) if left else pair >> s
        dst(st, sel, (r & np.uint64(0xFFFFFFFF)).astype(np.uint32))
    return run


def _bits(fn: Callable) -> Callable:
    return lambda ins: _op(ins, lambda *a: fn(ins.t, *a))


def _logic(name: str) -> Callable:
    ufunc = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[name]

    def build(ins: Inst) -> Op:
        if ins.t == "pred":
            return _op(ins, lambda a, b: ufunc(a, b))
        return _op(ins, lambda a, b: ufunc(a, b).astype(NP[ins.t]))
    return build


def _popc(t: str, a):
    a = np.asarray(a)
    return numerics.popcount(np.atleast_1d(a.view(UINT[a.dtype.itemsize]))).astype(np.uint32).reshape(a.shape)


def _clz(t: str, a):
    a = np.asarray(a)
    size = a.dtype.itemsize * 8
    u = np.atleast_1d(a.view(UINT[a.dtype.itemsize])).astype(np.uint64)
    n = np.full(u.shape, size, np.uint32)
    for bit in range(size):
        n = np.where((u >> np.uint64(bit)) & np.uint64(1) != 0, np.uint32(size - 1 - bit), n)
    return n.reshape(a.shape)


def _bfind(ins: Inst) -> Op:
    t, shift = ins.t, ins.has("shiftamt")
    size = np.dtype(NP[t]).itemsize * 8

    def f(a):
        a = np.asarray(a)
        x = np.where(a < 0, ~a, a) if signed(t) else a  # signed: the most significant bit unlike the sign
        lead = _clz(t, x).astype(np.int64)
        pos = size - 1 - lead
        out = np.where(lead == size, -1, (size - 1 - pos) if shift else pos)
        return out.astype(np.int64).astype(np.uint32)
    a = ins.o.get(ins.ops[1], t)
    dst = ins.dst("u32")
    return lambda st, sel: dst(st, sel, f(a(st, sel)))


def _brev(t: str, a):
    a = np.asarray(a)
    size = a.dtype.itemsize * 8
    u = a.view(UINT[a.dtype.itemsize]).astype(np.uint64)
    r = np.zeros_like(u)
    for bit in range(size):
        r |= ((u >> np.uint64(bit)) & np.uint64(1)) << np.uint64(size - 1 - bit)
    return r.astype(UINT[a.dtype.itemsize]).view(a.dtype)


def _fns(ins: Inst) -> Op:
    """fns.b32 d, mask, base, offset: the position of the |offset|-th set bit of mask counting from bit base, up for
    a positive offset, down for a negative one; offset 0 gives base if its bit is set; 0xffffffff where there is
    none (or base is not a bit of the word)."""
    mask, base, offset = ins.o.get(ins.ops[1], "b32"), ins.o.get(ins.ops[2], "s32"), ins.o.get(ins.ops[3], "s32")
    dst = ins.dst("b32")
    positions = np.arange(32, dtype=np.int64)

    def run(st, sel):
        m, b, o = (np.atleast_1d(np.asarray(f(st, sel)).astype(np.int64)) for f in (mask, base, offset))
        m, b, o = np.broadcast_arrays(m & 0xFFFFFFFF, b, o)
        b, o = b[:, None], o[:, None]
        bits = (m[:, None] >> positions) & 1 == 1
        up, down = bits & (positions >= b), bits & (positions <= b)
        rank = np.where(o > 0, np.cumsum(up, axis=1), np.cumsum(down[:, ::-1], axis=1)[:, ::-1])
        hit = np.where(o > 0, up, down) & (rank == np.abs(o)) | ((o == 0) & bits & (positions == b))
        found = hit.any(axis=1) & (b[:, 0] >= 0) & (b[:, 0] < 32)
        dst(st, sel, np.where(found, hit.argmax(axis=1), 0xFFFFFFFF).astype(np.uint32))
    return run


def _bfe(ins: Inst) -> Op:
    """bfe: len bits from pos (both taken mod 256), zero- or sign-filled above them; the sign is bit
    min(pos + len - 1, msb) (PTX ISA's pseudocode); len 0 gives 0."""
    t = ins.t
    a = ins.o.get(ins.ops[1], t)
    pos, length = (ins.o.get(x, "u32") for x in ins.ops[2:4])
    dst = ins.dst(t)
    size = np.dtype(NP[t]).itemsize * 8
    full = np.uint64((1 << size) - 1)

    def run(st, sel):
        x = np.asarray(a(st, sel)).view(UINT[size // 8]).astype(np.uint64)
        p = np.asarray(pos(st, sel)).astype(np.int64) & 0xFF
        n = np.asarray(length(st, sel)).astype(np.int64) & 0xFF
        valid = np.clip(np.minimum(n, size - p), 0, 64).astype(np.uint64)  # bits of a the field really has
        keep = np.where(valid >= 64, ~np.uint64(0), (np.uint64(1) << np.minimum(valid, 63)) - np.uint64(1))
        field = np.where(p >= size, np.uint64(0), x >> np.minimum(p, size - 1).astype(np.uint64)) & keep
        if signed(t):
            sbit = np.clip(p + n - 1, 0, size - 1).astype(np.uint64)
            neg = (n > 0) & (((x >> sbit) & np.uint64(1)) != 0)
            field = np.where(neg, field | (~keep & full), field)
        field = np.where(n == 0, np.uint64(0), field)
        dst(st, sel, (field & full).astype(UINT[size // 8]).view(NP[t]))
    return run


def _bfi(ins: Inst) -> Op:
    t = ins.t
    a, b = (ins.o.get(x, t) for x in ins.ops[1:3])
    pos, length = (ins.o.get(x, "u32") for x in ins.ops[3:5])
    dst = ins.dst(t)
    size = np.dtype(NP[t]).itemsize * 8

    def run(st, sel):
        x = np.asarray(a(st, sel)).view(UINT[size // 8]).astype(np.uint64)
        y = np.asarray(b(st, sel)).view(UINT[size // 8]).astype(np.uint64)
        p = np.asarray(pos(st, sel)).astype(np.uint64) & np.uint64(0xFF)
        n = np.asarray(length(st, sel)).astype(np.uint64) & np.uint64(0xFF)
        n = np.minimum(n, np.where(p >= size, 0, size - np.minimum(p, size)).astype(np.uint64))
        keep = np.where(n >= 64, ~np.uint64(0), (np.uint64(1) << np.minimum(n, 63)) - np.uint64(1))
        pp = np.minimum(p, size - 1)
        r = (y & ~(keep << pp)) | ((x & keep) << pp)
        r = np.where(n == 0, y, r)
        dst(st, sel, (r & np.uint64((1 << size) - 1)).astype(UINT[size // 8]).view(NP[t]))
    return run


def _prmt(ins: Inst) -> Op:
    a, b, s = ins.srcs("u32")
    dst = ins.dst("u32")
    mode = next((m for m in ins.mods if m in ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16")), None)

    def run(st, sel):
        x, y = np.asarray(a(st, sel)).astype(np.uint64), np.asarray(b(st, sel)).astype(np.uint64)
        sel_ = np.asarray(s(st, sel)).astype(np.uint64)
        x, y, sel_ = np.broadcast_arrays(x, y, sel_)
        pair = x | (y << np.uint64(32))
        out = np.zeros(x.shape, np.uint64)
        for i in range(4):
            if mode is None:
                nib = (sel_ >> np.uint64(4 * i)) & np.uint64(0xF)
                idx, rep = nib & np.uint64(7), (nib & np.uint64(8)) != 0
            else:
                idx, rep = _prmt_mode(mode, sel_ & np.uint64(3), i), False
            byte = (pair >> (idx * np.uint64(8))) & np.uint64(0xFF)
            byte = np.where(rep, np.where(byte & np.uint64(0x80), np.uint64(0xFF), np.uint64(0)), byte)
            out |= byte << np.uint64(8 * i)
        dst(st, sel, out.astype(np.uint32))
    return run


def _prmt_mode(mode: str, s: np.ndarray, i: int) -> np.ndarray:
    """The byte each special prmt mode selects for result byte i, given the selector's low two bits."""
    s = s.astype(np.int64)
    table = {
        "f4e": lambda: (s + i) % 8, "b4e": lambda: (s - i) % 8, "rc8": lambda: s,
        "ecl": lambda: np.maximum(s, i), "ecr": lambda: np.minimum(s, i),
        "rc16": lambda: (s & 1) * 2 + (i & 1),
    }
    return table[mode]().astype(np.uint64)


def _lop3(ins: Inst) -> Op:
    a, b, c = (ins.o.get(x, "u32") for x in ins.ops[1:4])
    lut = int(ins.ops[4].value) if isinstance(ins.ops[4], ptx.Imm) else None
    if lut is None:
        raise ins.o.error("lop3's truth table must be an immediate")
    dst = ins.dst("u32")

    def run(st, sel):
        x, y, z = (np.asarray(g(st, sel)).astype(np.uint32) for g in (a, b, c))
        out = np.zeros(np.broadcast(x, y, z).shape, np.uint32)
        for k in range(8):  # minterm k: a = bit 2, b = bit 1, c = bit 0 of the index into the table 0xF0/0xCC/0xAA
            if lut >> k & 1:
                out |= (x if k & 4 else ~x) & (y if k & 2 else ~y) & (z if k & 1 else ~z)
        dst(st, sel, out)
    return run


def _abs_neg(ins: Inst, which: str) -> Op:
    t = ins.t
    if t[0] == "f" or t in ("bf16", "f16x2", "bf16x2"):
        return _float_op(ins, which)
    return _op(ins, (lambda a: np.abs(a).astype(NP[t])) if which == "abs" else (lambda a: (-np.asarray(a)).astype(
        NP[t])))


def _not(ins: Inst) -> Op:
    return _op(ins, lambda a: ~np.asarray(a))


def _cnot(ins: Inst) -> Op:
    return _op(ins, lambda a: (np.asarray(a) == 0).astype(NP[ins.t]))


def _sad(ins: Inst) -> Op:
    uint = UINT[np.dtype(NP[ins.t]).itemsize]

    def f(a, b, c):  # |a - b| + c, wrapping: the difference taken the larger minus the smaller, unsigned
        a, b = np.asarray(a), np.asarray(b)
        diff = np.where(a > b, a.view(uint) - b.view(uint), b.view(uint) - a.view(uint)).astype(uint)
        return (diff + np.asarray(c).view(uint)).astype(uint).view(NP[ins.t])
    return _op(ins, f)


def _mul24(ins: Inst) -> Op:
    t = ins.t
    ext = (lambda x: numerics.sext24(np.asarray(x).view(np.uint32)).astype(np.int64)) if signed(t) else \
        (lambda x: np.asarray(x).astype(np.int64) & 0xFFFFFF)
    hi = ins.has("hi")

    sat = ins.has("sat")

    def f(a, b, c=0):
        p = ext(a) * ext(b)
        p = (p >> 16) if hi else p
        s = p + np.asarray(c).astype(np.int64)
        return numerics.sat(s, np.int32) if sat else s.astype(np.uint32).view(NP[t])
    return _op(ins, f)


def _dp4a(ins: Inst, pairs: int) -> Op:
    """dp4a/dp2a: the dot product of byte (or halfword-by-byte) lanes, added to c."""
    ta, tb = ins.types[-2], ins.types[-1]
    a, b = (ins.o.get(x, "u32") for x in ins.ops[1:3])
    c = ins.o.get(ins.ops[3], "s32" if signed(ta) or signed(tb) else "u32")
    dst = ins.dst("s32" if signed(ta) or signed(tb) else "u32")
    lo = ins.has("lo") or pairs == 4

    def part(x, i, width, sgn):
        v = (np.asarray(x).astype(np.int64) >> (i * width)) & ((1 << width) - 1)
        return np.where(sgn & (v >= 1 << (width - 1)), v - (1 << width), v)

    def run(st, sel):
        x, y = a(st, sel), b(st, sel)
        acc = np.asarray(c(st, sel)).astype(np.int64)
        for i in range(pairs):
            xa = part(x, i, 8 if pairs == 4 else 16, signed(ta))
            yb = part(y, i + (0 if pairs == 4 or lo else 2), 8, signed(tb))
            acc = acc + xa * yb
        dst(st, sel, acc.astype(np.uint32 if not signed(ta) and not signed(tb) else np.int32))
    return run


# ---- floats ----------------------------------------------------------------------------------------------------
HALF = {"f16": ("f16", (0,)), "bf16": ("bf16", (0,)), "f16x2": ("f16", (0, 16)), "bf16x2": ("bf16", (0, 16))}
HALF_TINY = {"f16": 2.0**-14, "bf16": float(np.finfo(np.float32).tiny)}  # their smallest normal numbers
HALF_EXPONENT = {"f16": 0x7C00, "bf16": 0x7F80}


def _half_op(ins: Inst, name: str) -> Op:
    """f16, bf16 and their pairs: the operation on each 16-bit half of the operands, computed wide and rounded
    once; .ftz flushes subnormal operands and results."""
    elem, shifts = HALF[ins.t]
    reg = "u32" if len(shifts) == 2 else "b16"
    srcs, dst = ins.srcs(reg), ins.dst(reg)
    f = _float_fn(ins, name, elem)
    mode, ftz = ins.mode(), ins.has("ftz")

    def run(st, sel):
        vals = [np.asarray(g(st, sel)).astype(np.uint32) for g in srcs]
        out = np.uint32(0)
        for shift in shifts:
            halves = [_decode(((v >> np.uint32(shift)) & np.uint32(0xFFFF)).astype(np.uint16), elem) for v in vals]
            r = _encode(f(*halves), elem, mode)
            if ftz:
                r = fp.flush_bits(r, HALF_EXPONENT[elem])
            out = out | (np.asarray(r).astype(np.uint32) << np.uint32(shift))
        dst(st, sel, np.asarray(out).astype(np.uint32 if len(shifts) == 2 else np.uint16))
    return run


def _decode(bits: np.ndarray, elem: str) -> np.ndarray:
    return bits.view(np.float16) if elem == "f16" else fp.from_bf16(bits)


def _encode(x: np.ndarray, elem: str, mode: str) -> np.ndarray:
    return fp.convert(x, mode, np.float16).view(np.uint16) if elem == "f16" else fp.to_bf16(x, mode)


def _float_fn(ins: Inst, name: str, elem: str) -> Callable:
    """The arithmetic of a float instruction on values of elem (f16, bf16: computed in f32/f64 then rounded by the
    caller; f32, f64: here, with the rounding mode)."""
    mode, ftz, sat = ins.mode(), ins.has("ftz"), ins.has("sat")
    dt = {"f16": np.float64, "bf16": np.float64}.get(elem, NP[elem])
    tiny = HALF_TINY.get(elem)  # None: flush by dt's own smallest normal
    nan = ins.has("NaN")
    xorsign = ins.has("xorsign")
    funcs = {
        "add": lambda a, b: fp.add(a, b, mode, dt), "sub": lambda a, b: fp.add(a, -np.asarray(b), mode, dt),
        "mul": lambda a, b: fp.mul(a, b, mode, dt), "fma": lambda a, b, c: fp.fma(a, b, c, mode, dt),
        "div": lambda a, b: _approx_div(a, b) if ins.has("approx") else fp.div(a, b, mode, dt),
        "min": lambda a, b: _fminmax(a, b, np.fmin, np.minimum, nan, xorsign),
        "max": lambda a, b: _fminmax(a, b, np.fmax, np.maximum, nan, xorsign),
        "abs": lambda a: np.abs(a), "neg": lambda a: -np.asarray(a),
    }
    f = funcs[name]

    def run(*args):
        args = [np.asarray(a).astype(dt) for a in args]
        if ftz:
            args = [fp.flush(a, tiny) for a in args]
        with np.errstate(all="ignore"):
            r = np.asarray(f(*args)).astype(dt)
        if ftz and tiny is None:  # a half's result is flushed once rounded (_half_op)
            r = fp.flush(r)
        if sat:
            r = fp.saturate(r)
        if name not in ("abs", "neg"):
            r = fp.canonical_nan(r)
        return r
    return run


def _approx_div(a, b):
    """div.approx.f32: a * (1 / b), which for 2^126 < |b| < 2^128 is 0 (NaN for an infinite a), as the PTX ISA
    states; elsewhere the quotient (within its 2 ulp)."""
    with np.errstate(all="ignore"):
        q = np.asarray(a) / np.asarray(b)
        big = np.isfinite(b) & (np.abs(b) > np.float32(2.0**126))
        return np.where(big, np.where(np.isinf(a), np.nan, q * 0), q).astype(np.asarray(q).dtype)


def _fminmax(a, b, pick, nan_pick, nan: bool, xorsign: bool):
    """min/max: a NaN operand loses unless .NaN; -0 is below +0; .xorsign.abs: |result| with the operands' signs
    xor-ed."""
    a, b = np.asarray(a), np.asarray(b)
    if xorsign:
        sign = np.signbit(a) ^ np.signbit(b)
        a, b = np.abs(a), np.abs(b)
    # a NaN operand loses unless .NaN: chosen here, not by np.fmin/fmax, whose scalar loops quiet a signalling NaN
    r = nan_pick(a, b) if nan else np.where(np.isnan(b), a, np.where(np.isnan(a), b, nan_pick(a, b)))
    zeros = (a == 0) & (b == 0)
    if zeros.any():  # numpy's fmin/fmax keep the first zero; PTX orders -0 < +0
        neg = np.signbit(a) | np.signbit(b) if pick is np.fmin else np.signbit(a) & np.signbit(b)
        r = np.where(zeros, np.where(neg, -np.abs(a), np.abs(a)), r)
    if xorsign:
        r = np.where(sign, -np.abs(r), np.abs(r))
    return r.astype(a.dtype)


def _float_op(ins: Inst, name: str) -> Op:
    if ins.t in HALF:
        return _half_op(ins, name)
    return _op(ins, _float_fn(ins, name, ins.t))


def _approx(fn: Callable, name: str) -> Callable:
    """rcp/sqrt/rsqrt/sin/cos/lg2/ex2/tanh: computed in double and rounded (.approx: within the documented error,
    here the correctly rounded value); .ftz flushes f32 subnormals."""

    def build(ins: Inst) -> Op:
        t, mode, ftz = ins.t, ins.mode(), ins.has("ftz")
        exact = not ins.has("approx") and name in ("rcp", "sqrt")

        def f(a):
            a = np.asarray(a)
            x = fp.flush(a) if ftz else a
            with np.errstate(all="ignore"):
                if exact:
                    r = (fp.rcp if name == "rcp" else fp.sqrt)(x, mode, x.dtype)
                else:
                    r = fn(x.astype(np.float64)).astype(x.dtype)
            return fp.canonical_nan(fp.flush(r) if ftz else r)
        if t in ("f16", "bf16", "f16x2", "bf16x2"):
            return _half_unary(ins, f)
        return _op(ins, f)
    return build


def _half_unary(ins: Inst, f: Callable) -> Op:
    t = ins.t
    elem = "f16" if t.startswith("f16") else "bf16"
    halves = (0, 16) if t.endswith("x2") else (0,)
    a, dst = ins.o.get(ins.ops[1], "u32" if len(halves) == 2 else "b16"), ins.dst("u32" if len(halves) == 2 else "b16")

    def run(st, sel):
        v = np.asarray(a(st, sel)).astype(np.uint32)
        out = np.uint32(0)
        for shift in halves:
            h = _decode(((v >> np.uint32(shift)) & np.uint32(0xFFFF)).astype(np.uint16), elem).astype(np.float32)
            out = out | (_encode(f(h), elem, "rn").astype(np.uint32) << np.uint32(shift))
        dst(st, sel, np.asarray(out).astype(np.uint32 if len(halves) == 2 else np.uint16))
    return run


def _testp(ins: Inst) -> Op:
    t = ins.t
    kind = next(m for m in ins.mods if m in ("finite", "infinite", "number", "notanumber", "normal", "subnormal"))
    tiny = np.finfo(NP[t]).tiny
    tests = {"finite": np.isfinite, "infinite": np.isinf, "number": lambda x: ~np.isnan(x),
             "notanumber": np.isnan, "normal": lambda x: np.isfinite(x) & (np.abs(x) >= tiny),
             "subnormal": lambda x: (x != 0) & (np.abs(x) < tiny)}
    a = ins.o.get(ins.ops[1], t)
    dst = ins.dst("pred")
    return lambda st, sel: dst(st, sel, tests[kind](np.asarray(a(st, sel))))


def _copysign(ins: Inst) -> Op:
    return _op(ins, lambda a, b: np.copysign(b, a))


# ---- comparisons and selection ---------------------------------------------------------------------------------
CMP = {
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
    "lo": np.less, "ls": np.less_equal, "hi": np.greater, "hs": np.greater_equal,
}
BOOL = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}


def _compare(ins: Inst, t: str) -> tuple[str, Callable]:
    """(the type its operands are read as, f(a, b) -> the comparison's result per element: one, or the low and high
    halves of a pair type); unordered comparisons (equ, ltu, ...) are true for a NaN, ordered ones false."""
    cmp = next(m for m in ins.mods if m in CMP or m.rstrip("u") in CMP or m in ("num", "nan"))
    elem, shifts = HALF.get(t, (t, (0,)))
    reg = ("u32" if len(shifts) == 2 else "b16") if t in HALF else t
    ordered = elem[0] != "f" and elem != "bf16"
    ftz = ins.has("ftz")

    def one(a, b):
        if ftz:
            a, b = fp.flush(a), fp.flush(b)
        if cmp == "num":
            return ~np.isnan(a) & ~np.isnan(b)
        if cmp == "nan":
            return np.isnan(a) | np.isnan(b)
        with np.errstate(invalid="ignore"):
            if ordered or cmp in CMP:
                r = CMP[cmp](a, b)
                return r & ~np.isnan(a) & ~np.isnan(b) if cmp == "ne" and not ordered else r
            return CMP[cmp.rstrip("u")](a, b) | np.isnan(a) | np.isnan(b)

    def f(a, b) -> list:
        if t not in HALF:
            return [one(np.asarray(a), np.asarray(b))]
        a, b = np.asarray(a).astype(np.uint32), np.asarray(b).astype(np.uint32)
        return [one(*(_decode(((v >> np.uint32(s)) & np.uint32(0xFFFF)).astype(np.uint16), elem) for v in (a, b)))
                for s in shifts]
    return reg, f


def _combined(ins: Inst, at: int) -> Callable:
    """The .and/.or/.xor of a setp or set with its predicate operand at index at (identity when there is none)."""
    combine = next((BOOL[m] for m in ins.mods if m in BOOL), None)
    if combine is None:
        return lambda st, sel, r: r
    c = ins.o.get(ins.ops[at], "pred")
    return lambda st, sel, r: combine(r, c(st, sel))


def _setp(ins: Inst) -> Op:
    """setp p[|q], a, b[, c]: q is the negation (combined the same way), or for a pair type the high halves'."""
    reg, cmp = _compare(ins, ins.t)
    a, b = (ins.o.get(x, reg) for x in ins.ops[1:3])
    combine = _combined(ins, 3)
    first = ins.ops[0]
    p = ins.o.set(first.first if isinstance(first, ptx.Pair) else first, "pred")
    q = ins.o.set(first.second, "pred") if isinstance(first, ptx.Pair) else None

    def run(st, sel):
        r = cmp(a(st, sel), b(st, sel))
        p(st, sel, combine(st, sel, r[0]))
        if q:
            q(st, sel, combine(st, sel, r[1] if len(r) == 2 else ~r[0]))
    return run


def _set(ins: Inst) -> Op:
    """set d, a, b[, c]: all ones (1.0 for a float d) where the comparison, combined with c, holds, else 0."""
    dt, st_ = ins.types[0], ins.types[1]
    reg, cmp = _compare(ins, st_)
    a, b = (ins.o.get(x, reg) for x in ins.ops[1:3])
    combine = _combined(ins, 3)
    dst = ins.dst(dt)
    true = np.array(1.0 if dt[0] == "f" else -1).astype(NP[dt])
    return lambda st, sel: dst(st, sel, np.where(combine(st, sel, cmp(a(st, sel), b(st, sel))[0]), true,
                                                 NP[dt](0)))


def _selp(ins: Inst) -> Op:
    t = ins.t
    a, b = (ins.o.get(x, t) for x in ins.ops[1:3])
    c = ins.o.get(ins.ops[3], "pred")
    dst = ins.dst(t)
    return lambda st, sel: dst(st, sel, np.where(c(st, sel), a(st, sel), b(st, sel)).astype(NP[t]))


def _slct(ins: Inst) -> Op:
    t, ct = ins.types[0], ins.types[1]
    a, b = (ins.o.get(x, t) for x in ins.ops[1:3])
    c = ins.o.get(ins.ops[3], ct)
    dst = ins.dst(t)
    flush = fp.flush if ins.has("ftz") else np.asarray  # .ftz: a subnormal c counts as zero (so -subnormal >= 0)
    return lambda st, sel: dst(st, sel, np.where(flush(np.asarray(c(st, sel))) >= 0, a(st, sel), b(st, sel)).astype(
        NP[t]))


# ---- moves and conversions -------------------------------------------------------------------------------------
def _mov(ins: Inst) -> Op:
    t = ins.t
    return _op(ins, lambda a: a, t)


FLOAT_DST = {"f16": np.float16, "bf16": np.float32, "tf32": np.float32, "f32": np.float32, "f64": np.float64}
LARGEST = {"f16": 65504.0, "bf16": float(np.uint32(0x7F7F0000).view(np.float32)),
           "tf32": float(np.uint32(0x7F7FE000).view(np.float32)), "f32": float(np.finfo(np.float32).max),
           "f64": float(np.finfo(np.float64).max)}


def _round_float(x: np.ndarray, mode: str, dt: str) -> np.ndarray:
    """x (a float array) rounded once to dt by mode: the value (f16/f32/f64), or bf16/tf32 bits."""
    if mode in INT_ROUNDING:  # cvt.rni.f32.f32 and kin: an integral value, then the type
        x = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}[mode](x)
        mode = "rn"
    if dt == "bf16":
        return fp.to_bf16(x, mode)
    if dt == "tf32":
        return fp.to_tf32(x, mode)
    return fp.convert(x, mode, FLOAT_DST[dt])


def _int_as_float(x: np.ndarray, mode: str, dt: str) -> np.ndarray:
    """An integer as a float of dt (f16, f32, f64: rounded once by mode), or for bf16/tf32 as a double rounded to
    odd (rn) or by the directed mode, so that rounding it to bf16/tf32 (53 bits > 24 + 2) rounds the integer once."""
    if dt in ("f16", "f32", "f64"):
        return fp.from_integer(x, mode, FLOAT_DST[dt])
    d = fp.from_integer(x, "rz" if mode == "rn" else mode, np.float64)
    if mode != "rn" or x.dtype.itemsize < 8:
        return d
    inexact = d.astype(object) != x.astype(object)
    return (d.view(np.uint64) | inexact.astype(np.uint64)).view(np.float64)


def _cvt(ins: Inst) -> Op:
    dt, st_ = ins.types[0], ins.types[1]
    mode, sat, ftz = ins.mode(""), ins.has("sat"), ins.has("ftz")
    relu, satfinite = ins.has("relu"), ins.has("satfinite")
    a = ins.o.get(ins.ops[1], st_ if st_ not in ("f16", "bf16") else "b16")
    dst = ins.dst(dt if dt not in ("f16", "bf16") else "b16")
    fsrc, fdst = st_[0] == "f" or st_ == "bf16", dt in FLOAT_DST
    if dt in ("e4m3x2", "e5m2x2", "f16x2", "bf16x2"):
        return _cvt_pack(ins, dt, st_)
    # NaN to an integer: 0, but the sign bit alone from a double or into 64 bits (PTX ISA 9.0)
    nan_int = 1 << (np.dtype(NP[dt]).itemsize * 8 - 1) if not fdst and (st_ == "f64" or dt[1:] == "64") else 0

    def value(x):
        x = np.asarray(x)
        if st_ == "f16":
            return x.astype(np.uint16).view(np.float16)
        if st_ == "bf16":
            return fp.from_bf16(x)
        return x

    def to_float(x):
        r = _round_float(x, mode or ("rn" if dt != "tf32" else "rna"), dt)
        f = fp.from_bf16(r) if dt == "bf16" else r.view(np.float32) if dt == "tf32" else r  # its value
        if ftz and dt == "f32":
            f = fp.flush(f)
        if relu:  # negatives to +0; a NaN stays, the canonical one
            f = np.where(f < 0, f.dtype.type(0), f)
        if sat:
            f = fp.saturate(f)
        if satfinite:  # an infinite result is the largest finite of its sign
            f = np.where(np.isinf(f), np.copysign(f.dtype.type(LARGEST[dt]), f), f).astype(f.dtype)
        if dt in ("bf16", "tf32"):  # the value changed only to zero, the largest or 0..1, which these hold exactly
            return _round_float(f, "rz", dt) if (relu or sat or satfinite) else r
        r = fp.canonical_nan(f)
        return r.view(np.uint16) if dt == "f16" else r

    def run(st, sel):
        x = value(a(st, sel))
        if ftz and fsrc:
            x = fp.flush(x)
        if fdst:
            r = to_float(x if fsrc else _int_as_float(x, mode or "rn", dt))
        elif fsrc:
            r = fp.to_integer(x, mode or "rzi", NP[dt], nan_int)
        else:
            src_size = np.dtype(NP[st_]).itemsize
            wide = x.view(SINT[src_size]).astype(np.int64) if signed(st_) else x.view(UINT[src_size]).astype(
                np.uint64)
            if sat:
                info = np.iinfo(NP[dt])
                wide = np.clip(wide.astype(object) if wide.dtype == np.uint64 else wide, info.min, info.max)
                r = np.asarray(wide).astype(NP[dt])
            else:
                r = wide.astype(np.uint64 if wide.dtype == np.uint64 else np.int64).astype(NP[dt])
        dst(st, sel, r)
    return run


def _cvt_pack(ins: Inst, dt: str, st_: str) -> Op:
    """cvt.rn.f16x2.f32 / bf16x2.f32 / satfinite e4m3x2/e5m2x2.f32 d, a, b: b in the low half, a in the high."""
    a, b = (ins.o.get(x, st_) for x in ins.ops[1:3])
    dst = ins.dst("b32" if dt in ("f16x2", "bf16x2") else "b16")
    mode, relu = ins.mode(), ins.has("relu")

    def one(x):
        x = np.asarray(x, np.float32)
        if relu:  # negatives to +0; a NaN stays a NaN
            x = np.where(x < 0, np.float32(0), x)
        if dt == "f16x2":
            return fp.canonical_nan(fp.convert(x, mode, np.float16)).view(np.uint16).astype(np.uint32)
        if dt == "bf16x2":
            return fp.to_bf16(x, mode).astype(np.uint32)
        kind = "fp8" if dt == "e4m3x2" else "bf8"
        code = numerics.f32_to_fp8(x, kind)
        if ins.has("satfinite"):  # past the largest finite value: the largest, not NaN/inf
            big = np.isinf(x) | (np.abs(x) > (448.0 if kind == "fp8" else 57344.0))
            code = np.where(big & ~np.isnan(x), (0x7E if kind == "fp8" else 0x7B) | (np.signbit(x) << 7), code)
        return code.astype(np.uint32)
    width = 16 if dt in ("f16x2", "bf16x2") else 8
    return lambda st, sel: dst(st, sel, (one(b(st, sel)) | (one(a(st, sel)) << np.uint32(width))).astype(
        np.uint32 if width == 16 else np.uint16))


def _cvta(ins: Inst) -> Op:
    from usergpu.emu.nv.ptx.program import LOCAL_WINDOW, SHARED_WINDOW

    space = next((m for m in ins.mods if m in ("shared", "local", "global", "const", "param")), None)
    to = ins.has("to")
    window = {"shared": SHARED_WINDOW, "local": LOCAL_WINDOW}.get(space, 0)
    t = ins.t
    a = ins.o.get(ins.ops[1], t)
    dst = ins.dst(t)
    w = np.uint64(window)
    if to:
        return lambda st, sel: dst(st, sel, (np.asarray(a(st, sel)).astype(np.uint64) - w).astype(NP[t]))
    return lambda st, sel: dst(st, sel, (np.asarray(a(st, sel)).astype(np.uint64) + w).astype(NP[t]))


# ---- the table -------------------------------------------------------------------------------------------------
def _lazy(module: str, name: str) -> Callable:
    def build(ins: Inst) -> Op:
        import importlib

        return getattr(importlib.import_module(f"usergpu.emu.nv.ptx.{module}"), name)(ins)
    return build


TABLE: dict[str, Callable[[Inst], Op]] = {
    "add": lambda i: _addsub(i, 1), "sub": lambda i: _addsub(i, -1), "addc": lambda i: _carry(i, 1),
    "subc": lambda i: _carry(i, -1), "madc": lambda i: _carry(i, 1), "mul": _mul, "mad": _mad,
    "fma": lambda i: _float_op(i, "fma"),
    "div": lambda i: _divrem(i, False), "rem": lambda i: _divrem(i, True),
    "min": lambda i: _minmax(i, "min"), "max": lambda i: _minmax(i, "max"),
    "abs": lambda i: _abs_neg(i, "abs"), "neg": lambda i: _abs_neg(i, "neg"),
    "mul24": _mul24, "mad24": _mul24, "sad": _sad,
    "dp4a": lambda i: _dp4a(i, 4), "dp2a": lambda i: _dp4a(i, 2),
    "and": _logic("and"), "or": _logic("or"), "xor": _logic("xor"), "not": _not, "cnot": _cnot,
    "shl": lambda i: _shift(i, True), "shr": lambda i: _shift(i, False), "shf": _shf,
    "popc": lambda i: _unary_u32(i, _popc),
    "clz": lambda i: _unary_u32(i, _clz), "brev": _bits(_brev), "bfind": _bfind, "fns": _fns, "bfe": _bfe, "bfi": _bfi,
    "prmt": _prmt, "lop3": _lop3,
    "rcp": _approx(lambda x: 1.0 / x, "rcp"), "sqrt": _approx(np.sqrt, "sqrt"),
    "rsqrt": _approx(lambda x: 1.0 / np.sqrt(x), "rsqrt"), "sin": _approx(np.sin, "sin"),
    "cos": _approx(np.cos, "cos"), "lg2": _approx(np.log2, "lg2"), "ex2": _approx(np.exp2, "ex2"),
    "tanh": _approx(np.tanh, "tanh"),
    "testp": _testp, "copysign": _copysign,
    "setp": _setp, "set": _set, "selp": _selp, "slct": _slct,
    "mov": _mov, "cvt": _cvt, "cvta": _cvta,
    **{name: _lazy("memops", name) for name in ("ld", "ldu", "st", "atom", "red", "prefetch", "prefetchu", "cp",
                                                  "mapa", "getctarank")},
    **{name: _lazy("control", name) for name in (
        "bra", "brx", "call", "ret", "exit", "trap", "brkpt", "bar", "barrier", "membar", "fence", "nanosleep",
        "shfl", "vote", "match", "activemask", "redux", "pmevent")},
    **{name: _lazy("mma", name) for name in ("wmma", "mma", "ldmatrix", "stmatrix", "movmatrix")},
}


def _unary_u32(ins: Inst, fn: Callable) -> Op:
    a = ins.o.get(ins.ops[1], ins.t)
    dst = ins.dst("u32")
    return lambda st, sel: dst(st, sel, fn(ins.t, a(st, sel)))


def build(prog: Program, index: int) -> Op:
    """The function that runs the program's instruction at index."""
    inst = Inst(prog, prog.owner[index], prog.code[index], index)
    ins = inst.ins
    builder = TABLE.get(inst.base)
    if builder is None:
        raise UnsupportedPTX(ins, prog.kernel.name)
    try:
        return builder(inst)
    except (KeyError, IndexError, StopIteration, ValueError, TypeError) as e:
        raise UnsupportedPTX(ins, prog.kernel.name, f"{type(e).__name__}: {e}") from None


class UnsupportedPTX(CodeObjectError):
    """A PTX instruction (or form of one) the emulator does not implement: names it, its line and the kernel."""

    def __init__(self, ins: ptx.Instruction, kernel: str, detail: str = ""):
        self.instruction, self.line, self.kernel = ins.opcode, ins.line, kernel
        super().__init__(f"PTX emulator: {ins.text!r} at line {ins.line} of kernel {kernel} is not implemented"
                         + (f" ({detail})" if detail else ""))
