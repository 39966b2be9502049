"""C for the scalar ALU: one value per wave, in SGPRs, with SCC; EXEC's save-and-update instructions among them."""

from __future__ import annotations

import re

import numpy as np

from usergpu.emu.amd.exec import valu
from usergpu.emu.amd.exec.executor import SAVEEXEC, SAVEEXEC_OPS, SCMP, _simm16
from usergpu.emu.amd.exec.helpers import DTYPES
from usergpu.emu.amd.exec.native.cexpr import Translator, ctype
from usergpu.emu.amd.exec.native.emit_operands import Operands
from usergpu.emu.amd.exec.operands import Operand
from usergpu.emu.amd.exec.semantics import SCC
from usergpu.emu.amd.exec.waves import EXEC, width

SALU_CARRY = re.compile(r"(add|sub)(c|b)?(_co)?(_ci)?_([iu])32$")


class ScalarALU(Operands):
    """C for the SALU instructions."""

    def scalar(self, name: str, ops: list[Operand], mods: dict) -> str | None:
        """C for a SALU instruction (an s_ mnemonic that is not SMEM): s_bitcmp, the saveexec forms, compares,
        carries and the 16-bit-constant forms by their own rules; the rest the table's expression, SCC as the
        table's rule sets it."""
        if name in ("s_bitcmp0_b32", "s_bitcmp1_b32", "s_bitcmp0_b64", "s_bitcmp1_b64"):
            bits = int(name[-2:])
            value, bit = self.read(ops[0], f"u{bits}", False), self.read(ops[1], "u32", False)
            return f"SCC = (((uint64_t){value} >> ((uint64_t){bit} & {bits - 1})) & 1) == {name[8]};"
        m = SAVEEXEC.match(name)
        if m:
            bits = int(m.group(3))
            dst, src = ops
            t = Translator({"a": f"u{bits}", "e": f"u{bits}"}, {})
            expr, _ = t(SAVEEXEC_OPS[m.group(1)])
            new = "new_" if m.group(2) == "wrexec" else "e"
            typ, exec_ = f"u{bits}", Operand("s", EXEC)
            return (f"{{ const uint{bits}_t e = {self.read(exec_, typ, False)}; "
                    f"const uint{bits}_t a = {self.read(src, typ, False)}; const uint{bits}_t new_ = {expr}; "
                    f"{self.write(dst, typ, new, False)} {self.write(exec_, typ, 'new_', False)} SCC = new_ != 0; }}")
        m = SCMP.match(name)
        if m and m.group(1) in valu.CMP:
            typ = m.group(2)
            expr, _ = Translator({"a": typ, "b": typ}, {})(valu.CMP[m.group(1)])
            a, b = (self.read(o, typ, False) for o in ops)
            return f"{{ const {ctype(DTYPES[typ])} a = {a}, b = {b}; SCC = {expr}; }}"
        core = valu.SUFFIX.sub("", name)[2:]
        carry = SALU_CARRY.match(core)
        if carry and core not in ("add_nc_u64", "sub_nc_u64"):
            op, with_in, signed = carry.group(1), bool(carry.group(2) or carry.group(4)), carry.group(5) == "i"
            dst, a_op, b_op = ops
            sign = "+" if op == "add" else "-"
            c = "(int64_t)SCC" if with_in else "0"
            scc = ("{ int64_t sa = (int32_t)(uint32_t)a, sb = (int32_t)(uint32_t)b, sr = sa " + sign + " sb; "
                   "SCC = sr > 0x7FFFFFFF || sr < -0x80000000LL; }") if signed else "SCC = (r >> 32) != 0;"
            return (f"{{ const int64_t a = {self.read(a_op, 'u32', False)}, b = {self.read(b_op, 'u32', False)}; "
                    f"const int64_t r = a {sign} b {sign} {c}; {scc} "
                    f"{self.write(dst, 'u32', '(uint32_t)r', False)} }}")
        if name in ("s_movk_i32", "s_cmovk_i32", "s_addk_i32", "s_mulk_i32", "s_addk_co_i32"):
            k = _simm16(ops[1].value)
            dst, kind = ops[0], name.split("_")[1]
            r = {"movk": f"{k}", "cmovk": f"(SCC ? {k} : d)", "addk": f"d + {k}", "mulk": f"d * {k}"}[kind]
            scc = "SCC = r > 0x7FFFFFFF || r < -0x80000000LL;" if kind == "addk" else ""
            return (f"{{ const int64_t d = {self.read(dst, 'i32', False)}; const int64_t r = {r}; {scc} "
                    f"{self.write(dst, 'u32', '(uint32_t)r', False)} }}")
        sig = valu.signature(name)
        if sig is None:
            return None
        dtyp, types, expr = sig
        dst, (srcs, k_op) = ops[0], valu._literal_k(core, ops[1:])
        types = valu._types(srcs, types)
        nonzero = any(core == op or core.startswith(op + "_") for op in valu.SCC_NONZERO)
        scc_rule = SCC.get(valu.TYPE.sub("", core))
        names = dict(zip("abc", types, strict=False))
        env = {**names, "d": dtyp, "scc": "bool", **({"k": dtyp} if k_op is not None else {})}
        t = Translator(env, {"W": width(dtyp)})
        code, rtyp = t(expr)
        dt = np.dtype(DTYPES[dtyp])
        decl = " ".join(f"const {ctype(DTYPES[ty])} {n} = {self.read(o, ty, False)};"
                        for n, o, ty in zip("abc", srcs, types, strict=False))
        decl += f" const {ctype(dt)} d = {self.read(dst, dtyp, False)}; const _Bool scc = SCC != 0;"
        if k_op is not None:
            decl += f" const {ctype(dt)} k = {self.read(k_op, dtyp, False)};"
        result = t.convert(code, rtyp, dt)
        scc = ""
        if scc_rule is not None:
            scc = f"SCC = {t.convert(*t(scc_rule), np.dtype(bool))};"
        elif nonzero:
            scc = "SCC = r != 0;"
        return f"{{ {decl} const {ctype(dt)} r = {result}; {scc} {self.write(dst, dtyp, 'r', False)} }}"
