"""Vector (and scalar) ALU instructions: the semantics table's expressions compiled to closures over a group of
waves; compares, carries, lane selects, cross-lane reads, DPP and dual issue (VOPD) around them."""

from __future__ import annotations

import re

import numpy as np

from usergpu.emu.amd.exec import dpp, fp, mfma, sdwa, wmma
from usergpu.emu.amd.exec.helpers import DTYPES, NAMESPACE, halves, to_bf16, unpack
from usergpu.emu.amd.exec.operands import Operand, high_half
from usergpu.emu.amd.exec.semantics import ALU, CMP, MOVREL, SCC, TYPED
from usergpu.emu.amd.exec.waves import VCC, width

SUFFIX = re.compile(r"(_(e32|e64|dpp|sdwa))+$")
TYPE = re.compile(r"_([fiub])(\d+)$")
# carry-out (and carry-in) integer ops: operands vdst, sdst, src0, src1[, carry-in]
CARRY = {"add_co_u32": "a + b", "sub_co_u32": "a - b", "subrev_co_u32": "b - a",
         "add_co_ci_u32": "a + b + c", "sub_co_ci_u32": "a - b - c", "subrev_co_ci_u32": "b - a - c",
         "addc_co_u32": "a + b + c", "subb_co_u32": "a - b - c", "subbrev_co_u32": "b - a - c"}  # the last: gfx9
SCC_NONZERO = {"and", "or", "xor", "not", "nand", "nor", "xnor", "and_not1", "or_not1", "andn2", "orn2", "lshl",
               "lshr", "ashr", "bfe", "bcnt1", "bcnt0", "abs", "absdiff", "quadmask", "wqm"}
_CODE: dict[str, object] = {}


def evaluate(expr: str, env: dict) -> np.ndarray:
    """An expression of the semantics tables over numpy values (compiled once; NaN, inf and wrapping ignored by the
    np.errstate the executor runs its steps under)."""
    code = _CODE.get(expr)
    if code is None:
        code = _CODE[expr] = compile(expr, "<semantics>", "eval")
    return eval(code, NAMESPACE, env)  # noqa: S307 (expressions of the semantics table)


def signature(name: str) -> tuple[str, list[str], str] | None:
    """(destination type, source types, expression) of an ALU mnemonic, from the semantics tables."""
    base = SUFFIX.sub("", name)
    if base in TYPED:
        spec = TYPED[base]
        return None if spec is None else (spec[0], spec[1].split(), spec[2])
    core = base[2:]
    if core in ALU and TYPE.search(core) is None:
        return None
    m = TYPE.search(core)
    if not m:
        return None
    kind, bits = m.group(1), m.group(2)
    typ = {"b": "u", "u": "u", "i": "i", "f": "f"}[kind] + bits
    op = core[: m.start()]
    if op in ALU:
        return typ, [typ] * 3, ALU[op]
    if core in ALU:
        return "u32", ["u32"] * 3, ALU[core]
    return None


def _types(srcs: list[Operand], types: list[str]) -> list[str]:
    return [types[min(i, len(types) - 1)] for i in range(len(srcs))]


def scalar_alu(ex, name: str, ops: list[Operand], mods: dict, inst):
    """SOP1/SOP2/SOPK arithmetic: one value per wave; SCC as the ISA defines it for the opcode."""
    core = SUFFIX.sub("", name)[2:]
    carry = re.match(r"(add|sub)(c|b)?(_co)?(_ci)?_([iu])32$", core)
    if carry and core not in ("add_nc_u64", "sub_nc_u64"):
        op, with_in, signed = carry.group(1), bool(carry.group(2) or carry.group(4)), carry.group(5) == "i"
        dst, a_op, b_op = ops

        def add_sub(ex, g) -> None:
            w = ex.w
            a = w.read(a_op, "u32", g, False).astype(np.int64)
            b = w.read(b_op, "u32", g, False).astype(np.int64)
            c = w.scc[g].astype(np.int64) if with_in else 0
            r = a + b + c if op == "add" else a - b - c
            if signed:
                sa, sb = (x - ((x >> 31) << 32) for x in (a, b))
                sr = sa + sb if op == "add" else sa - sb
                w.scc[g] = ((sr > 0x7FFFFFFF) | (sr < -0x80000000)).astype(np.uint32)
            else:
                w.scc[g] = ((r >> 32) != 0).astype(np.uint32)
            w.write(dst, "u32", g, (r & 0xFFFFFFFF).astype(np.uint32), None)
        return add_sub
    if name in ("s_movk_i32", "s_cmovk_i32", "s_addk_i32", "s_mulk_i32", "s_addk_co_i32"):
        k = ops[1].value & 0xFFFF
        k = k - 0x10000 if k & 0x8000 else k
        dst = ops[0]
        kind = name.split("_")[1]

        def sopk(ex, g) -> None:
            w = ex.w
            d = w.read(dst, "i32", g, False).astype(np.int64)
            r = {"movk": np.full(d.shape, k), "cmovk": np.where(w.scc[g] != 0, k, d), "addk": d + k,
                 "mulk": d * k}[kind]
            if kind == "addk":
                w.scc[g] = ((r > 0x7FFFFFFF) | (r < -0x80000000)).astype(np.uint32)
            w.write(dst, "u32", g, (r & 0xFFFFFFFF).astype(np.uint32), None)
        return sopk
    sig = signature(name)
    if sig is None:
        return None
    dtyp, types, expr = sig
    dst, (srcs, k_op) = ops[0], _literal_k(core, ops[1:])
    types = _types(srcs, types)
    nonzero = any(core == op or core.startswith(op + "_") for op in SCC_NONZERO)
    scc_rule = SCC.get(TYPE.sub("", core))
    W = width(dtyp)

    def salu(ex, g) -> None:
        w = ex.w
        env = {n: w.read(o, t, g, False) for n, o, t in zip("abc", srcs, types, strict=False)}
        env["W"], env["scc"] = W, w.scc[g] != 0
        env["d"] = w.read(dst, dtyp, g, False)
        if k_op is not None:
            env["k"] = w.read(k_op, dtyp, g, False)
        r = np.asarray(evaluate(expr, env)).astype(DTYPES[dtyp])
        r = np.broadcast_to(r, w.scc[g].shape)
        if scc_rule is not None:
            w.scc[g] = np.broadcast_to(evaluate(scc_rule, env), r.shape).astype(np.uint32)
        elif nonzero:
            w.scc[g] = (r != 0).astype(np.uint32)
        w.write(dst, dtyp, g, r, None)
    return salu


def _literal_k(core: str, srcs: list[Operand]) -> tuple[list[Operand], Operand | None]:
    """fmamk d, a, K, b / fmaak d, a, b, K: the sources without the literal K, which the expression calls k."""
    if not core.startswith(("fmamk", "fmaak", "madmk", "madak")):
        return srcs, None
    k = [o for o in srcs if o.kind == "lit"][-1]
    return [o for o in srcs if o is not k], k


def step(ex, name: str, ops: list[Operand], mods: dict, inst):
    if not name.startswith("v_"):
        return None
    if "::" in name:
        return _vopd(ex, name, ops, mods, inst)
    base = SUFFIX.sub("", name)
    core = base[2:]
    perm = dpp.permute(mods, ex.w.lanes) if "dpp8" in mods or any(k in mods for k in dpp.CONTROLS) else None
    m = re.match(r"^(cmpx?)_(\w+?)_([fiub]\d+)$", core)
    if m:
        return _compare(m.group(1) == "cmpx", m.group(2), m.group(3), ops, perm, mods)
    if sdwa.used(mods):  # sub-dword operands (gfx9): the plain ALU operations, and carries and lane selects into
        if core in CARRY:
            return _carry(ops, CARRY[core], perm, mods)
        if core == "cndmask_b32":
            return _writer(ops[0], "u32", sdwa.merge(_cndmask_value(ops, "u32", perm, mods), ops[0], "u32", mods))
        sig = signature(name)
        if sig is None or width(sig[0]) > 32:
            return None
        return _writer(ops[0], "u32", sdwa.merge(_alu_value(sig, ops, mods, perm, core), ops[0], sig[0], mods))
    if core.startswith(("mfma_", "smfmac_")):
        return mfma.step(ex, core, ops, mods)
    if core in ACCVGPR_MOVES:  # gfx90a+: moves between the ArchVGPRs and the AccVGPRs of the one file
        return _alu(("u32", ["u32"], "a"), ops, mods, perm, core)
    if core in ("readfirstlane_b32", "readlane_b32"):
        return _readlane(ops, core == "readfirstlane_b32")
    if core == "writelane_b32":
        return _writelane(ops)
    if core == "permlane64_b32":
        return _permlane64(ops)
    if core in ("permlane16_b32", "permlanex16_b32", "permlane16_var_b32", "permlanex16_var_b32"):
        return _permlane(ops, core.startswith("permlanex"), core.endswith("var_b32"))
    if core.rsplit("_", 1)[0] in MOVREL:
        return _movrel(ops, core)
    if core == "cndmask_b32" or core == "cndmask_b16":
        typ = "u32" if core.endswith("32") else "u16"
        return _writer(ops[0], typ, _cndmask_value(ops, typ, perm))
    if core in FP8_CVT:
        return _alu(_fp8_convert(core, mods), ops, mods, perm, core)
    if core.startswith("pk_"):
        return _packed(core, ops, mods)
    if core in DOT:
        return _dot(core, ops, mods, perm)
    if core in ("swap_b32", "swap_b16"):
        return _swap(ops, "u32" if core.endswith("32") else "u16")
    if core.startswith("fma_mix"):
        return _fma_mix(core, ops, mods)
    if core.startswith("wmma_"):
        return wmma.step(ex, core, ops, mods)
    if core in CARRY:
        return _carry(ops, CARRY[core], perm, mods)
    if core.startswith("div_fmas"):
        return _div_fmas(ops, core[-3:])
    if core.startswith(("mad_u64_u32", "mad_i64_i32", "mad_co_u64_u32", "mad_co_i64_i32")) or core.startswith(
            "div_scale"):
        return _with_sdst(ex, base, ops, mods, perm)
    if core.startswith("s_") and any(o.kind == "v" for o in ops[1:]):  # v_s_*: scalar sources only
        return None
    sig = signature(name)
    if sig is None:
        return None
    return _alu(sig, ops, mods, perm, core)


ACCVGPR_MOVES = ("accvgpr_read_b32", "accvgpr_write_b32", "accvgpr_mov_b32")
# dot products: (source element type, elements per dword, accumulator type)
DOT = {"dot2_f32_f16": ("f16", "f32"), "dot2_f32_bf16": ("bf16", "f32"), "dot2acc_f32_f16": ("f16", "f32"),
       "dot2acc_f32_bf16": ("bf16", "f32"), "dot4_i32_iu8": ("i8", "i32"), "dot4_u32_u8": ("u8", "u32"),
       "dot8_u32_u4": ("u4", "u32"), "dot8_i32_iu4": ("i4", "i32"), "dot2_f16_f16": ("f16", "f16"),
       "dot2_bf16_bf16": ("bf16", "bf16"),
       **{f"dot4_f32_{a}_{b}": (f"{a} {b}", "f32") for a in ("fp8", "bf8") for b in ("fp8", "bf8")},
       # gfx9's: the c forms accumulate into the destination
       "dot2c_f32_f16": ("f16", "f32"), "dot2c_f32_bf16": ("bf16", "f32"), "dot4c_i32_i8": ("i8", "i32"),
       "dot2c_i32_i16": ("i16", "i32"), "dot8c_i32_i4": ("i4", "i32"), "dot2_i32_i16": ("i16", "i32"),
       "dot2_u32_u16": ("u16", "u32"), "dot8_i32_i4": ("i4", "i32"), "dot4_i32_i8": ("i8", "i32")}
ACCUMULATES = ("dot2acc", "dot2c", "dot4c", "dot8c")  # the dot products whose addend is the destination


def _dot(core: str, ops: list[Operand], mods: dict, perm=None):
    """v_dot*: sum of the packed elements' products of src0 and src1, plus src2 (dot2acc and gfx9's dot*c: plus the
    destination); the element kind is src0's and src1's, or each's ("fp8 bf8"); DPP reads src0 from another lane."""
    kinds, acc = DOT[core]
    kind = kinds.split()[0]
    dst, srcs = ops[0], ops[1:]
    signed = [int(x) for x in mods.get("neg_lo", "[0,0,0]").strip("[]").split(",")]

    def dot(ex, g) -> None:
        w = ex.w
        a_kind, b_kind = kind, kinds.split()[-1]
        if kind in ("i8", "i4") and core.endswith(("iu8", "iu4")):  # iu: neg_lo says which sources are signed
            a_kind = kind if signed[0] else "u" + kind[1:]
            b_kind = kind if signed[1] else "u" + kind[1:]
        shape = (len(w.pc[g]), w.lanes, 1)
        lanes, a_raw = w.exec_mask(g), w.read(srcs[0], "u32", g)
        if perm is not None:
            a_raw, ok = dpp.apply(perm, a_raw, lanes)
            lanes = lanes & ok & perm["enabled"]
        a = unpack(np.broadcast_to(a_raw[..., None], shape), a_kind)
        b = unpack(np.broadcast_to(w.read(srcs[1], "u32", g)[..., None], shape), b_kind)
        c = w.read(dst if core.startswith(ACCUMULATES) else srcs[2], acc if acc != "bf16" else "u16", g)
        if acc == "bf16":
            c = (c.astype(np.uint32) << np.uint32(16)).view(np.float32)
        total = (a * b).sum(axis=-1) + c.astype(np.float64 if acc[0] in "fb" else np.int64)
        if acc == "bf16":
            w.write(dst, "u16", g, to_bf16(total), lanes)
            return
        if "clamp" in mods and acc[0] in "iu":
            info = np.iinfo(DTYPES[acc])
            total = np.clip(total, info.min, info.max)
        w.write(dst, acc, g, _clamp_omod(total.astype(DTYPES[acc]), acc, mods), lanes)
    return dot


def _packed(core: str, ops: list[Operand], mods: dict):
    """v_pk_*: the operation on the low halves and on the high halves; op_sel picks each source's half for the
    low result, op_sel_hi for the high one; neg_lo/neg_hi negate float sources."""
    sig = ("u32", ["u32"], "a") if core == "pk_mov_b32" else signature("v_" + core[3:])
    if sig is None:
        return None
    dtyp, types, expr = sig
    dst, srcs = ops[0], ops[1:]
    n = len(srcs)
    sel = [int(x) for x in mods.get("op_sel", "[" + ",".join("0" * n) + "]").strip("[]").split(",")]
    hi = [int(x) for x in mods.get("op_sel_hi", "[" + ",".join("1" * n) + "]").strip("[]").split(",")]
    neg_lo = [int(x) for x in mods.get("neg_lo", "[" + ",".join("0" * n) + "]").strip("[]").split(",")]
    neg_hi = [int(x) for x in mods.get("neg_hi", "[" + ",".join("0" * n) + "]").strip("[]").split(",")]
    types = _types(srcs, types)

    wide = width(dtyp) == 32  # gfx940's packed f32: two values in a register pair, op_sel picking the register
    if core == "pk_mov_b32":  # the low result from src0, the high from src1 (each the register op_sel picks)
        expr, types = "a", ["u32"]

    def half(w, op: Operand, typ: str, which: int, negate: int, g) -> np.ndarray:
        if op.kind in ("int", "float", "lit"):  # a constant: the halves of its dword (a register pair: both)
            v = w.read(op if wide or not which else high_half(op, typ), typ, g)
        elif wide:
            v = w.read(Operand(op.kind, op.index + which, 1, 0, False, False, None, op.text), typ, g)
        else:
            v = w.read(Operand(op.kind, op.index, 1, 0, False, False, which, op.text), typ, g)
        return -v if negate and typ.startswith("f") else v

    def packed(ex, g) -> None:
        w = ex.w
        parts = []
        for k, (pick, negs) in enumerate(((sel, neg_lo), (hi, neg_hi))):
            pairs = list(enumerate(zip("abc", srcs, types, strict=False)))
            if core == "pk_mov_b32":  # op_sel[k] picks the register of source k (op_sel_hi unused)
                pairs, pick = [(k, ("a", srcs[k], "u32"))], sel
            env = {name: half(w, o, t, pick[i], negs[i], g) for i, (name, o, t) in pairs}
            env["W"] = width(dtyp)
            if re.search(r"\bd\b", expr):  # v_pk_fmac: the destination's half as the addend
                env["d"] = half(w, dst, dtyp, k, 0, g)
            parts.append(np.broadcast_to(np.asarray(evaluate(expr, halves(env))).astype(DTYPES[dtyp]),
                                         (len(w.pc[g]), w.lanes)))
        if wide:
            for k, part in enumerate(parts):
                w.write(Operand("v", dst.index + k, text=dst.text), dtyp, g, part, w.exec_mask(g))
            return
        lo, hi_part = (p.view(np.uint16).astype(np.uint32) for p in parts)
        w.write(dst, "u32", g, lo | (hi_part << np.uint32(16)), w.exec_mask(g))
    return packed


def _div_fmas(ops: list[Operand], typ: str):
    """v_div_fmas: its scale flag is VCC, which the instruction reads without naming it."""
    dst, *srcs = ops

    def div_fmas(ex, g) -> None:
        w = ex.w
        a, b, c = np.broadcast_arrays(*(w.read(o, typ, g) for o in srcs))
        lanes = w.exec_mask(g)
        w.write(dst, typ, g, np.broadcast_to(fp.div_fmas(a, b, c, w.lanes_of(VCC, g)), lanes.shape), lanes)
    return div_fmas


def _swap(ops: list[Operand], typ: str):
    a_op, b_op = ops

    def swap(ex, g) -> None:
        w = ex.w
        a, b = w.read(a_op, typ, g), w.read(b_op, typ, g)
        lanes = w.exec_mask(g)
        w.write(a_op, typ, g, b, lanes)
        w.write(b_op, typ, g, a, lanes)
    return swap


def _fma_mix(core: str, ops: list[Operand], mods: dict):
    """v_fma_mix_f32 / v_fma_mixlo_f16 / v_fma_mixhi_f16: each source is an f32, or (op_sel_hi set) the f16 in
    its low or (op_sel set) high half; one fused multiply-add in f32, then to f16 into a half for lo/hi."""
    dst, srcs = ops[0], ops[1:4]
    sel = [int(x) for x in mods.get("op_sel", "[0,0,0]").strip("[]").split(",")]
    hi = [int(x) for x in mods.get("op_sel_hi", "[0,0,0]").strip("[]").split(",")]
    out = core.removeprefix("fma_mix")

    def read(w, op: Operand, i: int, g) -> np.ndarray:
        if not hi[i]:
            return w.read(op, "f32", g)
        half = Operand(op.kind, op.index, op.count, op.value, op.neg, op.abs, sel[i], op.text)
        return w.read(half, "f16", g).astype(np.float32)

    def mix(ex, g) -> None:
        w = ex.w
        a, b, c = (np.broadcast_to(read(w, o, i, g), (len(w.pc[g]), w.lanes)) for i, o in enumerate(srcs))
        r = NAMESPACE["fma"](a, b, c)
        if "clamp" in mods:
            r = np.clip(np.nan_to_num(r, nan=0.0), 0, 1).astype(np.float32)
        if out == "_f32":
            w.write(dst, "f32", g, r, w.exec_mask(g))
        else:
            target = Operand("v", dst.index, 1, half=int(out == "hi_f16"), text=dst.text)
            w.write(target, "f16", g, r.astype(np.float16), w.exec_mask(g))
    return mix


def flush(v: np.ndarray) -> np.ndarray:
    """Denormal floats to zero of their sign (other values, and integers, unchanged)."""
    if v.dtype.kind != "f":
        return v
    return np.where(np.abs(v) < np.finfo(v.dtype).tiny, np.copysign(np.zeros_like(v), v), v).astype(v.dtype)


def _clamp_omod(value: np.ndarray, typ: str, mods: dict) -> np.ndarray:
    if typ.startswith("f"):
        if "mul" in mods:
            value = value * value.dtype.type(int(mods["mul"]))
        if "div" in mods:
            value = value / value.dtype.type(int(mods["div"]))
        if "clamp" in mods:
            value = np.clip(np.nan_to_num(value, nan=0.0), 0, 1).astype(value.dtype)
    return value


def _alu(sig, ops: list[Operand], mods: dict, perm, core: str):
    return _writer(ops[0], sig[0], _alu_value(sig, ops, mods, perm, core))


def _writer(dst: Operand, typ: str, value):
    """The step that stores value(ex, g) -> (result, lanes that write) into dst."""

    def write(ex, g) -> None:
        result, lanes = value(ex, g)
        ex.w.write(dst, typ, g, result, lanes)
    return write


def _alu_value(sig, ops: list[Operand], mods: dict, perm, core: str):
    """An ALU operation's result for the destination ops[0], and the lanes that write it."""
    dtyp, types, expr = sig
    dst, (srcs, k_op) = ops[0], _literal_k(core, ops[1:])
    types = _types(srcs, types)
    W = width(dtyp)
    saturate = "clamp" in mods and dtyp[0] in "iu" and W <= 32

    sels = sdwa.source_selects(mods, len(srcs)) if sdwa.used(mods) else None

    def alu(ex, g) -> tuple[np.ndarray, np.ndarray]:
        w = ex.w
        if sels is None:
            env = {n: w.read(o, t, g) for n, o, t in zip("abc", srcs, types, strict=False)}
        else:
            env = {n: sdwa.read(w, o, t, g, sel) for n, o, t, sel in zip("abc", srcs, types, sels, strict=False)}
        if perm is not None:
            env["a"], lanes_ok = dpp.apply(perm, env["a"], w.exec_mask(g))
        if saturate:  # integer clamp: the exact result, saturated to the type's range
            env = {n: v.astype(np.int64) for n, v in env.items()}
        mode = ex.denorm[W] if dtyp[0] == "f" or types[0][0] == "f" else 3
        if mode in (0, 2):  # FLUSH_SRC_DST, FLUSH_SRC: denormal inputs read as zero
            env = {n: flush(v) for n, v in env.items()}
        env["W"], env["L"] = W, w.lanes
        if "d" in expr:
            env["d"] = w.read(dst, dtyp, g)
        if k_op is not None:
            env["k"] = w.read(k_op, dtyp, g)
        r = np.asarray(evaluate(expr, halves(env)))
        if saturate:
            r = np.clip(r, np.iinfo(DTYPES[dtyp]).min, np.iinfo(DTYPES[dtyp]).max)
        r = _clamp_omod(r.astype(DTYPES[dtyp], copy=False), dtyp, mods)
        if mode in (0, 1):  # FLUSH_SRC_DST, FLUSH_DST: denormal results written as zero
            r = flush(r)
        lanes = w.exec_mask(g)
        if perm is not None:
            lanes = lanes & lanes_ok & perm["enabled"]
        return r, lanes
    return alu


def _compare(cmpx: bool, cond: str, typ: str, ops: list[Operand], perm, mods: dict):
    typ = {"b": "u"}.get(typ[0], typ[0]) + typ[1:]
    both = cmpx and len(ops) == 3  # gfx9's v_cmpx writes its lane mask to EXEC and to the named SGPRs
    dst = ops[0] if both or not cmpx else None
    a_op, b_op = (ops if cmpx and not both else ops[1:])[:2]
    expr = CMP.get(cond)
    if expr is None:
        return None
    types = (typ, "u32") if cond == "class" else (typ, typ)
    sels = sdwa.source_selects(mods, 2) if sdwa.used(mods) else [(0, 32)] * 2

    def compare(ex, g) -> None:
        w = ex.w
        a, b = sdwa.read(w, a_op, types[0], g, sels[0]), sdwa.read(w, b_op, types[1], g, sels[1])
        lanes_ok = None
        if perm is not None:
            a, lanes_ok = dpp.apply(perm, a, w.exec_mask(g))
        res = np.broadcast_to(evaluate(expr, {"a": a, "b": b}), (len(w.pc[g]), w.lanes))
        active = w.exec_mask(g)
        if lanes_ok is not None:
            active = active & lanes_ok
        if dst is not None:
            w.set_lanes(dst.index, g, res & active)
        if cmpx:
            w.set_lanes(126, g, res & active)
    return compare


def _cndmask_value(ops: list[Operand], typ: str, perm, mods: dict | None = None):
    """v_cndmask: src1 where the lane mask (src2) is set, else src0; and the lanes that write."""
    a_op, b_op, m_op = ops[1:4]
    sels = sdwa.source_selects(mods, 2) if mods and sdwa.used(mods) else None

    def cndmask(ex, g) -> tuple[np.ndarray, np.ndarray]:
        w = ex.w
        if sels:
            a, b = (sdwa.read(w, o, typ, g, sel) for o, sel in zip((a_op, b_op), sels, strict=True))
        else:
            a, b = _bits(w, a_op, typ, g), _bits(w, b_op, typ, g)
        if perm is not None:
            a, _ = dpp.apply(perm, a, w.exec_mask(g))
        return np.where(w.lanes_of(m_op.index, g), b, a), w.exec_mask(g)
    return cndmask


def _bits(w, op: Operand, typ: str, g) -> np.ndarray:
    """An operand's bits; VOP3's neg and abs act on them as on a float of that width (v_cndmask's sources)."""
    if op.neg or op.abs:
        return w.read(op, "f" + typ[1:], g).view(DTYPES[typ])
    return w.read(op, typ, g)


def _carry(ops: list[Operand], expr: str, perm, mods: dict):
    dst, sdst, a_op, b_op = ops[:4]
    cin = ops[4] if len(ops) > 4 else None
    sels = sdwa.source_selects(mods, 2) if sdwa.used(mods) else [(0, 32)] * 2

    def carry(ex, g) -> None:
        w = ex.w
        a = sdwa.read(w, a_op, "u32", g, sels[0]).astype(np.int64)
        b = sdwa.read(w, b_op, "u32", g, sels[1]).astype(np.int64)
        if perm is not None:
            a, _ = dpp.apply(perm, a, w.exec_mask(g))
        c = w.lanes_of(cin.index, g).astype(np.int64) if cin else 0
        r = np.broadcast_to(evaluate(expr, {"a": a, "b": b, "c": c}), (len(w.pc[g]), w.lanes))
        lanes = w.exec_mask(g)
        w.set_lanes(sdst.index, g, ((r >> 32) != 0) & lanes)
        w.write(dst, "u32", g, sdwa.place(w, g, dst, (r & 0xFFFFFFFF).astype(np.uint32), "u32", mods), lanes)
    return carry


def _with_sdst(ex, base: str, ops: list[Operand], mods: dict, perm):
    """v_mad_u64_u32 / v_mad_i64_i32 (64-bit result, carry out in sdst) and v_div_scale (scale flag in sdst)."""
    dst, sdst, *srcs = ops
    if base.startswith("v_div_scale"):
        typ = base[-3:]

        def div_scale(ex, g) -> None:
            w = ex.w
            s0, den, num = (w.read(o, typ, g) for o in srcs)
            out, flag = fp.div_scale(*np.broadcast_arrays(s0, den, num))
            lanes = w.exec_mask(g)
            w.write(dst, typ, g, np.broadcast_to(out, lanes.shape), lanes)
            w.set_lanes(sdst.index, g, np.broadcast_to(flag, lanes.shape) & lanes)
        return div_scale
    dtyp, types, _ = TYPED[base]  # the 64-bit sum and its carry are worked out here, not by the expression
    types = types.split()

    def mad64(ex, g) -> None:
        w = ex.w
        env = {n: w.read(o, t, g) for n, o, t in zip("abc", srcs, types, strict=True)}
        lanes = w.exec_mask(g)
        product = env["a"].astype(DTYPES[dtyp]) * env["b"].astype(DTYPES[dtyp])  # exact: 32 x 32 bits
        total = product + env["c"].astype(DTYPES[dtyp])
        # the carry out of the 64-bit sum (unsigned), its overflow (signed)
        over = total < product if dtyp == "u64" else ((product ^ total) & (env["c"] ^ total)) < 0
        w.set_lanes(sdst.index, g, np.broadcast_to(over, lanes.shape) & lanes)
        w.write(dst, dtyp, g, np.broadcast_to(total, lanes.shape), lanes)
    return mad64


def _readlane(ops: list[Operand], first: bool):
    dst, src = ops[0], ops[1]
    sel = None if first else ops[2]

    def readlane(ex, g) -> None:
        w = ex.w
        v = w.read(src, "u32", g)
        v = np.broadcast_to(v, (len(w.pc[g]), w.lanes))
        if first:
            bits = w.exec_bits(g)
            lane = np.where(bits == 0, 0, np.log2((bits & (~bits + np.uint64(1))).astype(np.float64))).astype(int)
        else:  # a constant lane is one value for every wave
            lane = np.broadcast_to((w.read(sel, "u32", g, False) % w.lanes).astype(int), (len(v),))
        w.sset(dst.index, 1, g, v[np.arange(len(lane)), lane])
    return readlane


def _writelane(ops: list[Operand]):
    dst, src, sel = ops

    def writelane(ex, g) -> None:
        w = ex.w
        val, lane = np.broadcast_arrays(w.read(src, "u32", g, False),  # a constant is one value for every wave
                                        (w.read(sel, "u32", g, False) % w.lanes).astype(int))
        lanes = np.zeros((len(lane), w.lanes), bool)
        lanes[np.arange(len(lane)), lane] = True
        w.write(dst, "u32", g, np.broadcast_to(val[:, None], lanes.shape), lanes)
    return writelane


def _permlane(ops: list[Operand], cross: bool, var: bool):
    """v_permlane16/x16: each lane reads lane sel(lane) of its own (or, x16, the other) row of 16; the select is
    4 bits per lane, from the 64-bit s1 (lanes 0-7) : s2 (lanes 8-15), or (the _var forms) from each lane's src1."""
    dst, src, s1 = ops[:3]

    def permlane(ex, g) -> None:
        w = ex.w
        shape = (len(w.pc[g]), w.lanes)
        v = np.broadcast_to(w.read(src, "u32", g), shape)
        lane = np.arange(w.lanes)
        if var:
            idx = (np.broadcast_to(w.read(s1, "u32", g), shape) & np.uint32(15)).astype(int)
        else:
            sel = w.read(s1, "u32", g, False).astype(np.uint64) | (
                w.read(ops[3], "u32", g, False).astype(np.uint64) << np.uint64(32))
            idx = ((sel[:, None] >> (4 * (lane % 16)).astype(np.uint64)) & np.uint64(15)).astype(int)
        row = lane // 16
        src_row = (row ^ 1) if cross else row
        out = np.take_along_axis(v, (src_row * 16)[None, :] + idx, axis=1)
        w.write(dst, "u32", g, out, w.exec_mask(g))
    return permlane


def _permlane64(ops: list[Operand]):
    """v_permlane64: each lane reads the same lane of the other half of a wave64 (wave32: itself)."""
    dst, src = ops

    def permlane64(ex, g) -> None:
        w = ex.w
        v = np.broadcast_to(w.read(src, "u32", g), (len(w.pc[g]), w.lanes))
        w.write(dst, "u32", g, np.roll(v, w.lanes // 2, axis=1) if w.lanes == 64 else v, w.exec_mask(g))
    return permlane64


def movrel_offsets(core: str, w, g) -> tuple[np.ndarray, np.ndarray]:
    """The (source, destination) register offsets of a v_/s_movrel* instruction, per wave, from M0."""
    m0 = w.sget(125, 1, g).astype(np.int64)
    src, dst = MOVREL[core.rsplit("_", 1)[0]]
    return tuple(np.broadcast_to(np.asarray(evaluate(e, {"m0": m0})), m0.shape) for e in (src, dst))


def _movrel(ops: list[Operand], core: str):
    """v_movrels (read v[src + M0]), v_movreld (write v[dst + M0]), v_movrelsd (both), v_movrelsd_2 (read
    v[src + M0[9:0]], write v[dst + M0[25:16]])."""
    dst, src = ops

    def movrel(ex, g) -> None:
        w = ex.w
        s_off, d_off = movrel_offsets(core, w, g)
        waves = np.arange(w.n)[g]
        lanes = w.exec_mask(g)
        val = w.v[src.index + s_off, waves] if src.kind == "v" else np.broadcast_to(w.read(src, "u32", g),
                                                                                   lanes.shape)
        target = dst.index + d_off
        w.v[target, waves] = np.where(lanes, val, w.v[target, waves])
    return movrel


FP8_CVT = {f"{op}_{k}" if op.endswith("f32") else f"{op}_{k}_f32"
           for op in ("cvt_f32", "cvt_pk_f32", "cvt_pk", "cvt_sr") for k in ("fp8", "bf8")}


def _fp8_convert(core: str, mods: dict) -> tuple[str, list[str], str]:
    """gfx12's fp8 / bf8 conversions as an ALU signature: byte_sel picks the byte, op_sel the word (the source's
    for cvt_pk_f32, the destination's for cvt_pk_fp8); a conversion to 8 bits keeps the destination's other bits."""
    to_f32 = core.startswith(("cvt_f32_", "cvt_pk_f32_"))
    kind = core[-3:] if to_f32 else core.split("_")[-2]
    byte = int(mods.get("byte_sel", "0"))
    word = int(mods.get("op_sel", "[0]").strip("[]").split(",")[0 if to_f32 else -1])
    if core.startswith("cvt_f32_"):
        return "f32", ["u32"], f"fp8_to_f32(a >> {8 * byte}, '{kind}')"
    if to_f32:  # two values into a VGPR pair
        lo, hi = (f"fp8_to_f32(a >> {16 * word + 8 * i}, '{kind}').view(u32).astype(u64)" for i in (0, 1))
        return "u64", ["u32"], f"{lo} | ({hi} << 32)"
    if core.startswith("cvt_pk_"):
        keep = 0xFFFFFFFF ^ (0xFFFF << 16 * word)
        return "u32", ["f32", "f32"], (f"(d & {keep:#x}) | ((f32_to_fp8(a, '{kind}') | (f32_to_fp8(b, '{kind}') << 8))"
                                       f" << {16 * word})")
    keep = 0xFFFFFFFF ^ (0xFF << 8 * byte)  # cvt_sr: rounded stochastically by src1's random bits
    return "u32", ["f32", "u32"], f"(d & {keep:#x}) | (f32_to_fp8(a, '{kind}', b) << {8 * byte})"


def _vopd(ex, name: str, ops: list[Operand], mods: dict, inst):
    """Dual issue: both halves read their sources before either writes."""
    sep = next(i for i, o in enumerate(ops) if o.kind == "sep")
    halves = []
    for part, mnemonic in zip((ops[:sep], ops[sep + 1 :]), name.split("::"), strict=True):
        real = "v_" + mnemonic[len("v_dual_") :]
        if real == "v_cndmask_b32":  # its lane mask is VCC, not written
            halves.append((part[0], "u32", _cndmask_value([*part, Operand("s", 106, text="vcc_lo")], "u32", None)))
            continue
        sig = signature(real)
        if sig is None:
            return None
        halves.append((part[0], sig[0], _alu_value(sig, part, {}, None, real[2:])))

    def dual(ex, g) -> None:
        results = [(dst, typ, *value(ex, g)) for dst, typ, value in halves]
        for dst, typ, result, lanes in results:
            ex.w.write(dst, typ, g, result, lanes)
    return dual
