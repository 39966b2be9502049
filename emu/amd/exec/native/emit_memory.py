"""C for the memory instructions: scalar loads, global and scratch loads and stores, LDS loads and stores, atomics
(global and LDS) and the DS cross-lane moves. Every active lane's address is checked before any lane's access; a
bad one leaves the C through its fault label with the access's code (ACCESS) and the reason."""

from __future__ import annotations

import re

import numpy as np

from usergpu.emu.amd.exec import memops
from usergpu.emu.amd.exec.native.cexpr import Translator, ctype
from usergpu.emu.amd.exec.native.emit_operands import Operands
from usergpu.emu.amd.exec.operands import Operand
from usergpu.emu.amd.exec.waves import NULL
from usergpu.isa.amd.codeobj.target import version

# access codes and reasons a fault reports (the Python side turns them back into text)
ACCESS = ("read", "write", "execute", "scratch load", "scratch store")


class MemoryOps(Operands):
    """C for the memory instructions."""

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
            find = (f"uint8_t *ptr[L]; uint8_t sink_[L][{size}]; uint8_t *lds = LDS_OF(w); "
                    f"for (int lane = 0; lane < L; lane++) {{ ptr[lane] = 0; if (!ON) continue; "
                    f"const int64_t a_ = (int64_t){self.read(addr_op, 'u32')} + {imm}; "
                    f"memset(sink_[lane], 0, {size}); ptr[lane] = LDS_AT(lds, a_, {size}, sink_[lane]); }}")
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
        for k, off in enumerate(offs):
            src = (f"LDS_AT(lds, (int64_t)VR({addr_op.index})[lane] + {off}, {size}, "
                   f"{'LDS_ZEROS' if kind == 'load' else 'LDS_SINK'})")
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
