"""Cases for the floating-point instructions: add/sub/mul/fma/mad/div/rcp/sqrt with every rounding, .ftz and .sat
on f32, f64, f16, f16x2, bf16 and bf16x2; the approximations (rsqrt, sin, cos, lg2, ex2, tanh, div.approx/full,
rcp/sqrt.approx) against their documented error bounds; min/max (.NaN, .xorsign.abs), abs, neg, copysign, testp."""

from __future__ import annotations

import itertools
import math

import ptx_refs as R
from ptx_harness import Case, float_edges, float_randoms

MODES = ("rn", "rz", "rm", "rp")
REG = {"f16": "b16", "bf16": "b16", "f16x2": "b32", "bf16x2": "b32", "f32": "b32", "f64": "b64"}
ELEM = {"f16x2": "f16", "bf16x2": "bf16"}


def _lanes(fmt: str, arity: int, seed: str) -> list[tuple[int, ...]]:
    """Edge values crossed (all pairs; for three operands a smaller set), then random ones for the rounding."""
    edges = float_edges(fmt)
    if arity == 1:
        return [(x,) for x in edges + float_randoms(fmt, 24, seed=seed)]
    if arity == 2:
        rand = float_randoms(fmt, 160, seed=seed)
        return list(itertools.product(edges, edges)) + list(zip(rand[::2], rand[1::2], strict=True))
    small = edges[::2]
    rand = float_randoms(fmt, 300, seed=seed)
    triples = list(itertools.product(small, small, small[:6])) + list(zip(rand[::3], rand[1::3], rand[2::3],
                                                                          strict=True))
    # a * b close to -c: the cancellations where the sign of zero and the rounding of tiny results show
    for a, b in zip(rand[:40], rand[40:80], strict=True):
        p = R.exact("mul", [R.value(a, fmt), R.value(b, fmt)], "rn")
        triples.append((a, b, R.bits(-R.round_to(p, fmt, "rz"), fmt)))
        triples.append((a, b, R.bits(-R.round_to(p, fmt, "rp"), fmt)))
    return triples


def _pack(lanes: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """Pairs of 16-bit lanes as one 32-bit lane each (a second lane's values in the high halves)."""
    n = len(lanes)
    return [tuple(lo | hi << 16 for lo, hi in zip(lanes[k], lanes[(k * 7 + 3) % n], strict=True)) for k in range(n)]


def _halves(fn, t: str):
    """A reference on one element applied to each half of packed operands."""
    if t not in ELEM:
        return fn
    return lambda *raws: R.packed([fn(*(r & 0xFFFF for r in raws)), fn(*(r >> 16 for r in raws))])


def _case(name: str, opcode: str, t: str, arity: int, ref, lanes=None, outs=None) -> Case:
    reg = REG[t]
    elem = ELEM.get(t, t)
    lanes = lanes if lanes is not None else _lanes(elem, arity, name)
    if t in ELEM:
        lanes = _pack(lanes)
    srcs = ", ".join(f"%i{i}" for i in range(arity))
    return Case(name, opcode, f"{name} %o0, {srcs};", (reg,) * arity, outs or (reg,), lanes, _halves(ref, t))


def arithmetic() -> list[Case]:
    """add, sub, mul (f32 and f64 every rounding, f32 .ftz/.sat; f16/bf16 and their pairs), fma and mad.f32/f64."""
    cases = []
    for op, t in itertools.product(("add", "sub", "mul"), ("f32", "f64")):
        for mode, ftz, sat in itertools.product((None, *MODES), (False, True), (False, True)):
            if t == "f64" and (ftz or sat):
                continue
            mods = "".join(f".{m}" for m in (mode, ftz and "ftz", sat and "sat") if m)
            cases.append(_case(f"{op}{mods}.{t}", op, t, 2, _float(op, t, mode or "rn", ftz, sat)))
    for op, t in itertools.product(("fma", "mad"), ("f32", "f64")):
        for mode, ftz, sat in itertools.product(MODES, (False, True), (False, True)):
            if t == "f64" and (ftz or sat):
                continue
            mods = "".join(f".{m}" for m in (mode, ftz and "ftz", sat and "sat") if m)
            cases.append(_case(f"{op}{mods}.{t}", op, t, 3, _float("fma", t, mode, ftz, sat)))
    for op, t in itertools.product(("add", "sub", "mul", "fma"), ("f16", "f16x2", "bf16", "bf16x2")):
        arity = 3 if op == "fma" else 2
        for ftz, sat in itertools.product((False, True), (False, True)):
            if t.startswith("bf16") and (ftz or sat):
                continue
            mods = "".join(f".{m}" for m in ("rn", ftz and "ftz", sat and "sat") if m)
            cases.append(_case(f"{op}{mods}.{t}", op, t, arity, _float(op, ELEM.get(t, t), "rn", ftz, sat)))
    return cases


def _float(op: str, fmt: str, mode: str, ftz: bool = False, sat: bool = False):
    return lambda *raws: R.float_op(op, fmt, mode, list(raws), ftz, sat)


def division() -> list[Case]:
    """div/rcp/sqrt with IEEE rounding (f32 .ftz, f64)."""
    cases = []
    for op, t, mode, ftz in itertools.product(("div", "rcp", "sqrt"), ("f32", "f64"), MODES, (False, True)):
        if t == "f64" and ftz:
            continue
        name = f"{op}.{mode}{'.ftz' if ftz else ''}.{t}"
        cases.append(_case(name, op, t, 2 if op == "div" else 1, _float(op, t, mode, ftz)))
    return cases


# ---- approximations --------------------------------------------------------------------------------------------
ABS_SIN = 2.0 ** -20.5  # |x| <= 2 pi (ZLUDA's hardware-checked bound, as the PTX ISA documents)
ABS_SIN_WIDE = 2.0 ** -14.7  # |x| <= 100 pi


def _unary_special(table: dict, fn, tol: dict, ftz: bool, fmt: str = "f32"):
    """A reference for an approximation: exact results for the special inputs in table (keyed by the flushed
    input's class), else the exact function value within tol; .ftz flushes input and result."""

    def ref(raw: int):
        x = R.value(raw, fmt)
        x = R.flush(x, fmt) if ftz else x
        key = "nan" if math.isnan(x) else "+0" if x == 0 and math.copysign(1, x) > 0 else "-0" if x == 0 else \
            "+inf" if x == math.inf else "-inf" if x == -math.inf else "neg" if x < 0 else None
        if key in table and table[key] is not None:
            r = table[key]
            return R.AnyNaN(fmt) if math.isnan(r) else R.bits(r, fmt)
        want = fn(x)
        if math.isinf(R.round_to(want, fmt)):  # past the largest finite: infinity, or the largest within the bound
            return R.OneOf(frozenset({R.bits(math.copysign(math.inf, want), fmt),
                                      R.bits(math.copysign(float(R.FMT[fmt].largest), want), fmt)}))
        if ftz and R.is_subnormal(want, fmt):
            return R.OneOf(frozenset({R.bits(math.copysign(0.0, want), fmt),
                                      R.bits(math.copysign(R.FMT[fmt].tiny, want), fmt)}))
        return R.Near(want, fmt, **tol(x)) if callable(tol) else R.Near(want, fmt, **tol)
    return ref


def _sin_tol(x: float) -> dict:
    return {"abs_tol": ABS_SIN if abs(x) <= 2 * math.pi else ABS_SIN_WIDE}


APPROX = {  # name: (special results by input class, exact function, tolerance, input filter)
    "rcp": ({"nan": math.nan, "+0": math.inf, "-0": -math.inf, "+inf": 0.0, "-inf": -0.0}, lambda x: 1 / x,
            {"ulps": 1}, lambda x: abs(x) < 2.0 ** 126),
    "sqrt": ({"nan": math.nan, "+0": 0.0, "-0": -0.0, "+inf": math.inf, "-inf": math.nan, "neg": math.nan},
             math.sqrt, {"rel_tol": 2.0 ** -23}, lambda x: True),
    "rsqrt": ({"nan": math.nan, "+0": math.inf, "-0": -math.inf, "+inf": 0.0, "-inf": math.nan, "neg": math.nan},
              lambda x: 1 / math.sqrt(x), {"rel_tol": 2.0 ** -22.9}, lambda x: True),
    "sin": ({"nan": math.nan, "+0": 0.0, "-0": -0.0, "+inf": math.nan, "-inf": math.nan}, math.sin, _sin_tol,
            lambda x: abs(x) <= 100 * math.pi),
    "cos": ({"nan": math.nan, "+0": 1.0, "-0": 1.0, "+inf": math.nan, "-inf": math.nan}, math.cos, _sin_tol,
            lambda x: abs(x) <= 100 * math.pi),
    "lg2": ({"nan": math.nan, "+0": -math.inf, "-0": -math.inf, "+inf": math.inf, "-inf": math.nan,
             "neg": math.nan}, math.log2, {"abs_tol": 2.0 ** -22.6, "ulps": 1}, lambda x: not R.is_subnormal(x, "f32")),
    "ex2": ({"nan": math.nan, "+0": 1.0, "-0": 1.0, "+inf": math.inf, "-inf": 0.0}, lambda x: 2.0 ** x,
            {"ulps": 2}, lambda x: x < 128),
    "tanh": ({"nan": math.nan, "+0": 0.0, "-0": -0.0, "+inf": 1.0, "-inf": -1.0}, math.tanh,
             {"rel_tol": 2.0 ** -11}, lambda x: True),
}


def approximations() -> list[Case]:
    cases = []
    for op, (table, fn, tol, keep) in APPROX.items():
        for ftz in (False, True):
            if op == "tanh" and ftz:
                continue
            lanes = [(x,) for x in float_edges("f32") + float_randoms("f32", 40, -8, 8, op)
                     if math.isnan(R.value(x, "f32")) or keep(R.value(x, "f32"))]
            lanes += [(R.bits(v, "f32"),) for v in (math.pi, -math.pi / 2, 3.0, 50.0, -200.0, 0.75, 1e-3)
                      if keep(v)]
            name = f"{op}.approx{'.ftz' if ftz else ''}.f32"
            cases.append(_case(name, op, "f32", 1, _unary_special(table, fn, tol, ftz), lanes))
    # the 16-bit forms: within two units in the last place of their format
    for name, fmt, fn, table in (("ex2.approx.f16", "f16", lambda x: 2.0 ** x, APPROX["ex2"][0]),
                                 ("ex2.approx.ftz.bf16", "bf16", lambda x: 2.0 ** x, APPROX["ex2"][0]),
                                 ("tanh.approx.f16", "f16", math.tanh, APPROX["tanh"][0]),
                                 ("tanh.approx.bf16", "bf16", math.tanh, APPROX["tanh"][0])):
        ftz = ".ftz" in name
        keep = (lambda x: x < 16) if fmt == "f16" else (lambda x: x < 128)
        for t in (fmt, fmt + "x2"):
            lanes = [(x,) for x in float_edges(fmt) + float_randoms(fmt, 24, -4, 4, name)
                     if math.isnan(R.value(x, fmt)) or keep(R.value(x, fmt))]
            ref = _unary_special(table, fn, {"ulps": 2}, ftz, fmt)
            cases.append(_case(name.replace("." + fmt, "." + t), name.split(".")[0], t, 1, ref, lanes))
    cases += [_case("rcp.approx.ftz.f64", "rcp", "f64", 1, _unary_special(
        APPROX["rcp"][0], lambda x: 1 / x, {"rel_tol": 2.0 ** -20}, True, "f64"),
        [(x,) for x in float_edges("f64") if abs(R.value(x, "f64")) < 2.0 ** 1000 or math.isinf(R.value(x, "f64"))
         or math.isnan(R.value(x, "f64"))])]
    for ftz in (False, True):
        cases.append(_case(f"rsqrt.approx{'.ftz' if ftz else ''}.f64", "rsqrt", "f64", 1, _unary_special(
            APPROX["rsqrt"][0], lambda x: 1 / math.sqrt(x), {"rel_tol": 2.0 ** -20}, ftz, "f64")))
    return cases + _divisions()


def _divisions() -> list[Case]:
    """div.approx.f32 (2 ulp for |b| in [2^-126, 2^126]; past that 0, or NaN for an infinite a) and div.full.f32
    (2 ulp over the whole range) (PTX ISA div)."""
    edges = [R.value(x, "f32") for x in float_edges("f32")]
    normal = [x for x in edges if math.isfinite(x) and 2.0 ** -100 < abs(x) < 2.0 ** 100]
    rand = [R.value(x, "f32") for x in float_randoms("f32", 120, -20, 20, "div")]
    pairs = list(itertools.product(normal, normal)) + list(zip(rand[::2], rand[1::2], strict=True))
    pairs += [(1.0, 2.0 ** 127), (-3.0, -2.0 ** 127), (math.inf, 2.0 ** 127)]
    lanes = [(R.bits(a, "f32"), R.bits(b, "f32")) for a, b in pairs]
    cases = []
    for kind, ftz in itertools.product(("approx", "full"), (False, True)):
        def ref(ra: int, rb: int, kind=kind, ftz=ftz):
            a, b = (R.flush(R.value(r, "f32"), "f32") if ftz else R.value(r, "f32") for r in (ra, rb))
            if kind == "approx" and abs(b) > 2.0 ** 126:
                return R.AnyNaN("f32") if math.isinf(a) else R.OneOf(frozenset({0, 0x80000000}))
            q = R.exact("div", [a, b], "rn")
            if isinstance(q, float):
                return R.expect_float(q, "f32")
            if ftz and abs(q) < R.FMT["f32"].tiny:
                return R.OneOf(frozenset({0, 0x80000000, R.bits(math.copysign(2.0 ** -126, q), "f32")}))
            return R.Near(float(q), "f32", ulps=2)
        cases.append(_case(f"div.{kind}{'.ftz' if ftz else ''}.f32", "div", "f32", 2, ref, lanes))
    return cases


# ---- min, max, abs, neg, copysign, testp ------------------------------------------------------------------------
def minmax() -> list[Case]:
    cases = []
    for op, t in itertools.product(("min", "max"), ("f32", "f64", "f16", "f16x2", "bf16", "bf16x2")):
        elem = ELEM.get(t, t)
        for ftz, nan, xs in itertools.product((False, True), (False, True), (False, True)):
            if (t == "f64" and (ftz or nan or xs)) or (t.startswith("bf16") and ftz):
                continue
            mods = "".join(f".{m}" for m in (ftz and "ftz", nan and "NaN", xs and "xorsign.abs") if m)

            def ref(a: int, b: int, op=op, elem=elem, ftz=ftz, nan=nan, xs=xs):
                return R.minmax(op, elem, [a, b], ftz, nan, xs)
            cases.append(_case(f"{op}{mods}.{t}", op, t, 2, ref, _lanes(elem, 2, op)[:700]))
    return cases


def _sign_op(op: str, fmt: str, ftz: bool):
    """abs/neg: the sign bit cleared or flipped (after .ftz); a NaN input gives some NaN (PTX ISA leaves which)."""
    sign = 1 << (R.FMT[fmt].width - 1)

    def ref(raw: int):
        x = R.value(raw, fmt)
        if math.isnan(x):
            return R.AnyNaN(fmt)
        raw = R.bits(R.flush(x, fmt), fmt) if ftz else raw
        return raw & ~sign if op == "abs" else raw ^ sign
    return ref


def signs() -> list[Case]:
    cases = []
    for op, t, ftz in itertools.product(("abs", "neg"), ("f32", "f64", "f16", "f16x2", "bf16", "bf16x2"),
                                        (False, True)):
        if ftz and t not in ("f32", "f16", "f16x2"):
            continue
        cases.append(_case(f"{op}{'.ftz' if ftz else ''}.{t}", op, t, 1, _sign_op(op, ELEM.get(t, t), ftz)))
    for t in ("f32", "f64"):
        sign = 1 << (R.FMT[t].width - 1)

        def copysign(a: int, b: int, t=t, sign=sign):  # b with a's sign (PTX ISA copysign); a NaN b: some NaN
            if math.isnan(R.value(b, t)):
                return R.AnyNaN(t)
            return (b & ~sign) | (a & sign)
        cases.append(_case(f"copysign.{t}", "copysign", t, 2, copysign, _lanes(t, 2, "copysign")[:500]))
    tests = {"finite": math.isfinite, "infinite": math.isinf, "number": lambda x: not math.isnan(x),
             "notanumber": math.isnan, "normal": lambda x: math.isfinite(x) and abs(x) >= 2.0 ** -1022 and x != 0,
             "subnormal": lambda x: x != 0 and math.isfinite(x) and abs(x) < 2.0 ** -1022}
    for kind, t in itertools.product(tests, ("f32", "f64")):
        def ref(raw: int, kind=kind, t=t):
            x = R.value(raw, t)
            if kind in ("normal", "subnormal"):
                return (not R.is_subnormal(x, t) and math.isfinite(x) and x != 0) if kind == "normal" else \
                    R.is_subnormal(x, t)
            return tests[kind](x)
        cases.append(_case(f"testp.{kind}.{t}", "testp", t, 1, ref, outs=("pred",)))
    return cases


def cases() -> list[Case]:
    return arithmetic() + division() + approximations() + minmax() + signs()
