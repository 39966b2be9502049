"""C for the vector ALU: which form an instruction takes (emit_valu_shapes.py has the special shapes), and the
table's expression per lane with the operand modifiers around it: DPP's source lanes, SDWA's sub-dword selects,
integer clamping, output modifiers and denormal flushing; VOPD's two halves in one lane loop."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np

from usergpu.emu.amd.exec import dpp, sdwa, valu
from usergpu.emu.amd.exec.dpp import CONTROLS
from usergpu.emu.amd.exec.helpers import DTYPES
from usergpu.emu.amd.exec.native.cexpr import Translator, ctype, short
from usergpu.emu.amd.exec.native.emit_valu_shapes import VectorShapes
from usergpu.emu.amd.exec.operands import Operand
from usergpu.emu.amd.exec.waves import VCC, width


class VectorALU(VectorShapes):
    """C for the VALU instructions (vector() picks the form; vopd() the dual-issue pairs)."""

    def vector(self, name: str, ops: list[Operand], mods: dict) -> str | None:
        core = valu.SUFFIX.sub("", name)[2:]
        if sdwa.used(mods):  # gfx9's sub-dword operands: the plain ALU operations (valu.step's first case)
            sig = valu.signature(name)
            if sig is None or width(sig[0]) > 32 or core.startswith(("cmp", "cndmask")) or core in valu.CARRY:
                return None
            pre, body, store = self.alu(sig, ops, mods, core, "", sdwa_mods=mods)
            return self.lanes(body + store, pre)
        if "dpp8" in mods or any(k in mods for k in CONTROLS):  # src0 from another lane: plain ALU ops only
            sig = valu.signature(name)
            if sig is None or core.startswith(("cmp", "cndmask", "s_", "pk_")) or core in valu.CARRY:
                return None
            pre, body, store = self.alu(sig, ops, mods, core, "", dpp.permute(mods, self.L))
            return self.lanes(body + store, pre)
        m = re.match(r"^(cmpx?)_(\w+?)_([fiub]\d+)$", core)
        if m:
            return self.compare(m.group(1) == "cmpx", m.group(2), m.group(3), ops)
        if core in ("readfirstlane_b32", "readlane_b32"):
            src = ops[1]
            lane = ("(EXECM ? __builtin_ctzll(EXECM) : 0)" if core == "readfirstlane_b32" else
                    f"(int)({self.read(ops[2], 'u32', False)} % L)")
            value = (f"VR({src.index})[lane_]" if src.kind == "v" else
                     self.read(src, "u32", False))
            return f"{{ const int lane_ = {lane}; (void)lane_; {self.write(ops[0], 'u32', value, False)} }}"
        if core in ("cndmask_b32", "cndmask_b16"):
            typ = "u32" if core.endswith("32") else "u16"
            pre, body, store = self.cndmask(ops, typ, "")
            return self.lanes(body + store, pre)
        if core in valu.CARRY:
            return self.carry(ops, valu.CARRY[core])
        if core.startswith(("mad_u64_u32", "mad_i64_i32", "mad_co_u64_u32", "mad_co_i64_i32")):
            return self.mad64(valu.SUFFIX.sub("", name), ops)
        if core.startswith("pk_"):
            return self.packed(core, ops, mods)
        if core.rsplit("_", 1)[0] in valu.MOVREL:
            return self.movrel(core, ops)
        if core.startswith(("dot", "fma_mix", "wmma_", "div_fmas", "div_scale", "swap_", "permlane",
                            "writelane", "movrel")) or core in valu.FP8_CVT or core.rsplit("_", 1)[0] in valu.MOVREL:
            return None
        sig = ("u32", ["u32"], "a") if core in valu.ACCVGPR_MOVES else valu.signature(name)
        if sig is None or core.startswith("s_") and any(o.kind == "v" for o in ops[1:]):
            return None
        pre, body, store = self.alu(sig, ops, mods, core, "")
        if core.startswith("s_"):  # v_s_*: scalar sources and destination, one value per wave
            return f"{{ const uint64_t em = ~0ull; const int lane = 0; {pre} {body} {store} }}"
        return self.lanes(body + store, pre)

    def vopd(self, name: str, ops: list[Operand]) -> str | None:
        sep = next(i for i, o in enumerate(ops) if o.kind == "sep")
        pres, bodies, stores = [], [], []
        for tag, (part, mnemonic) in zip("xy", zip((ops[:sep], ops[sep + 1 :]), name.split("::"), strict=True),
                                         strict=True):
            real = "v_" + mnemonic[len("v_dual_") :]
            if real == "v_cndmask_b32":
                parts = self.cndmask([*part, Operand("s", VCC, text="vcc_lo")], "u32", tag)
            else:
                sig = valu.signature(real)
                if sig is None:
                    return None
                parts = self.alu(sig, part, {}, real[2:], tag)
            pres.append(parts[0])
            bodies.append(parts[1])
            stores.append(parts[2])
        return self.lanes(" ".join(bodies) + " " + " ".join(stores), " ".join(pres))

    def alu(self, sig, ops: list[Operand], mods: dict, core: str, tag: str, perm: dict | None = None,
            sdwa_mods: dict | None = None) -> tuple[str, str, str]:
        """(before the lane loop, the lane's result r<tag>, its store) for an ALU instruction (valu._alu_value);
        perm: DPP's source lanes for src0 (dpp.permute), read for every lane before any lane writes; sdwa_mods:
        SDWA's selects of the sources and the destination (sdwa.py)."""
        dtyp, types, expr = sig
        dst, (srcs, k_op) = ops[0], valu._literal_k(core, ops[1:])
        types = valu._types(srcs, types)
        W = width(dtyp)
        saturate = "clamp" in mods and dtyp[0] in "iu" and W <= 32
        floaty = dtyp[0] == "f" or types[0][0] == "f"
        env = {n: ("i64" if saturate else t) for n, t in zip("abc", types, strict=False)}
        uses = set(re.findall(r"\b[dk]\b", expr))
        if "d" in uses:
            env["d"] = dtyp
        if k_op is not None:
            env["k"] = dtyp
        t = Translator(env, {"W": W, "L": self.L})
        code, rtyp = t(expr)
        dt = np.dtype(DTYPES[dtyp])
        pre = (f"const int dm{tag} = {'DN32' if W == 32 else 'DN16'}; const int fin{tag} = dm{tag} == 0 || "
               f"dm{tag} == 2, fout{tag} = dm{tag} == 0 || dm{tag} == 1; (void)fin{tag}; (void)fout{tag};"
               if floaty else "")
        body = []
        cond = "ON"
        if perm is not None:
            t0 = ctype(DTYPES[types[0]])
            lanes = ", ".join(str(int(x)) for x in perm["src"])
            enabled = ", ".join(str(int(x)) for x in perm["enabled"])
            fetch = self.read(srcs[0], types[0]).replace("[lane]", "[sl_ < 0 ? 0 : sl_]")
            ok = "sl_ >= 0" + ("" if perm["fi"] else " && (em >> sl_ & 1)")
            value = f"ok_ ? {fetch} : ({t0})0" if perm["bound_ctrl"] else fetch
            pre += (f" static const signed char src_[L] = {{{lanes}}}; static const _Bool on_[L] = {{{enabled}}};"
                    f" {t0} dpp_[L]; _Bool ok_dpp[L]; for (int lane = 0; lane < L; lane++) {{ const int sl_ = "
                    f"src_[lane]; const _Bool ok_ = {ok}; dpp_[lane] = {value}; "
                    f"ok_dpp[lane] = {'1' if perm['bound_ctrl'] else 'ok_'} && on_[lane]; }}")
            cond = "ON && ok_dpp[lane]"
        sels = sdwa.source_selects(sdwa_mods, len(srcs)) if sdwa_mods else None
        for i, (n, o, ty) in enumerate(zip("abc", srcs, types, strict=False)):
            v = ("dpp_[lane]" if perm is not None and i == 0 else self.select(o, ty, sels[i]) if sels else
                 self.read(o, ty))
            tdt = np.dtype(DTYPES[ty])
            if saturate:
                v = f"(int64_t){v}"
            elif floaty and tdt.kind == "f":
                v = f"(fin{tag} ? h_flush_{short(tdt)}({v}) : {v})"
            body.append(f"const {ctype('int64' if saturate else tdt)} {n} = {v};")
        if "d" in uses:
            body.append(f"const {ctype(dt)} d = {self.read(dst, dtyp)};")
        if k_op is not None:
            body.append(f"const {ctype(dt)} k = {self.read(k_op, dtyp)};")
        r = f"r{tag}"
        if saturate:
            info = np.iinfo(dt)
            body.append(f"int64_t s_ = (int64_t)({code}); s_ = s_ < {info.min}LL ? {info.min}LL : s_ > {info.max}LL ? "
                        f"{info.max}LL : s_; {r} = ({ctype(dt)})s_;")
        else:
            body.append(f"{r} = {t.convert(code, rtyp, dt)};")
        if dt.kind == "f":
            if "mul" in mods:
                body.append(f"{r} = ({ctype(dt)})({r} * ({ctype(dt)}){int(mods['mul'])});")
            if "div" in mods:
                body.append(f"{r} = ({ctype(dt)})({r} / ({ctype(dt)}){int(mods['div'])});")
            if "clamp" in mods:
                body.append(f"{r} = {r} != {r} ? ({ctype(dt)})0 : {r} < 0 ? ({ctype(dt)})0 : {r} > 1 ? "
                            f"({ctype(dt)})1 : {r};")
            if floaty:
                body.append(f"if (fout{tag}) {r} = h_flush_{short(dt)}({r});")
        store = self.sdwa_write(dst, dtyp, r, sdwa_mods, cond) if sdwa_mods else self.write(dst, dtyp, r, cond=cond)
        return pre, f"{ctype(dt)} {r}; {{ " + " ".join(body) + " }", store

    def select(self, op: Operand, typ: str, sel: tuple[int, int]) -> str:
        """C for an SDWA source: its field, zero- or sign-extended, as typ (sdwa.read)."""
        shift, bits = sel
        if (shift, bits) == (0, 32) and not op.sext:
            return self.read(op, typ)
        raw = f"(({self.read(replace(op, neg=False, abs=False, sext=False), 'u32')} >> {shift}) & {(1 << bits) - 1}u)"
        if op.sext and bits < 32:
            raw = f"(uint32_t)((int32_t)({raw} << {32 - bits}) >> {32 - bits})"
        dt = np.dtype(DTYPES[typ])
        size = width(typ)
        val = f"BITCAST({ctype(dt)}, uint{size}_t, (uint{size}_t){raw})"
        if dt.kind == "f":
            val = f"h_abs_{short(dt)}({val})" if op.abs else val
            val = f"h_neg_{short(dt)}({val})" if op.neg else val
        return val

    def sdwa_write(self, dst: Operand, typ: str, value: str, mods: dict, cond: str) -> str:
        """C storing a result into the destination dword dst_sel and dst_unused make (sdwa.place)."""
        shift, bits = sdwa.SELECTS[mods.get("dst_sel", "DWORD")]
        unused = mods.get("dst_unused", "UNUSED_PAD")
        dt, size = np.dtype(DTYPES[typ]), width(typ)
        mask = (1 << bits) - 1
        code = (f"uint32_t f_ = (uint32_t)BITCAST(uint{size}_t, {ctype(dt)}, {value}) & {mask}u; "
                f"uint32_t n_ = f_ << {shift};")
        if unused == "UNUSED_SEXT" and shift + bits < 32:
            code += f" if (f_ >> {bits - 1}) n_ |= {0xFFFFFFFF ^ ((1 << (shift + bits)) - 1)}u;"
        elif unused == "UNUSED_PRESERVE":
            code += f" n_ |= VR({dst.index})[lane] & {0xFFFFFFFF ^ (mask << shift)}u;"
        return f"{{ {code} VR({dst.index})[lane] = ({cond}) ? n_ : VR({dst.index})[lane]; }}"
