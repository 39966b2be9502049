"""ld, st, atom and red in every state space (global, shared, local, param, const, generic; .shared::cluster for
another CTA's shared memory) and vector width; cp.async; mapa and getctarank.

cp.async copies at issue: PTX lets a thread that reads the destination before cp.async.wait_group see either the
old or the new bytes, and after it the new, which a copy done at once gives; commit and wait are then nothing.

An atomic runs lane by lane where lanes hit the same address (in lane order, each seeing the one before), and all
at once where they do not: the rounds are as many as the most lanes on one address.
"""

from __future__ import annotations

import numpy as np

from usergpu.emu.nv.ptx import fp
from usergpu.emu.nv.ptx.operands import NP, UINT
from usergpu.emu.nv.ptx.program import CLUSTER_SHARED, LOCAL_WINDOW, RANK_SHIFT, SHARED_WINDOW, WINDOW
from usergpu.emu.nv.ptx.semantics import Inst, Op, UnsupportedPTX, _decode, _encode
from usergpu.emu.nv.ptx.state import LaneFault
from usergpu.isa.nv import ptx

SPACES = ("global", "shared", "local", "param", "const")
GENERIC_OF = {"shared": SHARED_WINDOW, "local": LOCAL_WINDOW}


def _space(ins: Inst) -> str:
    """The instruction's state space: .shared, .shared::cta and .shared::cluster are all shared memory (an
    address says whose)."""
    space = next((m.split("::")[0] for m in ins.mods if m.split("::")[0] in SPACES), "generic")
    return space


def _address(ins: Inst, op) -> tuple:
    """(getter of the addresses in the instruction's space, the space): a [var] operand in generic addressing is
    the variable's generic address."""
    space = _space(ins)
    get = ins.o.address(op)
    var_space = ins.o.space_of(op)
    if space == "generic" and var_space in GENERIC_OF:
        window = np.uint64(GENERIC_OF[var_space])
        return (lambda st, sel: np.asarray(get(st, sel)) + window), space
    if var_space == "param" and space == "generic":
        return get, "param"
    return get, space


def _vector(ins: Inst) -> int:
    return next((int(m[1:]) for m in ins.mods if m in ("v2", "v4", "v8")), 1)


def _elements(op, n: int) -> list:
    return list(op.items) if isinstance(op, ptx.Vec) else [op] * (n == 1)


def ld(ins: Inst) -> Op:
    t = ins.t
    size = np.dtype(NP[t]).itemsize if t != "b128" else 16
    n = _vector(ins)
    addr, space = _address(ins, ins.ops[1])
    dsts = [ins.o.set(x, t) for x in _elements(ins.ops[0], n)]
    view = np.dtype(NP[t]) if t != "b128" else np.dtype(np.uint64)

    def run(st, sel):
        data = st.load(space, addr(st, sel), size * n, sel)
        for i, d in enumerate(dsts):
            d(st, sel, np.ascontiguousarray(data[:, i * size:(i + 1) * size]).view(view)[:, 0])
    return run


ldu = ld


def st(ins: Inst) -> Op:
    t = ins.t
    size = np.dtype(NP[t]).itemsize
    n = _vector(ins)
    addr, space = _address(ins, ins.ops[0])
    srcs = [ins.o.get(x, t) for x in _elements(ins.ops[1], n)]
    uint = UINT[size]

    def run(st_, sel):
        count = st_.n if isinstance(sel, slice) else len(sel)
        data = np.empty((count, size * n), np.uint8)
        for i, g in enumerate(srcs):
            v = np.broadcast_to(np.asarray(g(st_, sel)).astype(NP[t]), (count,))
            data[:, i * size:(i + 1) * size] = np.ascontiguousarray(v).view(uint).view(np.uint8).reshape(count, size)
        st_.store(space, addr(st_, sel), data, sel)
    return run


def prefetch(ins: Inst) -> Op:
    return lambda st, sel: None


prefetchu = prefetch


BITS = {"f16": "b16", "bf16": "b16", "f16x2": "b32", "bf16x2": "b32"}  # half types travel as their bits


def _combine(op: str, t: str):
    """new = f(old, b, c) for an atomic operation on values of t."""
    if t in ("f16x2", "bf16x2", "f16", "bf16"):
        elem = "f16" if t.startswith("f16") else "bf16"
        halves = (0, 16) if t.endswith("x2") else (0,)

        def packed(old, b, c):
            out = np.zeros(np.shape(old), np.uint32)
            for s in halves:
                x, y = (_decode(((np.asarray(v).astype(np.uint32) >> np.uint32(s)) & np.uint32(0xFFFF)).astype(
                    np.uint16), elem).astype(np.float64) for v in (old, b))
                r = {"add": x + y, "min": np.fmin(x, y), "max": np.fmax(x, y)}[op]
                out |= _encode(r, elem, "rn").astype(np.uint32) << np.uint32(s)
            return out.astype(UINT[np.dtype(NP[BITS[t]]).itemsize])
        return packed
    dt = NP[t]
    ops = {
        "add": lambda o, b, c: (o + b).astype(dt), "min": lambda o, b, c: np.minimum(o, b),
        "max": lambda o, b, c: np.maximum(o, b), "and": lambda o, b, c: o & b, "or": lambda o, b, c: o | b,
        "xor": lambda o, b, c: o ^ b, "exch": lambda o, b, c: np.broadcast_to(b, np.shape(o)),
        "cas": lambda o, b, c: np.where(o == b, c, o),
        "inc": lambda o, b, c: np.where(o >= b, 0, o + 1).astype(dt),
        "dec": lambda o, b, c: np.where((o == 0) | (o > b), b, o - 1).astype(dt),
    }
    if dt == np.float32:  # atom.add.f32 rounds to nearest even and flushes subnormal inputs and results
        ops["add"] = lambda o, b, c: fp.flush(fp.canonical_nan((fp.flush(o) + fp.flush(b)).astype(dt)))
    elif np.dtype(dt).kind == "f":
        ops["add"] = lambda o, b, c: fp.canonical_nan((o + b).astype(dt))
        ops["min"] = lambda o, b, c: np.fmin(o, b)
        ops["max"] = lambda o, b, c: np.fmax(o, b)
    return ops[op]


ATOMIC_OPS = ("add", "min", "max", "and", "or", "xor", "exch", "cas", "inc", "dec")


def atom(ins: Inst) -> Op:
    return _atomic(ins, True)


def red(ins: Inst) -> Op:
    return _atomic(ins, False)


def _atomic(ins: Inst, returns: bool) -> Op:
    op = next(m for m in ins.mods if m in ATOMIC_OPS)
    f = _combine(op, ins.t)
    t = BITS.get(ins.t, ins.t)
    size = np.dtype(NP[t]).itemsize
    first = 1 if returns else 0
    addr, space = _address(ins, ins.ops[first])
    b = ins.o.get(ins.ops[first + 1], t)
    c = ins.o.get(ins.ops[first + 2], t) if op == "cas" else (lambda st, sel: 0)
    dst = ins.dst(t) if returns else None
    uint = UINT[size]

    def run(st, sel):
        lanes = np.arange(st.n)[sel]
        count = len(lanes)
        a = np.broadcast_to(np.asarray(addr(st, sel), np.uint64), (count,))
        bv = np.broadcast_to(np.asarray(b(st, sel)).astype(NP[t]), (count,))
        cv = np.broadcast_to(np.asarray(c(st, sel)).astype(NP[t]), (count,))
        key = st.atomic_key(space, a, lanes)  # shared addresses of different blocks are different words
        old_all = np.empty(count, NP[t])
        left = np.arange(count)
        while len(left):
            _, first_of = np.unique(key[left], return_index=True)
            now = left[np.sort(first_of)]
            old = np.ascontiguousarray(st.load(space, a[now], size, lanes[now])).view(NP[t])[:, 0]
            new = np.asarray(f(old, bv[now], cv[now])).astype(NP[t])
            st.store(space, a[now], np.ascontiguousarray(new).view(uint).view(np.uint8).reshape(-1, size), lanes[now])
            old_all[now] = old
            left = np.setdiff1d(left, now, assume_unique=True)
        if dst is not None:
            dst(st, sel, old_all)
    return run


# ---- cp.async ----------------------------------------------------------------------------------------------------
CP_SIZES = (4, 8, 16)


def cp(ins: Inst) -> Op:
    """cp.async.ca/.cg.shared{::cta}.global [dst], [src], cp-size{, src-size | ignore-src}{, cache-policy}: cp-size
    bytes into shared memory, the first src-size of them (all, or none where ignore-src is true) from global memory
    and the rest zeros; cp.async.commit_group / wait_group / wait_all."""
    if not ins.has("async") or ins.has("bulk", "mbarrier", "tensor", "reduce"):
        raise UnsupportedPTX(ins.ins, ins.prog.kernel.name, "of cp, only cp.async's copy to shared memory and its "
                             "groups are")
    if ins.has("commit_group", "wait_group", "wait_all"):
        return lambda st, sel: None
    size_op = ins.ops[2] if len(ins.ops) > 2 else None
    if not isinstance(size_op, ptx.Imm) or size_op.value not in CP_SIZES or (ins.has("cg") and size_op.value != 16):
        raise ins.o.error("cp.async's cp-size is 4, 8 or 16 (16 with .cg)")
    size = int(size_op.value)
    dst, src = ins.o.address(ins.ops[0]), ins.o.address(ins.ops[1])
    extra = list(ins.ops[3:len(ins.ops) - ins.has("L2::cache_hint")])
    count = _source_bytes(ins, extra[0], size) if extra else (lambda st, sel: np.int64(size))

    def run(st, sel):
        lanes = np.arange(st.n)[sel]
        n = np.broadcast_to(np.asarray(count(st, sel)).astype(np.int64), (len(lanes),))
        if (n > size).any():
            i = int(np.argmax(n > size))
            raise LaneFault(int(lanes[i]), int(np.broadcast_to(src(st, sel), (len(lanes),))[i]), "read",
                            f"cp.async's src-size {n[i]} is more than its cp-size {size}")
        data = np.zeros((len(lanes), size), np.uint8)
        at = np.broadcast_to(np.asarray(src(st, sel), np.uint64), (len(lanes),))
        for k in np.unique(n[n > 0]):
            these = n == k
            data[these, :k] = st.load("global", at[these], int(k), lanes[these])
        st.store("shared", dst(st, sel), data, sel)
    return run


def _source_bytes(ins: Inst, op, size: int):
    """A getter of the bytes cp.async reads per lane: src-size, or for the ignore-src predicate none or all."""
    if isinstance(op, ptx.Reg) and ins.prog.registers.get(ins.o.key(op)[0]) == "pred":
        ignore = ins.o.get(op, "pred")
        return lambda st, sel: np.where(ignore(st, sel), 0, size)
    return ins.o.get(op, "u32")


# ---- distributed shared memory -----------------------------------------------------------------------------------
def _shared_place(ins: Inst, generic: bool):
    """A function (st, sel, address) -> (the offset in its CTA's shared memory, that CTA's rank in the cluster) for
    a .shared::cta or .shared::cluster address, or (generic) one in the shared window."""
    base = np.uint64(SHARED_WINDOW if generic else 0)
    low = np.uint64((1 << RANK_SHIFT) - 1)

    def place(st, sel, x):
        lanes = np.arange(st.n)[sel]
        x = np.broadcast_to(np.asarray(x).astype(np.uint64), (len(lanes),))
        outside = (x < base) | (x >= base + np.uint64(WINDOW))
        if outside.any():
            i = int(np.argmax(outside))
            raise LaneFault(int(lanes[i]), int(x[i]), ins.base, "not an address of shared memory")
        off = x - base
        far = off >= np.uint64(CLUSTER_SHARED)
        rank = np.where(far, (off >> np.uint64(RANK_SHIFT)) & np.uint64(0x7F), st.cluster_ctarank[lanes])
        return np.where(far, off & low, off), rank.astype(np.uint64)
    return place


def mapa(ins: Inst) -> Op:
    """mapa{.shared::cluster}.u32/u64 d, a, rank: the address in CTA rank of the cluster of what a addresses in
    its own (generic without .shared::cluster)."""
    generic = not ins.has("shared::cluster")
    t = ins.t
    a = _address(ins, ins.ops[1])[0] if isinstance(ins.ops[1], ptx.Sym | ptx.Addr) else ins.o.get(ins.ops[1], t)
    rank = ins.o.get(ins.ops[2], "u32")
    place = _shared_place(ins, generic)
    base = np.uint64(SHARED_WINDOW if generic else 0)
    dst = ins.dst(t)

    def run(st, sel):
        lanes = np.arange(st.n)[sel]
        off, _ = place(st, sel, a(st, sel))
        r = np.broadcast_to(np.asarray(rank(st, sel)).astype(np.uint64), (len(lanes),))
        bad = (r >= np.uint64(st.cluster_size)) | (off >= np.uint64(1 << RANK_SHIFT))
        if bad.any():
            i = int(np.argmax(bad))
            raise LaneFault(int(lanes[i]), int(off[i]), "mapa", f"CTA rank {r[i]} of a cluster of "
                            f"{st.cluster_size} CTAs" if r[i] >= st.cluster_size else "past shared memory")
        dst(st, sel, (base + (np.uint64(CLUSTER_SHARED) | (r << np.uint64(RANK_SHIFT)) | off)).astype(NP[t]))
    return run


def getctarank(ins: Inst) -> Op:
    """getctarank{.shared::cluster}.u32/u64 d, a: the rank in the cluster of the CTA whose shared memory a is in."""
    a = ins.o.get(ins.ops[1], ins.t)
    place = _shared_place(ins, not ins.has("shared::cluster"))
    dst = ins.dst("u32")
    return lambda st, sel: dst(st, sel, place(st, sel, a(st, sel))[1].astype(np.uint32))
