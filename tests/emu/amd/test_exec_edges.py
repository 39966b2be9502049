"""Each implemented VALU opcode of the semantics table on the values that break implementations (NaN, ±inf,
denormals, ±0, integer extremes), one lane per case, against a host reference written here independently: plain
Python arithmetic on the values, rounded to float32 with struct, and the ISA guide's rules for special values.

An instruction runs alone: assembled with isa.asm (its shortest encoding), executed on one wave of the executor
with v0, v1 set per lane.
"""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import numpy as np
import pytest
from exec_harness import double, doubles, execute

from usergpu.emu.amd.exec.semantics import ALU

INF, NAN = math.inf, math.nan
DENORM, TINY, BIG = 1e-45, 1.1754943508222875e-38, 3.4028234663852886e38
INTS = [0, 1, 2, 31, 32, 33, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFFE, 0x12345678, 0x80000001, 5, 7, 63, 64]


def f32(x: float) -> float:
    """x rounded to float32 (inf past the largest float; NaN stays NaN)."""
    if math.isnan(x) or math.isinf(x):
        return x
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:
        return math.copysign(INF, x)


FLOATS = [f32(v) for v in (0.0, -0.0, 1.0, -1.0, 2.5, -3.75, INF, -INF, NAN, DENORM, -DENORM, TINY, BIG, -BIG,
                            0.1, 1e30)]  # as the float32 lanes hold them


def bits_of(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def value_of(b: int) -> float:
    return struct.unpack("<f", struct.pack("<I", b & 0xFFFFFFFF))[0]


def run(text: str, arch: str, a: list, b: list, kind: str = "f") -> list[int]:
    """One instruction with v0 = a, v1 = b (floats as f32 bits, or uint32 ints); v2 after, per lane."""
    as_bits = (lambda vals: [bits_of(x) for x in vals]) if kind == "f" else (lambda vals: vals)
    w = execute(text, arch, v={0: as_bits(a), 1: as_bits(b)})
    return [int(x) for x in w.v[2, 0]]


def pairs(values: list) -> tuple[list, list]:
    """32 lanes of (a, b): every value against a spread of others."""
    n = len(values)
    return [values[i % n] for i in range(32)], [values[(i * 7 + i // n + 3) % n] for i in range(32)]


def min_num(x: float, y: float) -> float:  # IEEE minNum: a NaN operand yields the other one
    return y if math.isnan(x) else x if math.isnan(y) else min(x, y)


def max_num(x: float, y: float) -> float:
    return y if math.isnan(x) else x if math.isnan(y) else max(x, y)


# float binary ops: name -> reference on Python floats (exact arithmetic rounded once to f32)
FLOAT2 = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "subrev": lambda x, y: y - x,
          "mul": lambda x, y: x * y, "min": min_num, "max": max_num}
INT2 = {"add_nc": lambda x, y: x + y, "sub_nc": lambda x, y: x - y, "subrev_nc": lambda x, y: y - x,
        "mul_lo": lambda x, y: x * y, "and": lambda x, y: x & y, "or": lambda x, y: x | y, "xor": lambda x, y: x ^ y,
        "lshlrev": lambda x, y: y << (x & 31), "lshrrev": lambda x, y: y >> (x & 31)}


def same(got_bits: int, want: float) -> bool:
    got = value_of(got_bits)
    if math.isnan(want):
        return math.isnan(got)
    return got == want and math.copysign(1, got) == math.copysign(1, want) if want == 0 else got == want


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200"])
@pytest.mark.parametrize("op", sorted(FLOAT2))
def test_float_binary_ops_on_special_values(op, arch):
    assert op in ALU  # generated from the semantics table: every op tested is one the table defines
    name = {"min": "min_num", "max": "max_num"}.get(op, op) if arch == "gfx1200" else op
    a, b = pairs(FLOATS)
    got = run(f"v_{name}_f32 v2, v0, v1", arch, a, b)
    for lane, (x, y, g) in enumerate(zip(a, b, got, strict=True)):
        want = f32(FLOAT2[op](x, y))  # Python's float arithmetic: IEEE double, exact enough to round once
        if op in ("min", "max") and x == 0 and y == 0:
            continue  # which zero min/max return for ±0 pairs is left to the implementation by IEEE minNum
        assert same(g, want), f"lane {lane}: {op}({x!r}, {y!r}) = {value_of(g)!r}, want {want!r}"


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200"])
@pytest.mark.parametrize("op", sorted(INT2))
def test_integer_ops_wrap_at_32_bits(op, arch):
    assert op in ALU
    suffix = "b32" if op in ("and", "or", "xor", "lshlrev", "lshrrev") else "u32"
    a, b = pairs(INTS)
    got = run(f"v_{op}_{suffix} v2, v0, v1", arch, a, b, kind="i")
    for lane, (x, y, g) in enumerate(zip(a, b, got, strict=True)):
        assert g == INT2[op](x, y) & 0xFFFFFFFF, f"lane {lane}: {op}({x:#x}, {y:#x}) = {g:#x}"


# unary float ops: reference on special values, from the ISA guide's tables (rcp(±0) = ±inf, rsq(-x) = NaN, ...)
def _ref_unary(op: str, x: float) -> float | None:
    if math.isnan(x):
        return NAN
    if op == "sqrt":
        return x if x == 0 or x == INF else NAN if x < 0 else None
    if op == "rcp":
        return math.copysign(INF, x) if x == 0 else math.copysign(0.0, x) if math.isinf(x) else None
    if op == "rsq":
        return math.copysign(INF, x) if x == 0 else NAN if x < 0 else 0.0 if x == INF else None
    if op == "log":
        return -INF if x == 0 else NAN if x < 0 else INF if x == INF else 0.0 if x == 1 else None
    if op == "exp":
        return 0.0 if x == -INF else INF if x == INF else 1.0 if x == 0 else None
    if op in ("floor", "ceil", "trunc", "rndne"):
        if math.isinf(x) or x == 0:
            return x
        fn = {"floor": math.floor, "ceil": math.ceil, "trunc": math.trunc, "rndne": round}[op]
        return float(math.copysign(fn(x), x) if fn(x) == 0 else fn(x))
    return None


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200"])
@pytest.mark.parametrize("op", ["sqrt", "rcp", "rsq", "log", "exp", "floor", "ceil", "trunc", "rndne"])
def test_float_unary_ops_on_special_values(op, arch):
    assert op in ALU
    a, _ = pairs(FLOATS)
    got = run(f"v_{op}_f32 v2, v0", arch, a, a)
    checked = 0
    for lane, (x, g) in enumerate(zip(a, got, strict=True)):
        want = _ref_unary(op, x)
        if want is None:  # an ordinary value: within the documented 1 ulp of the exact result
            exact = {"sqrt": lambda v: math.sqrt(v), "rcp": lambda v: 1 / v, "rsq": lambda v: 1 / math.sqrt(v),
                     "log": lambda v: math.log2(v), "exp": lambda v: 2**v if v < 128 else INF}[op](x)
            assert math.isclose(value_of(g), f32(exact), rel_tol=2**-22, abs_tol=0), f"lane {lane}: {op}({x!r})"
            continue
        checked += 1
        assert same(g, want), f"lane {lane}: {op}({x!r}) = {value_of(g)!r}, want {want!r}"
    assert checked


CVT = {"cvt_i32_f32": (-(2**31), 2**31 - 1), "cvt_u32_f32": (0, 2**32 - 1)}


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200"])
@pytest.mark.parametrize("op", sorted(CVT))
def test_float_to_int_conversions_saturate_and_map_nan_to_zero(op, arch):
    lo, hi = CVT[op]
    a, _ = pairs(FLOATS + [3e9, -3e9, 2.5e9, -0.75])
    got = run(f"v_{op} v2, v0", arch, a, a)
    for lane, (x, g) in enumerate(zip(a, got, strict=True)):
        want = 0 if math.isnan(x) else max(lo, min(hi, math.trunc(x) if math.isfinite(x) else (hi if x > 0 else lo)))
        assert g == want & 0xFFFFFFFF, f"lane {lane}: {op}({x!r}) = {g:#x}, want {want & 0xFFFFFFFF:#x}"


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200"])
@pytest.mark.parametrize("cond", ["lt", "eq", "neq", "nge", "o", "u"])
def test_float_compares_treat_nan_as_the_isa_says(cond, arch):
    a, b = pairs(FLOATS)
    w = execute(f"v_cmp_{cond}_f32_e64 s0, v0, v1\nv_cndmask_b32_e64 v2, 0, 1, s0", arch,
                v={0: [bits_of(x) for x in a], 1: [bits_of(x) for x in b]})
    plain = {"lt": lambda x, y: x < y, "eq": lambda x, y: x == y, "neq": lambda x, y: not x == y,
             "nge": lambda x, y: not x >= y, "o": lambda x, y: not (math.isnan(x) or math.isnan(y)),
             "u": lambda x, y: math.isnan(x) or math.isnan(y)}[cond]
    for lane, (x, y) in enumerate(zip(a, b, strict=True)):
        assert int(w.v[2, 0, lane]) == int(plain(x, y)), f"lane {lane}: cmp_{cond}({x!r}, {y!r})"


def run64(text: str, arch: str, a: list, b: list, c: list | None = None) -> list[float]:
    """A double-precision instruction with v[0:1] = a, v[2:3] = b (v[4:5] = c); v[6:7] after."""
    regs = {}
    for reg, vals in ((0, a), (2, b), (4, c or a)):
        regs[reg], regs[reg + 1] = doubles(vals)
    return list(double(execute(text, arch, v=regs), 6))


DOUBLES = [0.0, -0.0, 1.0, -1.0, 2.5, -3.75, INF, -INF, NAN, 5e-324, -5e-324, 2.2250738585072014e-308,
           1.7976931348623157e308, -1.7976931348623157e308, 0.1, 1e300]


def same64(got: float, want: float) -> bool:
    if math.isnan(want):
        return math.isnan(got)
    return got == want and (want != 0 or math.copysign(1, got) == math.copysign(1, want))


DOUBLE2 = {"add": lambda x, y: x + y, "mul": lambda x, y: x * y, "min": min_num, "max": max_num}


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200"])
@pytest.mark.parametrize("op", sorted(DOUBLE2))
def test_double_ops_on_special_values(op, arch):
    name = {"min": "min_num", "max": "max_num"}.get(op, op) if arch == "gfx1200" else op
    a, b = pairs(DOUBLES)
    got = run64(f"v_{name}_f64 v[6:7], v[0:1], v[2:3]", arch, a, b)
    for lane, (x, y, g) in enumerate(zip(a, b, got, strict=True)):
        if op in ("min", "max") and x == 0 and y == 0:
            continue
        want = DOUBLE2[op](x, y)
        assert same64(g, want), f"lane {lane}: {op}_f64({x!r}, {y!r}) = {g!r}, want {want!r}"


def round_to(value: Fraction, bits: int) -> float:
    """A rational rounded once to the nearest float32 (bits 32) or double (64), ties to even."""
    if value == 0:
        return 0.0
    near = float(value)  # correctly rounded to double
    if bits == 64:
        return near
    lo = f32(near)
    step = np.nextafter(np.float32(lo), np.float32(math.copysign(INF, float(value) - lo or 1.0)))
    options = sorted({lo, float(step)}, key=lambda f: (abs(Fraction(f) - value), bits_of(f) & 1))
    return options[0]


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200"])
def test_fma_rounds_once(arch):
    # products whose exact sum with c lies just off a float32 halfway point: rounding twice gets them wrong
    rng = np.random.default_rng(7)
    a = [f32(float(x)) for x in rng.uniform(1, 2, 32)]
    b = [f32(1 + 2.0**-12 + k * 2.0**-23) for k in range(32)]
    c = [f32(-x * y) for x, y in zip(a, b, strict=True)]
    w = execute("v_fma_f32 v3, v0, v1, v2", arch,
                v={reg: [bits_of(x) for x in vals] for reg, vals in enumerate((a, b, c))})
    for lane, (x, y, z) in enumerate(zip(a, b, c, strict=True)):
        want = round_to(Fraction(x) * Fraction(y) + Fraction(z), 32)
        assert value_of(int(w.v[3, 0, lane])) == want, f"lane {lane}: fma({x!r}, {y!r}, {z!r})"


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200"])
@pytest.mark.parametrize(("op", "ref"), [
    ("min_i32", lambda x, y: min(sx(x), sx(y))), ("max_i32", lambda x, y: max(sx(x), sx(y))),
    ("min_u32", min), ("max_u32", max), ("mul_hi_u32", lambda x, y: (x * y) >> 32),
    ("mul_hi_i32", lambda x, y: (sx(x) * sx(y)) >> 32), ("ashrrev_i32", lambda x, y: sx(y) >> (x & 31))])
def test_integer_extremes(op, ref, arch):
    a, b = pairs(INTS)
    got = run(f"v_{op} v2, v0, v1", arch, a, b, kind="i")
    for lane, (x, y, g) in enumerate(zip(a, b, got, strict=True)):
        assert g == ref(x, y) & 0xFFFFFFFF, f"lane {lane}: {op}({x:#x}, {y:#x}) = {g:#x}"


def sx(x: int) -> int:
    return x - (1 << 32) if x >> 31 else x


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200"])
def test_frexp_ldexp_and_fract_on_special_values(arch):
    a, _ = pairs(FLOATS)
    mant = run("v_frexp_mant_f32 v2, v0", arch, a, a)
    exp = run("v_frexp_exp_i32_f32 v2, v0", arch, a, a)
    fract = run("v_fract_f32 v2, v0", arch, a, a)
    for lane, x in enumerate(a):
        if math.isfinite(x) and x != 0:
            m, e = math.frexp(x)
            assert value_of(mant[lane]) == m and sx(exp[lane]) == e, f"lane {lane}: frexp({x!r})"
            assert value_of(fract[lane]) == f32(min(x - math.floor(x), f32(1 - 2**-24))), f"lane {lane}: fract"
        else:  # the ISA: ±0, ±inf and NaN keep their mantissa (exponent 0); fract of inf or NaN is NaN
            assert same(mant[lane], x) and exp[lane] == 0, f"lane {lane}: frexp({x!r})"
            assert math.isnan(value_of(fract[lane])) if not math.isfinite(x) else value_of(fract[lane]) == 0, x


def h16(x: float) -> float:
    """x rounded to half precision (struct's 'e', correctly rounded; inf past the largest half)."""
    if math.isnan(x) or math.isinf(x):
        return x
    try:
        return struct.unpack("<e", struct.pack("<e", x))[0]
    except OverflowError:
        return math.copysign(INF, x)


HALVES = [h16(v) for v in (0.0, -0.0, 1.0, -1.0, 2.5, -3.75, INF, -INF, NAN, 6e-8, -6e-8, 6.1e-5, 65504.0,
                           -65504.0, 0.1, 1000.0)]


def half_value(b: int) -> float:
    return struct.unpack("<e", struct.pack("<H", b & 0xFFFF))[0]


def run16(text: str, arch: str, a: list, b: list) -> list[float]:
    """A 16-bit instruction on the low halves of v0, v1; the low half of v2 after, as a float."""
    w = execute(text, arch, v={0: [half_bits(x) for x in a], 1: [half_bits(x) for x in b]})
    return [half_value(int(x)) for x in w.v[2, 0]]


HALF2 = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y}


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200"])
@pytest.mark.parametrize("op", sorted(HALF2))
def test_half_ops_on_special_values(op, arch):
    a, b = pairs(HALVES)
    got = run16(f"v_{op}_f16 v2, v0, v1", arch, a, b)
    for lane, (x, y, g) in enumerate(zip(a, b, got, strict=True)):
        want = h16(HALF2[op](x, y))  # a double holds a half's sum and product exactly: one rounding
        assert same64(g, want), f"lane {lane}: {op}_f16({x!r}, {y!r}) = {g!r}, want {want!r}"


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200"])
def test_half_float_conversions(arch):
    a, _ = pairs(FLOATS + [65520.0, 65519.0, -70000.0, 3e-8])
    got = [half_value(x) for x in run("v_cvt_f16_f32 v2, v0", arch, a, a)]
    for lane, (x, g) in enumerate(zip(a, got, strict=True)):
        assert same64(g, h16(x)), f"lane {lane}: cvt_f16_f32({x!r}) = {g!r}, want {h16(x)!r}"
    halves = pairs(HALVES)[0]
    raw = [half_bits(h) for h in halves]
    back = run("v_cvt_f32_f16 v2, v0", arch, raw, raw, kind="i")
    for lane, (h, g) in enumerate(zip(halves, back, strict=True)):
        assert same(g, h), f"lane {lane}: cvt_f32_f16({h!r}) = {value_of(g)!r}"


CLASSES = {"snan": 1, "qnan": 2, "-inf": 4, "-normal": 8, "-denormal": 16, "-0": 32, "+0": 64, "+denormal": 128,
           "+normal": 256, "+inf": 512}


def float_class(x: float) -> str:
    if math.isnan(x):
        return "qnan"  # the lanes hold quiet NaNs
    if math.isinf(x):
        return "+inf" if x > 0 else "-inf"
    sign = "-" if math.copysign(1, x) < 0 else "+"
    if x == 0:
        return sign + "0"
    return sign + ("denormal" if abs(x) < TINY else "normal")


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200"])
@pytest.mark.parametrize("mask", [0x3, 0x21, 0x90, 0x108, 0x204, 0x3FF])
def test_class_compare_picks_the_classes_in_its_mask(mask, arch):
    a, _ = pairs(FLOATS)
    w = execute("v_cmp_class_f32_e64 s0, v0, v1\nv_cndmask_b32_e64 v2, 0, 1, s0", arch,
                v={0: [bits_of(x) for x in a], 1: [mask] * 32})
    for lane, x in enumerate(a):
        assert int(w.v[2, 0, lane]) == int(bool(CLASSES[float_class(x)] & mask)), f"lane {lane}: class({x!r})"


SALU = {"s_add_u32": (lambda x, y: x + y, lambda x, y: x + y > 0xFFFFFFFF),
        "s_sub_u32": (lambda x, y: x - y, lambda x, y: y > x),
        "s_add_i32": (lambda x, y: x + y, lambda x, y: not -(2**31) <= sx(x) + sx(y) < 2**31),
        "s_lshl_b32": (lambda x, y: x << (y & 31), lambda x, y: (x << (y & 31)) & 0xFFFFFFFF != 0),
        "s_ashr_i32": (lambda x, y: sx(x) >> (y & 31), lambda x, y: sx(x) >> (y & 31) != 0),
        "s_min_i32": (lambda x, y: min(sx(x), sx(y)), None), "s_max_u32": (max, None),
        "s_and_b32": (lambda x, y: x & y, lambda x, y: x & y != 0)}


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200"])
@pytest.mark.parametrize("op", sorted(SALU))
def test_scalar_ops_and_their_scc(op, arch):
    value, carry = SALU[op]
    name = {"s_add_u32": "s_add_co_u32", "s_sub_u32": "s_sub_co_u32", "s_add_i32": "s_add_co_i32"}.get(op, op) \
        if arch == "gfx1200" else op
    for x, y in zip(*pairs(INTS), strict=True):
        w = execute(f"{name} s2, s0, s1", arch, s={0: x, 1: y})  # SCC starts at 0
        assert int(w.s[2, 0]) == value(x, y) & 0xFFFFFFFF, f"{op}({x:#x}, {y:#x})"
        if carry is not None:
            assert int(w.scc[0]) == int(carry(x, y)), f"{op}({x:#x}, {y:#x}): scc"


def run3(text: str, arch: str, a: list, b: list, c: list) -> list[int]:
    """A three-source integer instruction with v0, v1, v3 = a, b, c; v2 after."""
    return [int(x) for x in execute(text, arch, v={0: a, 1: b, 3: c}).v[2, 0]]


def bfe(x: int, offset: int, size: int, signed: bool) -> int:
    offset, size = offset & 31, size & 31
    if size == 0:
        return 0
    field = (x >> offset) & ((1 << size) - 1)
    return field - (1 << size) if signed and field >> (size - 1) else field


BITS3 = {"v_bfe_u32": lambda x, o, s: bfe(x, o, s, False), "v_bfe_i32": lambda x, o, s: bfe(x, o, s, True),
         "v_bfi_b32": lambda m, x, y: (m & x) | (~m & y),
         "v_alignbit_b32": lambda hi, lo, s: ((hi << 32 | lo) >> (s & 31)),
         "v_alignbyte_b32": lambda hi, lo, s: ((hi << 32 | lo) >> (8 * (s & 3)))}
BITS1 = {"v_bcnt_u32_b32": lambda x: x.bit_count(), "v_bfrev_b32": lambda x: int(f"{x:032b}"[::-1], 2),
         "v_clz_i32_u32": lambda x: 32 - x.bit_length() if x else -1,
         "v_ctz_i32_b32": lambda x: (x & -x).bit_length() - 1 if x else -1,
         # the leading bits equal to the sign bit, the sign bit among them (-1 when all are)
         "v_cls_i32": lambda x: 32 - (x if x < 2**31 else ~x & 0xFFFFFFFF).bit_length() if x not in (
             0, 0xFFFFFFFF) else -1}


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200"])
@pytest.mark.parametrize("op", sorted(BITS3))
def test_bit_field_ops(op, arch):
    a, b = pairs(INTS)
    c = [INTS[(i * 5 + 1) % len(INTS)] for i in range(32)]
    got = run3(f"{op} v2, v0, v1, v3", arch, a, b, c)
    for lane, (x, y, z, g) in enumerate(zip(a, b, c, got, strict=True)):
        assert g == BITS3[op](x, y, z) & 0xFFFFFFFF, f"lane {lane}: {op}({x:#x}, {y:#x}, {z:#x}) = {g:#x}"


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200"])
@pytest.mark.parametrize("op", sorted(BITS1))
def test_bit_count_ops(op, arch):
    a, _ = pairs(INTS)
    operands = "v2, v0, 0" if op == "v_bcnt_u32_b32" else "v2, v0"
    got = run(f"{op} {operands}", arch, a, a, kind="i")
    for lane, (x, g) in enumerate(zip(a, got, strict=True)):
        assert g == BITS1[op](x) & 0xFFFFFFFF, f"lane {lane}: {op}({x:#x}) = {g:#x}"


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200"])
def test_double_conversions(arch):
    a, _ = pairs(FLOATS)
    ds = pairs(DOUBLES + [3e9, -3e9, 2.5, -2.5])[0]
    low, high = doubles(ds)
    w = execute("v_cvt_f64_f32 v[4:5], v0\nv_cvt_f32_f64 v2, v[6:7]\nv_cvt_i32_f64 v3, v[6:7]", arch,
                v={0: [bits_of(x) for x in a], 6: low, 7: high})
    widened = double(w, 4)
    for lane, (x, d) in enumerate(zip(a, ds, strict=True)):
        assert same64(float(widened[lane]), x), f"lane {lane}: cvt_f64_f32({x!r})"
        assert same(int(w.v[2, 0, lane]), f32(d)), f"lane {lane}: cvt_f32_f64({d!r})"
        want = 0 if math.isnan(d) else max(-(2**31), min(2**31 - 1, math.trunc(d) if math.isfinite(d) else
                                                          (2**31 - 1 if d > 0 else -(2**31))))
        assert int(w.v[3, 0, lane]) == want & 0xFFFFFFFF, f"lane {lane}: cvt_i32_f64({d!r})"


PACKED = {"v_pk_add_f16": lambda x, y: h16(x + y), "v_pk_mul_f16": lambda x, y: h16(x * y),
          "v_pk_max_f16": max_num, "v_pk_min_f16": min_num}
PACKED_INT = {"v_pk_add_u16": lambda x, y: (x + y) & 0xFFFF, "v_pk_sub_u16": lambda x, y: (x - y) & 0xFFFF,
              "v_pk_max_i16": lambda x, y: max(s16(x), s16(y)) & 0xFFFF,
              "v_pk_lshlrev_b16": lambda x, y: (y << (x & 15)) & 0xFFFF,
              "v_pk_mul_lo_u16": lambda x, y: (x * y) & 0xFFFF}


def s16(x: int) -> int:
    return x - 0x10000 if x & 0x8000 else x


def half_bits(x: float) -> int:
    return struct.unpack("<H", struct.pack("<e", x))[0]


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200"])
@pytest.mark.parametrize("op", sorted(PACKED) + sorted(PACKED_INT))
def test_packed_ops_work_on_both_halves(op, arch):
    floats = op in PACKED
    values = HALVES if floats else [0, 1, 2, 15, 16, 0x7FFF, 0x8000, 0xFFFF, 0xFFFE, 0x1234, 7, 0x8001, 3, 100, 255, 9]
    a, b = pairs(values)
    hi_a, hi_b = b[::-1], a[::-1]  # different values in the high halves
    pack = half_bits if floats else (lambda v: v)
    name = op.replace("max_f16", "max_num_f16").replace("min_f16", "min_num_f16") if arch == "gfx1200" else op
    got = run(f"{name} v2, v0, v1", arch, [pack(x) | pack(y) << 16 for x, y in zip(a, hi_a, strict=True)],
              [pack(x) | pack(y) << 16 for x, y in zip(b, hi_b, strict=True)], kind="i")
    ref = PACKED.get(op) or PACKED_INT[op]
    for lane, g in enumerate(got):
        for half, (x, y) in enumerate(((a[lane], b[lane]), (hi_a[lane], hi_b[lane]))):
            if floats and op.startswith(("v_pk_max", "v_pk_min")) and x == 0 and y == 0:
                continue
            bits = (g >> (16 * half)) & 0xFFFF
            if floats:
                value = half_value(bits)
                assert same64(value, ref(x, y)), f"lane {lane} half {half}: {op}({x!r}, {y!r}) = {value!r}"
            else:
                assert bits == ref(x, y), f"lane {lane} half {half}: {op}({x:#x}, {y:#x}) = {bits:#x}"
