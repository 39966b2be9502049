"""C for control flow and warp-level instructions: bra, exit (and a kernel's ret), the plain bar.sync/barrier.sync,
the instructions that do nothing here (membar, fence, nanosleep, bar.warp.sync, pmevent), and shfl.sync,
vote.sync and activemask over the lanes executing together (g). Calls, returns from device functions, brx.idx,
barriers with a count or a reduction and cluster barriers run on the reference.

Each returns the instruction's whole C (not per lane): it may change the mask and leave by its own way; `after`
is the C of the fall-through tail."""

from __future__ import annotations

from usergpu.emu.nv.ptx.native.coperands import COperands, Untranslatable
from usergpu.emu.nv.ptx.semantics import Inst
from usergpu.isa.nv import ptx


def go(target: int, order: int) -> str:
    """Continue at target with the lanes of m: straight there while no waiting lane comes first, else merge."""
    return f"pc = {target}; if ({order} < wmin) goto I{target}; goto merge;"


def bra(ins: Inst, o: COperands, after: str, order) -> str:
    """A branch; where it splits the lanes of m, the half at the instruction first in the order runs on (straight
    there while no waiting lane comes before it) and the other half waits, as the reference schedules them."""
    place = o.prog.place(o.fn, ins.ops[0].name, ins.ins.line) if isinstance(ins.ops[0], ptx.Sym) else None
    if place is None or place.space != "label":
        raise Untranslatable("bra to a non-label")
    target, nxt = place.address, ins.index + 1
    taken = go(target, int(order[target]))
    if ins.ins.guard is None or target == nxt:
        return taken
    if nxt >= len(o.prog.code):  # the fall-through is off the function's end: the scheduler reports it
        return (f"if (g == m) {{ {taken} }} if (g) {{ LANES(g) pcs[l] = {target}; LANES(m & ~g) pcs[l] = {nxt}; "
                f"goto schedule; }} {after}")
    (first, lanes), (then, wait) = sorted([(target, "g"), (nxt, "m & ~g")], key=lambda x: int(order[x[0]]))
    split = (f"LANES({wait}) pcs[l] = {then}; if ({int(order[then])} < wmin) wmin = {int(order[then])}; "
             f"m = {lanes}; {go(first, int(order[first]))}")
    return f"if (g == m) {{ {taken} }} if (g) {{ {split} }} {after}"


def _stop(status: str, extra: str, after: str) -> str:
    """The lanes of g stop (exit, or wait at a barrier); the rest of m go on. Where none goes on and none waits
    (wmin), the warp waits at the barrier: it leaves at once (the scheduler would find no lane to run)."""
    none = "if (wmin == INT64_MAX) { rc = RC_OK; goto out; } " if status == "BAR" else ""
    return f"LANES(g) {{ stat[l] = {status}; {extra} }} m &= ~g; if (!m) {{ {none}goto schedule; }} {after}"


def exit(ins: Inst, o: COperands, after: str) -> str:
    return _stop("EXIT", "", after)


def bar(ins: Inst, o: COperands, after: str) -> str:
    """bar.sync a / barrier.sync a: the lanes wait (status BAR) for the block's (release in warp.h)."""
    if ins.has("cluster", "arrive", "red", "popc", "and", "or") or len(ins.ops) != 1:
        raise Untranslatable(ins.ins.opcode)
    if ins.has("warp"):
        return after
    ident = o.get(ins.ops[0], "u32")
    p = ins.index
    return _stop("BAR", f"pcs[l] = {p + 1}; bsite[l] = {p}; bid[l] = {ident} & 15; bcount[l] = 0;", after)


def nothing(ins: Inst, o: COperands, after: str) -> str:
    return after


def shfl(ins: Inst, o: COperands, after: str) -> str:
    """shfl.sync: each lane reads lane j's value of a (j by the mode, clamped as the PTX ISA says); a j outside the
    block reads its own."""
    mode = next(m for m in ins.mods if m in ("up", "down", "bfly", "idx"))
    first = ins.ops[0]
    a = o.get(ins.ops[1], "b32").replace("[l]", "[j_]")
    b, c = (o.get(x, "u32") for x in ins.ops[2:4])
    j = {"up": "lane_ - bv_", "down": "lane_ + bv_", "bfly": "lane_ ^ bv_", "idx": "(lane_ & mk_) | (bv_ & ~mk_)"}
    ok = "j_ >= maxl_" if mode == "up" else "j_ <= maxl_"
    d = o.set(first.first if isinstance(first, ptx.Pair) else first, "b32", "v_[l]")
    p = o.set(first.second, "pred", "ok_[l]") if isinstance(first, ptx.Pair) else ""
    return (f"{{ uint32_t v_[32]; _Bool ok_[32]; LANES(g) {{ int64_t lane_ = l, bv_ = {b} & 31, cv_ = {c}; "
            f"int64_t cl_ = cv_ & 31, mk_ = (cv_ >> 8) & 31; int64_t maxl_ = (lane_ & mk_) | (cl_ & ~mk_); "
            f"int64_t j_ = {j[mode]}; ok_[l] = {ok}; if (!ok_[l] || j_ >= cnt) j_ = l; v_[l] = {a}; }} "
            f"LANES(g) {{ {d} {p} }} }} {after}")


def vote(ins: Inst, o: COperands, after: str) -> str:
    mode = next(m for m in ins.mods if m in ("all", "any", "uni", "ballot"))
    pred = o.get(ins.ops[1], "pred")
    member = o.get(ins.ops[2], "u32") if len(ins.ops) > 2 else "0xFFFFFFFFu"
    out = {"ballot": "ballot_ & mem_", "any": "(ballot_ & mm_) != 0", "all": "(ballot_ & mm_) == mm_",
           "uni": "(ballot_ & mm_) == 0 || (ballot_ & mm_) == mm_"}[mode]
    value = o.set(ins.ops[0], "b32" if mode == "ballot" else "pred", out)
    return (f"{{ uint32_t ballot_ = 0; LANES(g) ballot_ |= (uint32_t)({pred}) << l; "
            f"LANES(g) {{ uint32_t mem_ = {member}, mm_ = mem_ & g; (void)mm_; {value} }} }} {after}")


def activemask(ins: Inst, o: COperands, after: str) -> str:
    return f"LANES(g) {{ {o.set(ins.ops[0], 'b32', 'g')} }} {after}"


def ret(ins: Inst, o: COperands, after: str) -> str:
    if ins.fn != o.prog.kernel.name:
        raise Untranslatable("ret from a device function")
    return exit(ins, o, after)


TABLE = {"exit": exit, "ret": ret, "bar": bar, "barrier": bar, "membar": nothing, "fence": nothing,
         "nanosleep": nothing, "pmevent": nothing, "shfl": shfl, "vote": vote, "activemask": activemask}
