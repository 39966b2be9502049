"""Control flow, barriers and warp-level instructions: bra, call (direct, or through a function's address), ret,
exit, trap, bar/barrier (sync and red; barrier.cluster's arrive and wait), membar/fence, shfl.sync, vote.sync,
match.sync, activemask, redux.sync.

A warp instruction sees the lanes of each warp that execute it together (the executor runs the lanes at the same
instruction at once, and reconverges divergent lanes at the lowest PC first).
"""

from __future__ import annotations

import numpy as np

from usergpu.emu.nv.ptx import printf
from usergpu.emu.nv.ptx.operands import NP
from usergpu.emu.nv.ptx.program import BUILT_IN, Call, Program, call_of, callees, fall_through
from usergpu.emu.nv.ptx.semantics import STOP, Inst, Op
from usergpu.emu.nv.ptx.state import BAR, EXIT, RUN, WARP, LaneFault
from usergpu.isa.nv import ptx

CLUSTER_BARRIER = -1  # bar_id of a lane at barrier.cluster.wait
DIRECT = -2  # State.site of a thread in an address-taken function it entered by a direct call (-1: not in it)


class Trap(Exception):
    """trap (or brkpt): the kernel stops with an error at this lane."""

    def __init__(self, lane: int, what: str):
        self.lane, self.what = lane, what


def bra(ins: Inst) -> Op:
    target = ins.o.label(ins.ops[0])
    return lambda st, sel: target


def brx(ins: Inst) -> Op:
    """brx.idx index, table: a jump to the index-th label of a .branchtargets list (past its end: undefined in
    PTX; here a fault-like error)."""
    table = ins.o.ops_table(ins.ops[1])
    index = ins.o.get(ins.ops[0], "u32")
    targets = np.asarray(table, np.int64)

    def run(st, sel):
        i = np.asarray(index(st, sel)).astype(np.int64)
        if (i >= len(targets)).any():
            raise Trap(int(np.arange(st.n)[sel][int(np.argmax(i >= len(targets)))]), "brx.idx past its table")
        return targets[i]
    return run


def call(ins: Inst) -> Op:
    c = call_of(ins.ins)
    if not c.direct:
        return _indirect(ins, c)
    name = c.callee.name
    if name in BUILT_IN and name not in ins.prog.entry:
        return BUILT_INS[name](ins, c)
    entry = ins.prog.entry[name]
    indirect = name in ins.prog.functions.values()
    back = fall_through(ins.prog, ins.index)

    def run(st, sel):
        st.ret[name][sel] = back
        if indirect:  # running, entered by no indirect call: its ret copies nothing back
            st.site[name][sel] = DIRECT
        return entry
    return run


def _vprintf(ins: Inst, c: Call) -> Op:
    """vprintf(format, arguments): each lane's line (emu/nv/ptx/printf.py); returns how many arguments it took."""
    if len(c.args) != 2 or len(c.rets) > 1:
        raise ins.o.error(f"vprintf takes 2 parameters and returns 1 value; the call gives {len(c.args)} and "
                          f"{len(c.rets)}")
    fmt_at, buf_at = (np.uint64(ins.prog.place(ins.fn, a.name, ins.ins.line).address) for a in c.args)
    ret_at = np.uint64(ins.prog.place(ins.fn, c.rets[0].name, ins.ins.line).address) if c.rets else None

    def run(st, sel):
        lanes = np.arange(st.n)[sel]
        words = [st.load("param", at, 8, lanes).copy().view(np.uint64).reshape(-1) for at in (fmt_at, buf_at)]
        counts = printf.vprintf(st, lanes, *words)
        if ret_at is not None:
            st.store("param", ret_at, counts.view(np.uint8).reshape(-1, 4), lanes)
    return run


BUILT_INS = {"vprintf": _vprintf}
assert set(BUILT_INS) == BUILT_IN


Moves = list[tuple[int, int, int]]  # (from, to, bytes) in each lane's parameter space


def _moves(prog: Program, fn: str, c: Call, callee: str) -> tuple[Moves, Moves] | str:
    """(the copies of an indirect call's arguments into callee's parameters, those of callee's return values into
    the call's), or why callee cannot take the call."""
    f = prog.module.functions[callee]
    if len(c.args) != len(f.params) or len(c.rets) != len(f.returns):
        return (f"{callee} takes {len(f.params)} parameters and {len(f.returns)} return values; the call gives "
                f"{len(c.args)} and {len(c.rets)}")
    own = prog.module.functions[fn].variables

    def pairs(vars_, formals, inward: bool) -> Moves:
        out = []
        for var, formal in zip(vars_, formals, strict=True):
            mine = prog.place(fn, var.name, 0).address
            theirs = prog.place(callee, formal.name, 0).address
            size = min(formal.size, own[var.name].size if var.name in own else formal.size)
            out.append((mine, theirs, size) if inward else (theirs, mine, size))
        return out
    return pairs(c.args, f.params, True), pairs(c.rets, f.returns, False)


def _copy(st, moves: Moves, lanes: np.ndarray) -> None:
    for src, dst, size in moves:
        st.store("param", np.uint64(dst), st.load("param", np.uint64(src), size, lanes), lanes)


def _indirect(ins: Inst, c: Call) -> Op:
    """call through an address: each lane enters the function at its address (a fault when none is there)."""
    prog = ins.prog
    target = ins.o.get(c.callee, "u64")
    allowed = set(callees(prog, ins.index))
    at = {address: name for address, name in prog.functions.items() if name in allowed}
    moves = {name: _moves(prog, ins.fn, c, name) for name in at.values()}
    site, back = ins.index, fall_through(prog, ins.index)

    def run(st, sel):
        lanes = np.arange(st.n)[sel]
        address = np.broadcast_to(np.asarray(target(st, sel)).astype(np.uint64), (len(lanes),))
        out = np.empty(len(lanes), np.int64)
        for a in np.unique(address):
            mine = address == a
            name = at.get(int(a))
            why = "no function of the module is at this address" if name is None else moves[name]
            if isinstance(why, str):
                raise LaneFault(int(lanes[mine][0]), int(a), "call", why)
            group = lanes[mine]
            inside = st.site[name][group] != -1
            if inside.any():  # its parameters and registers have one place per thread
                raise LaneFault(int(group[inside][0]), int(a), "call", f"{name} is running already in this thread: "
                                "recursive device functions are not supported by the emulator")
            _copy(st, why[0], group)
            st.ret[name][group] = back
            st.site[name][group] = site
            out[mine] = prog.entry[name]
        return out
    return run


def ret(ins: Inst) -> Op:
    if ins.fn == ins.prog.kernel.name:
        return exit(ins)
    name = ins.fn
    prog = ins.prog
    if name not in prog.functions.values():
        return lambda st, sel: st.ret[name][sel]
    back: dict[int, Moves] = {}  # the indirect calls that can reach name -> the copies of its return values
    for i, code in enumerate(prog.code):
        if code.opcode.split(".")[0] == "call" and not (c := call_of(code)).direct and name in callees(prog, i):
            moves = _moves(prog, prog.owner[i], c, name)
            back[i] = moves[1] if not isinstance(moves, str) else []

    def run(st, sel):
        lanes = np.arange(st.n)[sel]
        sites = st.site[name][lanes]
        for s in np.unique(sites[sites >= 0]):
            _copy(st, back[int(s)], lanes[sites == s])
        st.site[name][sel] = -1
        return st.ret[name][sel]
    return run


def exit(ins: Inst) -> Op:
    def run(st, sel):
        st.status[sel] = EXIT
        return STOP
    return run


def trap(ins: Inst) -> Op:
    what = ins.base

    def run(st, sel):
        raise Trap(int(np.arange(st.n)[sel][0]), what)
    return run


brkpt = trap


def _nothing(ins: Inst) -> Op:
    return lambda st, sel: None


membar = fence = nanosleep = pmevent = _nothing


def bar(ins: Inst) -> Op:
    """bar.sync / barrier.sync / bar.red: the lanes wait (status BAR) until the block's lanes all arrive (or the
    count operand's number); the executor releases them (release below)."""
    if ins.has("cluster"):
        return _cluster_barrier(ins)
    if ins.has("arrive"):
        raise ins.o.error("bar.arrive is not supported")
    if ins.has("warp"):  # bar.warp.sync: the warp's lanes are together already
        return _nothing(ins)
    red = next((m for m in ins.mods if m in ("popc", "and", "or")), None)
    first = 1 if red else 0
    ident = ins.o.get(ins.ops[first], "u32")
    count = ins.o.get(ins.ops[first + 1], "u32") if len(ins.ops) > first + 1 + (red is not None) else None
    pred = ins.o.get(ins.ops[-1], "pred") if red else None
    dst = ins.dst("u32" if red == "popc" else "pred") if red else None
    site = ins.index

    def run(st, sel):
        st.status[sel] = BAR
        st.pc[sel] = st.p + 1
        st.bar_site[sel] = site
        st.bar_id[sel] = np.asarray(ident(st, sel)).astype(np.int64) & 15
        st.bar_count[sel] = np.asarray(count(st, sel)).astype(np.int64) if count else 0
        if red:
            st.bar_value[sel] = pred(st, sel)
            st.bar_red[site] = (red, dst)
        return STOP
    return run


barrier = bar


def _cluster_barrier(ins: Inst) -> Op:
    """barrier.cluster.arrive counts the thread's arrivals; barrier.cluster.wait waits (status BAR) until every
    thread of the cluster that has not exited has arrived as often (release below)."""
    if ins.has("arrive"):
        def arrive(st, sel):
            st.cluster_phase[sel] += 1
        return arrive
    if not ins.has("wait"):
        raise ins.o.error("barrier.cluster is .arrive or .wait")
    site = ins.index

    def wait(st, sel):
        st.status[sel] = BAR
        st.pc[sel] = st.p + 1
        st.bar_site[sel] = site
        st.bar_id[sel] = CLUSTER_BARRIER
        return STOP
    return wait


def _release_cluster(st, waiting: np.ndarray) -> bool:
    at = waiting & (st.bar_id == CLUSTER_BARRIER)
    if not at.any():
        return False
    live = st.status != EXIT
    cluster = st.cluster_of_block[st.blk]
    least = np.full(len(st.cluster_rows), np.iinfo(np.int64).max, np.int64)
    np.minimum.at(least, cluster[live], st.cluster_phase[live])
    go = at & (st.cluster_phase <= least[cluster])
    st.status[go] = RUN
    return bool(go.any())


def release(st) -> bool:
    """Release every barrier all of whose lanes have arrived; True when some did."""
    waiting = st.status == BAR
    if not waiting.any():
        return False
    live = np.bincount(st.blk[st.status != EXIT], minlength=st.blocks)
    released = _release_cluster(st, waiting)
    for ident in np.unique(st.bar_id[waiting & (st.bar_id != CLUSTER_BARRIER)]):
        at = waiting & (st.bar_id == ident)
        arrived = np.bincount(st.blk[at], minlength=st.blocks)
        want = live.copy()
        counted = at & (st.bar_count > 0)
        if counted.any():
            want[st.blk[counted]] = st.bar_count[counted]
        done = (arrived > 0) & (arrived >= want)
        if not done.any():
            continue
        lanes = np.flatnonzero(at & done[st.blk])
        for site in np.unique(st.bar_site[lanes]):
            if site in st.bar_red:
                kind, dst = st.bar_red[site]
                group = lanes[st.bar_site[lanes] == site]
                v = st.bar_value[lanes]
                per = np.bincount(st.blk[lanes], weights=v, minlength=st.blocks).astype(np.int64)
                n = np.bincount(st.blk[lanes], minlength=st.blocks)
                value = {"popc": per, "and": per == n, "or": per > 0}[kind][st.blk[group]]
                dst(st, group, value.astype(np.uint32) if kind == "popc" else value)
        st.status[lanes] = 0
        released = True
    return released


def _warp_lanes(st, sel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the selected lanes, their batch-wide warps, the bit of each in its warp)"""
    lanes = np.arange(st.n)[sel]
    return lanes, st.warp[lanes], np.uint32(1) << st.laneid[lanes].astype(np.uint32)


def _active(st, warps: np.ndarray, bits: np.ndarray) -> np.ndarray:
    """Per batch-wide warp: the mask of its lanes executing now."""
    act = np.zeros(st.n // 1 + 1, np.uint32)
    np.bitwise_or.at(act, warps, bits)
    return act


def activemask(ins: Inst) -> Op:
    dst = ins.dst("b32")

    def run(st, sel):
        lanes, warps, bits = _warp_lanes(st, sel)
        dst(st, sel, _active(st, warps, bits)[warps])
    return run


def shfl(ins: Inst) -> Op:
    mode = next(m for m in ins.mods if m in ("up", "down", "bfly", "idx"))
    first = ins.ops[0]
    d = ins.o.set(first.first if isinstance(first, ptx.Pair) else first, "b32")
    p = ins.o.set(first.second, "pred") if isinstance(first, ptx.Pair) else None
    a = ins.o.get(ins.ops[1], "b32")
    b, c = (ins.o.get(x, "u32") for x in ins.ops[2:4])

    def run(st, sel):
        lanes = np.arange(st.n)[sel]
        lane = st.laneid[lanes].astype(np.int64)
        bval = np.asarray(b(st, sel)).astype(np.int64) & 31
        cv = np.asarray(c(st, sel)).astype(np.int64)
        cval, mask = cv & 31, (cv >> 8) & 31
        max_lane = (lane & mask) | (cval & ~mask)
        min_lane = lane & mask
        j = {"up": lambda: lane - bval, "down": lambda: lane + bval, "bfly": lambda: lane ^ bval,
             "idx": lambda: min_lane | (bval & ~mask)}[mode]()
        ok = (j >= max_lane) if mode == "up" else (j <= max_lane)
        j = np.where(ok, j, lane)
        src = lanes - lane + j
        src = np.where((src < st.n) & (st.blk[np.minimum(src, st.n - 1)] == st.blk[lanes]), src, lanes)
        values = np.broadcast_to(np.asarray(a(st, src)), (len(lanes),))
        d(st, sel, values)
        if p:
            p(st, sel, ok)
    return run


def vote(ins: Inst) -> Op:
    mode = next(m for m in ins.mods if m in ("all", "any", "uni", "ballot"))
    pred = ins.o.get(ins.ops[1], "pred")
    member = ins.o.get(ins.ops[2], "u32") if len(ins.ops) > 2 else (lambda st, sel: np.uint32(0xFFFFFFFF))
    dst = ins.dst("b32" if mode == "ballot" else "pred")

    def run(st, sel):
        lanes, warps, bits = _warp_lanes(st, sel)
        v = np.broadcast_to(np.asarray(pred(st, sel)), (len(lanes),))
        act = _active(st, warps, bits)
        ballot = np.zeros_like(act)
        np.bitwise_or.at(ballot, warps, np.where(v, bits, np.uint32(0)))
        m = np.asarray(member(st, sel)).astype(np.uint32) & act[warps]
        mine = ballot[warps] & m
        out = {"ballot": lambda: ballot[warps] & np.asarray(member(st, sel)).astype(np.uint32),
               "any": lambda: mine != 0, "all": lambda: mine == m,
               "uni": lambda: (mine == 0) | (mine == m)}[mode]()
        dst(st, sel, out)
    return run


def match(ins: Inst) -> Op:
    kind = "all" if ins.has("all") else "any"
    t = ins.t
    first = ins.ops[0]
    d = ins.o.set(first.first if isinstance(first, ptx.Pair) else first, "b32")
    p = ins.o.set(first.second, "pred") if isinstance(first, ptx.Pair) else None
    a = ins.o.get(ins.ops[1], t)
    member = ins.o.get(ins.ops[2], "u32")

    def run(st, sel):
        lanes, warps, bits = _warp_lanes(st, sel)
        v = np.broadcast_to(np.asarray(a(st, sel)).astype(NP[t]), (len(lanes),))
        m = np.asarray(member(st, sel)).astype(np.uint32) & _active(st, warps, bits)[warps]
        full = np.zeros(st.n + 1, NP[t])
        full[lanes] = v
        present = np.zeros(st.n + 1, bool)
        present[lanes] = True
        same = np.zeros(len(lanes), np.uint32)
        base = lanes - st.laneid[lanes].astype(np.int64)
        for k in range(WARP):
            other = np.minimum(base + k, st.n)
            hit = present[other] & (st.warp[np.minimum(other, st.n - 1)] == warps) & (full[other] == v)
            same |= np.where(hit, np.uint32(1 << k), np.uint32(0))
        same &= m
        if kind == "any":
            d(st, sel, same)
            return
        equal = same == m
        d(st, sel, np.where(equal, m, np.uint32(0)))
        if p:
            p(st, sel, equal)
    return run


def redux(ins: Inst) -> Op:
    op = next(m for m in ins.mods if m in ("add", "min", "max", "and", "or", "xor"))
    t = ins.t
    a = ins.o.get(ins.ops[1], t)  # membermask names the lanes that execute it together: those selected
    dst = ins.dst(t)
    ufunc = {"add": np.add, "min": np.minimum, "max": np.maximum, "and": np.bitwise_and, "or": np.bitwise_or,
             "xor": np.bitwise_xor}[op]
    dt = NP[t]
    start = {"add": 0, "min": np.iinfo(dt).max, "max": np.iinfo(dt).min, "and": np.iinfo(dt).max, "or": 0,
             "xor": 0}[op]

    def run(st, sel):
        lanes, warps, bits = _warp_lanes(st, sel)
        v = np.broadcast_to(np.asarray(a(st, sel)).astype(dt), (len(lanes),))
        acc = np.full(st.n + 1, start, dt)
        ufunc.at(acc, warps, v)
        dst(st, sel, acc[warps])
    return run
