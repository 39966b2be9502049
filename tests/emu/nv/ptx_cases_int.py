"""Cases for the integer and bit instructions: add/sub (.sat, .cc chains with addc/subc), mul/mad (.lo/.hi/.wide,
mad.hi.sat), mul24/mad24, sad, div/rem, abs/neg, min/max (.relu), dp4a/dp2a, logic ops, shifts (shl, shr, shf
wrap/clamp), popc/clz/brev/bfind/bfe/bfi, prmt in every mode and lop3 truth tables."""

from __future__ import annotations

import itertools

import ptx_refs as R
from ptx_harness import Case, int_edges, rng

INT_TYPES = ("s16", "u16", "s32", "u32", "s64", "u64")
REG = {16: "b16", 32: "b32", 64: "b64"}


def _w(t: str) -> int:
    return int(t[1:])


def _pairs(width: int) -> list[tuple[int, int]]:
    edges = int_edges(width)
    return list(itertools.product(edges, edges))


def _binary(name: str, opcode: str, t: str, fn, out_width: int | None = None, lanes=None) -> Case:
    """d = fn(a, b) with a and b the values of t (signed or not), d wrapped to the output width."""
    w = _w(t)
    ow = out_width or w

    def ref(a: int, b: int):
        return R.wrap(fn(R.as_value(a, t), R.as_value(b, t)), ow)
    return Case(name, opcode, f"{name} %o0, %i0, %i1;", (REG[w],) * 2, (REG[ow],), lanes or _pairs(w), ref)


def _ternary(name: str, opcode: str, t: str, fn, c_width: int | None = None, seed: str = "") -> Case:
    w = _w(t)
    cw = c_width or w
    r = rng(name + seed)
    edges = int_edges(w)
    c_edges = int_edges(cw)
    lanes = [(a, b, r.choice(c_edges)) for a, b in itertools.product(edges, edges)]

    def ref(a: int, b: int, c: int):
        return R.wrap(fn(R.as_value(a, t), R.as_value(b, t), R.as_value(c, t[0] + str(cw))), cw)
    return Case(name, opcode, f"{name} %o0, %i0, %i1, %i2;", (REG[w], REG[w], REG[cw]), (REG[cw],), lanes, ref)


def arithmetic() -> list[Case]:
    cases = []
    for t in INT_TYPES:
        w = _w(t)
        cases += [_binary(f"add.{t}", "add", t, lambda a, b: a + b), _binary(f"sub.{t}", "sub", t, lambda a, b: a - b),
                  _binary(f"mul.lo.{t}", "mul", t, lambda a, b: a * b),
                  _binary(f"mul.hi.{t}", "mul", t, lambda a, b, w=w: (a * b) >> w),
                  _ternary(f"mad.lo.{t}", "mad", t, lambda a, b, c: a * b + c),
                  _ternary(f"mad.hi.{t}", "mad", t, lambda a, b, c, w=w: ((a * b) >> w) + c),
                  _ternary(f"sad.{t}", "sad", t, lambda a, b, c: abs(a - b) + c),
                  _binary(f"min.{t}", "min", t, min), _binary(f"max.{t}", "max", t, max)]
        if w < 64:
            cases += [_binary(f"mul.wide.{t}", "mul", t, lambda a, b: a * b, 2 * w),
                      _ternary(f"mad.wide.{t}", "mad", t, lambda a, b, c: a * b + c, 2 * w)]
        # b = 0 is left out: the PTX ISA leaves division by zero unspecified
        lanes = [(a, b) for a, b in _pairs(w) if b]
        cases += [_binary(f"div.{t}", "div", t, lambda a, b: R.trunc_div(a, b)[0], lanes=lanes),
                  _binary(f"rem.{t}", "rem", t, lambda a, b: R.trunc_div(a, b)[1], lanes=lanes)]
        if t[0] == "s":
            cases += [_unary(f"abs.{t}", "abs", t, abs), _unary(f"neg.{t}", "neg", t, lambda a: -a)]
    # saturating forms (PTX ISA: .sat clamps to MININT..MAXINT; mad.hi.sat adds c to the high half, then clamps)
    def sat(v: int) -> int:
        return R.saturate(v, "s32")
    cases += [_binary("add.sat.s32", "add", "s32", lambda a, b: sat(a + b)),
              _binary("sub.sat.s32", "sub", "s32", lambda a, b: sat(a - b)),
              _ternary("mad.hi.sat.s32", "mad", "s32", lambda a, b, c: sat(((a * b) >> 32) + c)),
              _binary("min.relu.s32", "min", "s32", lambda a, b: max(min(a, b), 0)),
              _binary("max.relu.s32", "max", "s32", lambda a, b: max(a, b, 0))]
    # mul24/mad24: the 48-bit product of the low 24 bits (sign-extended for .s32); .lo its bits 31..0, .hi 47..16
    for t in ("s32", "u32"):
        def lo24(x: int, t=t) -> int:
            x &= 0xFFFFFF
            return x - (1 << 24) if t == "s32" and x >> 23 else x
        cases += [_binary(f"mul24.lo.{t}", "mul24", t, lambda a, b, f=lo24: f(a) * f(b)),
                  _binary(f"mul24.hi.{t}", "mul24", t, lambda a, b, f=lo24: (f(a) * f(b)) >> 16),
                  _ternary(f"mad24.lo.{t}", "mad24", t, lambda a, b, c, f=lo24: f(a) * f(b) + c),
                  _ternary(f"mad24.hi.{t}", "mad24", t, lambda a, b, c, f=lo24: ((f(a) * f(b)) >> 16) + c)]
    cases.append(_ternary("mad24.hi.sat.s32", "mad24", "s32", lambda a, b, c: sat(
        ((((a & 0xFFFFFF) ^ 0x800000) - 0x800000) * (((b & 0xFFFFFF) ^ 0x800000) - 0x800000) >> 16) + c)))
    return cases + _carries() + _dot()


def _unary(name: str, opcode: str, t: str, fn, out: str | None = None, lanes=None) -> Case:
    w = _w(t)
    out_reg = out or REG[w]
    out_w = {"b16": 16, "b32": 32, "b64": 64, "pred": 1}[out_reg]
    return Case(name, opcode, f"{name} %o0, %i0;", (REG[w],), (out_reg,), lanes or [(x,) for x in int_edges(w, 12)],
                lambda a: R.wrap(fn(R.as_value(a, t)), out_w))


def _carries() -> list[Case]:
    """Three-limb additions and subtractions: add.cc, addc.cc, addc (and sub.cc, subc.cc, subc) carrying CC.CF
    from limb to limb, the last limb's carry read out by addc/subc of zeros."""
    cases = []
    for t, op in itertools.product(("u32", "s32", "u64", "s64"), ("add", "sub")):
        w = _w(t)
        edges = int_edges(w)
        r = rng(f"carry{t}{op}")
        lanes = [tuple(r.choice(edges) for _ in range(6)) for _ in range(300)]
        body = (f"mov.b{w} %z, 0;\n{op}.cc.{t} %o0, %i0, %i3;\n{op}c.cc.{t} %o1, %i1, %i4;\n"
                f"{op}c.cc.{t} %o2, %i2, %i5;\n{op}c.{t} %o3, %z, %z;")

        def ref(*v, w=w, op=op):
            a = v[0] | v[1] << w | v[2] << 2 * w
            b = v[3] | v[4] << w | v[5] << 2 * w
            s = a + b if op == "add" else a - b
            mask = (1 << w) - 1
            carry = (s >> 3 * w) & 1 if op == "add" else int(s < 0)
            return (s & mask, s >> w & mask, s >> 2 * w & mask, carry if op == "add" else -carry & mask)
        for opcode in (op, op + "c"):
            cases.append(Case(f"{op}.cc.{t}-chain-{opcode}", opcode, body, (REG[w],) * 6, (REG[w],) * 4, lanes, ref,
                              decls=f".reg .b{w} %z;"))
        # the carry read out by an addc/subc of two immediates
        cases.append(Case(f"{op}c.{t}-immediates", op + "c", f"{op}.cc.{t} %o0, %i0, %i1;\n{op}c.{t} %o1, 0, 0;",
                          (REG[w],) * 2, (REG[w],) * 2, [lane[:2] for lane in lanes[:40]],
                          lambda a, b, w=w, op=op: (R.wrap(a + b if op == "add" else a - b, w),
                                                    ((a + b) >> w if op == "add" else -int(a < b)) & ((1 << w) - 1))))
    return cases + _mad_carries()


def _mad_carries() -> list[Case]:
    """mad.lo.cc, madc.hi.cc, madc.lo.cc, madc.hi: a two-limb a times b plus c, the carry from each product half
    plus c plus the carry in to the next (the halves of a signed product as the type says)."""
    cases = []
    for t in ("u32", "s32", "u64", "s64"):
        w = _w(t)
        edges = int_edges(w)
        r = rng(f"madc{t}")
        lanes = [tuple(r.choice(edges) for _ in range(6)) for _ in range(300)]
        steps = (("lo", 0, 3), ("hi", 0, 4), ("lo", 1, 5), ("hi", 1, None))
        body = (f"mov.b{w} %z, 0;\nmad.lo.cc.{t} %o0, %i0, %i2, %i3;\nmadc.hi.cc.{t} %o1, %i0, %i2, %i4;\n"
                f"madc.lo.cc.{t} %o2, %i1, %i2, %i5;\nmadc.hi.{t} %o3, %i1, %i2, %z;")

        def ref(*v, t=t, w=w, steps=steps):
            out, cf, mask = [], 0, (1 << w) - 1
            for half, a, c in steps:
                prod = R.as_value(v[a], t) * R.as_value(v[2], t)
                s = ((prod >> w) if half == "hi" else prod) & mask
                total = s + (v[c] if c is not None else 0) + cf
                out.append(total & mask)
                cf = total >> w
            return tuple(out)
        cases.append(Case(f"madc.{t}-chain", "madc", body, (REG[w],) * 6, (REG[w],) * 4, lanes, ref,
                          decls=f".reg .b{w} %z;"))
    return cases


def _dot() -> list[Case]:
    """dp4a: c plus the dot product of a's and b's four bytes; dp2a.lo/.hi: of a's two halfwords with b's low or
    high two bytes (each signed or not as its type says)."""
    cases = []
    r = rng("dot")
    lanes = [tuple(r.getrandbits(32) for _ in range(3)) for _ in range(120)]
    lanes += [(0x80808080, 0xFFFFFFFF, 0x7FFFFFFF), (0x7F7F7F7F, 0x7F7F7F7F, 0x80000000), (0xFFFFFFFF,) * 3]
    for ta, tb in itertools.product(("u32", "s32"), repeat=2):
        signed_out = "s" in (ta[0], tb[0])

        def part(x: int, i: int, width: int, t: str) -> int:
            v = x >> (i * width) & ((1 << width) - 1)
            return v - (1 << width) if t[0] == "s" and v >> (width - 1) else v

        def dp4a(a, b, c, ta=ta, tb=tb, s=signed_out):
            acc = R.to_signed(c, 32) if s else c
            return R.wrap(acc + sum(part(a, i, 8, ta) * part(b, i, 8, tb) for i in range(4)), 32)

        def dp2a(a, b, c, hi, ta=ta, tb=tb, s=signed_out):
            acc = R.to_signed(c, 32) if s else c
            return R.wrap(acc + sum(part(a, i, 16, ta) * part(b, i + 2 * hi, 8, tb) for i in range(2)), 32)
        cases.append(Case(f"dp4a.{ta}.{tb}", "dp4a", f"dp4a.{ta}.{tb} %o0, %i0, %i1, %i2;", ("b32",) * 3, ("b32",),
                          lanes, dp4a))
        for half in ("lo", "hi"):
            cases.append(Case(f"dp2a.{half}.{ta}.{tb}", "dp2a", f"dp2a.{half}.{ta}.{tb} %o0, %i0, %i1, %i2;",
                              ("b32",) * 3, ("b32",), lanes, lambda a, b, c, f=dp2a, h=half == "hi": f(a, b, c, h)))
    return cases


# ---- logic and bits ----------------------------------------------------------------------------------------------
def logic() -> list[Case]:
    cases = []
    ops = {"and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b}
    for (op, fn), w in itertools.product(ops.items(), (16, 32, 64)):
        cases.append(_binary(f"{op}.b{w}", op, f"u{w}", fn))
    for w in (16, 32, 64):
        cases += [_unary(f"not.b{w}", "not", f"u{w}", lambda a: ~a), _unary(f"cnot.b{w}", "cnot", f"u{w}",
                                                                            lambda a: int(a == 0))]
    preds = list(itertools.product((0, 1), repeat=2))
    for op, fn in ops.items():
        cases.append(Case(f"{op}.pred", op, f"{op}.pred %o0, %i0, %i1;", ("pred",) * 2, ("pred",), preds, fn))
    cases.append(Case("not.pred", "not", "not.pred %o0, %i0;", ("pred",), ("pred",), [(0,), (1,)], lambda a: 1 - a))
    return cases


def _shift_lanes(w: int) -> list[tuple[int, int]]:
    amounts = [0, 1, 2, w // 2, w - 1, w, w + 1, 31, 32, 33, 63, 64, 65, 255, 256, 0xFFFFFFFF, 0x80000001]
    return [(x, n) for x in int_edges(w, 2) for n in amounts]


def shifts() -> list[Case]:
    """shl/shr: the amount is an unsigned 32-bit value clamped to the width (PTX ISA: larger shifts give 0, or the
    sign for shr.s); shf: the funnel shift of b:a, its amount masked to 5 bits (.wrap) or clamped to 32 (.clamp)."""
    cases = []
    for w in (16, 32, 64):
        def shl(a: int, n: int, w=w) -> int:
            return R.wrap(a << min(n, w), w)
        cases.append(Case(f"shl.b{w}", "shl", f"shl.b{w} %o0, %i0, %i1;", (REG[w], "b32"), (REG[w],),
                          _shift_lanes(w), shl))
        for t in (f"b{w}", f"u{w}", f"s{w}"):
            def shr(a: int, n: int, t=t, w=w) -> int:
                v = R.to_signed(a, w) if t[0] == "s" else a
                return R.wrap(v >> min(n, w), w)
            cases.append(Case(f"shr.{t}", "shr", f"shr.{t} %o0, %i0, %i1;", (REG[w], "b32"), (REG[w],),
                              _shift_lanes(w), shr))
    r = rng("shf")
    lanes = [(r.getrandbits(32), r.getrandbits(32), n) for n in (0, 1, 5, 16, 31, 32, 33, 40, 63, 64, 255,
                                                                 0xFFFFFFFF) for _ in range(4)]
    for direction, mode in itertools.product(("l", "r"), ("wrap", "clamp")):
        def shf(a: int, b: int, n: int, left=direction == "l", clamp=mode == "clamp") -> int:
            n = min(n, 32) if clamp else n & 31
            pair = b << 32 | a
            return R.wrap((pair << n) >> 32, 32) if left else R.wrap(pair >> n, 32)
        cases.append(Case(f"shf.{direction}.{mode}.b32", "shf", f"shf.{direction}.{mode}.b32 %o0, %i0, %i1, %i2;",
                          ("b32",) * 3, ("b32",), lanes, shf))
    return cases


def bits() -> list[Case]:
    cases = []
    for w in (32, 64):
        t = f"b{w}"
        cases += [_unary(f"popc.{t}", "popc", f"u{w}", lambda a: bin(a).count("1"), "b32"),
                  _unary(f"clz.{t}", "clz", f"u{w}", lambda a, w=w: w - a.bit_length(), "b32"),
                  _unary(f"brev.{t}", "brev", f"u{w}", lambda a, w=w: int(f"{a:0{w}b}"[::-1], 2))]
        for s, shiftamt in itertools.product(("u", "s"), (False, True)):
            tt = f"{s}{w}"
            name = f"bfind{'.shiftamt' if shiftamt else ''}.{tt}"
            cases.append(Case(name, "bfind", f"{name} %o0, %i0;", (REG[w],), ("b32",),
                              [(x,) for x in int_edges(w, 12)] + [(1 << k,) for k in range(0, w, 5)],
                              lambda a, tt=tt, sa=shiftamt: R.bfind(a, tt, sa)))
        if w == 32:  # fns: bases inside and outside the word, offsets both ways, past the set bits' count
            r = rng("fns")
            masks = [0, 0xFFFFFFFF, 0x80000001, 0x00F0F000] + [r.getrandbits(32) for _ in range(6)]
            bases = [0, 1, 15, 30, 31, 32, 0xFFFFFFFF]
            offsets = [0, 1, 2, 5, 31, 32, 33, 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFE0, 0x80000000]
            lanes = [(m, b, o) for m in masks for b in bases for o in offsets]
            cases.append(Case("fns.b32", "fns", "fns.b32 %o0, %i0, %i1, %i2;", ("b32", "b32", "b32"), ("b32",),
                              lanes, R.fns))
        # bfe/bfi: positions and lengths past the width and past 255 (only their low 8 bits count)
        r = rng(f"bfe{w}")
        fields = [0, 1, 4, 7, w // 2, w - 1, w, w + 3, 100, 255, 256, 257, 0xFFFFFFFF]
        for s in ("u", "s"):
            tt = f"{s}{w}"
            lanes = [(r.getrandbits(w) | (r.getrandbits(1) << (w - 1)), p, n) for p in fields for n in fields]
            cases.append(Case(f"bfe.{tt}", "bfe", f"bfe.{tt} %o0, %i0, %i1, %i2;", (REG[w], "b32", "b32"), (REG[w],),
                              lanes, lambda a, p, n, tt=tt: R.bfe(a, p, n, tt)))
        lanes = [(r.getrandbits(w), r.getrandbits(w), p, n) for p in fields for n in fields]
        cases.append(Case(f"bfi.b{w}", "bfi", f"bfi.b{w} %o0, %i0, %i1, %i2, %i3;", (REG[w], REG[w], "b32", "b32"),
                          (REG[w],), lanes, lambda a, b, p, n, w=w: R.bfi(a, b, p, n, w)))
    return cases


def permutes() -> list[Case]:
    """prmt in the default mode (random selectors, sign replication included) and each special mode; lop3 with
    the truth tables of the common functions and some others."""
    r = rng("prmt")
    a, b = 0x8844CC11, 0x33F07F80
    sels = [0x3210, 0x7654, 0x0123, 0x8888, 0xFFFF, 0x4B5A, 0xF0F0] + [r.getrandbits(32) for _ in range(60)]
    cases = [Case("prmt.b32", "prmt", "prmt.b32 %o0, %i0, %i1, %i2;", ("b32",) * 3, ("b32",),
                  [(a, b, s) for s in sels] + [(r.getrandbits(32), r.getrandbits(32), s) for s in sels],
                  lambda x, y, s: R.prmt(x, y, s, None))]
    for mode in R.PRMT_MODES:
        lanes = [(x, y, s) for (x, y) in ((a, b), (0x04030201, 0x08070605)) for s in range(8)]
        cases.append(Case(f"prmt.b32.{mode}", "prmt", f"prmt.b32.{mode} %o0, %i0, %i1, %i2;", ("b32",) * 3,
                          ("b32",), lanes, lambda x, y, s, m=mode: R.prmt(x, y, s, m)))
    lanes = [tuple(r.getrandbits(32) for _ in range(3)) for _ in range(40)] + [(0xF0F0F0F0, 0xCCCCCCCC, 0xAAAAAAAA)]
    for lut in (0x00, 0xFF, 0xF0, 0xCC, 0xAA, 0x80, 0xFE, 0x96, 0xE8, 0xCA, 0x1E, 0x6A, 0x3C, 0x5A):
        def lop3(x: int, y: int, z: int, lut=lut) -> int:
            return sum(((lut >> ((x >> i & 1) << 2 | (y >> i & 1) << 1 | (z >> i & 1))) & 1) << i for i in range(32))
        cases.append(Case(f"lop3.b32.{lut:#04x}", "lop3", f"lop3.b32 %o0, %i0, %i1, %i2, {lut:#04x};", ("b32",) * 3,
                          ("b32",), lanes, lop3))
    return cases


def cases() -> list[Case]:
    return arithmetic() + logic() + shifts() + bits() + permutes()
