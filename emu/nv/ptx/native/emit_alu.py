"""C for the ALU instructions, per lane l: integer and bit arithmetic, f32/f64 arithmetic rounded to nearest (with
.ftz, .sat and the canonical NaN), comparisons, selection, moves and conversions, each doing what the reference's
semantics.py does for that form, bit for bit (tests/emu/nv/native compares them). A form not here (another rounding
mode, half types, carries, saturating integer forms, ...) raises Untranslatable and runs on the reference."""

from __future__ import annotations

from collections.abc import Callable

from usergpu.emu.nv.ptx.native.coperands import FLOAT, INT, COperands, Untranslatable, ctype, size, utype
from usergpu.emu.nv.ptx.semantics import CMP, Inst
from usergpu.isa.nv import ptx


def _signed(t: str) -> bool:
    return t[0] == "s"


def _int(t: str) -> None:
    if t not in INT:
        raise Untranslatable(f".{t}")


def _dst(ins: Inst, o: COperands, t: str, value: str, i: int = 0) -> str:
    return o.set(ins.ops[i], t, f"(({ctype(t)})({value}))")


def _srcs(ins: Inst, o: COperands, t: str, first: int = 1, count: int | None = None) -> list[str]:
    ops = ins.ops[first:] if count is None else ins.ops[first:first + count]
    return [o.get(x, t) for x in ops]


def _plain(ins: Inst) -> None:
    """Refuse the modifiers these forms do not model (the reference runs them)."""
    if ins.has("cc", "sat", "relu", "NaN", "xorsign", "rz", "rm", "rp", "rzi", "rmi", "rpi", "rna", "oob"):
        raise Untranslatable(ins.ins.opcode)


# ---- floats ----------------------------------------------------------------------------------------------------
def _float(ins: Inst, o: COperands, name: str) -> str:
    """f32/f64 arithmetic rounded to nearest: operands flushed (.ftz), the result flushed, saturated (.sat) and its
    NaN canonical (not for abs and neg, which work on the sign)."""
    t = ins.t
    if t not in FLOAT or ins.has("rz", "rm", "rp", "NaN", "xorsign", "relu", "oob"):
        raise Untranslatable(ins.ins.opcode)
    w = 8 * size(t)
    args = _srcs(ins, o, t)
    if ins.has("ftz"):
        args = [f"ftz{w}({a})" for a in args]
    c = ctype(t)
    r = {"add": lambda a, b: f"(({c}){a} + ({c}){b})", "sub": lambda a, b: f"(({c}){a} - ({c}){b})",
         "mul": lambda a, b: f"(({c}){a} * ({c}){b})",
         "fma": lambda a, b, x: f"fma{'f' if w == 32 else ''}({a}, {b}, {x})",
         "div": lambda a, b: f"div_approx({a}, {b})" if ins.has("approx") else f"(({c}){a} / ({c}){b})",
         "min": lambda a, b: f"fmin_{w}({a}, {b})", "max": lambda a, b: f"fmax_{w}({a}, {b})",
         "abs": lambda a: f"fabs{'f' if w == 32 else ''}({a})", "neg": lambda a: f"(-({a}))"}[name](*args)
    if ins.has("approx") and (name != "div" or w != 32):
        raise Untranslatable(ins.ins.opcode)
    if ins.has("ftz"):
        r = f"ftz{w}({r})"
    if ins.has("sat"):
        r = f"sat{w}({r})"
    if name not in ("abs", "neg"):
        r = f"canon{w}({r})"
    return _dst(ins, o, t, r)


UNARY = {"rcp": "(1.0 / {x})", "sqrt": "sqrt({x})", "rsqrt": "(1.0 / sqrt({x}))", "sin": "sin({x})",
         "cos": "cos({x})", "lg2": "log2({x})", "ex2": "exp2({x})", "tanh": "tanh({x})"}


def _approx(ins: Inst, o: COperands) -> str:
    """rcp/sqrt (.rn: correctly rounded) and the .approx functions, computed in double and rounded once, as the
    reference does."""
    t = ins.t
    if t not in FLOAT or ins.has("rz", "rm", "rp"):
        raise Untranslatable(ins.ins.opcode)
    w = 8 * size(t)
    x = o.get(ins.ops[1], t)
    if ins.has("ftz"):
        x = f"ftz{w}({x})"
    exact = not ins.has("approx") and ins.base in ("rcp", "sqrt")
    if exact:
        r = f"(({ctype(t)})1 / {x})" if ins.base == "rcp" else f"sqrt{'f' if w == 32 else ''}({x})"
    else:
        r = f"(({ctype(t)}){UNARY[ins.base].format(x=f'(double){x}')})"
    if ins.has("ftz"):
        r = f"ftz{w}({r})"
    return _dst(ins, o, t, f"canon{w}({r})")


# ---- integers ----------------------------------------------------------------------------------------------------
def _integer(ins: Inst, o: COperands, name: str | None = None) -> str | None:
    """A float form's C (_float, as name), or None for an integer form with no modifier these do not model."""
    if ins.t in FLOAT and name is not None:
        return _float(ins, o, name)
    _int(ins.t)
    if not ins.has("cc"):
        _plain(ins)
    return None


def _addsub(ins: Inst, o: COperands) -> str:
    t = ins.t
    if (code := _integer(ins, o, ins.base)) is not None:
        return code
    if ins.has("cc"):
        return _carry(ins, o)
    a, b = _srcs(ins, o, t)
    u = utype(size(t))
    return _dst(ins, o, t, f"({u})({u}){a} {'+' if ins.base == 'add' else '-'} ({u}){b}")


def _wide(t: str) -> str:
    return t[0] + str(int(t[1:]) * 2)


def _hi(t: str, a: str, b: str) -> str:
    if size(t) == 8:
        wide = "__int128" if _signed(t) else "unsigned __int128"
        return f"({ctype(t)})((({wide}){a} * ({wide}){b}) >> 64)"
    return f"({ctype(t)})(((int64_t){a} * (int64_t){b}) >> {8 * size(t)})"


def _mul(ins: Inst, o: COperands) -> str:
    t = ins.t
    if (code := _integer(ins, o, "mul")) is not None:
        return code
    a, b = _srcs(ins, o, t)
    if ins.has("wide"):
        wt = _wide(t)
        return _dst(ins, o, wt, f"({ctype(wt)}){a} * ({ctype(wt)}){b}")
    if ins.has("hi"):
        return _dst(ins, o, t, _hi(t, a, b))
    u = utype(size(t))
    return _dst(ins, o, t, f"({u})(({u}){a} * ({u}){b})")


def _mad(ins: Inst, o: COperands) -> str:
    t = ins.t
    if (code := _integer(ins, o, "fma")) is not None:
        return code
    if ins.has("cc"):
        return _carry(ins, o)
    a, b = _srcs(ins, o, t, 1, 2)
    if ins.has("wide"):
        wt = _wide(t)
        u = utype(size(wt))
        c = o.get(ins.ops[3], wt)
        return _dst(ins, o, wt, f"({u})(({u})(({ctype(wt)}){a} * ({ctype(wt)}){b}) + ({u}){c})")
    c = o.get(ins.ops[3], t)
    u = utype(size(t))
    prod = f"({u}){_hi(t, a, b)}" if ins.has("hi") else f"(({u}){a} * ({u}){b})"
    return _dst(ins, o, t, f"({u})({prod} + ({u}){c})")


def _carry(ins: Inst, o: COperands) -> str:
    """add.cc/addc/sub.cc/subc and mad.cc/madc (the product's low or high half, plus c), with the thread's carry
    flag CC.CF (the register %cc): in with addc/subc/madc, out with .cc."""
    t = ins.t
    _int(t)
    bits = 8 * size(t)
    u = utype(size(t))
    cc = o.carry()
    srcs = _srcs(ins, o, t)
    cin = f"(unsigned __int128){cc}[l]" if ins.base in ("addc", "subc", "madc") else "0"
    if len(srcs) == 3:
        prod = f"((__int128)({srcs[0]}) * (__int128)({srcs[1]}))"
        x = f"(unsigned __int128)({u})({prod} >> {bits if ins.has('hi') else 0})"
        y = f"(unsigned __int128)({u}){srcs[2]}"
    else:
        x, y = (f"(unsigned __int128)({u}){s}" for s in srcs)
    if ins.base in ("sub", "subc"):
        r, out = f"(__int128){x} - (__int128){y} - (__int128){cin}", "r_ < 0"
    else:
        r, out = f"(__int128)({x} + {y} + {cin})", f"(((unsigned __int128)r_ >> {bits}) != 0)"
    flag = f"{cc}[l] = {out};" if ins.has("cc") else ""
    return f"{{ __int128 r_ = {r}; {_dst(ins, o, t, f'({u})r_')} {flag} }}"


def _divrem(ins: Inst, o: COperands) -> str:
    t = ins.t
    if t in FLOAT:
        if ins.base == "rem" or ins.has("full"):
            raise Untranslatable(ins.ins.opcode)
        return _float(ins, o, "div")
    _int(t)
    a, b = _srcs(ins, o, t)
    rem = int(ins.base == "rem")
    if _signed(t):
        return _dst(ins, o, t, f"sdiv((int64_t){a}, (int64_t){b}, {rem})")
    top = (1 << 8 * size(t)) - 1
    return _dst(ins, o, t, f"udiv((uint64_t){a}, (uint64_t){b}, {rem}, {top:#x}ull)")


def _minmax(ins: Inst, o: COperands) -> str:
    t = ins.t
    if (code := _integer(ins, o, ins.base)) is not None:
        return code
    a, b = _srcs(ins, o, t)
    return _dst(ins, o, t, f"({a} {'<' if ins.base == 'min' else '>'} {b} ? {a} : {b})")


def _absneg(ins: Inst, o: COperands) -> str:
    t = ins.t
    if t in FLOAT:
        return _float(ins, o, ins.base)
    _int(t)
    a = o.get(ins.ops[1], t)
    u = utype(size(t))
    neg = f"({u})(0 - ({u}){a})"
    return _dst(ins, o, t, neg if ins.base == "neg" else f"({a} < 0 ? {neg} : ({u}){a})")


def _logic(ins: Inst, o: COperands) -> str:
    t = ins.t
    op = {"and": "&", "or": "|", "xor": "^"}[ins.base]
    if t == "pred":
        a, b = _srcs(ins, o, "pred")
        return o.set(ins.ops[0], "pred", f"({a} {op} {b})")
    _int(t)
    a, b = _srcs(ins, o, t)
    return _dst(ins, o, t, f"{a} {op} {b}")


def _not(ins: Inst, o: COperands) -> str:
    t = ins.t
    if t == "pred":
        return o.set(ins.ops[0], "pred", f"!{o.get(ins.ops[1], 'pred')}")
    _int(t)
    return _dst(ins, o, t, f"~{o.get(ins.ops[1], t)}")


def _cnot(ins: Inst, o: COperands) -> str:
    _int(ins.t)
    return _dst(ins, o, ins.t, f"{o.get(ins.ops[1], ins.t)} == 0")


def _shift(ins: Inst, o: COperands) -> str:
    """PTX clamps the shift amount: everything shifted out (a signed right shift: the sign everywhere)."""
    t = ins.t
    _int(t)
    a, n = o.get(ins.ops[1], t), o.get(ins.ops[2], "u32")
    bits = 8 * size(t)
    u = utype(size(t))
    if ins.base == "shl":
        return _dst(ins, o, t, f"{n} >= {bits} ? 0 : ({u})(({u}){a} << {n})")
    if _signed(t):
        return _dst(ins, o, t, f"{a} >> ({n} >= {bits} ? {bits - 1} : {n})")
    return _dst(ins, o, t, f"{n} >= {bits} ? 0 : ({u}){a} >> {n}")


def _shf(ins: Inst, o: COperands) -> str:
    lo, hi, n = _srcs(ins, o, "u32")
    s = f"({n} > 32 ? 32 : {n})" if ins.has("clamp") else f"({n} & 31)"
    pair = f"(((uint64_t){hi} << 32) | {lo})"
    r = f"(({pair} << {s}) >> 32)" if ins.has("l") else f"({pair} >> {s})"
    return _dst(ins, o, "u32", f"(uint32_t){r}")


def _popc(ins: Inst, o: COperands) -> str:
    _int(ins.t)
    return _dst(ins, o, "u32", f"__builtin_popcountll(({utype(size(ins.t))}){o.get(ins.ops[1], ins.t)})")


def _clz(ins: Inst, o: COperands) -> str:
    _int(ins.t)
    bits = 8 * size(ins.t)
    a = f"(uint64_t)({utype(size(ins.t))}){o.get(ins.ops[1], ins.t)}"
    return _dst(ins, o, "u32", f"{a} == 0 ? {bits} : __builtin_clzll({a}) - {64 - bits}")


def _brev(ins: Inst, o: COperands) -> str:
    t = ins.t
    if size(t) not in (4, 8):
        raise Untranslatable(ins.ins.opcode)
    return _dst(ins, o, t, f"__builtin_bitreverse{8 * size(t)}({o.get(ins.ops[1], t)})")


def _bfe(ins: Inst, o: COperands) -> str:
    t = ins.t
    _int(t)
    a = o.get(ins.ops[1], t)
    p, n = (o.get(x, "u32") for x in ins.ops[2:4])
    u = utype(size(t))
    return _dst(ins, o, t, f"bfe((uint64_t)({u}){a}, {p}, {n}, {8 * size(t)}, {int(_signed(t))})")


def _bfi(ins: Inst, o: COperands) -> str:
    t = ins.t
    _int(t)
    a, b = (o.get(x, t) for x in ins.ops[1:3])
    p, n = (o.get(x, "u32") for x in ins.ops[3:5])
    u = utype(size(t))
    return _dst(ins, o, t, f"bfi((uint64_t)({u}){a}, (uint64_t)({u}){b}, {p}, {n}, {8 * size(t)})")


def _prmt(ins: Inst, o: COperands) -> str:
    if any(m in ins.mods for m in ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16")):
        raise Untranslatable(ins.ins.opcode)
    a, b, s = _srcs(ins, o, "u32")
    return _dst(ins, o, "u32", f"prmt({a}, {b}, {s})")


def _lop3(ins: Inst, o: COperands) -> str:
    if not isinstance(ins.ops[4], ptx.Imm):
        raise Untranslatable("lop3 with a register table")
    lut = int(ins.ops[4].value)
    a, b, c = (o.get(x, "u32") for x in ins.ops[1:4])
    terms = [f"({'' if k & 4 else '~'}x_ & {'' if k & 2 else '~'}y_ & {'' if k & 1 else '~'}z_)"
             for k in range(8) if lut >> k & 1]
    value = " | ".join(terms) or "0u"
    return (f"{{ uint32_t x_ = {a}, y_ = {b}, z_ = {c}; (void)x_; (void)y_; (void)z_; "
            f"{_dst(ins, o, 'u32', value)} }}")


# ---- comparisons and selection ---------------------------------------------------------------------------------
COMBINE = {"and": "&", "or": "|", "xor": "^"}


def _compare(ins: Inst, o: COperands, t: str, a: str, b: str) -> str:
    cmp = next(m for m in ins.mods if m in CMP or m.rstrip("u") in CMP or m in ("num", "nan"))
    if t in FLOAT:
        w = 8 * size(t)
        if ins.has("ftz"):
            a, b = f"ftz{w}({a})", f"ftz{w}({b})"
        nan = f"({a} != {a} || {b} != {b})"
        if cmp == "num":
            return f"!{nan}"
        if cmp == "nan":
            return nan
        if cmp in CMP:
            op = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[cmp]
            return f"({a} {op} {b} && !{nan})" if cmp == "ne" else f"({a} {op} {b})"
        op = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[cmp.rstrip("u")]
        return f"({a} {op} {b} || {nan})"
    if t != "pred":
        _int(t)
    if cmp not in CMP:
        raise Untranslatable(ins.ins.opcode)
    op = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "lo": "<", "ls": "<=", "hi": ">",
          "hs": ">="}[cmp]
    return f"({a} {op} {b})"


def _combined(ins: Inst, o: COperands, r: str, at: int) -> str:
    how = next((COMBINE[m] for m in ins.mods if m in COMBINE), None)
    return r if how is None else f"({r} {how} {o.get(ins.ops[at], 'pred')})"


def _setp(ins: Inst, o: COperands) -> str:
    t = ins.t
    a, b = (o.get(x, t) for x in ins.ops[1:3])
    first = ins.ops[0]
    r = _compare(ins, o, t, "a_", "b_")
    out = o.set(first.first if isinstance(first, ptx.Pair) else first, "pred", _combined(ins, o, "r_", 3))
    if isinstance(first, ptx.Pair):
        out += " " + o.set(first.second, "pred", _combined(ins, o, "!r_", 3))
    return f"{{ {ctype(t)} a_ = {a}, b_ = {b}; _Bool r_ = {r}; {out} }}"


def _selp(ins: Inst, o: COperands) -> str:
    t = ins.t
    a, b = (o.get(x, t) for x in ins.ops[1:3])
    return _dst(ins, o, t, f"{o.get(ins.ops[3], 'pred')} ? {a} : {b}")


def _mov(ins: Inst, o: COperands) -> str:
    t = ins.t
    return o.set(ins.ops[0], t, o.get(ins.ops[1], t))


def _copysign(ins: Inst, o: COperands) -> str:
    t = ins.t
    if t not in FLOAT:
        raise Untranslatable(ins.ins.opcode)
    a, b = _srcs(ins, o, t)
    return _dst(ins, o, t, f"copysign{'f' if t == 'f32' else ''}({b}, {a})")


# ---- conversions -------------------------------------------------------------------------------------------------
ROUND = {"rni": 0, "rzi": 1, "rmi": 2, "rpi": 3}
INTEGRAL = {"rni": "rint", "rzi": "trunc", "rmi": "floor", "rpi": "ceil"}


HALF = {"f16": "F16({x})", "bf16": "F32((uint32_t){x} << 16)"}  # a half's bits (read as b16) as a float


def _cvt(ins: Inst, o: COperands) -> str:
    dt, st = ins.types[0], ins.types[1]
    if ins.has("relu", "satfinite") or dt not in INT | FLOAT | set(HALF) or st not in INT | FLOAT | set(HALF):
        raise Untranslatable(ins.ins.opcode)
    mode = ins.mode("")
    if st in HALF:  # a half's value, exactly, as a float (ftz of a half: the reference's)
        if ins.has("ftz") or dt not in FLOAT:
            raise Untranslatable(ins.ins.opcode)
        x, st = f"((float){HALF[st].format(x=o.get(ins.ops[1], 'b16'))})", "f32"
    else:
        x = o.get(ins.ops[1], st)
    if st in FLOAT and ins.has("ftz"):
        x = f"ftz{8 * size(st)}({x})"
    if dt in HALF:  # to a half's bits: rounded to nearest even once, NaN canonical
        if st not in FLOAT or mode not in ("", "rn") or ins.has("sat") or (dt == "bf16" and st != "f32"):
            raise Untranslatable(ins.ins.opcode)
        bits = f"to_bf16({x})" if dt == "bf16" else f"canon16((_Float16){x})"
        return o.set(ins.ops[0], "b16", f"((uint16_t){bits})")
    if dt in FLOAT:  # to a float: rounded to nearest (to an integral value by .rni/.rzi/.rmi/.rpi), then ftz, sat
        if mode in ROUND and st not in FLOAT or mode not in ("", "rn", *ROUND):
            raise Untranslatable(ins.ins.opcode)
        w = 8 * size(dt)
        r = f"(({ctype(dt)}){x})"
        if mode in ROUND:
            r = f"(({ctype(dt)}){INTEGRAL[mode]}((double){x}))"
        if ins.has("ftz") and dt == "f32":
            r = f"ftz32({r})"
        if ins.has("sat"):
            r = f"sat{w}({r})"
        return _dst(ins, o, dt, f"canon{w}({r})")
    if ins.has("sat"):
        raise Untranslatable(ins.ins.opcode)
    if st in FLOAT:  # to an integer: rounded by the mode (rzi by default), saturated; NaN per the PTX ISA
        bits = 8 * size(dt)
        lo, hi = (-(1 << bits - 1), (1 << bits - 1) - 1) if _signed(dt) else (0, (1 << bits) - 1)
        nan = 1 << bits - 1 if (ins.types[1] == "f64" or bits == 64) else 0
        mask = (1 << 64) - 1
        return _dst(ins, o, dt, f"to_int((double){x}, {ROUND[mode or 'rzi']}, {float(lo)!r}, {float(hi)!r}, "
                                f"{lo & mask:#x}ull, {hi & mask:#x}ull, {nan:#x}ull, {int(_signed(dt))})")
    wide = "int64_t" if _signed(st) else "uint64_t"
    return _dst(ins, o, dt, f"({wide}){x}")


def _cvta(ins: Inst, o: COperands) -> str:
    space = next((m for m in ins.mods if m in ("shared", "local", "global", "const", "param")), None)
    window = {"shared": "SHARED_WINDOW", "local": "LOCAL_WINDOW"}.get(space, "0ull")
    t = ins.t
    a = o.get(ins.ops[1], t)
    return _dst(ins, o, t, f"(uint64_t){a} {'-' if ins.has('to') else '+'} {window}")


TABLE: dict[str, Callable[[Inst, COperands], str]] = {
    "add": _addsub, "sub": _addsub, "addc": _carry, "subc": _carry, "madc": _carry, "mul": _mul, "mad": _mad,
    "fma": lambda i, o: _float(i, o, "fma"),
    "div": _divrem, "rem": _divrem, "min": _minmax, "max": _minmax, "abs": _absneg, "neg": _absneg,
    "and": _logic, "or": _logic, "xor": _logic, "not": _not, "cnot": _cnot, "shl": _shift, "shr": _shift,
    "shf": _shf, "popc": _popc, "clz": _clz, "brev": _brev, "bfe": _bfe, "bfi": _bfi, "prmt": _prmt, "lop3": _lop3,
    "setp": _setp, "selp": _selp, "mov": _mov, "cvt": _cvt, "cvta": _cvta, "copysign": _copysign,
    **{name: _approx for name in UNARY},
}
