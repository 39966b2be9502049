"""Cases for memory: ld/st in the global, shared, local, const and param spaces and through generic addresses
(cvta to and from shared and local), every width and vector form (v2/v4), sign and zero extension into wider
registers, cache and memory-order qualifiers; mov (immediates, vector packing, variable addresses); prefetch;
atom and red with every operation and type in global and shared memory (CAS, inc/dec wrap, packed halves); and
ptx_cases_async's (cp.async, mapa/getctarank, barrier.cluster, indirect calls)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import ptx_cases_async
import ptx_refs as R
from ptx_harness import Case, float_edges, int_edges, rng

SIZE = {"8": 1, "16": 2, "32": 4, "64": 8}
REG = {1: "b16", 2: "b16", 4: "b32", 8: "b64"}


def _field(mem: int, offset: int, size: int) -> int:
    return mem >> (8 * offset) & ((1 << 8 * size) - 1)


def _memory_lanes(size: int, n: int = 64, seed: str = "mem") -> list[tuple[int]]:
    r = rng(seed)
    return [(r.getrandbits(8 * size),) for _ in range(n)]


def _extend(v: int, t: str, reg: str) -> int:
    width = {"b16": 16, "b32": 32, "b64": 64}[reg]
    bits = int(t[1:])
    return R.wrap(R.to_signed(v, bits), width) if t[0] == "s" else v


def loads() -> list[Case]:
    """ld.global of each type at an offset, into its register or (sub-word and s32) a wider one: sign-extended for
    .s types, zero-extended for .u (PTX ISA: operand size exceeding the instruction type); vector loads."""
    cases = []
    forms = [(t, None) for t in ("u8", "s8", "b16", "u16", "s16", "b32", "u32", "s32", "f32", "b64", "u64", "s64",
                                 "f64")]
    forms += [("u8", "b32"), ("s8", "b32"), ("u16", "b32"), ("s16", "b32"), ("s32", "b64"), ("u32", "b64")]
    lanes = _memory_lanes(32, seed="loads")
    for t, reg in forms:
        size = int(t[1:]) // 8
        reg = reg or REG[size]
        for offset in (0, size * 3):
            name = f"ld.global.{t}"
            cases.append(Case(f"{name}-{reg}+{offset}", "ld", f"{name} %o0, [%ga0+{offset}];", ("m32",), (reg,),
                              lanes, lambda m, t=t, reg=reg, o=offset, s=size: _extend(_field(m, o, s), t, reg)))
    for vec, t in itertools.product((2, 4), ("u8", "b16", "b32", "f32", "b64")):
        size = int(t[1:]) // 8
        if vec * size > 16:
            continue
        regs = ", ".join(f"%o{i}" for i in range(vec))
        name = f"ld.global.v{vec}.{t}"
        cases.append(Case(name, "ld", f"{name} {{{regs}}}, [%ga0+16];", ("m32",), (REG[size],) * vec, lanes,
                          lambda m, vec=vec, s=size: tuple(_field(m, 16 + i * s, s) for i in range(vec))))
    qualifiers = ("global.nc", "global.ca", "global.cg", "global.cs", "global.lu", "global.cv", "volatile.global",
                  "relaxed.gpu.global", "acquire.gpu.global", "relaxed.sys.global", "weak.global",
                  "global.L1::evict_last", "global.L1::no_allocate")
    for q in qualifiers:
        cases.append(Case(f"ld.{q}.b32", "ld", f"ld.{q}.b32 %o0, [%ga0+4];", ("m32",), ("b32",), lanes,
                          lambda m: _field(m, 4, 4)))
    cases.append(Case("ldu.global.b32", "ldu", "ldu.global.b32 %o0, [%ga0+8];", ("m32",), ("b32",), lanes,
                      lambda m: _field(m, 8, 4)))
    cases.append(Case("ldu.global.v2.b64", "ldu", "ldu.global.v2.b64 {%o0, %o1}, [%ga0+16];", ("m32",),
                      ("b64", "b64"), lanes, lambda m: (_field(m, 16, 8), _field(m, 24, 8))))
    return cases


def stores() -> list[Case]:
    """st.global of each width and vector form at an offset of zeroed memory (the bytes around untouched); a
    sub-word store from a wider register keeps its low bits."""
    cases = []
    r = rng("stores")
    for t, reg in (("b8", "b16"), ("b16", "b16"), ("b32", "b32"), ("f32", "b32"), ("b64", "b64"), ("u8", "b32"),
                   ("u16", "b32")):
        size = int(t[1:]) // 8
        lanes = [(r.getrandbits(8 * {"b16": 2, "b32": 4, "b64": 8}[reg]),) for _ in range(48)]
        name = f"st.global.{t}"
        cases.append(Case(f"{name}-{reg}", "st", f"{name} [%ga1+{size}], %i0;", (reg,), ("m32",), lanes,
                          lambda v, s=size: (v & ((1 << 8 * s) - 1)) << (8 * s)))
    for vec, t in itertools.product((2, 4), ("b8", "b16", "b32", "b64")):
        size = int(t[1:]) // 8
        if vec * size > 16:
            continue
        reg = REG[size]
        lanes = [tuple(r.getrandbits(8 * size) for _ in range(vec)) for _ in range(48)]
        regs = ", ".join(f"%i{i}" for i in range(vec))
        name = f"st.global.v{vec}.{t}"
        cases.append(Case(name, "st", f"{name} [%ga{vec}+16], {{{regs}}};", (reg,) * vec, ("m32",), lanes,
                          lambda *v, s=size: sum(x << (8 * (16 + i * s)) for i, x in enumerate(v))))
    for q in ("global.wb", "global.cg", "global.cs", "global.wt", "volatile.global", "relaxed.gpu.global",
              "release.gpu.global", "relaxed.sys.global", "weak.global"):
        cases.append(Case(f"st.{q}.b32", "st", f"st.{q}.b32 [%ga1+8], %i0;", ("b32",), ("m16",),
                          [(r.getrandbits(32),) for _ in range(40)], lambda v: v << 64))
    return cases


SHARED = ".shared .align 16 .b8 sm[2048];\n.reg .b32 %t<4>;\n.reg .b64 %a<4>;"


def _neighbours(lanes: list, block: int, partner) -> list:
    """Each lane's view of another lane of its block's inputs (for exchanges through shared memory)."""
    out = []
    for k in range(len(lanes)):
        base = k - k % block
        out.append(tuple(lanes[base + partner(k % block)]))
    return out


def spaces() -> list[Case]:
    """Shared memory exchanged between lanes (of different warps) across bar.sync; local memory private to each
    thread; generic addresses of both through cvta and back; .const and .global module variables; kernel
    parameters by value (ld.param)."""
    r = rng("spaces")
    lanes = [tuple(r.getrandbits(32) for _ in range(4)) for _ in range(256)]

    def partner(t: int) -> int:
        return (t + 37) % 128
    cases = [Case("st.shared.v4-ld.shared.v4-exchange", "ld", """
        mov.u32 %t0, %tid.x;
        mov.u64 %a1, sm;
        mul.wide.u32 %a0, %t0, 16;
        add.u64 %a0, %a0, %a1;
        st.shared.v4.b32 [%a0], {%i0, %i1, %i2, %i3};
        bar.sync 0;
        add.u32 %t1, %t0, 37;
        rem.u32 %t1, %t1, 128;
        mul.wide.u32 %a2, %t1, 16;
        add.u64 %a2, %a2, %a1;
        ld.shared.v4.b32 {%o0, %o1, %o2, %o3}, [%a2];""", ("b32",) * 4, ("b32",) * 4, lanes,
        lambda ls: _neighbours(ls, 128, partner), whole=True, decls=SHARED)]
    cases.append(Case("st.shared-var-offset", "st", """
        mov.u32 %t0, %tid.x;
        setp.eq.u32 %p0, %t0, 5;
        @%p0 st.shared.b32 [sm+12], %i0;
        @%p0 st.shared.b64 [sm+16], %ga0;
        bar.sync 0;
        ld.shared.b32 %o0, [sm+12];""", ("b32",), ("b32",), lanes[:128] * 2,
        lambda ls: [(ls[k - k % 128 + 5][0],) for k in range(len(ls))], whole=True, decls=SHARED + "\n.reg .pred %p0;"))
    cases.append(Case("cvta.shared-generic", "cvta", """
        mov.u32 %t0, %tid.x;
        mov.u64 %a1, sm;
        cvta.shared.u64 %a1, %a1;
        mul.wide.u32 %a0, %t0, 4;
        add.u64 %a0, %a0, %a1;
        st.b32 [%a0], %i0;
        bar.sync 0;
        xor.b32 %t1, %t0, 64;
        mul.wide.u32 %a2, %t1, 4;
        add.u64 %a2, %a2, %a1;
        ld.b32 %o0, [%a2];
        cvta.to.shared.u64 %a3, %a2;
        ld.shared.b32 %o1, [%a3];""", ("b32",), ("b32", "b32"), [lane[:1] for lane in lanes],
        lambda ls: [(ls[k ^ 64][0],) * 2 for k in range(len(ls))], whole=True, decls=SHARED))
    cases.append(Case("st.local-ld.local", "ld", """
        st.local.v2.b32 [loc+8], {%i0, %i1};
        st.local.b32 [loc+4], %i2;
        ld.local.v2.b32 {%o0, %o1}, [loc+8];
        ld.local.b32 %o2, [loc+4];""", ("b32",) * 3, ("b32",) * 3, [lane[:3] for lane in lanes],
        lambda a, b, c: (a, b, c), decls=".local .align 16 .b8 loc[32];"))
    cases.append(Case("cvta.local-generic", "cvta", """
        mov.u64 %a0, loc;
        cvta.local.u64 %a1, %a0;
        st.b32 [%a1+12], %i0;
        ld.local.b32 %o0, [loc+12];
        cvta.to.local.u64 %a2, %a1;
        st.local.b32 [%a2+4], %i1;
        ld.b32 %o1, [%a1+4];""", ("b32",) * 2, ("b32",) * 2, [lane[:2] for lane in lanes],
        lambda a, b: (a, b), decls=".local .align 16 .b8 loc[32];\n.reg .b64 %a<4>;"))
    def views(a: int, b: int, c: int, d: int):
        mem = a | b << 32 | c << 64 | d << 96
        return (_field(mem, 0, 8), _field(mem, 8, 8), _field(mem, 5, 1), _extend(_field(mem, 6, 2), "s16", "b32"),
                _field(mem, 8, 2), _field(mem, 10, 2), _extend(_field(mem, 15, 1), "s8", "b16"))
    cases.append(Case("st.shared.v4-views", "st", """
        mov.u32 %t0, %tid.x;
        mov.u64 %a1, sm;
        mul.wide.u32 %a0, %t0, 16;
        add.u64 %a0, %a0, %a1;
        st.shared.v4.b32 [%a0], {%i0, %i1, %i2, %i3};
        ld.shared.v2.b64 {%o0, %o1}, [%a0];
        ld.shared.u8 %o2, [%a0+5];
        ld.shared.s16 %o3, [%a0+6];
        ld.shared.v2.b16 {%o4, %o5}, [%a0+8];
        ld.shared.s8 %o6, [%a0+15];""", ("b32",) * 4, ("b64", "b64", "b16", "b32", "b16", "b16", "b16"), lanes,
        views, decls=SHARED))
    table = [0x11111111 * k ^ 0xA5A5A5A5 for k in range(16)]
    const = f".const .align 4 .b32 ctab[16] = {{{', '.join(str(x) for x in table)}}};\n"
    cases.append(Case("ld.const-indexed", "ld", """
        and.b32 %t0, %i0, 15;
        mul.wide.u32 %a0, %t0, 4;
        mov.u64 %a1, ctab;
        add.u64 %a0, %a0, %a1;
        ld.const.b32 %o0, [%a0];
        ld.const.b32 %o1, [ctab+8];""", ("b32",), ("b32", "b32"), [(k,) for k in range(40)],
        lambda i: (table[i & 15], table[2]), decls=".reg .b32 %t<2>;\n.reg .b64 %a<2>;", module=const))
    glob = ".global .align 8 .b64 gtab[4] = {1, 2, 81985529216486895, 18446744073709551615};\n"
    cases.append(Case("ld.global-module-variable", "ld", """
        ld.global.b64 %o0, [gtab+16];
        mov.u64 %a0, gtab;
        ld.global.b64 %o1, [%a0+24];""", ("b32",), ("b64", "b64"), [(0,)] * 32,
        lambda _: (81985529216486895, 18446744073709551615), decls=".reg .b64 %a0;", module=glob))
    blob = bytes(range(3, 19))
    params = [(".param .u32 s0", np.uint32(0xDEADBEEF)), (".param .f64 s1", np.float64(-1.5)),
              (".param .align 8 .b8 s2[16]", blob), (".param .s16 s3", np.int16(-2))]
    cases.append(Case("ld.param-by-value", "ld", """
        ld.param.u32 %o0, [s0];
        ld.param.f64 %o1, [s1];
        ld.param.v2.b32 {%o2, %o3}, [s2+8];
        ld.param.u8 %o4, [s2+3];
        ld.param.s16 %o5, [s3];""", ("b32",), ("b32", "b64", "b32", "b32", "b16", "b32"), [(0,)] * 32,
        lambda _: (0xDEADBEEF, R.bits(-1.5, "f64"), int.from_bytes(blob[8:12], "little"),
                   int.from_bytes(blob[12:16], "little"), blob[3], 0xFFFFFFFE), params=params))
    return cases


def moves() -> list[Case]:
    """mov of registers, immediates (a 0f float literal's bits), predicates, vector packing and unpacking, and a
    shared variable's address; prefetch/prefetchu leave memory as it is."""
    r = rng("mov")
    lanes = [(r.getrandbits(32), r.getrandbits(32)) for _ in range(40)]
    cases = [
        Case("mov.b32", "mov", "mov.b32 %o0, %i0;\nmov.u32 %o1, 0xfffffffe;\nmov.f32 %o2, 0f3FC00000;",
             ("b32", "b32"), ("b32",) * 3, lanes, lambda a, b: (a, 0xFFFFFFFE, 0x3FC00000)),
        Case("mov.b64-pack", "mov", "mov.b64 %o0, {%i0, %i1};\nmov.b64 {%o1, %o2}, %o0;", ("b32", "b32"),
             ("b64", "b32", "b32"), lanes, lambda a, b: (a | b << 32, a, b)),
        Case("mov.b32-halves", "mov", "mov.b32 {%o0, %o1}, %i0;\nmov.b32 %o2, {%o1, %o0};", ("b32", "b32"),
             ("b16", "b16", "b32"), lanes, lambda a, b: (a & 0xFFFF, a >> 16, (a >> 16) | (a & 0xFFFF) << 16)),
        Case("mov.pred", "mov", "mov.pred %o0, %i0;\nmov.pred %o1, 1;", ("pred",), ("pred", "pred"),
             [(0,), (1,)] * 16, lambda p: (p, 1)),
        Case("mov.u64-shared-address", "mov", "mov.u32 %t0, %tid.x;\nmul.wide.u32 %a1, %t0, 4;\nmov.u64 %a0, sm2;\n"
             "add.u64 %a0, %a0, %a1;\nst.shared.b32 [%a0], %i0;\nld.shared.b32 %o0, [%a0];\nmov.u64 %o1, sm2;\n"
             "mov.u64 %o2, sm;\nsub.u64 %o1, %o1, %o2;", ("b32",), ("b32", "b64", "b64"), lanes,
             lambda a, b: (a, R.OneOf(frozenset({64, R.wrap(-512, 64)})), None),
             decls=".shared .align 16 .b8 sm[64];\n.shared .align 16 .b8 sm2[512];\n.reg .b32 %t0;\n.reg .b64 %a<2>;"),
        Case("prefetch.global.L2", "prefetch", "prefetch.global.L2 [%ga0];\nprefetch.global.L1 [%ga0+4];\n"
             "ld.global.b32 %o0, [%ga0];", ("m8",), ("b32",), _memory_lanes(8), lambda m: m & 0xFFFFFFFF),
        Case("prefetchu.L1", "prefetchu", "prefetchu.L1 [%ga0];\nld.global.b32 %o0, [%ga0+4];", ("m8",), ("b32",),
             _memory_lanes(8), lambda m: m >> 32),
    ]
    return cases


# ---- atomics -----------------------------------------------------------------------------------------------------
def _atomic_fn(op: str, t: str):
    """new = f(old, b, c) on register bits (PTX ISA atom: inc/dec wrap at b; cas stores c where old == b; float
    add rounds to nearest even, and atom.add.f32 flushes subnormal inputs and results)."""
    w = 16 if t in ("f16", "bf16", "b16") else int(t[-2:]) if t[-2:].isdigit() else 32
    if t in ("f16x2", "bf16x2"):
        one = _atomic_fn(op, t[:-2])
        return lambda o, b, c: R.packed([one(o & 0xFFFF, b & 0xFFFF, 0), one(o >> 16, b >> 16, 0)])
    if t[0] == "f" or t == "bf16":  # a NaN result: some NaN (the ISA does not say which for atomics)
        return lambda o, b, c: _any_nan(R.float_op("add", t, "rn", [o, b], ftz=t == "f32"), t)
    val = (lambda x: R.as_value(x, t)) if t[0] in "su" else (lambda x: x)
    return {
        "add": lambda o, b, c: R.wrap(o + b, w), "and": lambda o, b, c: o & b, "or": lambda o, b, c: o | b,
        "xor": lambda o, b, c: o ^ b, "exch": lambda o, b, c: b, "cas": lambda o, b, c: c if o == b else o,
        "min": lambda o, b, c: o if val(o) <= val(b) else b, "max": lambda o, b, c: o if val(o) >= val(b) else b,
        "inc": lambda o, b, c: 0 if o >= b else o + 1, "dec": lambda o, b, c: b if o == 0 or o > b else o - 1,
    }[op]


def _any_nan(want, t: str):
    return R.AnyNaN(t) if isinstance(want, int) and math.isnan(R.value(want, t)) else want


ATOMS = [("add", t) for t in ("u32", "s32", "u64", "f32", "f64", "f16", "bf16", "f16x2", "bf16x2")]
ATOMS += [(op, t) for op in ("min", "max") for t in ("u32", "s32", "u64", "s64")]
ATOMS += [(op, t) for op in ("and", "or", "xor", "exch") for t in ("b32", "b64")]
ATOMS += [("inc", "u32"), ("dec", "u32"), ("cas", "b32"), ("cas", "b64"), ("cas", "b16")]
ATOM_REG = {"f16": "b16", "bf16": "b16", "b16": "b16", "f16x2": "b32", "bf16x2": "b32"}


def _atomic_lanes(op: str, t: str) -> list[tuple[int, ...]]:
    reg = ATOM_REG.get(t, f"b{t[1:]}")
    width = int(reg[1:])
    if t in ("f32", "f64", "f16", "bf16"):
        vals = [x for x in float_edges(t) if not math.isnan(R.value(x, t))]
    elif t in ("f16x2", "bf16x2"):
        half = [x for x in float_edges(t[:-2]) if not math.isnan(R.value(x, t[:-2]))]
        vals = [a | b << 16 for a, b in zip(half, half[3:] + half[:3], strict=True)]
    else:
        vals = int_edges(width)
    pairs = [(a, b) for a, b in itertools.product(vals, vals)][:400]
    if op == "cas":  # half of them compare equal
        return [(a, a if k % 2 else b, c) for k, ((a, b), c) in enumerate(zip(pairs, itertools.cycle(vals)))]
    return pairs


def atomics() -> list[Case]:
    """atom (returning the old value) and red on each lane's own word, in global and shared memory; the word
    read back after the operation."""
    cases = []
    for (op, t), space, kind in itertools.product(ATOMS, ("global", "shared"), ("atom", "red")):
        if kind == "red" and op in ("cas", "exch"):
            continue
        reg = ATOM_REG.get(t, f"b{t[1:]}")
        width = int(reg[1:])
        nofz = ".noftz" if t in ("f16", "bf16", "f16x2", "bf16x2") else ""
        mnem = f"{kind}.{space}.{op}{nofz}.{t}"
        c = ", %i2" if op == "cas" else ""
        if space == "global":
            at, setup = "%ga0", f"st.global.b{width} [%ga0], %i0;"
        else:
            at, setup = "%a0", f"mov.u32 %t0, %tid.x;\nmov.u64 %a0, sm;\nmul.wide.u32 %a1, %t0, 8;\n" \
                               f"add.u64 %a0, %a0, %a1;\nst.shared.b{width} [%a0], %i0;"
        body = f"{setup}\n" + (f"{mnem} %o0, [{at}], %i1{c};" if kind == "atom" else f"{mnem} [{at}], %i1;")
        body += f"\nld.{space}.b{width} %o{1 if kind == 'atom' else 0}, [{at}];"
        fn = _atomic_fn(op, t)

        def ref(o: int, b: int, c: int = 0, fn=fn, returns=kind == "atom"):
            new = fn(o, b, c)
            return (o, new) if returns else new
        ins = (reg,) * (3 if op == "cas" else 2)
        outs = (reg, reg) if kind == "atom" else (reg,)
        cases.append(Case(mnem, kind, body, ins, outs, _atomic_lanes(op, t), ref,
                          decls=".shared .align 8 .b8 sm[1024];\n.reg .b32 %t0;\n.reg .b64 %a<2>;"))
    for mnem in ("atom.relaxed.gpu.global.add.u32", "atom.acq_rel.sys.global.add.u32", "atom.add.u32",
                 "red.release.gpu.global.add.u32", "red.add.u32"):
        kind = mnem.split(".")[0]
        access = f"{mnem} %o0, [%ga0], %i1;\nld.global.b32 %o1, [%ga0];" if kind == "atom" else \
            f"{mnem} [%ga0], %i1;\nld.global.b32 %o0, [%ga0];"
        body = "st.global.b32 [%ga0], %i0;\n" + access
        cases.append(Case(mnem, kind, body, ("b32", "b32"), ("b32",) * (2 if kind == "atom" else 1),
                          _atomic_lanes("add", "u32")[:64],
                          lambda o, b, a=kind == "atom": (o, R.wrap(o + b, 32)) if a else R.wrap(o + b, 32)))
    return cases


def cases() -> list[Case]:
    return loads() + stores() + spaces() + moves() + atomics() + ptx_cases_async.cases()
