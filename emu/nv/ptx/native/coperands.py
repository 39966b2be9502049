"""Operands as C, per lane l of the warp: a register read as the instruction's type (narrower or wider registers
truncated or extended as the reference's operands.py does), an immediate, a special register, a variable's address;
and the store of a value of a type into a register or a vector of them. An operand with no C form raises
Untranslatable: the instruction runs on the reference."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from usergpu.emu.nv.ptx.operands import NP, immediate
from usergpu.emu.nv.ptx.program import FUNC_STRIDE, FUNC_WINDOW, Program
from usergpu.isa.nv import ptx

INT = {"s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "b8", "b16", "b32", "b64"}
FLOAT = {"f32", "f64"}
CTYPE = {"s8": "int8_t", "s16": "int16_t", "s32": "int32_t", "s64": "int64_t", "u8": "uint8_t", "u16": "uint16_t",
         "u32": "uint32_t", "u64": "uint64_t", "b8": "uint8_t", "b16": "uint16_t", "b32": "uint32_t",
         "b64": "uint64_t", "f32": "float", "f64": "double", "pred": "_Bool"}
CARRY = "%cc"  # the carry flag's register, one per thread (semantics._carry)
STORAGE = {"bool": "_Bool", "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t"}


class Untranslatable(Exception):
    """An instruction (or an operand of one) with no C form here; it runs on the reference backend."""


@dataclass(frozen=True)
class Lanes:
    """An instruction's C that is each lane's own (reads and writes that lane's registers only, cannot fault):
    codegen runs a basic block's run of them in one loop over the lanes, so clang keeps values in vector registers
    from one to the next. guard: the lane's guard as C ("" for none)."""

    code: str
    guard: str = ""


@dataclass(frozen=True)
class Prechecked:
    """A load or store at a register plus a constant, in shared or global memory, in two forms: slow checks its own
    lanes' addresses; fast assumes them checked, which codegen does once for the accesses of a basic block through
    that register after its last write (codegen._prechecks). A fast load is each lane's own (a Lanes), so it joins
    the runs of the instructions around it; a fast store is its loop over the lanes of g."""

    slow: str
    fast: str | Lanes
    space: str  # "shared" or "global" (const too: the same mappings)
    reg: str
    offset: int
    size: int  # the bytes accessed
    write: bool


def size(t: str) -> int:
    return 1 if t == "pred" else np.dtype(NP[t]).itemsize


def ctype(t: str) -> str:
    if t not in CTYPE:
        raise Untranslatable(f"type .{t}")
    return CTYPE[t]


def utype(nbytes: int) -> str:
    return f"uint{8 * nbytes}_t"


def bits_of(expr: str, t: str) -> str:
    """A value of type t as its unsigned bits."""
    if t in FLOAT:
        return f"U{8 * size(t)}({expr})"
    return f"(({utype(size(t))})({expr}))"


def literal(value, t: str) -> str:
    """A numpy scalar of type t as a C constant of that type."""
    arr = np.asarray(value, NP[t])
    if t == "pred":
        return "1" if bool(arr) else "0"
    raw = int(arr.view(f"u{arr.itemsize}"))
    if t in FLOAT:
        return f"F{8 * arr.itemsize}({raw:#x}ull)"
    return f"(({ctype(t)}){raw:#x}ull)"


class COperands:
    """The C of one function's operands (names resolved in that function of the program); regs collects the
    registers the kernel's C touches (their pointers are declared at the warp's start)."""

    def __init__(self, prog: Program, index: dict[str, int], regs: dict[str, str], globals_: list[str]):
        self.prog, self.index, self.regs, self.globals = prog, index, regs, globals_
        self.fn = ""
        self.ins: ptx.Instruction | None = None

    def at(self, fn: str, ins: ptx.Instruction) -> COperands:
        self.fn, self.ins = fn, ins
        return self

    def reg(self, op: ptx.Reg) -> tuple[str, str]:
        """(the register's pointer name, its storage's C type)"""
        place = self.prog.place(self.fn, op.name, self.ins.line)
        if place.space != "reg":
            raise Untranslatable(f"{op.name} is a {place.space}")
        from usergpu.emu.nv.ptx.operands import storage

        dt = storage(self.prog.registers[place.name])
        name = f"r{self.index[place.name]}"
        self.regs[name] = STORAGE[dt.name]
        return name, STORAGE[dt.name]

    def carry(self) -> str:
        """The pointer name of the carry flag CC.CF (the reference's register %cc)."""
        name = f"r{self.index[CARRY]}"
        self.regs[name] = "_Bool"
        return name

    # ---- reads -------------------------------------------------------------------------------------------------
    def get(self, op, t: str) -> str:
        """C of op's value, as type t, for lane l."""
        ctype(t)
        if isinstance(op, ptx.Reg):
            name, st = self.reg(op)
            if op.negate:
                return f"(!{name}[l])"
            if t == "pred":
                return f"({name}[l] != 0)"
            bits = f"(({utype(size(t))}){name}[l])"
            return f"F{8 * size(t)}({bits})" if t in FLOAT else f"(({ctype(t)}){bits})"
        if isinstance(op, ptx.Imm):
            return literal(immediate(op, t), t)
        if isinstance(op, ptx.Special):
            return self.special(op.name, t)
        if isinstance(op, ptx.Sym | ptx.Addr):
            if t in FLOAT or t == "pred":
                raise Untranslatable("an address as a float")
            return f"(({ctype(t)}){self.address(op)})"
        if isinstance(op, ptx.Vec):
            width = 8 * size(t) // len(op.items)
            parts = [f"((uint64_t){self.get(x, f'b{width}')} << {i * width})" for i, x in enumerate(op.items)]
            packed = f"(({utype(size(t))})({' | '.join(parts)}))"
            return f"F{8 * size(t)}({packed})" if t in FLOAT else f"(({ctype(t)}){packed})"
        raise Untranslatable(f"operand {op}")

    def special(self, name: str, t: str) -> str:
        if t in FLOAT or t == "pred":
            raise Untranslatable(f"%{name} as .{t}")
        base, _, comp = name.partition(".")
        axis = "xyz".index(comp) if comp else 0
        value = {
            "tid": f"tid_[{axis} * n_ + l]", "ctaid": f"ctaid_[{axis} * n_ + l]",
            "ntid": f"(uint32_t)ntid_[{axis}]", "nctaid": f"(uint32_t)nctaid_[{axis}]",
            "laneid": "(uint32_t)l", "warpid": "(uint32_t)k", "nwarpid": "64u",
            "lanemask_eq": "BIT(l)", "lanemask_lt": "(BIT(l) - 1u)", "lanemask_le": "((BIT(l) << 1) - 1u)",
            "lanemask_gt": "~((BIT(l) << 1) - 1u)", "lanemask_ge": "~(BIT(l) - 1u)",
        }.get(base)
        if value is None:
            raise Untranslatable(f"%{name}")
        return f"(({ctype(t)}){value})"

    def address(self, op) -> str:
        """C of op's address in its state space (uint64_t): [reg+off], [var+off], var, [imm]."""
        base, offset = (op.base, op.offset) if isinstance(op, ptx.Addr) else (op, 0)
        off = f"{offset & 0xFFFFFFFFFFFFFFFF:#x}ull"
        if base is None:
            return f"((uint64_t){off})"
        if isinstance(base, ptx.Reg):
            name, _ = self.reg(base)
            return f"((uint64_t){name}[l] + {off})"
        place = self.prog.place(self.fn, base.name, self.ins.line)
        if place.space in ("global", "const"):
            if place.name not in self.globals:
                self.globals.append(place.name)
            return f"(gaddr_[{self.globals.index(place.name)}] + {off})"
        if place.space in ("shared", "local", "param"):
            return f"((uint64_t){place.address:#x}ull + {off})"
        if place.space == "func" and base.name in self.prog.functions.values():
            at = FUNC_WINDOW + FUNC_STRIDE * list(self.prog.module.functions).index(base.name)
            return f"((uint64_t){at:#x}ull + {off})"
        raise Untranslatable(f"the address of {base.name}")

    def param_offset(self, op) -> int | None:
        """op's offset in the param space where it is a constant ([param var+off], [imm]), else None."""
        base, offset = (op.base, op.offset) if isinstance(op, ptx.Addr) else (op, 0)
        if base is None:
            return offset
        if isinstance(base, ptx.Sym):
            place = self.prog.place(self.fn, base.name, self.ins.line)
            return place.address + offset if place.space == "param" else None
        return None

    # ---- writes ------------------------------------------------------------------------------------------------
    def set(self, op, t: str, value: str) -> str:
        """C storing value (a C expression of type t) into op, for lane l."""
        ctype(t)
        if op is ptx.SINK:
            return ";"
        if isinstance(op, ptx.Reg):
            name, st = self.reg(op)
            if st == "_Bool":
                return f"{name}[l] = ({value}) != 0;"
            if t == "pred":
                return f"{name}[l] = ({st})({value});"
            width = int(st[4:-2]) // 8
            if size(t) < width and t[0] == "s":  # sign-extended into a wider register
                return f"{name}[l] = ({st})(int64_t)({value});"
            return f"{name}[l] = ({st}){bits_of(value, t)};"
        if isinstance(op, ptx.Vec):
            width = 8 * size(t) // len(op.items)
            parts = [self.set(x, f"b{width}", f"(({utype(width // 8)})(v_ >> {i * width}))")
                     for i, x in enumerate(op.items)]
            return f"{{ uint64_t v_ = (uint64_t){bits_of(value, t)}; {' '.join(parts)} }}"
        raise Untranslatable(f"a store into {op}")
