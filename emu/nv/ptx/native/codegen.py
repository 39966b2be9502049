"""A linked PTX kernel as C: every instruction of the program (the kernel and the device functions it reaches)
becomes a labelled block of one warp's code, from the same parsed module, the same linked places and the same
reverse post-order as the reference; operands through coperands, ALU forms from emit_alu, memory from emit_memory,
control and warp instructions from emit_control. An instruction none of them has C for becomes a block that hands
the warp's lanes at it to the reference for that one instruction (the same semantics, at its speed), so every
kernel runs, and runs the same.

A basic block: the step count against the limit, then its instructions: a run of each lane's own instructions (Lanes)
is one loop over the lanes of the active mask m, each under its lane's guard; any other instruction works on the
guard's lanes g; loads and stores through a register plus constants are checked together (_prechecks), with the
rest of the block in its slow form where a check fails; the tail goes to the next instruction (straight there
while no waiting lane comes first in the order)."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np

from usergpu.emu.nv.ptx.native import emit_alu, emit_control, emit_memory
from usergpu.emu.nv.ptx.native.coperands import CARRY, COperands, Lanes, Prechecked, Untranslatable
from usergpu.emu.nv.ptx.native.emit_memory import MASK64
from usergpu.emu.nv.ptx.operands import storage
from usergpu.emu.nv.ptx.program import Program
from usergpu.emu.nv.ptx.semantics import Inst
from usergpu.errors import CodeObjectError

# what a kernel's C sees of the emulator's state: the reference backend's arrays (executor.py fills it in)
STATE = """typedef struct {
    void **regs; uint8_t *scratch; int64_t *owner; int64_t *pc; int8_t *status; int64_t *wsteps; int64_t *issued;
    int64_t n; int64_t per_block; int64_t wpb; int64_t nblocks;
    uint32_t *tid; uint32_t *ctaid; int64_t ntid[3]; int64_t nctaid[3];
    uint8_t *shared; int64_t shared_size; uint8_t *local; int64_t local_size; uint8_t *param; int64_t param_size;
    int64_t *bar_site; int64_t *bar_id; int64_t *bar_count; uint64_t *gaddr;
    uint64_t *base; uint64_t *end; uint8_t **host; uint8_t *writable; int64_t nranges; int64_t last;
    int64_t budget; int64_t quota; int64_t steps; int64_t lane_steps; int64_t bi; int64_t warp; int64_t at;
    uint64_t fault_addr; int32_t fault_access; int32_t fault_why; int64_t fault_size;
} State;
"""
DECLS = STATE + "int run(State *st);"
TAIL = "/*TAIL*/"  # where an instruction's C goes on to the next: the tail at a block's end, else nothing
CONTROL = {"bra", "brx", "call", "ret", "exit", "trap", "brkpt", "bar", "barrier"}  # each ends a basic block
ERRORS = (Untranslatable, CodeObjectError, KeyError, IndexError, StopIteration, ValueError, TypeError)


def register_types(prog: Program) -> dict[str, str]:
    """The program's registers and the carry flag, by their PTX types."""
    return {**prog.registers, CARRY: "pred"}


def registers(prog: Program) -> list[str]:
    """The program's registers (and the carry flag) in the order of the C's table (State.regs)."""
    return sorted(register_types(prog))


def scratch(prog: Program) -> tuple[list[int], int]:
    """Where each register's 32 lanes lie in a warp's scratch (State.scratch: the C's registers while a warp runs,
    cache-hot; saved to the State's arrays only when another warp takes the scratch or the C returns, warp.h's
    take), in the order of registers(), and the scratch's size."""
    offsets, at = [], 0
    types = register_types(prog)
    for key in registers(prog):
        offsets.append(at)
        at += -(-32 * storage(types[key]).itemsize // 64) * 64  # each its own cache lines
    return offsets, at


def globals_of(prog: Program) -> list[str]:
    """The module variables in the order of the C's table of their addresses (State.gaddr)."""
    return sorted(prog.globals)


def _whole_warp(copies: list[tuple[str, str | None, int]]) -> str:
    """C copying (or clearing, where the source is None) registers' cnt lanes of size bytes each: a whole warp's
    inline (a call to memcpy would cost more than the copy)."""
    def one(d: str, s: str | None, nbytes: str, inline: bool) -> str:
        if s is None:
            return f"__builtin_memset_inline({d}, 0, {nbytes});" if inline else f"memset({d}, 0, {nbytes});"
        return f"__builtin_memcpy_inline({d}, {s}, {nbytes});" if inline else f"memcpy({d}, {s}, {nbytes});"
    if not copies:
        return ""
    whole = " ".join(one(d, s, str(32 * n), True) for d, s, n in copies)
    part = " ".join(one(d, s, f"cnt * {n}", False) for d, s, n in copies)
    return f"if (cnt == 32) {{ {whole} }} else {{ {part} }}"


WRITES = re.compile(r"\b(r\d+)\[l\] = ")  # a register's write in an instruction's C (COperands.set)


def _text(body: str | Lanes | Prechecked) -> str:
    return body.slow if isinstance(body, Prechecked) else body.code if isinstance(body, Lanes) else body


READS = re.compile(r"\b(r\d+)\b")  # a register named in an instruction's C


def _defined_first(entry: list) -> set[str]:
    """The registers the kernel's entry block (every lane of a warp runs all of it, before anything else) writes,
    unguarded, before any instruction reads them: a warp need not clear them as it starts."""
    defined: set[str] = set()
    read_first: set[str] = set()
    for body in entry:
        if body is None:  # the reference runs it: what it reads and writes is not known here
            break
        text = _text(body)
        writes, reads = WRITES.findall(text), READS.findall(text)
        read_first |= {r for r in set(reads) - defined if reads.count(r) > writes.count(r)}
        if (body.guard == "") if isinstance(body, Lanes) else _text(body).startswith("g = m;"):
            defined |= set(writes) - read_first
    return defined


MAX_CHECKS = 3  # points in a basic block where accesses are checked together (each has its slow rest of the block)


def _prechecks(start: int, bodies: list) -> tuple[list, dict[int, str]]:
    """A basic block's (from instruction start) bodies with each Prechecked access in its fast form, and the C
    checking such accesses together, by instruction: before the first instruction after the last write of their
    register (the block's start where none writes it), every access through the register from there is checked
    for the block's lanes at once (global memory: the distance d<reg>_<at>_ from an address to its host byte); one
    that fails goes to S<at>, the rest of the block in its slow form."""
    spans: dict[tuple[int, str, str], list] = {}  # (at, space, register) -> [lowest offset, highest end, written]
    last: dict[str, int] = {}  # register -> the instruction after its last write so far
    out = []
    for i, body in enumerate(bodies, start):
        at = last.get(body.reg, start) if isinstance(body, Prechecked) else None
        if at is not None and ((at, body.space, body.reg) in spans or len({k[0] for k in spans} | {at}) <= MAX_CHECKS):
            span = spans.setdefault((at, body.space, body.reg), [body.offset, body.offset + body.size, False])
            span[0], span[1] = min(span[0], body.offset), max(span[1], body.offset + body.size)
            span[2] |= body.write
            fast = body.fast
            out.append(replace(fast, code=fast.code.replace(f"d{body.reg}_", f"d{body.reg}_{at}_"))
                       if isinstance(fast, Lanes) else fast.replace(f"d{body.reg}_", f"d{body.reg}_{at}_"))
        else:
            out.append(body.slow if isinstance(body, Prechecked) else body)
        last.update(dict.fromkeys(WRITES.findall(_text(body)), i + 1))
    checks: dict[int, list[str]] = {}
    for (at, space, reg), (low, high, write) in spans.items():
        addr = f"((uint64_t){reg}[l] + {low & MASK64:#x}ull)"
        bad = f"bad{at}_"
        if space == "shared":
            code = (f"LANES(m) {{ uint64_t a_ = {addr}; {bad} |= (a_ >= CLUSTER_SHARED) | "
                    f"(a_ + {high - low} > shared_size_); }}")
        else:
            lo, hi, h, d = (f"{x}{reg}_{at}_" for x in ("lo", "hi", "h", "d"))
            code = (f"uint64_t {lo} = ~0ull, {hi} = 0; LANES(m) {{ uint64_t a_ = {addr}; {lo} = a_ < {lo} ? a_ : {lo}; "
                    f"{hi} = a_ > {hi} ? a_ : {hi}; }} uint8_t *{h} = gmem(st, {lo}, {hi} - {lo} + {high - low}, "
                    f"{int(write)}); {bad} |= !{h}; uintptr_t {d} = (uintptr_t){h} - {lo};")
        checks.setdefault(at, [f"uint64_t {bad} = 0;"]).append(code)
    return out, {at: " ".join(codes) + f" if (bad{at}_) goto S{at};" for at, codes in checks.items()}


def _loop(run: list[Lanes]) -> str:
    """A run of each lane's own instructions as one loop over the lanes of m, each under its lane's guard."""
    return "  RUN_LANES(m) { " + " ".join(f"if ({x.guard}) {{ {x.code} }}" if x.guard else x.code for x in run) + " }"


class Emitter:
    def __init__(self, prog: Program, order: np.ndarray, following: list[int], only: frozenset[int] | None = None):
        """only: the instructions to translate (None: all); the rest run on the reference (lockstep.py bisects
        with it)."""
        self.prog, self.order, self.next, self.only = prog, order, following, only
        self.regs: dict[str, str] = {}
        index = {key: i for i, key in enumerate(registers(prog))}
        self.o = COperands(prog, index, self.regs, globals_of(prog))
        self.plain_bars: list[int] = []
        self.native = 0  # instructions with C of their own
        self.defined: set[str] = set()  # registers a warp need not clear as it starts (blocks() finds them)

    def tail(self, n: int) -> str:
        if n >= len(self.prog.code):  # off a function's end: the reference reports it
            return f"pc = {n}; goto merge;"
        return emit_control.go(n, int(self.order[n]))

    def translate(self, i: int) -> str | None:
        """Instruction i's C (its tail to the next instruction left as TAIL), or None: the reference runs it."""
        if self.only is not None and i not in self.only:
            return None
        ins, fn = self.prog.code[i], self.prog.owner[i]
        try:
            return self.body(Inst(self.prog, fn, ins, i), fn, ins, i)
        except ERRORS:
            return None

    def guard_register(self, ins, fn: str) -> str | None:
        """The C name of the instruction's guard predicate, None for none."""
        if ins.guard is None:
            return None
        name, _ = self.o.at(fn, ins).reg(ins.guard)
        if self.regs[name] != "_Bool":
            raise Untranslatable("a guard that is not a predicate")
        return name

    def lane_guard(self, ins, fn: str) -> str:
        """The guard of a lane as C, "" for none."""
        name = self.guard_register(ins, fn)
        return "" if name is None else f"{'!' if ins.guard.negate else ''}{name}[l]"

    def guard(self, ins, fn: str) -> str:
        """C setting g, the guard's lanes among m."""
        name = self.guard_register(ins, fn)
        return "g = m;" if name is None else f"g = m & {'~' if ins.guard.negate else ''}pmask({name});"

    def body(self, inst: Inst, fn: str, ins, i: int) -> str | Lanes | None:
        o = self.o.at(fn, ins)
        guard = self.guard(ins, fn)
        base = inst.base
        if base == "bra":
            return f"{guard} if (!g) {{ {TAIL} }} {emit_control.bra(inst, o, TAIL, self.order)}"
        if base in emit_control.TABLE:
            code = emit_control.TABLE[base](inst, o, TAIL)
            if base in ("bar", "barrier") and code != TAIL:
                self.plain_bars.append(i)
            return f"{guard} if (!g) {{ {TAIL} }} {code}"
        if base in emit_alu.TABLE:
            return Lanes(emit_alu.TABLE[base](inst, o), self.lane_guard(ins, fn))
        if base not in emit_memory.TABLE:
            return None
        code = emit_memory.TABLE[base](inst, o)
        if isinstance(code, Lanes):
            return Lanes(code.code, self.lane_guard(ins, fn))
        if isinstance(code, Prechecked):
            fast = (Lanes(code.fast.code, self.lane_guard(ins, fn)) if isinstance(code.fast, Lanes) else
                    f"{guard} if (g) {{ {code.fast} }} {TAIL}")
            return replace(code, slow=f"{guard} if (g) {{ {code.slow} }} {TAIL}", fast=fast)
        return f"{guard} if (g) {{ {code} }} {TAIL}"

    def leaders(self, bodies: list[str | None]) -> set[int]:
        """The instructions that begin a basic block of the C: where control can arrive other than from the
        instruction before (a label, a function's entry, after a branch, call, exit or barrier, an instruction the
        reference runs and the one after it, a break in the order)."""
        prog, order = self.prog, self.order
        out = {0, *prog.entry.values(), *(place.address for place in prog.places.values() if place.space == "label")}
        for i in range(1, len(prog.code)):
            before = prog.code[i - 1].opcode.split(".")[0]
            if (bodies[i] is None or bodies[i - 1] is None or before in CONTROL or prog.owner[i] != prog.owner[i - 1]
                    or order[i] != order[i - 1] + 1):
                out.add(i)
        return {i for i in out if i < len(prog.code)}  # (a label after a function's last instruction leads nothing)

    def blocks(self) -> list[str]:
        bodies = [self.translate(i) for i in range(len(self.prog.code))]
        leaders = self.leaders(bodies)
        self.defined = _defined_first(bodies[:min(k for k in leaders if k > 0) if len(leaders) > 1 else len(bodies)])
        out = []
        for start in sorted(leaders):
            if bodies[start] is None:
                out.append(f"I{start}: pc = {start}; goto fallback;")
                continue
            end = next((k for k in range(start + 1, len(bodies)) if k in leaders), len(bodies))
            size = end - start
            head = (f"I{start}: CHECK({start}, {size}) steps += {size}; lsteps += {size} * POPC(m); "
                    f"ISSUE({start}, {size})")
            fast, checks = _prechecks(start, bodies[start:end])
            slow = [b.slow if isinstance(b, Prechecked) else b for b in bodies[start:end]]
            self.native += size
            if not checks:
                out.append("\n".join([head, *self.straight(start, end, slow)]))
                continue
            lines = [head, "  {", *self.straight(start, end, fast, checks), "  }"]
            for at in sorted(checks):  # where a check fails: the rest of the block, each access checking its own
                lines += [f"S{at}: ;", *self.straight(at, end, slow[at - start:])]
            out.append("\n".join(lines))
        return out

    def straight(self, start: int, end: int, bodies: list[str | Lanes], before: dict[int, str] | None = None
                 ) -> list[str]:
        """The C of the instructions [start, end) of a basic block from their bodies (and C to run before some):
        each run of Lanes one loop."""
        lines, run = [], []  # run: each lane's own instructions, one loop over the lanes
        for i, body in zip(range(start, end), bodies, strict=True):
            if before and i in before:
                if run:
                    lines.append(_loop(run))
                    run = []
                lines.append("  " + before[i])
            if isinstance(body, Lanes):
                run.append(body)
                body = TAIL
            elif run:
                lines.append(_loop(run))
                run = []
            left = end - i  # a fault here: the steps not run natively (the reference counts its own)
            body = body.replace("goto fallback;", f"{{ pc = {i}; steps -= {left}; lsteps -= {left} * POPC(m); "
                                                  "goto fallback; }")
            if run and i == end - 1:
                lines.append(_loop(run))
            lines.append("  " + body.replace(TAIL, self.tail(self.next[i]) if i == end - 1 else ""))
        return [line for line in lines if line.strip()]

    def source(self) -> str:
        blocks = self.blocks()
        cases = " ".join(f"case {b.split(':', 1)[0][1:]}: goto {b.split(':', 1)[0]};" for b in blocks)
        # the registers the C uses live in the scratch while the warp runs; the others (only the reference's
        # instructions use them) stay in the State's arrays, cleared there as the warp starts
        offsets, room = scratch(self.prog)
        types = register_types(self.prog)
        sizes = [storage(types[key]).itemsize for key in registers(self.prog)]
        used = sorted(int(name[1:]) for name in self.regs)
        in_c = set(used)
        state = [f"(uint8_t *)st->regs[{i}] + lane0 * {sizes[i]}" for i in range(len(sizes))]
        regs = " ".join(f"{self.regs[f'r{i}']} *restrict const r{i} = ({self.regs[f'r{i}']} *)(base + "
                        f"{offsets[i]}); (void)r{i};" for i in used)
        load = _whole_warp([(f"r{i}", state[i], sizes[i]) for i in used])
        save = _whole_warp([(state[i], f"r{i}", sizes[i]) for i in used])
        clear = " ".join(f"memset(r{i}, 0, {32 * sizes[i]});" for i in used if f"r{i}" not in self.defined)
        clear += " " + _whole_warp(
            [(state[i], None, sizes[i]) for i in range(len(sizes)) if i not in in_c])
        bars = " ".join(f"case {i}:" for i in self.plain_bars)
        order = ", ".join(str(int(x)) for x in self.order)
        return (f"#include <string.h>\n"
                f"static const int64_t ORDER[{len(self.order)}] = {{ {order} }};\n"
                f"#define ORDER_OF(p) ((uint64_t)(p) < {len(self.order)} ? ORDER[p] : -2)\n"
                f"static int plain_bar(int64_t s) {{ switch (s) {{ {bars} return 1; default: return 0; }} }}\n"
                "#define PLAIN_BAR(s) plain_bar(s)\n"
                f"#define SCRATCH {room}\n#define REGS(base) {regs}\n"
                f"#define CLEAR {clear}\n#define LOAD {load}\n#define SAVE {save}\n"
                "#include \"warp.h\"\nWARP_BEGIN\n"
                f"dispatch: switch (pc) {{ {cases} default: goto fallback; }}\n" + "\n".join(blocks) + "\nWARP_END\n")
