"""C for ld, st, atom and red in global, const, shared, local, param and generic addressing, scalar and vector, per
lane in lane order (later lanes win where addresses repeat; an atomic's lanes each see the one before, as the
reference's rounds give). Every lane's address is found and checked before anything is written: a lane whose
access would fault hands the instruction to the reference, which raises the fault with its facts. Shared memory of
another CTA (.shared::cluster addresses), b128 and the half types run on the reference."""

from __future__ import annotations

from collections.abc import Callable

from usergpu.emu.nv.ptx.memops import GENERIC_OF, _space, _vector
from usergpu.emu.nv.ptx.native.coperands import (
    FLOAT,
    INT,
    COperands,
    Lanes,
    Prechecked,
    Untranslatable,
    ctype,
    size,
)
from usergpu.emu.nv.ptx.semantics import Inst
from usergpu.isa.nv import ptx

MASK64 = (1 << 64) - 1

# C finding each lane's host bytes for an access of {n} bytes at a_[l] in a space (the prelude), and the lane's
# pointer as C; the prelude jumps to the fallback where an access would fault (or is another CTA's shared memory): the
# reference raises it with its facts. Shared, local and param memory are checked for the whole warp at once; global
# memory by the span of the warp's addresses in one mapping (then a lane's bytes are at its address plus one
# distance), else lane by lane.
ROWS = {  # space -> (the lane's row, its size)
    "shared": ("shared_", "shared_size_"),
    "local": ("local_ + l * local_size_", "local_size_"),
    "param": ("param_ + l * param_size_", "param_size_"),
}
CHECKED = ("uint64_t a_[32], bad_ = 0; LANES(g) {{ a_[l] = {addr}; bad_ |= {far}(a_[l] + {n} > (uint64_t){size}); }} "
           "if (bad_) goto fallback;")
GLOBAL = ("uint64_t a_[32], lo_ = ~0ull, hi_ = 0; uintptr_t d_[32]; "
          "LANES(g) {{ a_[l] = {addr}; lo_ = a_[l] < lo_ ? a_[l] : lo_; hi_ = a_[l] > hi_ ? a_[l] : hi_; }} "
          "uint8_t *h_ = gmem(st, lo_, hi_ - lo_ + {n}, {write}); uintptr_t dh_ = (uintptr_t)h_ - lo_; "
          "if (!h_) LANES(g) {{ uint8_t *q_ = gmem(st, a_[l], {n}, {write}); if (!q_) goto fallback; "
          "d_[l] = (uintptr_t)q_ - a_[l]; }}")
GLOBAL_AT = "((uint8_t *)(uintptr_t)(a_[l] + (h_ ? dh_ : d_[l])))"
GENERIC = ("uint8_t *p_[32]; LANES(g) {{ uint64_t a = {addr}, s_ = a - SHARED_WINDOW, t_ = a - LOCAL_WINDOW; "
           "p_[l] = s_ < WINDOW ? (s_ < CLUSTER_SHARED && s_ + {n} <= shared_size_ ? "
           "shared_ + s_ : (uint8_t *)0) : "
           "t_ < WINDOW ? (t_ + {n} <= local_size_ ? local_ + l * local_size_ + t_ : "
           "(uint8_t *)0) : gmem(st, a, {n}, {write}); if (!p_[l]) goto fallback; }}")


def _where(space: str, addr: str, n: int, write: int) -> tuple[str, str]:
    """(the prelude, the lane's pointer)"""
    if space in ROWS:
        row, size_ = ROWS[space]
        far = "(a_[l] >= CLUSTER_SHARED) | " if space == "shared" else ""
        return CHECKED.format(addr=addr, far=far, n=n, size=size_), f"({row} + a_[l])"
    if space in ("global", "const"):
        return GLOBAL.format(addr=addr, n=n, write=write), GLOBAL_AT
    return GENERIC.format(addr=addr, n=n, write=write), "p_[l]"


def _address(ins: Inst, o: COperands, op) -> tuple[str, str]:
    """(C of the lane's address, its space), as memops._address: a [var] operand of shared or local memory in
    generic addressing is the variable's generic address."""
    space = _space(ins)
    addr = o.address(op)
    base = op.base if isinstance(op, ptx.Addr) else op
    var_space = o.prog.place(o.fn, base.name, o.ins.line).space if isinstance(base, ptx.Sym) else None
    if space == "generic" and var_space in GENERIC_OF:
        return f"({addr} + {GENERIC_OF[var_space]:#x}ull)", space
    if var_space == "param" and space == "generic":
        return addr, "param"
    return addr, space


def _elements(op, n: int) -> list:
    return list(op.items) if isinstance(op, ptx.Vec) else [op] * (n == 1)


def _type(ins: Inst) -> str:
    t = ins.t
    if t not in INT | FLOAT:
        raise Untranslatable(f".{t} access")
    return t


def _find(ins: Inst, o: COperands, op, n: int, write: int) -> tuple[str, str]:
    """(C finding each lane's bytes, jumping to the fallback where an access would fault; the lane's pointer)"""
    addr, space = _address(ins, o, op)
    if space not in (*ROWS, "global", "const", "generic"):
        raise Untranslatable(f"{space} memory")
    return _where(space, addr, n, write)


def _access(ins: Inst, o: COperands, addr, data, write: int) -> tuple[str, list, tuple[str, str]]:
    """(the type, the registers of the data operand, _find's C) of an ld or st."""
    t = _type(ins)
    n = _vector(ins)
    if n not in (1, 2, 4):
        raise Untranslatable(f"{ins.base}.v{n}")
    return t, _elements(data, n), _find(ins, o, addr, size(t) * n, write)


def _prechecked(ins: Inst, o: COperands, op, slow: str, each: Callable[[str], str], nbytes: int,
                 write: bool) -> str | Prechecked:
    """slow, or both forms where op is a register plus a constant in shared or global memory (Prechecked); each: a
    lane's access at a pointer (C)."""
    base, offset = (op.base, op.offset) if isinstance(op, ptx.Addr) else (op, 0)
    space = _space(ins)
    if not isinstance(base, ptx.Reg) or space not in ("shared", "global", "const"):
        return slow
    reg, _ = o.reg(base)
    if space == "shared":
        at = f"(shared_ + ((uint64_t){reg}[l] + {offset & MASK64:#x}ull))"
    else:
        at = f"((uint8_t *)(uintptr_t)((uint64_t){reg}[l] + {offset & MASK64:#x}ull + d{reg}_))"
    return Prechecked(slow, each(at), "shared" if space == "shared" else "global", reg, offset, nbytes, write)


def ld(ins: Inst, o: COperands) -> str | Lanes | Prechecked:
    t, dsts, (find, at) = _access(ins, o, ins.ops[1], ins.ops[0], 0)
    c = ctype(t)

    def loads(at: str) -> str:
        return " ".join(f"{{ {c} v_; memcpy(&v_, {at} + {i * size(t)}, {size(t)}); {o.set(d, t, 'v_')} }}"
                        for i, d in enumerate(dsts))
    offset = o.param_offset(ins.ops[1]) if _address(ins, o, ins.ops[1])[1] == "param" else None
    if offset is not None and offset + size(t) * len(dsts) <= o.prog.param_size:  # in bounds wherever it runs
        # where no thread writes its param space, every thread's is the launch's: the warp's first lane's is read
        row = f"l * {max(o.prog.param_size, 1)} + " if o.prog.writes_param else ""
        return Lanes(loads(f"(param_ + {row}{offset})"))
    return _prechecked(ins, o, ins.ops[1], f"{{ {find} LANES(g) {{ {loads(at)} }} }}", lambda at: Lanes(loads(at)),
                       size(t) * len(dsts), False)


def st(ins: Inst, o: COperands) -> str | Prechecked:
    t, srcs, (find, at) = _access(ins, o, ins.ops[0], ins.ops[1], 1)
    c = ctype(t)
    values = " ".join(f"{c} v{i}_ = {o.get(s, t)};" for i, s in enumerate(srcs))

    # one element a lane: the compiler may scatter them (a scatter writes overlapping elements from the lowest lane
    # up, the lane order); a vector's elements would be scattered element by element, out of lane order
    loop = "RUN_LANES" if len(srcs) == 1 else "LANES"

    def stores(at: str) -> str:
        each = " ".join(f"memcpy({at} + {i * size(t)}, &v{i}_, {size(t)});" for i in range(len(srcs)))
        return f"{loop}(g) {{ {values} {each} }}"
    return _prechecked(ins, o, ins.ops[0], f"{{ {find} {stores(at)} }}", stores, size(t) * len(srcs), True)


ATOMIC = {  # new = f(o_, b_, c_) for integer types
    "add": "o_ + b_", "min": "o_ < b_ ? o_ : b_", "max": "o_ > b_ ? o_ : b_", "and": "o_ & b_", "or": "o_ | b_",
    "xor": "o_ ^ b_", "exch": "b_", "cas": "o_ == b_ ? c_ : o_", "inc": "o_ >= b_ ? 0 : o_ + 1",
    "dec": "o_ == 0 || o_ > b_ ? b_ : o_ - 1",
}
FLOAT_ADD = {"f32": "ftz32(canon32(ftz32(o_) + ftz32(b_)))", "f64": "canon64(o_ + b_)"}


def _atomic(ins: Inst, o: COperands, returns: bool) -> str:
    op = next(m for m in ins.mods if m in ATOMIC)
    t = _type(ins)
    if t in FLOAT and op != "add":
        raise Untranslatable(f"atom.{op}.{t}")
    first = 1 if returns else 0
    find, at = _find(ins, o, ins.ops[first], size(t), 2)
    c = ctype(t)
    b = o.get(ins.ops[first + 1], t)
    cv = o.get(ins.ops[first + 2], t) if op == "cas" else "0"
    new = FLOAT_ADD[t] if t in FLOAT else ATOMIC[op]
    ret = o.set(ins.ops[0], t, "o_") if returns else ""
    # the operands of every lane first: the destination may be one of them
    return (f"{{ {find} {c} bv_[32], cv_[32]; LANES(g) {{ bv_[l] = {b}; cv_[l] = {cv}; }} "
            f"LANES(g) {{ {c} o_, b_ = bv_[l], c_ = cv_[l]; (void)c_; memcpy(&o_, {at}, {size(t)}); "
            f"{c} n_ = ({c})({new}); memcpy({at}, &n_, {size(t)}); {ret} }} }}")


def atom(ins: Inst, o: COperands) -> str:
    return _atomic(ins, o, True)


def red(ins: Inst, o: COperands) -> str:
    return _atomic(ins, o, False)


def _nothing(ins: Inst, o: COperands) -> str:
    return ";"


def cp(ins: Inst, o: COperands) -> str:
    if ins.has("async") and ins.has("commit_group", "wait_group", "wait_all"):
        return ";"
    raise Untranslatable(ins.ins.opcode)


TABLE = {"ld": ld, "ldu": ld, "st": st, "atom": atom, "red": red, "prefetch": _nothing, "prefetchu": _nothing,
         "cp": cp}
