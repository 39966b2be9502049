"""Cases for comparisons and selection: setp with every comparison of each type (the unordered float ones, num
and nan included), .ftz, the and/or/xor combinations with a (negated) predicate and the p|q pair; set into
u32/s32/f32 results; selp and slct (.ftz)."""

from __future__ import annotations

import itertools
import math
import operator

import ptx_refs as R
from ptx_harness import Case, float_edges, int_edges

ORDERED = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
           "ge": operator.ge}
UNSIGNED = {"lo": operator.lt, "ls": operator.le, "hi": operator.gt, "hs": operator.ge}
FLOAT_CMPS = (*ORDERED, *(c + "u" for c in ORDERED), "num", "nan")
BOOL = {"and": operator.and_, "or": operator.or_, "xor": operator.xor}
REG = {16: "b16", 32: "b32", 64: "b64"}
FREG = {"f16": "b16", "bf16": "b16", "f32": "b32", "f64": "b64"}


def compare(cmp: str, t: str, a: int, b: int, ftz: bool = False) -> bool:
    """PTX ISA setp: integers by their type's signedness (lo/ls/hi/hs unsigned); floats ordered (false with a NaN),
    unordered (true with a NaN: equ, neu, ..., and nan), num (neither is NaN); .ftz compares flushed values."""
    if t[0] in "sub" and t != "bf16":
        va, vb = R.as_value(a, "u" + t[1:] if t[0] == "b" else t), R.as_value(b, "u" + t[1:] if t[0] == "b" else t)
        return (ORDERED | UNSIGNED)[cmp](va, vb)
    x, y = R.value(a, t), R.value(b, t)
    if ftz:
        x, y = R.flush(x, t), R.flush(y, t)
    unordered = math.isnan(x) or math.isnan(y)
    if cmp in ("num", "nan"):
        return unordered == (cmp == "nan")
    if cmp in ORDERED:
        return not unordered and ORDERED[cmp](x, y)
    return unordered or ORDERED[cmp[:-1]](x, y)


def _int_cmps(t: str) -> tuple[str, ...]:
    return ("eq", "ne") if t[0] == "b" else tuple(ORDERED) + (tuple(UNSIGNED) if t[0] == "u" else ())


def _setp(t: str, cmp: str, combine: str | None, ftz: bool, lanes: list, reg: str) -> Case:
    mods = "".join(f".{m}" for m in (cmp, combine, ftz and "ftz") if m)
    name = f"setp{mods}.{t}"
    c = ", !%i2" if combine == "xor" else ", %i2" if combine else ""

    pair = t not in ("f16", "bf16")  # the 16-bit float forms write one predicate (PTX ISA setp)

    def ref(a: int, b: int, p: int = 0):
        r = compare(cmp, t, a, b, ftz)
        if combine is None:
            return (r, not r) if pair else r
        pv = not p if combine == "xor" else bool(p)
        return (BOOL[combine](r, pv), BOOL[combine](not r, pv)) if pair else BOOL[combine](r, pv)
    ins = (reg, reg, "pred") if combine else (reg, reg)
    lanes = [(a, b, k & 1) for k, (a, b) in enumerate(lanes)] if combine else lanes
    dst = "%o0|%o1" if pair else "%o0"
    return Case(name, "setp", f"{name} {dst}, %i0, %i1{c};", ins, ("pred", "pred") if pair else ("pred",), lanes,
                ref)


def setp() -> list[Case]:
    cases = []
    for t in ("s16", "u16", "s32", "u32", "s64", "u64", "b16", "b32", "b64"):
        w = int(t[1:])
        edges = int_edges(w)
        lanes = list(itertools.product(edges, edges))
        for cmp in _int_cmps(t):
            for combine in (None, *BOOL) if t in ("s32", "u32") else (None,):
                cases.append(_setp(t, cmp, combine, False, lanes, REG[w]))
    for t in ("f32", "f64", "f16", "bf16"):
        edges = float_edges(t)
        lanes = list(itertools.product(edges, edges))
        for cmp, combine, ftz in itertools.product(FLOAT_CMPS, (None, *BOOL), (False, True)):
            if (ftz and t not in ("f32", "f16")) or (combine and t != "f32" and combine != "and"):
                continue
            cases.append(_setp(t, cmp, combine, ftz, lanes, FREG[t]))
    for t in ("f16x2", "bf16x2"):  # p from the low halves, q from the high ones
        elem = t[:-2]
        edges = float_edges(elem)
        lanes = [(a | c << 16, b | d << 16) for (a, b), (c, d) in zip(itertools.product(edges, edges),
                                                                   itertools.product(edges[::-1], edges), strict=True)]
        for cmp in FLOAT_CMPS:
            name = f"setp.{cmp}.{t}"
            cases.append(Case(name, "setp", f"{name} %o0|%o1, %i0, %i1;", ("b32", "b32"), ("pred", "pred"), lanes,
                              lambda a, b, cmp=cmp, e=elem: (compare(cmp, e, a & 0xFFFF, b & 0xFFFF),
                                                             compare(cmp, e, a >> 16, b >> 16))))
    return cases


def set_() -> list[Case]:
    """set: all ones (u32/s32) or 1.0 (f32) where the comparison (combined with c) holds, else 0."""
    cases = []
    true = {"u32": 0xFFFFFFFF, "s32": 0xFFFFFFFF, "f32": 0x3F800000}
    for dt, (st, reg) in itertools.product(true, (("s32", "b32"), ("u64", "b64"), ("f32", "b32"), ("f64", "b64"))):
        edges = float_edges(st) if st[0] == "f" else int_edges(int(st[1:]))
        lanes = list(itertools.product(edges, edges))
        cmps = ("lt", "ge", "ne") + (("equ", "nan") if st[0] == "f" else ("lo",) if st[0] == "u" else ())
        for cmp, combine in itertools.product(cmps, (None, "and", "or")):
            name = f"set.{cmp}{'.' + combine if combine else ''}.{dt}.{st}"
            c = ", %i2" if combine else ""

            def ref(a: int, b: int, p: int = 0, cmp=cmp, combine=combine, st=st, dt=dt):
                r = compare(cmp, st, a, b)
                r = BOOL[combine](r, bool(p)) if combine else r
                return true[dt] if r else 0
            ins = (reg, reg, "pred") if combine else (reg, reg)
            ls = [(a, b, k % 3 == 0) for k, (a, b) in enumerate(lanes)] if combine else lanes
            cases.append(Case(name, "set", f"{name} %o0, %i0, %i1{c};", ins, ("b32",), ls, ref))
    return cases


def select() -> list[Case]:
    """selp: a where c, else b; slct: a where c >= 0 (c s32, or f32 with -0 >= 0; .ftz flushes c; a NaN c is left
    out: the ISA does not say)."""
    cases = []
    for t in ("b16", "u16", "s16", "b32", "u32", "s32", "b64", "u64", "s64", "f32", "f64"):
        w = int(t[1:])
        edges = int_edges(w)
        lanes = [(a, b, k & 1) for k, (a, b) in enumerate(zip(edges, edges[::-1], strict=True))]
        cases.append(Case(f"selp.{t}", "selp", f"selp.{t} %o0, %i0, %i1, %i2;", (REG[w], REG[w], "pred"),
                          (REG[w],), lanes, lambda a, b, c: a if c else b))
        for ct, ftz in (("s32", False), ("f32", False), ("f32", True)):
            name = f"slct{'.ftz' if ftz else ''}.{t}.{ct}"
            cs = int_edges(32) if ct == "s32" else [x for x in float_edges("f32") if not math.isnan(R.value(x, "f32"))]
            ls = [(a, b, c) for (a, b), c in zip(itertools.cycle(zip(edges, edges[::-1], strict=True)), cs,
                                                   strict=False)]

            def ref(a: int, b: int, c: int, ct=ct, ftz=ftz):
                v = R.to_signed(c, 32) if ct == "s32" else R.value(c, "f32")
                v = R.flush(v, "f32") if ftz and ct == "f32" else v
                return a if v >= 0 else b
            cases.append(Case(name, "slct", f"{name} %o0, %i0, %i1, %i2;", (REG[w], REG[w], "b32"), (REG[w],), ls,
                              ref))
    return cases


def cases() -> list[Case]:
    return setp() + set_() + select()
