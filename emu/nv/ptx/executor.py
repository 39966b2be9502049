"""Runs a linked kernel over a batch of blocks: SIMT over numpy arrays, the lanes at one instruction running
together.

The lanes at the instruction first in the program's reverse post-order (Program.order) execute as one step; while
they are all the lanes that can run, they stay together and the PC is one number (the fast path). A branch that
splits them sends each lane its own way, and the earliest instruction in that order runs first again, so lanes
that reach a join early (an if's end, a loop's latch) wait there for the others. Lanes at a barrier wait (status
BAR) until their block's lanes have all arrived. An instruction is compiled from the semantics table when it first
runs.
"""

from __future__ import annotations

import os
import sys

import numpy as np

from usergpu.emu.memory import MemoryFault
from usergpu.emu.nv.ptx import semantics
from usergpu.emu.nv.ptx.control import Trap, release
from usergpu.emu.nv.ptx.operands import storage
from usergpu.emu.nv.ptx.program import Program
from usergpu.emu.nv.ptx.state import BAR, RUN, LaneFault, State
from usergpu.errors import GPUFault, GPUHang

DEFAULT_BUDGET = 50_000_000  # instruction steps per batch of blocks


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
            self.guards.append((place.name, storage(prog.registers[place.name]), ins.guard.negate))

    def op(self, p: int):
        op = self.ops[p]
        if op is None:
            op = self.ops[p] = semantics.build(self.prog, p)
        return op


def _where(st: State, lane: int, ins) -> str:
    b = tuple(int(x) for x in st.ctaid[:, lane])
    t = tuple(int(x) for x in st.tid[:, lane])
    return f"block {b}, thread {t}, line {ins.line}: {ins.text}"


def execute(c: Compiled, st: State, budget: int = DEFAULT_BUDGET, trace: bool | None = None) -> None:
    prog, kernel = c.prog, c.prog.kernel.name
    trace = bool(os.environ.get("USERGPU_TRACE")) if trace is None else trace
    everyone = np.arange(st.n)
    order = prog.order
    while True:
        runnable = np.flatnonzero(st.status == RUN)
        if not len(runnable):
            if release(st):
                continue
            waiting = np.flatnonzero(st.status == BAR)
            if len(waiting):
                lane = int(waiting[0])
                raise GPUHang(f"a barrier never completes: {_where(st, lane, prog.code[st.bar_site[lane]])} waits "
                              "for threads that exited or wait at another barrier", kernel)
            return
        pcs = st.pc[runnable]
        p = int(pcs[np.argmin(order[pcs])])
        at = pcs == p
        here = everyone if len(runnable) == st.n and at.all() else runnable[at]
        whole = len(here) == len(runnable)
        sel = slice(None) if len(here) == st.n else here
        while True:
            st.steps += 1
            st.lane_steps += len(here)
            if st.steps > budget:
                raise GPUHang(f"ran {budget} instruction steps without ending (line {prog.code[p].line}: "
                              f"{prog.code[p].text})", kernel, "raise the budget (budget= of usergpu.emu.nv.launch)")
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
                        p += 1
                        continue
                    st.pc[here] = p + 1
                    break
                if not g.all():
                    sub, rest = here[g], here[~g]
            try:
                res = c.op(p)(st, sub)
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
            if res is None and rest is None:
                if whole:
                    p += 1
                    continue
                st.pc[here] = p + 1
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
            st.pc[rest] = p + 1
            if res is None:
                st.pc[sub] = p + 1
            elif not (isinstance(res, int) and res == semantics.STOP):
                st.pc[sub] = res
            break
