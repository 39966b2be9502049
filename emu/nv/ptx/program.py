"""A kernel linked for the emulator: its body and those of the device functions it calls, in one instruction list,
with every name resolved to a place (a register, a shared/local/param/global address) before anything runs.

Device functions are not recursive in what this links (a call graph cycle is refused), so each function's
registers, local variables and parameters have one static place per thread: a call writes its arguments straight
into the callee's parameters, and the caller's return-value variable is the callee's. An indirect call (through a
function's address: `mov.u64 %rd, f;` or a .global initialised with f) has variables of its own, copied into the
callee's parameters at the call and back from its return values at its ret.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace

import numpy as np

from usergpu.errors import CodeObjectError
from usergpu.isa.nv import ptx
from usergpu.isa.nv.compile import DRIVER_FUNCTIONS

SHARED_WINDOW = 0x0000_7E00_0000_0000  # generic addresses of the block's shared memory (cvta.shared)
LOCAL_WINDOW = 0x0000_7D00_0000_0000  # generic addresses of the thread's local memory (cvta.local)
WINDOW = 1 << 32
CLUSTER_SHARED = 1 << 31  # a .shared::cluster address of another CTA's shared memory: this bit, its rank << 24,
RANK_SHIFT = 24  # and the offset in that CTA's shared memory (mapa makes one; cvta.shared's window holds it too)
FUNC_WINDOW = 0x0000_7C00_0000_0000  # a device function's address (mov.u64 %rd, f): FUNC_WINDOW + 16 * its index
FUNC_STRIDE = 16
BUILT_IN = DRIVER_FUNCTIONS  # declared by a module (.extern .func), never defined: control.py runs them in place


def _align(x: int, a: int) -> int:
    return -(-x // max(a, 1)) * max(a, 1)


@dataclass(frozen=True)
class Place:
    space: str  # reg, shared, local, param, global, const, func, label
    address: int = 0  # the offset in its space (a global/const variable: its GPU address, set at load)
    name: str = ""


@dataclass
class Program:
    kernel: ptx.Function
    module: ptx.Module
    code: list[ptx.Instruction] = field(default_factory=list)
    owner: list[str] = field(default_factory=list)  # the function each instruction belongs to
    entry: dict[str, int] = field(default_factory=dict)  # function -> index of its first instruction
    places: dict[tuple[str, str], Place] = field(default_factory=dict)  # (function, name) -> where it lives
    registers: dict[str, str] = field(default_factory=dict)  # "function:reg" -> PTX type
    shared_size: int = 0  # the static shared memory of the kernel
    dynamic_shared_at: int = 0  # where extern (dynamic) shared memory starts
    local_size: int = 0
    param_size: int = 0  # per thread: the kernel's parameters, then every callee's and call sequence's
    globals: dict[str, ptx.Variable] = field(default_factory=dict)  # module .global/.const variables
    functions: dict[int, str] = field(default_factory=dict)  # address -> linked function whose address is taken
    # each instruction's place in a reverse post-order of the control-flow graph: the executor runs the lanes
    # lowest in it first, so lanes wait at a join (a loop's latch, an if's end) for those still on the way there
    order: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def place(self, fn: str, name: str, line: int) -> Place:
        if (fn, name) in self.places:
            return self.places[(fn, name)]
        if ("", name) in self.places:
            return self.places[("", name)]
        raise CodeObjectError(f"ptx: line {line}: {name!r} is not declared")

    def reg(self, fn: str, name: str) -> str:
        return f"{fn}:{name}"

    @functools.cached_property
    def writes_param(self) -> bool:
        """Whether a thread may write its param space (st.param, a call's arguments and return values, a generic
        store, atom or red at a .param variable): where none does, every thread's holds the launch's parameters."""
        def stores_param(ins: ptx.Instruction, fn: str) -> bool:
            return ins.opcode.split(".")[0] in ("st", "atom", "red") and any(
                isinstance(op, ptx.Addr) and isinstance(op.base, ptx.Sym)
                and self.place(fn, op.base.name, ins.line).space == "param" for op in ins.operands)
        return any(ins.opcode.startswith(("st.param", "call")) or stores_param(ins, fn)
                   for ins, fn in zip(self.code, self.owner, strict=True))


@dataclass(frozen=True)
class Call:
    """A call's operands: call [(rets),] callee[, (args)][, prototype or .calltargets list]."""
    rets: tuple
    callee: ptx.Sym | ptx.Reg
    args: tuple
    via: ptx.Sym | None  # an indirect call's .callprototype or .calltargets label

    @property
    def direct(self) -> bool:
        return isinstance(self.callee, ptx.Sym)


def call_of(ins: ptx.Instruction) -> Call:
    ops = list(ins.operands)
    rets = ops.pop(0).items if ops and isinstance(ops[0], ptx.Group) else ()
    if not ops or not isinstance(ops[0], ptx.Sym | ptx.Reg):
        raise CodeObjectError(f"ptx: line {ins.line}: a call names a function or a register holding its address "
                              f"({ins.text})")
    callee = ops.pop(0)
    args = ops.pop(0).items if ops and isinstance(ops[0], ptx.Group) else ()
    return Call(rets, callee, args, ops[0] if ops and isinstance(ops[0], ptx.Sym) else None)


def _is_call(ins: ptx.Instruction) -> bool:
    return ins.opcode.split(".")[0] == "call"


def function_address(module: ptx.Module, name: str) -> int:
    return FUNC_WINDOW + FUNC_STRIDE * list(module.functions).index(name)


def _names(op) -> list[str]:
    """The symbols an operand names (an address's base, a vector's items)."""
    if isinstance(op, ptx.Sym):
        return [op.name]
    if isinstance(op, ptx.Addr):
        return _names(op.base)
    if isinstance(op, ptx.Vec | ptx.Group):
        return [n for x in op.items for n in _names(x)]
    return []


def _uses(module: ptx.Module, fn: ptx.Function) -> tuple[list[str], list[tuple[str, str]]]:
    """(the functions fn calls directly, (each function whose address it takes, where))"""
    direct, taken = [], []
    for ins in fn.body:
        ops = ins.operands
        if _is_call(ins) and ops:
            c = call_of(ins)
            if c.direct:
                direct.append(c.callee.name)
            ops = (*c.rets, *c.args)
        taken += [(n, f"line {ins.line}") for op in ops for n in _names(op) if n in module.functions]
    return direct, taken


def _reachable(module: ptx.Module, kernel: str) -> list[str]:
    """The kernel, then every function it calls (directly or not) or takes the address of, and those whose address
    a module variable holds, each once; a cycle of direct calls is refused."""
    order: list[str] = []
    state: dict[str, int] = {}
    taken = [(name, f"line {v.line}") for v in module.variables.values() for _, name in v.symbols
             if name in module.functions]

    def visit(name: str, via: str, at: str = "") -> None:
        if state.get(name) == 1:
            raise CodeObjectError(f"ptx: {name} calls itself (through {via}): recursive device functions are not "
                                  "supported by the emulator")
        if state.get(name) == 2:
            return
        fn = module.functions.get(name)
        if fn is None or not fn.defined:
            raise CodeObjectError(f"ptx: {via} calls {name}, which the module does not define" if via else
                                  f"ptx: {at}: the address of {name} is taken, but the module does not define it")
        state[name] = 1
        order.append(name)
        direct, addresses = _uses(module, fn)
        taken.extend(addresses)
        for callee in direct:
            if not _built_in(module, callee):
                visit(callee, name)
        state[name] = 2

    visit(kernel, kernel)
    while taken:
        name, at = taken.pop()
        visit(name, "", at)
    return order


def _built_in(module: ptx.Module, name: str) -> bool:
    """name is a built-in function the module does not define itself."""
    fn = module.functions.get(name)
    return name in BUILT_IN and (fn is None or not fn.defined)


def _with_addresses(module: ptx.Module, v: ptx.Variable) -> ptx.Variable:
    """A variable whose initializer names functions, with their addresses in its bytes."""
    if not v.symbols:
        return v
    init = bytearray(v.init or b"")
    for offset, name in v.symbols:
        f = module.functions.get(name)
        if f is None or f.entry:
            raise CodeObjectError(f"ptx: line {v.line}: the initializer of {v.name} names {name}: the emulator "
                                  "initialises variables with numbers and device functions' addresses only")
        init[offset:offset + 8] = function_address(module, name).to_bytes(8, "little")
    return replace(v, init=bytes(init))


def link(module: ptx.Module, kernel: str) -> Program:
    fn = module.kernels[kernel]
    prog = Program(fn, module)
    shared, param = 0, 0
    for name, v in module.variables.items():
        if v.space in ("global", "const"):
            prog.globals[name] = _with_addresses(module, v)
            prog.places[("", name)] = Place(v.space, 0, name)
        elif v.space == "shared":  # module-scope shared variables belong to every block
            shared, place = _static(shared, v)
            prog.places[("", name)] = place
    extern_shared = [("", v) for v in module.variables.values() if v.space == "shared" and v.extern]
    for name in _reachable(module, kernel):
        f = module.functions[name]
        prog.entry[name] = len(prog.code)
        prog.code += f.body
        prog.owner += [name] * len(f.body)
        for label, index in f.labels.items():
            prog.places[(name, label)] = Place("label", prog.entry[name] + index, label)
        for reg, typ in f.registers.items():
            prog.registers[prog.reg(name, reg)] = typ
            prog.places[(name, reg)] = Place("reg", 0, prog.reg(name, reg))
        for p in (*f.params, *f.returns):
            param = _align(param, p.align)
            prog.places[(name, p.name)] = Place("param", param, p.name)
            param += p.size
        for vname, v in f.variables.items():
            if v.space == "shared":
                if v.extern:
                    extern_shared.append((name, v))
                    continue
                shared, prog.places[(name, vname)] = _static(shared, v)
            elif v.space == "local":
                prog.local_size = _align(prog.local_size, v.align)
                prog.places[(name, vname)] = Place("local", prog.local_size, vname)
                prog.local_size += v.size
            elif v.space == "param":  # a call sequence's argument or return value: placed at the call below
                continue
            else:
                raise CodeObjectError(f"ptx: line {v.line}: .{v.space} variables inside a function are not supported")
    for name in prog.entry:
        prog.places[("", name)] = Place("func", prog.entry[name], name)
        if not module.functions[name].entry:
            prog.functions[function_address(module, name)] = name
    prog.dynamic_shared_at = _align(shared, 16)
    for owner, v in extern_shared:
        prog.places[(owner, v.name)] = Place("shared", prog.dynamic_shared_at, v.name)
    prog.shared_size = shared
    prog.param_size = param
    _bind_calls(prog)
    _unbound_params(prog)
    prog.order = _reverse_postorder(prog)
    return prog


def fall_through(prog: Program, i: int) -> int:
    """The PC after instruction i: the next one, or past a function's last the PC that stands for falling off that
    function's end (len(code) + the function's number; the executor reports it)."""
    if i + 1 < len(prog.code) and prog.owner[i + 1] == prog.owner[i]:
        return i + 1
    return len(prog.code) + list(prog.entry).index(prog.owner[i])


def callees(prog: Program, i: int) -> list[str]:
    """The functions the call at i can enter: its callee, or for an indirect call those of its .calltargets list
    (any function whose address is taken without one)."""
    c = call_of(prog.code[i])
    if c.direct:
        return [] if _built_in(prog.module, c.callee.name) else [c.callee.name]
    fn = prog.module.functions[prog.owner[i]]
    if c.via is not None and c.via.name in fn.call_targets:
        return [name for name in fn.call_targets[c.via.name] if name in prog.entry]
    return list(prog.functions.values())


def _successors(prog: Program, i: int, returns: dict[str, list[int]]) -> list[int]:
    """Where control can go after instruction i: a call goes into its callee, a callee's ret to its call sites."""
    ins = prog.code[i]
    base = ins.opcode.split(".")[0]
    after = [i + 1] if i + 1 < len(prog.code) and prog.owner[i + 1] == prog.owner[i] else []
    if base == "bra":
        target = prog.place(prog.owner[i], ins.operands[0].name, ins.line).address
        return [target, *after] if ins.guard is not None else [target]
    if base == "call":  # a built-in runs in place: on to the next instruction
        return [prog.entry[name] for name in callees(prog, i)] or after
    if base == "ret" and prog.owner[i] != prog.kernel.name:
        return [*returns.get(prog.owner[i], []), *(after if ins.guard is not None else [])]
    if base in ("ret", "exit", "trap"):
        return after if ins.guard is not None else []
    return after


def _reverse_postorder(prog: Program) -> np.ndarray:
    """Each instruction's rank in a reverse post-order of the graph of instructions (depth first from the kernel's
    entry); an instruction nothing reaches gets the next ranks."""
    n = len(prog.code)
    returns: dict[str, list[int]] = {}
    for i, ins in enumerate(prog.code):
        if _is_call(ins):
            for callee in callees(prog, i):
                returns.setdefault(callee, []).append(i + 1)
    post: list[int] = []
    seen = np.zeros(n, bool)
    for root in range(n):
        if seen[root]:
            continue
        seen[root] = True
        stack = [(root, iter(_successors(prog, root, returns)))]
        while stack:
            node, succ = stack[-1]
            for s in succ:
                if s < n and not seen[s]:
                    seen[s] = True
                    stack.append((s, iter(_successors(prog, s, returns))))
                    break
            else:
                post.append(node)
                stack.pop()
    order = np.empty(n, np.int64)
    order[post[::-1]] = np.arange(n)
    return order


def _static(offset: int, v: ptx.Variable) -> tuple[int, Place]:
    at = _align(offset, v.align)
    return at + v.size, Place("shared", at, v.name)


def _bind_calls(prog: Program) -> None:
    """Each call's argument and return-value variables are the callee's parameters (see the module doc)."""
    for ins, owner in zip(prog.code, prog.owner, strict=True):
        if not _is_call(ins):
            continue
        c = call_of(ins)
        if any(not isinstance(var, ptx.Sym) for var in (*c.args, *c.rets)):
            raise CodeObjectError(f"ptx: line {ins.line}: a call's arguments must be .param variables")
        if not c.direct or _built_in(prog.module, c.callee.name):  # its variables are its own (_unbound_params)
            continue
        callee = prog.module.functions[c.callee.name]
        if len(c.args) != len(callee.params) or len(c.rets) != len(callee.returns):
            raise CodeObjectError(f"ptx: line {ins.line}: {callee.name} takes {len(callee.params)} parameters and "
                                  f"{len(callee.returns)} return values; the call gives {len(c.args)} and "
                                  f"{len(c.rets)}")
        for var, formal in zip((*c.args, *c.rets), (*callee.params, *callee.returns), strict=True):
            prog.places[(owner, var.name)] = prog.places[(callee.name, formal.name)]


def _unbound_params(prog: Program) -> None:
    """A .param variable of a call sequence that no call names (none in PTX clang emits) still gets a place."""
    for name in prog.entry:
        for vname, v in prog.module.functions[name].variables.items():
            if v.space == "param" and (name, vname) not in prog.places:
                prog.param_size = _align(prog.param_size, v.align)
                prog.places[(name, vname)] = Place("param", prog.param_size, vname)
                prog.param_size += v.size
