"""Operands compiled once per instruction into getters and setters over a State: a register read as the
instruction's type (narrower or wider registers truncated or extended as PTX says), an immediate as a numpy
scalar, a special register, a variable's address, a vector's elements."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from usergpu.emu.nv.ptx.program import Program, function_address
from usergpu.errors import CodeObjectError
from usergpu.isa.nv import ptx

NP = {
    "s8": np.int8, "u8": np.uint8, "b8": np.uint8, "s16": np.int16, "u16": np.uint16, "b16": np.uint16,
    "s32": np.int32, "u32": np.uint32, "b32": np.uint32, "s64": np.int64, "u64": np.uint64, "b64": np.uint64,
    "f16": np.float16, "f32": np.float32, "f64": np.float64, "bf16": np.uint16, "f16x2": np.uint32,
    "bf16x2": np.uint32, "tf32": np.uint32, "pred": np.bool_, "b128": np.uint64, "e4m3x2": np.uint16,
    "e5m2x2": np.uint16,
}
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
SINT = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}
Getter = Callable  # (state, sel) -> ndarray or numpy scalar
Setter = Callable  # (state, sel, value) -> None


def storage(ptx_type: str) -> np.dtype:
    """How a register of a PTX type is held: predicates as bool, the rest as unsigned bits of its width."""
    return np.dtype(np.bool_) if ptx_type == "pred" else np.dtype(UINT[ptx.TYPE_SIZE[ptx_type]])


def signed(t: str) -> bool:
    return t[0] == "s"


def from_bits(arr: np.ndarray, t: str) -> np.ndarray:
    """Register bits as type t (truncated when the register is wider, zero-extended when narrower)."""
    want = np.dtype(NP[t])
    if want == np.bool_:
        return arr if arr.dtype == np.bool_ else arr != 0
    if arr.dtype == np.bool_:
        arr = arr.astype(np.uint8)
    if arr.dtype.itemsize != want.itemsize:
        arr = arr.astype(UINT[want.itemsize])
    return arr.view(want)


def to_bits(value, t: str, dtype: np.dtype) -> np.ndarray:
    """A value of type t as a register's bits: sign-extended (signed t) or zero-extended into a wider register,
    truncated into a narrower one."""
    v = np.asarray(value)
    if dtype == np.bool_:
        return v.astype(np.bool_)
    want = np.dtype(NP[t]) if t in NP else v.dtype
    if v.dtype != want:
        v = v.astype(want)
    if want == np.bool_:
        return v.astype(dtype)
    if want.itemsize == dtype.itemsize:
        return v.view(dtype)
    if want.itemsize < dtype.itemsize and signed(t):
        return v.view(SINT[want.itemsize]).astype(np.int64).astype(dtype)
    return v.view(UINT[want.itemsize]).astype(dtype)


def immediate(op: ptx.Imm, t: str):
    """An immediate as a numpy scalar of type t: integers wrap to t's width; a float literal gives its value to a
    float type and its bits to a bit type."""
    want = np.dtype(NP[t])
    if want == np.bool_:
        return np.bool_(op.value)
    if want.kind == "f":
        return want.type(op.value)
    if op.bits is not None:
        value = op.bits if op.width == 8 * want.itemsize else np.array(op.value, np.float32 if want.itemsize == 4
                                                                       else np.float64).view(UINT[want.itemsize])
        return np.array(value, UINT[want.itemsize]).view(want)[()]
    if isinstance(op.value, float):
        return want.type(op.value)
    mask = (1 << 8 * want.itemsize) - 1
    return np.array(int(op.value) & mask, UINT[want.itemsize]).view(want)[()]


SPECIAL_DIMS = {"tid": "tid", "ntid": "ntid", "ctaid": "ctaid", "nctaid": "nctaid"}


class Operands:
    """Compiles one function's operands (names resolved in that function of the program)."""

    def __init__(self, prog: Program, fn: str, ins: ptx.Instruction):
        self.prog, self.fn, self.ins = prog, fn, ins

    def error(self, why: str) -> CodeObjectError:
        return CodeObjectError(f"ptx: line {self.ins.line}: {why} ({self.ins.text})")

    def key(self, op: ptx.Reg) -> tuple[str, np.dtype]:
        place = self.prog.place(self.fn, op.name, self.ins.line)
        if place.space != "reg":
            raise self.error(f"{op.name} is not a register")
        return place.name, storage(self.prog.registers[place.name])

    def get(self, op, t: str) -> Getter:
        """A getter of op's value as type t."""
        if isinstance(op, ptx.Reg):
            key, dt = self.key(op)
            if op.negate:
                return lambda st, sel: ~st.register(key, dt)[sel]
            return lambda st, sel: from_bits(st.register(key, dt)[sel], t)
        if isinstance(op, ptx.Imm):
            value = immediate(op, t)
            return lambda st, sel: value
        if isinstance(op, ptx.Special):
            return self.special(op.name, t)
        if isinstance(op, ptx.Sym | ptx.Addr):
            address = self.address(op)
            return lambda st, sel: np.asarray(address(st, sel)).astype(NP[t])
        if isinstance(op, ptx.Vec):  # {a, b} as one wider value: the elements' bits, first lowest
            width = np.dtype(NP[t]).itemsize * 8 // len(op.items)
            parts = [self.get(x, f"b{width}") for x in op.items]

            def pack(st, sel):
                out = np.zeros(np.shape(parts[0](st, sel)), np.uint64)
                for i, g in enumerate(parts):
                    out = out | (np.asarray(g(st, sel)).astype(np.uint64) << np.uint64(i * width))
                return out.astype(UINT[width * len(parts) // 8]).view(NP[t])
            return pack
        raise self.error(f"{op} cannot be read as a value")

    def set(self, op, t: str) -> Setter:
        """A setter storing a value of type t into op."""
        if op is ptx.SINK:
            return lambda st, sel, value: None
        if isinstance(op, ptx.Reg):
            key, dt = self.key(op)

            def store(st, sel, value):
                st.register(key, dt)[sel] = to_bits(value, t, dt)
            return store
        if isinstance(op, ptx.Vec):  # one wider value split into the elements, first lowest
            width = np.dtype(NP[t]).itemsize * 8 // len(op.items)
            parts = [self.set(x, f"b{width}") for x in op.items]
            mask = np.uint64((1 << width) - 1)

            def unpack(st, sel, value):
                bits = np.asarray(value).view(UINT[np.dtype(NP[t]).itemsize]).astype(np.uint64)
                for i, s in enumerate(parts):
                    s(st, sel, ((bits >> np.uint64(i * width)) & mask).astype(UINT[width // 8]))
            return unpack
        raise self.error(f"{op} cannot be written")

    def special(self, name: str, t: str) -> Getter:
        base, _, comp = name.partition(".")
        axis = "xyz".index(comp) if comp else 0
        dt = NP[t]
        per_lane = {"tid": lambda st: st.tid[axis], "ctaid": lambda st: st.ctaid[axis],
                    "laneid": lambda st: st.laneid, "warpid": lambda st: st.warpid, "smid": lambda st: st.smid,
                    "clusterid": lambda st: st.clusterid[axis], "cluster_ctaid": lambda st: st.cluster_ctaid[axis],
                    "cluster_ctarank": lambda st: st.cluster_ctarank}
        uniform = {"ntid": lambda st: st.ntid[axis], "nctaid": lambda st: st.nctaid[axis],
                   "nwarpid": lambda st: 64, "nsmid": lambda st: st.sm_count, "gridid": lambda st: 1,
                   "clock": lambda st: st.steps * 4 & 0xFFFFFFFF, "clock64": lambda st: st.steps * 4,
                   "clock_hi": lambda st: st.steps * 4 >> 32 & 0xFFFFFFFF,
                   "globaltimer": lambda st: st.time_ns + st.steps, "globaltimer_lo": lambda st:
                   (st.time_ns + st.steps) & 0xFFFFFFFF, "globaltimer_hi": lambda st: (st.time_ns + st.steps) >> 32,
                   "dynamic_smem_size": lambda st: st.dynamic_shared, "total_smem_size": lambda st: st.shared_size,
                   "nclusterid": lambda st: st.nctaid[axis] // st.cluster[axis],
                   "cluster_nctaid": lambda st: st.cluster[axis], "cluster_nctarank": lambda st: st.cluster_size,
                   "is_explicit_cluster": lambda st: int(st.explicit_cluster)}
        masks = {"lanemask_eq": lambda lane: 1 << lane, "lanemask_lt": lambda lane: (1 << lane) - 1,
                 "lanemask_le": lambda lane: (2 << lane) - 1, "lanemask_gt": lambda lane: ~((2 << lane) - 1),
                 "lanemask_ge": lambda lane: ~((1 << lane) - 1)}
        if base in per_lane:
            return lambda st, sel: per_lane[base](st)[sel].astype(dt)
        if base in uniform:
            return lambda st, sel: np.array(uniform[base](st) & 0xFFFFFFFFFFFFFFFF, np.uint64).astype(dt)[()]
        if base in masks:
            return lambda st, sel: (masks[base](st.laneid[sel].astype(np.int64)) & 0xFFFFFFFF).astype(dt)
        raise self.error(f"the special register %{name} is not supported")

    def address(self, op) -> Getter:
        """A getter of op's address in its state space (uint64): [reg+off], [var+off], var, var+off, [imm]."""
        base, offset = (op.base, op.offset) if isinstance(op, ptx.Addr) else (op, 0)
        off = np.uint64(offset & 0xFFFFFFFFFFFFFFFF)
        if base is None:
            return lambda st, sel: off
        if isinstance(base, ptx.Reg):
            key, dt = self.key(base)
            return lambda st, sel: st.register(key, dt)[sel].astype(np.uint64) + off
        place = self.prog.place(self.fn, base.name, self.ins.line)
        if place.space in ("global", "const"):
            name = place.name
            return lambda st, sel: np.uint64(st.globals[name]) + off
        if place.space in ("shared", "local", "param"):
            at = np.uint64(place.address) + off
            return lambda st, sel: at
        if place.space == "func" and base.name in self.prog.functions.values():  # mov.u64 %rd, f: its address
            at = np.uint64(function_address(self.prog.module, base.name)) + off
            return lambda st, sel: at
        raise self.error(f"{base.name} ({place.space}) has no address")

    def space_of(self, op) -> str | None:
        """The state space a [var] operand's variable lives in (None for a register base)."""
        base = op.base if isinstance(op, ptx.Addr) else op
        if isinstance(base, ptx.Sym):
            return self.prog.place(self.fn, base.name, self.ins.line).space
        return None

    def ops_table(self, op) -> list[int]:
        """The instruction indices of a .branchtargets list named by op."""
        fn = self.prog.module.functions[self.fn]
        if not isinstance(op, ptx.Sym) or op.name not in fn.branch_targets:
            raise self.error("brx.idx needs a .branchtargets list")
        return [self.label(ptx.Sym(name)) for name in fn.branch_targets[op.name]]

    def label(self, op) -> int:
        if not isinstance(op, ptx.Sym):
            raise self.error("a branch target must be a label")
        place = self.prog.place(self.fn, op.name, self.ins.line)
        if place.space != "label":
            raise self.error(f"{op.name} is not a label")
        return place.address
