"""Runs a linked kernel over a batch of blocks: SIMT over numpy arrays, the lanes at one instruction running
together.

The lanes at the instruction first in the program's reverse post-order (Program.order) execute as one step; while
they are all the lanes that can run, they stay together and the PC is one number (the fast path). A branch that
splits them sends each lane its own way, and the earliest instruction in that order runs first again, so lanes
that reach a join early (an if's end, a loop's latch) wait there for the others. Lanes at a barrier wait (status
BAR) until their block's lanes have all arrived. An instruction is compiled from the semantics table when it first
runs.

A run can stop after a slice (a step quota, or a deadline looked at every CHECK_STEPS steps) and go on later from
the same State: the fast path's PC is written back to the lanes. Each function's last instruction falls through to a
PC past the code (one per function, first in the order), so a path without ret or exit is an error naming its line.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from usergpu.emu.memory import MemoryFault
from usergpu.emu.nv.ptx import semantics
from usergpu.emu.nv.ptx.control import Trap, release
from usergpu.emu.nv.ptx.operands import storage
from usergpu.emu.nv.ptx.program import Program, fall_through
from usergpu.emu.nv.ptx.state import BAR, RUN, WARP, LaneFault, State
from usergpu.errors import CodeObjectError, GPUFault, GPUHang

DEFAULT_BUDGET = 50_000_000  # instruction steps per batch of blocks
CHECK_STEPS = 256  # steps between looks at a slice's deadline (a step takes microseconds: a look costs ~nothing)


class Compiled:
    """A program's instructions as functions (built on first use) and their guards."""

    def __init__(self, prog: Program):
        self.prog = prog
        self.ops: list = [None] * len(prog.code)
        self.guards = []
        for ins, fn in zip(prog.code, prog.owner, strict=True):
            if ins.guard is None:
                self.guards.append(None)
                continue
            place = prog.place(fn, ins.guard.name, ins.line)
            if place.space != "reg":
                raise CodeObjectError(f"ptx: line {ins.line}: the guard {ins.guard.name} is a {place.space}, not a "
                                      f"predicate register ({ins.text})")
            self.guards.append((place.name, storage(prog.registers[place.name]), ins.guard.negate))
        # what follows each instruction (fall_through); the PCs past the code come first in the order, so a lane
        # falling off a function's end is reported at once
        self.end = len(prog.code)
        self.functions = list(prog.entry)
        self.next = [fall_through(prog, i) for i in range(self.end)]
        self.order = np.concatenate([prog.order, np.full(len(self.functions), -1, np.int64)])

    def op(self, p: int):
        op = self.ops[p]
        if op is None:
            op = self.ops[p] = semantics.build(self.prog, p)
        return op


def _where(st: State, lane: int, ins) -> str:
    b = tuple(int(x) for x in st.ctaid[:, lane])
    t = tuple(int(x) for x in st.tid[:, lane])
    return f"block {b}, thread {t}, line {ins.line}: {ins.text}"


def _fell_off(c: Compiled, st: State, pc: int, lanes: np.ndarray) -> CodeObjectError:
    """Lanes past a function's last instruction: its code has a path with no ret or exit."""
    fn = c.prog.module.functions[c.functions[pc - c.end]]
    last = fn.body[-1] if fn.body else None
    at = f"line {last.line}: {last.text}" if last else f"line {fn.line}: its body has no instructions"
    b = tuple(int(x) for x in st.ctaid[:, lanes[0]])
    t = tuple(int(x) for x in st.tid[:, lanes[0]])
    return CodeObjectError(f"ptx: kernel {c.prog.kernel.name}: block {b}, thread {t} runs off the end of function "
                           f"{fn.name} after {at} (each path of a PTX function ends in ret or exit)")


def pick(c: Compiled, st: State, pcs: np.ndarray, runnable: np.ndarray) -> int:
    """The PC first in the order among the runnable lanes' (one past a function's end, or outside the program,
    is an error)."""
    try:
        p = int(pcs[np.argmin(c.order[pcs])])
    except IndexError:
        p = int(pcs.max())
    if 0 <= p < c.end:
        return p
    lanes = runnable[pcs == p]
    if c.end <= p < len(c.order):
        raise _fell_off(c, st, p, lanes)
    raise CodeObjectError(f"ptx: kernel {c.prog.kernel.name}: {_where(st, int(lanes[0]), c.prog.code[st.p])} sent "
                          f"the thread to PC {p}, outside the program's {c.end} instructions")


def traced(trace: bool | None) -> bool:
    """A launch is traced when asked, or by USERGPU_TRACE."""
    return bool(os.environ.get("USERGPU_TRACE")) if trace is None else trace


def idle(c: Compiled, st: State) -> bool:
    """No lane can run: True when a barrier was released (run on), False when every lane has ended; a GPUHang when
    lanes wait at a barrier that never completes."""
    if release(st):
        return True
    waiting = np.flatnonzero(st.status == BAR)
    if len(waiting):
        lane = int(waiting[0])
        raise GPUHang(f"a barrier never completes: {_where(st, lane, c.prog.code[st.bar_site[lane]])} waits for "
                      "threads that exited or wait at another barrier", c.prog.kernel.name)
    return False


def over_budget(c: Compiled, budget: int, p: int) -> GPUHang:
    ins = c.prog.code[p]
    return GPUHang(f"ran {budget} instruction steps without ending (line {ins.line}: {ins.text})", c.prog.kernel.name,
                   "raise the budget (budget= of usergpu.emu.nv.launch)")


def run_op(c: Compiled, st: State, p: int, sub, here: np.ndarray):
    """Instruction p on the lanes sub (of here, those at it), its faults raised as GPUFaults naming the lane."""
    ins, kernel = c.prog.code[p], c.prog.kernel.name
    try:
        return c.op(p)(st, sub)
    except LaneFault as e:
        raise GPUFault(e.address, e.access, kernel, int(st.warpid[e.lane]), ins.line, e.why,
                       where=_where(st, e.lane, ins)) from None
    except MemoryFault as e:
        lane = int(here[0])
        raise GPUFault(e.address, e.access, kernel, int(st.warpid[lane]), ins.line, e.why,
                       where=_where(st, lane, ins)) from None
    except Trap as e:
        raise GPUFault(0, e.what, kernel, int(st.warpid[e.lane]), ins.line, "the kernel executed trap",
                       where=_where(st, e.lane, ins)) from None


def step(c: Compiled, st: State, p: int, here: np.ndarray) -> None:
    """One step of instruction p by the lanes here (all at p): guard, operation, and each lane's next PC."""
    st.steps += 1
    st.lane_steps += len(here)
    st.issued[p] += -(-len(here) // WARP)  # a step runs the lanes of whole warps where they keep together
    st.p = p
    sub, rest = here, None
    guard = c.guards[p]
    if guard is not None:
        key, dt, negate = guard
        g = st.register(key, dt)[here] != negate
        sub, rest = here[g], here[~g]
        if not len(sub):
            st.pc[here] = c.next[p]
            return
    res = run_op(c, st, p, sub, here)
    if rest is not None:
        st.pc[rest] = c.next[p]
    if res is None:
        st.pc[sub] = c.next[p]
    elif not (isinstance(res, int) and res == semantics.STOP):
        st.pc[sub] = res


def _limit(steps: int, budget: int, quota: int | None, deadline: float | None) -> int:
    """The step count at which execute next looks up from the fast path: the budget's, the quota's, or the next
    look at the deadline."""
    return min(budget, quota if quota is not None else budget, steps + CHECK_STEPS if deadline is not None else budget)


def execute(c: Compiled, st: State, budget: int = DEFAULT_BUDGET, trace: bool | None = None,
            quota: int | None = None, deadline: float | None = None) -> bool:
    """Run the State's lanes until they end (True), or until st.steps reaches quota or time.monotonic() passes
    deadline (False: execute(c, st, ...) again goes on exactly where it stopped). GPUHang past budget steps."""
    prog, kernel = c.prog, c.prog.kernel.name
    trace = traced(trace)
    everyone = np.arange(st.n)
    end = c.end
    limit = _limit(st.steps, budget, quota, deadline)
    while True:
        runnable = np.flatnonzero(st.status == RUN)
        if not len(runnable):
            if idle(c, st):
                continue
            return True
        pcs = st.pc[runnable]
        p = pick(c, st, pcs, runnable)
        at = pcs == p
        here = everyone if len(runnable) == st.n and at.all() else runnable[at]
        whole = len(here) == len(runnable)
        sel = slice(None) if len(here) == st.n else here
        while True:
            if p >= end:  # off a function's end: the outer loop reports it
                st.pc[here] = p
                break
            if st.steps >= limit:
                if st.steps >= budget:
                    raise over_budget(c, budget, p)
                if quota is not None and st.steps >= quota or deadline is not None and time.monotonic() >= deadline:
                    st.pc[here] = p
                    return False
                limit = _limit(st.steps, budget, quota, deadline)
            st.steps += 1
            st.lane_steps += len(here)
            st.issued[p] += -(-len(here) // WARP)
            st.p = p
            ins = prog.code[p]
            if trace:
                print(f"[{kernel}] line {ins.line}: {ins.text}  ({len(here)} lanes)", file=sys.stderr)
            sub, rest = sel, None
            guard = c.guards[p]
            if guard is not None:
                key, dt, negate = guard
                g = st.register(key, dt)[sel] != negate
                if not g.any():  # no lane executes it: all go on to the next instruction
                    if whole:
                        p = c.next[p]
                        continue
                    st.pc[here] = c.next[p]
                    break
                if not g.all():
                    sub, rest = here[g], here[~g]
            res = run_op(c, st, p, sub, here)
            if res is None and rest is None:
                if whole:
                    p = c.next[p]
                    continue
                st.pc[here] = c.next[p]
                break
            if isinstance(res, int) and res >= 0 and rest is None:
                if whole:
                    p = res
                    continue
                st.pc[here] = res
                break
            if rest is None:  # every lane took res: an array of targets, or STOP (the op set their state)
                if not (isinstance(res, int) and res == semantics.STOP):
                    st.pc[here] = res
                break
            st.pc[rest] = c.next[p]
            if res is None:
                st.pc[sub] = c.next[p]
            elif not (isinstance(res, int) and res == semantics.STOP):
                st.pc[sub] = res
            break
