"""A kernel as C: every instruction reachable from the entry, decoded once as the reference executor decodes it,
becomes a labelled block of one wave's code (lane loops over its VGPRs, EXEC as a mask); branches are gotos, a
computed jump goes through a switch on the PC. ALU results are the semantics table's expressions translated by
cexpr; an instruction this file has no C for becomes a block that hands the wave to the reference backend for that
one instruction (the same semantics, at its speed), so every kernel runs, and runs the same.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import numpy as np

from usergpu.emu.amd.codeobj.target import version
from usergpu.emu.amd.exec import dpp, memops, sdwa, valu
from usergpu.emu.amd.exec.dpp import CONTROLS
from usergpu.emu.amd.exec.executor import BRANCH, HWREG, NOOPS, SAVEEXEC, SAVEEXEC_OPS, SCMP, _simm16, operands
from usergpu.emu.amd.exec.helpers import DTYPES
from usergpu.emu.amd.exec.native.cexpr import Translator, Untranslatable, ctype, short
from usergpu.emu.amd.exec.operands import Operand, const_bits
from usergpu.emu.amd.exec.semantics import SCC
from usergpu.emu.amd.exec.waves import EXEC, NULL, VCC, width
from usergpu.emu.amd.isa import decode
from usergpu.errors import DecodeError

MAX_INSTRUCTIONS = 50_000  # a kernel larger than this is left to the reference backend past that point
# access codes and reasons a fault reports (the Python side turns them back into text)
ACCESS = ("read", "write", "LDS load", "LDS store", "execute", "scratch load", "scratch store", "LDS atomic")
STOPS = ("s_endpgm", "s_branch", "s_setpc_b64", "s_trap", "s_code_end")
SALU_CARRY = re.compile(r"(add|sub)(c|b)?(_co)?(_ci)?_([iu])32$")


@dataclass
class Kernel:
    """The instructions reachable from the entry: offset from the entry -> decoded instruction (None where the bytes
    do not decode)."""
    arch: str
    lanes: int
    insts: dict[int, object] = field(default_factory=dict)
    acc: int = 0  # the first AccVGPR's VGPR number (gfx90a+)

    def span(self) -> tuple[int, int]:
        """The bytes the instructions lie in, from the entry: [first, end)."""
        return min(self.insts), max(off + (inst.size if inst else 4) for off, inst in self.insts.items())


def discover(code, entry: int, arch: str, lanes: int, acc: int = 0) -> Kernel:
    """Walk the code from entry (an offset into code) along fall-through and branch targets."""
    k = Kernel(arch, lanes, acc=acc)
    todo = [0]
    while todo and len(k.insts) < MAX_INSTRUCTIONS:
        off = todo.pop()
        if off in k.insts or not 0 <= entry + off < len(code):
            continue
        try:
            inst = decode(code, arch, entry + off)
        except DecodeError:
            k.insts[off] = None
            continue
        k.insts[off] = inst
        name = inst.mnemonic.strip()
        if name in BRANCH:
            todo.append(off + 4 + 4 * _simm16(inst.fields.get("simm16", 0)))
        if name not in STOPS:
            todo.append(off + inst.size)
    return k


def label(off: int) -> str:
    return f"L_{off}" if off >= 0 else f"L_m{-off}"


class Emitter:
    """C for the instructions of one kernel (offsets relative to the code mapping's start)."""

    def __init__(self, kernel: Kernel):
        self.k, self.L = kernel, kernel.lanes
        self.consts: list[str] = []  # the float constants of the instruction being translated

    # ---- operands ------------------------------------------------------------------------------------------
    def read(self, op: Operand, typ: str, lane: bool = True) -> str:
        """C for an operand's value as typ (VOP neg/abs applied to floats), per lane or per wave."""
        if typ == "bf16" or typ not in DTYPES:
            raise Untranslatable(typ)
        bits = width(typ)
        if bits == 8:
            raise Untranslatable("an 8-bit operand")
        ubits = 64 if bits == 64 else max(bits, 16)
        if op.kind == "v":
            if not lane:
                raise Untranslatable("a VGPR in a scalar operation")
            i = op.index
            raw = (f"((uint64_t)VR({i})[lane] | (uint64_t)VR({i + 1})[lane] << 32)" if bits == 64 else
                   f"((uint16_t)(VR({i})[lane] >> {16 * (op.half or 0)}))" if bits == 16 else f"VR({i})[lane]")
        elif op.kind == "s":
            i = op.index
            raw = "0" if i == NULL else (f"((uint64_t)SR({i}) | (uint64_t)SR({i + 1}) << 32)" if bits == 64 else
                                         f"((uint16_t)SR({i}))" if bits == 16 else f"SR({i})")
        elif op.kind == "special":
            raw = {"scc": "SCC", "execz": "(EXECM == 0)", "vccz": f"({self.lane_mask(VCC)} == 0)"}[op.value]
        elif op.kind in ("int", "float", "lit", "aperture"):
            raw = f"{const_bits(op, typ)}ULL"
            if typ[0] == "f":
                name = f"k{len(self.consts)}_"  # made opaque once, before the instruction's lane loop
                self.consts.append(f"const uint{ubits}_t {name} = OPAQUE(uint{ubits}_t, {raw});")
                raw = name
        else:
            raise Untranslatable(f"operand {op.text}")
        dt = np.dtype(DTYPES[typ])
        val = f"BITCAST({ctype(dt)}, uint{ubits}_t, (uint{ubits}_t)({raw}))"
        if dt.kind == "f":
            if op.abs:
                val = f"h_abs_{short(dt)}({val})"
            if op.neg:
                val = f"h_neg_{short(dt)}({val})"
        return val

    def lane_mask(self, index: int) -> str:
        """A lane mask in SGPRs (one register per 32 lanes) as a uint64_t."""
        if index == NULL:
            return "0ull"
        pair = f"((uint64_t)SR({index}) | (uint64_t)SR({index + 1}) << 32)"
        return pair if self.L == 64 else f"(uint64_t)SR({index})"

    def set_mask(self, index: int, value: str) -> str:
        if index == NULL:
            return ""
        if self.L == 64:
            return f"SR({index}) = (uint32_t)({value}); SR({index + 1}) = (uint32_t)(({value}) >> 32);"
        return f"SR({index}) = (uint32_t)({value});"

    def write(self, op: Operand, typ: str, value: str, lane: bool = True, cond: str = "ON") -> str:
        """C storing value (a C expression of typ's dtype) into op: per lane where cond holds, or per wave."""
        bits = width(typ)
        dt = np.dtype(DTYPES[typ])
        ubits = bits if bits in (16, 32, 64) else None
        if ubits is None:
            raise Untranslatable(f"a {bits}-bit destination")
        raw = f"BITCAST(uint{ubits}_t, {ctype(dt)}, {value})"
        i = op.index
        if op.kind == "s":
            if i == NULL:
                return f"(void)({value});"
            if bits == 64:
                return f"{{ uint64_t r_ = {raw}; SR({i}) = (uint32_t)r_; SR({i + 1}) = (uint32_t)(r_ >> 32); }}"
            return f"SR({i}) = (uint32_t){raw};"
        if op.kind != "v" or not lane:
            raise Untranslatable(f"destination {op.text}")
        if bits == 64:
            return (f"{{ uint64_t r_ = {raw}; if ({cond}) {{ VR({i})[lane] = (uint32_t)r_; "
                    f"VR({i + 1})[lane] = (uint32_t)(r_ >> 32); }} }}")
        if bits == 16:
            sh = 16 * (op.half or 0)
            return (f"{{ uint32_t o_ = VR({i})[lane]; uint32_t n_ = (o_ & ~(0xFFFFu << {sh})) | "
                    f"((uint32_t){raw} << {sh}); VR({i})[lane] = ({cond}) ? n_ : o_; }}")
        return f"{{ uint32_t n_ = {raw}; VR({i})[lane] = ({cond}) ? n_ : VR({i})[lane]; }}"

    def lanes(self, body: str, pre: str = "") -> str:
        return f"{{ const uint64_t em = EXECM; {pre}\n  for (int lane = 0; lane < L; lane++) {{ {body} }} }}"

    # ---- the kernel ----------------------------------------------------------------------------------------
    def indexed(self) -> set[int]:
        """The VALU instructions between an s_set_gpr_idx_on and its s_set_gpr_idx_off (gfx9's VGPR indexing mode,
        gpr_index.py), which the reference runs: LLVM brackets each indexed move in straight-line code."""
        out, on = set(), False
        for off in sorted(self.k.insts):
            name = self.k.insts[off].mnemonic.strip() if self.k.insts[off] else ""
            on = name == "s_set_gpr_idx_on" or on and name != "s_set_gpr_idx_off"
            if on and name.startswith("v_"):
                out.add(off)
        return out

    def source(self) -> str:
        offs = sorted(self.k.insts)
        blocks = []
        indexed = self.indexed()
        for n, off in enumerate(offs):
            inst = self.k.insts[off]
            code = None
            if inst is not None and off not in indexed:
                self.consts = []
                try:
                    code = self.instruction(inst, off)
                except Untranslatable:
                    code = None
                if code is not None and self.consts:
                    code = "{ " + " ".join(self.consts) + f" {code} }}"
            if code is None:
                blocks.append(f"{label(off)}: pc = {off}; goto fallback;")
                continue
            nxt = off + inst.size
            tail = "" if n + 1 < len(offs) and offs[n + 1] == nxt else f" pc = {nxt}; goto dispatch;"
            code = code.replace("PC_HERE", str(off))
            blocks.append(f"{label(off)}: if (steps >= limit) {{ pc = {off}; goto limit; }} steps++;\n  {code}{tail}")
        cases = " ".join(f"case {off}: goto {label(off)};" for off in offs)
        return (f"#define L {self.L}\n#include \"wave.h\"\nWAVE_BEGIN\n"
                f"dispatch: switch (pc) {{ {cases} default: goto fallback; }}\n" + "\n".join(blocks) + "\nWAVE_END\n")

    def instruction(self, inst, off: int) -> str | None:
        name = inst.mnemonic.strip()
        if NOOPS.match(name):
            return ";"
        if name in HWREG:
            return None
        ops, mods = operands(inst, self.k.acc)
        if ops is None:
            return None
        pc = f"((int64_t)CODE_BASE + {off})"
        if name == "s_endpgm":
            return f"DONE[w] = 1; pc = {off + inst.size}; goto out;"
        if name in ("s_barrier", "s_barrier_wait"):
            return f"WAITING[w] = 1; pc = {off + inst.size}; goto out;"
        if name in BRANCH:
            target = off + 4 + 4 * _simm16(ops[0].value)
            cond = {"True": "1", "False": "0", "scc == 0": "SCC == 0", "scc != 0": "SCC != 0",
                    "vcc == 0": f"{self.lane_mask(VCC)} == 0", "vcc != 0": f"{self.lane_mask(VCC)} != 0",
                    "exec == 0": "EXECM == 0", "exec != 0": "EXECM != 0"}[BRANCH[name]]
            jump = f"goto {label(target)};" if target in self.k.insts else f"{{ pc = {target}; goto dispatch; }}"
            return f"if ({cond}) {jump}"
        if name == "s_getpc_b64":
            return f"{{ uint64_t p_ = {pc} + {inst.size}; SR({ops[0].index}) = (uint32_t)p_; " \
                   f"SR({ops[0].index + 1}) = (uint32_t)(p_ >> 32); }}"
        if name in ("s_setpc_b64", "s_swappc_b64"):
            src = ops[-1]
            back = ""
            if name == "s_swappc_b64":
                back = (f"SR({ops[0].index}) = (uint32_t)({pc} + {inst.size}); "
                        f"SR({ops[0].index + 1}) = (uint32_t)(({pc} + {inst.size}) >> 32); ")
            return (f"{{ int64_t t_ = (int64_t)((uint64_t)SR({src.index}) | (uint64_t)SR({src.index + 1}) << 32); "
                    f"{back}pc = t_ - CODE_BASE; goto dispatch; }}")
        if name in ("s_bitcmp0_b32", "s_bitcmp1_b32", "s_bitcmp0_b64", "s_bitcmp1_b64"):
            bits = int(name[-2:])
            value, bit = self.read(ops[0], f"u{bits}", False), self.read(ops[1], "u32", False)
            return f"SCC = (((uint64_t){value} >> ((uint64_t){bit} & {bits - 1})) & 1) == {name[8]};"
        if name.startswith("s_") and not inst.family.startswith("SMEM"):
            return self.scalar(name, ops, mods)
        if name.startswith("v_") and "::" in name:
            return self.vopd(name, ops)
        if name.startswith("v_"):
            return self.vector(name, ops, mods)
        return self.memory(name, ops, mods, inst)

    # ---- scalar --------------------------------------------------------------------------------------------
    def scalar(self, name: str, ops: list[Operand], mods: dict) -> str | None:
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

    # ---- vector ALU ----------------------------------------------------------------------------------------
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

    def packed(self, core: str, ops: list[Operand], mods: dict) -> str | None:
        """v_pk_*: the expression on the low halves and on the high halves (valu._packed): op_sel / op_sel_hi pick
        each source's half, neg_lo / neg_hi negate float sources; a constant is the same in both halves."""
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
                half = op if op.kind in ("int", "float", "lit") else (
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

    # ---- memory --------------------------------------------------------------------------------------------
    def memory(self, name: str, ops: list[Operand], mods: dict, inst) -> str | None:
        name = memops.canonical(name, version(self.k.arch)[0])
        if inst.family.startswith("SMEM") and re.match(r"^s_load_b\d+$", name):
            return self.smem(ops, mods, int(name.rsplit("_b", 1)[1]) // 32)
        if name in ("ds_swizzle_b32", "ds_bpermute_b32", "ds_permute_b32"):
            return self.cross_lane(name, ops, inst.fields["offset0"] | inst.fields["offset1"] << 8)
        spec = memops.atomic(name)
        if spec is not None:
            return self.atomic(*spec, ops, mods)
        m = memops.LOAD.match(name)
        if not m:
            return None
        seg, kind, two, what = m.groups()
        size = memops.SIZES.get(what)
        if size is None or "format" in what:
            return None
        signed, hi = what in ("i8", "i16", "d16_i8", "d16_hi_i8"), "hi" in what
        if seg == "ds":
            if what.startswith("d16"):
                return None
            return self.ds(kind, size, signed, bool(two), "stride64" in (two or ""), ops, mods)
        if seg not in ("global", "scratch"):
            return None
        if kind == "load":
            dst, addr_op = ops[0], ops[1]
        else:
            addr_op, dst = ops[0], ops[1]
        pointers = self.pointers(seg, addr_op, ops[2] if len(ops) > 2 else None, mods, size, kind)
        if pointers is None:
            return None
        if kind == "store":
            start = 2 if hi and size < 4 else 0
            return (f"{{ const uint64_t em = EXECM; {pointers} for (int lane = 0; lane < L; lane++) if (ptr[lane]) {{ "
                    f"uint32_t d_[{max(size // 4, 1)}]; for (int i = 0; i < {max(size // 4, 1)}; i++) d_[i] = "
                    f"VR({dst.index} + i)[lane]; memcpy(ptr[lane], (uint8_t *)d_ + {start}, {size}); }} }}")
        return (f"{{ const uint64_t em = EXECM; {pointers} "
                f"{self.load_lanes(dst, size, signed, 'ptr[lane]', what.startswith('d16'), hi)} }}")

    def cross_lane(self, name: str, ops: list[Operand], offset: int) -> str:
        """ds_swizzle_b32 (a fixed pattern), ds_bpermute_b32 (read lane addr/4), ds_permute_b32 (write lane addr/4,
        later lanes winning): every lane's source read before any lane writes (memops._lanes)."""
        dst, a_op = ops[0], ops[1]
        src = self.read(ops[2] if len(ops) > 2 else a_op, "u32")
        gather = f"uint32_t in_[L], out_[L] = {{0}}; for (int lane = 0; lane < L; lane++) in_[lane] = {src};"
        if name == "ds_swizzle_b32":
            table = ", ".join(str(int(x)) for x in memops.swizzle_lanes(offset, self.L))
            move = (f"static const signed char from_[L] = {{{table}}}; for (int lane = 0; lane < L; lane++) "
                    f"out_[lane] = (em >> from_[lane] & 1) ? in_[from_[lane]] : 0;")
        else:
            at = f"(int)((((int64_t){self.read(a_op, 'u32')} + {offset}) / 4) % L)"
            move = (f"for (int lane = 0; lane < L; lane++) {{ const int at_ = {at}; out_[lane] = (em >> at_ & 1) ? "
                    f"in_[at_] : 0; }}" if name == "ds_bpermute_b32" else
                    f"for (int lane = 0; lane < L; lane++) if (ON) out_[{at}] = in_[lane];")
        return (f"{{ const uint64_t em = EXECM; {gather} {move} for (int lane = 0; lane < L; lane++) "
                f"VR({dst.index})[lane] = ON ? out_[lane] : VR({dst.index})[lane]; }}")

    def smem(self, ops: list[Operand], mods: dict, dwords: int) -> str | None:
        dst, base = ops[0], ops[1]
        off_op = ops[2] if len(ops) > 2 else None
        imm = int(mods.get("offset", "0"), 0) % (1 << 64)
        offset = f"{imm}ULL"
        if off_op is not None and off_op.kind == "s" and off_op.index != NULL:
            offset += f" + (uint64_t)SR({off_op.index})"
        elif off_op is not None and off_op.kind in ("int", "lit"):
            offset += f" + {off_op.value & 0xFFFFFFFF}ULL"
        elif off_op is not None and not (off_op.kind == "s" and off_op.index == NULL):
            return None
        return (f"{{ const uint64_t at = (((uint64_t)SR({base.index}) | (uint64_t)SR({base.index + 1}) << 32) + "
                f"{offset}) & ~3ull; uint32_t got[{dwords}]; for (int i = 0; i < {dwords}; i++) {{ "
                f"const uint8_t *p = gmem(st, at + 4 * i, 4, 0); if (!p) {{ pc = PC_HERE; goto fault; }} "
                f"memcpy(&got[i], p, 4); }} for (int i = 0; i < {dwords}; i++) SR({dst.index} + i) = got[i]; }}")

    def pointers(self, seg: str, addr_op: Operand, saddr: Operand | None, mods: dict, size: int, kind: str,
                 access: int | None = None) -> str | None:
        """C filling ptr[lane] with each active lane's host address (memops._lane_addresses), every one checked
        before any is used; global: GPU memory, scratch: the lane's private bytes."""
        imm = int(mods.get("offset", "0"), 0) % (1 << 64)
        if addr_op.kind == "v" and (saddr is None or saddr.kind == "off") and seg != "scratch":
            addr = self.read(addr_op, "u64")
        else:
            addr = f"(uint64_t){self.read(addr_op, 'u32')}" if addr_op.kind == "v" else "0ull"
            if saddr is not None and saddr.kind == "s" and saddr.index != NULL:
                addr += f" + (uint64_t){self.read(saddr, 'u32' if seg == 'scratch' else 'u64', False)}"
            elif saddr is not None and saddr.kind not in ("off", "s"):
                return None
        at = f"({addr} + {imm}ULL)"
        if seg == "scratch":
            code = ACCESS.index(f"scratch {kind}")
            find = (f"const uint64_t a_ = {at}; if (a_ + {size} > (uint64_t)st->scratch_size) {{ st->fault_addr = a_; "
                    f"st->fault_access = {code}; st->fault_why = WHY_SCRATCH; pc = PC_HERE; goto fault; }} "
                    f"ptr[lane] = st->scratch + (w * L + lane) * st->scratch_size + a_;")
        else:
            write = int(kind == "store") if access is None else access
            find = (f"ptr[lane] = gmem(st, {at}, {size}, {write}); if (!ptr[lane]) {{ pc = PC_HERE; goto fault; }}")
        return f"uint8_t *ptr[L]; for (int lane = 0; lane < L; lane++) {{ ptr[lane] = 0; if (!ON) continue; {find} }}"

    def load_lanes(self, dst: Operand, size: int, signed: bool, src: str, d16: bool = False, hi: bool = False) -> str:
        """Store each active lane's bytes at src into dst's VGPRs (sub-dword: zero- or sign-extended; d16: into
        the low or high half, the other half kept)."""
        if size >= 4:
            return (f"for (int lane = 0; lane < L; lane++) if (ON) {{ uint32_t d_[{size // 4}]; "
                    f"memcpy(d_, {src}, {size}); for (int i = 0; i < {size // 4}; i++) VR({dst.index} + i)[lane] = "
                    f"d_[i]; }}")
        t = f"{'int' if signed else 'uint'}{8 * size}_t"
        value = "(uint32_t)(int64_t)x_"
        if d16:
            half = "(uint32_t)((uint64_t)(int64_t)x_ & 0xFFFF)"
            value = (f"((VR({dst.index})[lane] & 0xFFFFu) | ({half} << 16))" if hi else
                     f"((VR({dst.index})[lane] & 0xFFFF0000u) | {half})")
        return (f"for (int lane = 0; lane < L; lane++) if (ON) {{ {t} x_; memcpy(&x_, {src}, {size}); "
                f"VR({dst.index})[lane] = {value}; }}")

    def atomic(self, seg: str, expr: str, typ: str, returns: bool, cmpswap: bool, ops: list[Operand],
               mods: dict) -> str | None:
        """A read-modify-write, lane after lane (as the hardware serialises lanes on one address): a the memory's
        value, b and c the data (memops._atomic), the old value returned."""
        if seg not in ("global", "ds") or typ not in memops.ATYPE:
            return None
        dt = np.dtype(memops.ATYPE[typ])
        size, t = dt.itemsize, ctype(dt)
        returns, dst, addr_op, data_op, saddr, data2 = memops.atomic_operands(seg, returns, ops, mods, cmpswap)
        code, rtyp = Translator({"a": dt.name, "b": dt.name, "c": dt.name}, {})(expr)
        words = size // 4
        second = data2 if data2 is not None else Operand("v", data_op.index + words) if cmpswap else None
        if seg == "ds":
            imm = int(mods.get("offset", "0"), 0)
            find = (f"uint8_t *ptr[L]; uint8_t *lds = LDS_OF(w); for (int lane = 0; lane < L; lane++) {{ ptr[lane] = 0;"
                    f" if (!ON) continue; const int64_t a_ = (int64_t){self.read(addr_op, 'u32')} + {imm}; "
                    f"if (a_ < 0 || a_ + {size} > LDS_SIZE) {{ st->fault_addr = (uint64_t)a_; st->fault_access = "
                    f"{ACCESS.index('LDS atomic')}; st->fault_why = WHY_LDS; st->fault_size = {size}; pc = PC_HERE; "
                    f"goto fault; }} ptr[lane] = lds + a_; }}")
        else:
            find = self.pointers(seg, addr_op, saddr, mods, size, "load", access=2)  # read, then written
            if find is None:
                return None
        data = (f"{t} a, b, c = 0; memcpy(&a, ptr[lane], {size}); uint32_t w_[{2 * words}]; for (int i = 0; i < "
                f"{words}; i++) w_[i] = VR({data_op.index} + i)[lane]; memcpy(&b, w_, {size}); (void)c;")
        if second is not None:
            data += (f" for (int i = 0; i < {words}; i++) w_[i] = VR({second.index} + i)[lane]; "
                     f"memcpy(&c, w_, {size});")
        body = (f"for (int lane = 0; lane < L; lane++) if (ON) {{ {data} const {t} r = "
                f"{Translator({}, {}).convert(code, rtyp, dt)}; memcpy(ptr[lane], &r, {size}); old[lane] = a; }}")
        back = ""
        if dst is not None:
            back = (f"for (int lane = 0; lane < L; lane++) if (ON) {{ uint32_t w_[{words}]; memcpy(w_, &old[lane], "
                    f"{size}); for (int i = 0; i < {words}; i++) VR({dst.index} + i)[lane] = w_[i]; }}")
        return f"{{ const uint64_t em = EXECM; {t} old[L]; {find} {body} {back} }}"

    def ds(self, kind: str, size: int, signed: bool, two: bool, stride64: bool, ops: list[Operand],
           mods: dict) -> str | None:
        scale = size * (64 if stride64 else 1)
        offs = [int(mods.get("offset0", "0"), 0) * scale, int(mods.get("offset1", "0"), 0) * scale] if two else [
            int(mods.get("offset", "0"), 0)]
        if kind == "load":
            dst, addr_op = ops[0], ops[1]
        else:
            addr_op, datas = ops[0], ops[1:]
        if addr_op.kind != "v":
            return None
        out = ["{ const uint64_t em = EXECM; uint8_t *lds = LDS_OF(w);"]
        access = 2 if kind == "load" else 3
        for k, off in enumerate(offs):
            out.append(f"for (int lane = 0; lane < L; lane++) if (ON) {{ const int64_t a_ = (int64_t)VR("
                       f"{addr_op.index})[lane] + {off}; if (a_ < 0 || a_ + {size} > LDS_SIZE) {{ "
                       f"st->fault_addr = (uint64_t)a_; st->fault_access = {access}; st->fault_size = {size}; "
                       f"st->fault_why = WHY_LDS; "
                       f"pc = PC_HERE; goto fault; }} }}")
            src = f"(lds + (int64_t)VR({addr_op.index})[lane] + {off})"
            if kind == "load":
                target = Operand("v", dst.index + k * max(size // 4, 1))
                out.append(self.load_lanes(target, size, signed, src))
            else:
                data = datas[k]
                words = max(size // 4, 1)
                out.append(f"for (int lane = 0; lane < L; lane++) if (ON) {{ uint32_t d_[{words}]; "
                           f"for (int i = 0; i < {words}; i++) d_[i] = VR({data.index} + i)[lane]; "
                           f"memcpy({src}, d_, {size}); }}")
        return " ".join(out) + " }"
