"""C for the VALU instructions with shapes of their own, outside the table-driven ALU expression (emit_valu.py):
compares and carries writing lane masks, 64-bit multiply-adds with a carry out, the mask select v_cndmask, packed
math on two halves, and v_movrel's M0-indexed VGPRs."""

from __future__ import annotations

import re

import numpy as np

from usergpu.emu.amd.exec import valu
from usergpu.emu.amd.exec.helpers import DTYPES
from usergpu.emu.amd.exec.native.cexpr import Translator, Untranslatable, ctype, short
from usergpu.emu.amd.exec.native.emit_operands import Operands
from usergpu.emu.amd.exec.operands import Operand, high_half
from usergpu.emu.amd.exec.waves import EXEC, width


class VectorShapes(Operands):
    """C for the VALU instructions that are not one lane's expression stored to one destination."""

    def compare(self, cmpx: bool, cond: str, typ: str, ops: list[Operand]) -> str | None:
        typ = {"b": "u"}.get(typ[0], typ[0]) + typ[1:]
        expr = valu.CMP.get(cond)
        if expr is None:
            return None
        both = cmpx and len(ops) == 3  # gfx9's v_cmpx: to EXEC and to the named SGPRs (valu._compare)
        dst = ops[0] if both or not cmpx else None
        a_op, b_op = (ops if cmpx and not both else ops[1:])[:2]
        types = (typ, "u32") if cond == "class" else (typ, typ)
        code, _ = Translator({"a": types[0], "b": types[1]}, {})(expr)
        body = (f"const {ctype(DTYPES[types[0]])} a = {self.read(a_op, types[0])}; "
                f"const {ctype(DTYPES[types[1]])} b = {self.read(b_op, types[1])}; (void)a; (void)b; "
                f"bits |= (uint64_t)(({code}) && ON) << lane;")
        stores = ([self.set_mask(dst.index, "bits")] if dst is not None else []) + (
            [self.set_mask(EXEC, "bits")] if cmpx else [])
        return f"{{ uint64_t bits = 0; {self.lanes(body)} {' '.join(stores)} }}"

    def carry(self, ops: list[Operand], expr: str) -> str:
        dst, sdst, a_op, b_op = ops[:4]
        cin = ops[4] if len(ops) > 4 else None
        code, _ = Translator({"a": "i64", "b": "i64", "c": "i64"}, {})(expr)
        pre = f"uint64_t bits = 0; const uint64_t cin = {self.lane_mask(cin.index) if cin else '0'}; (void)cin;"
        body = (f"const int64_t a = (int64_t){self.read(a_op, 'u32')}, b = (int64_t){self.read(b_op, 'u32')}, "
                f"c = (int64_t)(cin >> lane & 1); (void)c; const int64_t r = {code}; "
                f"bits |= (uint64_t)(((r >> 32) != 0) && ON) << lane; {self.write(dst, 'u32', '(uint32_t)r')}")
        return f"{{ {pre} {self.lanes(body)} {self.set_mask(sdst.index, 'bits')} }}"

    def mad64(self, base: str, ops: list[Operand]) -> str:
        dst, sdst, *srcs = ops
        dtyp, types, _ = valu.TYPED[base]
        types = types.split()
        t = ctype(DTYPES[dtyp])
        reads = " ".join(f"const {ctype(DTYPES[ty])} {n} = {self.read(o, ty)};"
                         for n, o, ty in zip("abc", srcs, types, strict=True))
        over = "total < product" if dtyp == "u64" else "((product ^ total) & (c ^ total)) < 0"
        body = (f"{reads} const {t} product = ({t})(({t})a * ({t})b); const {t} total = ({t})(product + ({t})c); "
                f"bits |= (uint64_t)(({over}) && ON) << lane; {self.write(dst, dtyp, 'total')}")
        return f"{{ uint64_t bits = 0; {self.lanes(body)} {self.set_mask(sdst.index, 'bits')} }}"

    def cndmask(self, ops: list[Operand], typ: str, tag: str) -> tuple[str, str, str]:
        a_op, b_op, m_op = ops[1:4]

        def bits(op: Operand) -> str:
            if op.neg or op.abs:
                f = "f" + typ[1:]
                return f"BITCAST({ctype(DTYPES[typ])}, {ctype(DTYPES[f])}, {self.read(op, f)})"
            return self.read(op, typ)
        pre = f"const uint64_t cm{tag} = {self.lane_mask(m_op.index)};"
        body = f"const {ctype(DTYPES[typ])} r{tag} = (cm{tag} >> lane & 1) ? ({bits(b_op)}) : ({bits(a_op)});"
        return pre, body, self.write(ops[0], typ, f"r{tag}")

    def packed(self, core: str, ops: list[Operand], mods: dict) -> str | None:
        """v_pk_*: the expression on the low halves and on the high halves (valu._packed): op_sel / op_sel_hi pick
        each source's half, neg_lo / neg_hi negate float sources; a constant supplies the halves of its dword."""
        sig = valu.signature("v_" + core[3:])
        if sig is None:
            return None
        dtyp, types, expr = sig
        dst, srcs = ops[0], ops[1:]
        n = len(srcs)
        types = valu._types(srcs, types)

        def flags(key: str, default: str) -> list[int]:
            return [int(x) for x in mods.get(key, "[" + ",".join(default * n) + "]").strip("[]").split(",")]
        sel, hi = flags("op_sel", "0"), flags("op_sel_hi", "1")
        neg_lo, neg_hi = flags("neg_lo", "0"), flags("neg_hi", "0")
        uses_d = bool(re.search(r"\bd\b", expr))
        t = Translator({**dict(zip("abc", types, strict=False)), **({"d": dtyp} if uses_d else {})},
                       {"W": width(dtyp)})
        code, rtyp = t(expr)
        dt = np.dtype(DTYPES[dtyp])
        wide = dt.itemsize == 4  # gfx940's packed f32: a register pair, op_sel picking the register
        if dt.itemsize not in (2, 4) or core == "pk_mov_b32":
            raise Untranslatable(f"v_{core}: not 16- or 32-bit halves")
        halves = []
        for k, (pick, negs) in enumerate(((sel, neg_lo), (hi, neg_hi))):
            body = []
            for i, (name, op, ty) in enumerate(zip("abc", srcs, types, strict=False)):
                half = (op if wide or not pick[i] else high_half(op, ty)) if op.kind in ("int", "float", "lit") else (
                    Operand(op.kind, op.index + pick[i], 1, 0, False, False, None, op.text) if wide else
                    Operand(op.kind, op.index, 1, 0, False, False, pick[i], op.text))
                value = self.read(half, ty)
                if negs[i] and ty.startswith("f"):
                    value = f"h_neg_{short(DTYPES[ty])}({value})"
                body.append(f"const {ctype(DTYPES[ty])} {name} = {value};")
            if uses_d:
                d = Operand("v", dst.index + k, 1) if wide else Operand("v", dst.index, 1, half=k)
                body.append(f"const {ctype(dt)} d = {self.read(d, dtyp)};")
            bits = 8 * dt.itemsize
            halves.append(f"uint{bits}_t h{k}; {{ {' '.join(body)} h{k} = BITCAST(uint{bits}_t, {ctype(dt)}, "
                          f"{t.convert(code, rtyp, dt)}); }}")
        if wide:  # both results computed before either register is written (a source may be the destination)
            stores = " ".join(self.write(Operand("v", dst.index + k, 1), "u32", f"h{k}") for k in (0, 1))
            return self.lanes(f"{' '.join(halves)} {stores}")
        return self.lanes(f"{' '.join(halves)} {self.write(dst, 'u32', '((uint32_t)h0 | (uint32_t)h1 << 16)')}")

    def movrel(self, core: str, ops: list[Operand]) -> str | None:
        """v_movrels / movreld / movrelsd / movrelsd_2: VGPRs indexed by M0 (valu._movrel); an index past the
        wave's VGPRs goes to the reference."""
        dst, src = ops
        t = Translator({"m0": "i64"}, {})
        s_off, d_off = (t.convert(*t(e), np.dtype(np.int64)) if e != "0" else "0"
                        for e in valu.MOVREL[core.rsplit("_", 1)[0]])
        value = "VR(si_)[lane]" if src.kind == "v" else self.read(src, "u32")
        check = f"(di_ < 0 || di_ >= st->vgprs{' || si_ < 0 || si_ >= st->vgprs' if src.kind == 'v' else ''})"
        return (f"{{ const int64_t m0 = (int64_t)SR(125); const int64_t si_ = {src.index} + {s_off}, di_ = "
                f"{dst.index} + {d_off}; (void)si_; if {check} {{ steps--; pc = PC_HERE; goto fallback; }} "
                + self.lanes(f"{{ uint32_t n_ = {value}; VR(di_)[lane] = ON ? n_ : VR(di_)[lane]; }}") + " }")
