"""The native backend's executor: the reference's State run by the kernel's compiled C (codegen.py, warp.h), a warp
at a time. The C works on the State's own arrays (registers, PCs and statuses, shared, local and param memory, GPU
memory's host bytes), so an instruction the C hands back runs on the reference for that warp's lanes
(executor.step) and the C goes on from there; barriers the C cannot release go to the reference's release; hangs
and time slices come back as return codes and leave with the reference's errors."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from usergpu.emu.native import build, point_at_mappings, say_once
from usergpu.emu.nv.ptx import executor as reference
from usergpu.emu.nv.ptx.native import codegen
from usergpu.emu.nv.ptx.operands import storage
from usergpu.emu.nv.ptx.state import RUN, WARP, State

RC_OK, RC_DONE, RC_FALLBACK, RC_HANG, RC_QUOTA, RC_STUCK = range(6)
QUOTA = 1 << 16  # warp steps between looks at the clock when a run is time-sliced
HERE = Path(__file__).parent


def _key(c: reference.Compiled, only: frozenset[int] | None, flags: tuple[str, ...]) -> str:
    """The kernel's name in the cache: its linked instructions, places, registers and order (and the instructions
    translated, where not all are), and how it is built."""
    prog = c.prog
    text = repr((prog.kernel.name, prog.code, prog.owner, sorted(prog.places.items()), sorted(prog.registers.items()),
                 prog.order.tolist(), c.next, sorted(only) if only is not None else None, flags))
    return build.digest((HERE,), text.encode())


def _build(c: reference.Compiled, only: frozenset[int] | None, flags: tuple[str, ...]) -> object:
    return build.load(_key(c, only, flags), lambda: codegen.Emitter(c.prog, c.order, c.next, only).source(),
                      codegen.DECLS, HERE, flags)


def library(c: reference.Compiled, only: frozenset[int] | None = None) -> object:
    """The kernel's compiled C: kept on the Compiled, else its optimised build from the cache, else a quick build
    (found or made now), which tier_up replaces once the kernel has run long enough. only: the instructions
    translated (None: all; the others run on the reference; a quick build, kept so), which replaces the kept one."""
    lib = getattr(c, "native", None)
    if lib is None or only is not None:
        if only is None and build.cached(_key(c, None, build.FLAGS)):
            lib, c.optimised = _build(c, None, build.FLAGS), True
        else:
            lib, c.optimised = _build(c, only, build.QUICK), only is not None
        c.native, c.ran, c.pending = lib, 0, None
    return lib


TIER_UP = 1 << 22  # lane-instructions a kernel runs on its quick build before its optimised one is made
# the optimised builds, one at a time beside the emulator (clang-22 runs while the quick build runs, the GIL let go)
_OPTIMISER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="usergpu-native-O2")


def settle() -> None:
    """Wait for the optimised builds under way (a bench's warm figures are theirs)."""
    _OPTIMISER.submit(lambda: None).result()  # one worker: done when every build before it is


def tier_up(c: reference.Compiled, ran: int) -> None:
    """Count ran more lane-instructions of c; past TIER_UP on its quick build, start its optimised build in the
    background, and run that once it is made (kernels that run little never pay for it; none waits for it)."""
    if c.optimised:
        return
    if c.pending is not None:
        if c.pending.done():
            c.native, c.optimised = c.pending.result(), True
        return
    c.ran += ran
    if c.ran > TIER_UP:
        c.pending = _OPTIMISER.submit(_build, c, None, build.FLAGS)


class View:
    """The C's view of a State's arrays, kept with it across State.renew, and the scratch that holds the registers
    of a block's warps while they run (codegen.scratch, warp.h's take). The C clears a warp's registers as the warp
    starts (State.warp_cleared), so a renewed batch's need no clearing before."""

    def __init__(self, c: reference.Compiled, st: State):
        ffi = build.ffi(codegen.DECLS)
        names = codegen.registers(c.prog)
        types = codegen.register_types(c.prog)
        bufs = [st.register(key, storage(types[key])) for key in names]
        st.warp_cleared = frozenset(names)
        self.cst = cst = ffi.new("State *")
        table = ffi.new("void *[]", [ffi.from_buffer(buf) for buf in bufs] or [ffi.NULL])
        wpb = -(-st.per_block // WARP)
        self.wsteps = st.wsteps = np.zeros(st.blocks * wpb, np.int64)
        gaddr = np.asarray([st.globals[name] for name in codegen.globals_of(c.prog)] or [0], np.uint64)
        room = np.zeros(wpb * codegen.scratch(c.prog)[1] or 1, np.uint8)
        self.owner = np.full(wpb, -1, np.int64)
        self.keep = [bufs, table, gaddr, room]
        cst.regs, cst.scratch = table, ffi.from_buffer("uint8_t[]", room)
        cst.owner = ffi.from_buffer("int64_t[]", self.owner)
        for name, arr, ctype in (("pc", st.pc, "int64_t[]"), ("status", st.status, "int8_t[]"),
                                 ("wsteps", self.wsteps, "int64_t[]"), ("issued", st.issued, "int64_t[]"),
                                 ("tid", st.tid, "uint32_t[]"),
                                 ("shared", st.shared, "uint8_t[]"), ("local", st.local, "uint8_t[]"),
                                 ("param", st.param, "uint8_t[]"), ("bar_site", st.bar_site, "int64_t[]"),
                                 ("bar_id", st.bar_id, "int64_t[]"), ("bar_count", st.bar_count, "int64_t[]"),
                                 ("gaddr", gaddr, "uint64_t[]")):
            setattr(cst, name, ffi.from_buffer(ctype, arr))
        cst.n, cst.per_block, cst.wpb, cst.nblocks = st.n, st.per_block, wpb, st.blocks
        cst.ntid, cst.nctaid = list(st.ntid), list(st.nctaid)
        cst.shared_size, cst.local_size, cst.param_size = st.shared_size, c.prog.local_size, max(c.prog.param_size, 1)
        point_at_mappings(cst, st.mem, ffi)
        self.renewed(st)

    def renewed(self, st: State) -> None:
        """Pointed at the State's next batch (renewed in place: only %ctaid is another array)."""
        self.cst.ctaid = build.ffi(codegen.DECLS).from_buffer("uint32_t[]", st.ctaid)
        self.wsteps.fill(0)
        self.owner.fill(-1)


def execute(c: reference.Compiled, st: State, budget: int = reference.DEFAULT_BUDGET, trace: bool | None = None,
            quota: int | None = None, deadline: float | None = None) -> bool:
    """reference.execute's contract, run by the C: True when the lanes have ended, False at quota (st.steps) or
    deadline (execute again goes on). The budget is a warp's steps (the reference's is a batch's, which run as one
    warp runs when the batch's lanes stay together)."""
    if reference.traced(trace):
        say_once("a traced launch runs on the numpy reference backend (slower than native)")
        return reference.execute(c, st, budget, True, quota, deadline)
    library(c)
    if st.native is None:
        st.native = View(c, st)
    cst = st.native.cst
    cst.budget = budget
    while True:
        left = (quota - st.steps) if quota is not None else 1 << 62
        cst.quota = min(left, QUOTA) if deadline is not None or not c.optimised else left
        cst.steps, cst.lane_steps = st.steps, st.lane_steps
        rc = c.native.run(cst)
        tier_up(c, int(cst.lane_steps) - st.lane_steps)
        st.steps, st.lane_steps = int(cst.steps), int(cst.lane_steps)
        if rc == RC_DONE:
            return True
        if rc == RC_STUCK:
            if not reference.idle(c, st):
                return True
            continue
        p = int(cst.at)
        st.p = min(p, len(c.prog.code) - 1) if p >= 0 else 0
        if rc == RC_HANG:
            raise reference.over_budget(c, budget, p)
        if rc == RC_FALLBACK:
            _fallback(c, st, int(cst.warp), p, budget)
        if quota is not None and st.steps >= quota or deadline is not None and time.monotonic() >= deadline:
            return False


def _fallback(c: reference.Compiled, st: State, w: int, p: int, budget: int) -> None:
    """The lanes of warp w at p (all there that can run) run instruction p on the reference."""
    wpb = len(st.wsteps) // st.blocks
    lo = w // wpb * st.per_block + w % wpb * WARP
    hi = min(lo + WARP, (w // wpb + 1) * st.per_block)
    lanes = np.arange(lo, hi)
    lanes = lanes[(st.status[lo:hi] == RUN) & (st.pc[lo:hi] == p)]
    if not 0 <= p < len(c.prog.code):
        reference.pick(c, st, st.pc[lanes], lanes)  # raises: off a function's end, or outside the program
    if st.wsteps[w] >= budget:
        raise reference.over_budget(c, budget, p)
    st.wsteps[w] += 1
    reference.step(c, st, p, lanes)
