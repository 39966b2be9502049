"""PTX modules: `.version`/`.target`/`.address_size`, module variables, and each `.entry`/`.func` with its
parameters, performance directives, declarations and body, parsed once into records.

A body is a list of Instruction records whose operands are already tokenised and whose names are resolved: a
register or variable declared in an inner `{ }` block (clang's call sequences declare `param0` afresh in each)
gets a unique name (`param0@3`), so the executor never sees scopes. Malformed text is a CodeObjectError that
names the line.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field, replace

from usergpu.errors import CodeObjectError
from usergpu.isa.text import text_of

# a PTX fundamental type's size in bytes
TYPE_SIZE = {
    **{f"{k}{b}": b // 8 for k in "subf" for b in (8, 16, 32, 64)}, "b128": 16, "pred": 1, "f16x2": 4, "bf16": 2,
    "bf16x2": 4, "tf32": 4, "e4m3": 1, "e5m2": 1, "e4m3x2": 2, "e5m2x2": 2,
}
SPECIAL = re.compile(r"%(tid|ntid|ctaid|nctaid|laneid|warpid|nwarpid|smid|nsmid|gridid|clock|clock64|clock_hi|"
                     r"globaltimer|globaltimer_lo|globaltimer_hi|dynamic_smem_size|total_smem_size|"
                     r"lanemask_(eq|le|lt|ge|gt)|envreg\d+|pm\d+|cluster\w*|nclusterid\w*|clusterid\w*|"
                     r"is_explicit_cluster|aggr_smem_size|reserved_smem\w*)(\.[xyz])?$")
_TOKEN = re.compile(r"""
    (?P<ws>\s+) | (?P<str>"[^"]*") | (?P<fimm>0[fF][0-9a-fA-F]{8}\b|0[dD][0-9a-fA-F]{16}\b)
  | (?P<num>0[xX][0-9a-fA-F]+U?|0[bB][01]+U?|\d+\.\d*(?:[eE][+-]?\d+)?|\d+U?)
  | (?P<id>[%$.A-Za-z_](?:[\w$.%]|::)*) | (?P<punct>[{}()\[\];,:=+\-<>@!|*])
""", re.X)
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_LINE_DIRECTIVES = {".version", ".target", ".address_size", ".file", ".loc"}  # end at the line's end, no ';'
_LINKAGE = {".visible", ".extern", ".weak", ".common"}
_PERF = {".maxntid", ".reqntid", ".minnctapersm", ".maxnctapersm", ".maxnreg", ".maxclusterrank",
         ".reqnctapercluster", ".explicitcluster", ".noreturn", ".blocksareclusters"}
_SPACES = {".global", ".const", ".shared", ".local", ".param", ".tex"}


@dataclass(frozen=True)
class Reg:
    name: str  # the unique name (a register, or a variable or parameter used as a value)
    negate: bool = False  # !%p


@dataclass(frozen=True)
class Special:
    name: str  # tid.x, laneid, clock64, ...


@dataclass(frozen=True)
class Imm:
    value: int | float  # an integer, or a float given as 0f/0d bits or decimal
    bits: int | None = None  # a 0f/0d literal's bits (a b32/b64 instruction takes them as written)
    width: int = 0  # 32 for 0f, 64 for 0d


@dataclass(frozen=True)
class Sym:
    name: str  # a variable, parameter, function or label by its unique name


@dataclass(frozen=True)
class Addr:
    base: Reg | Sym | None  # [%rd1+8], [name+4], [0x100]
    offset: int = 0


@dataclass(frozen=True)
class Vec:
    items: tuple  # {%r1, %r2, _}


@dataclass(frozen=True)
class Group:
    items: tuple  # a call's (retval0) and (param0, param1)


@dataclass(frozen=True)
class Pair:
    first: Reg  # setp's %p|%q
    second: Reg


SINK = Sym("_")


@dataclass(frozen=True)
class Variable:
    name: str
    space: str  # global, const, shared, local, param
    type: str  # b8, u32, f32, ...
    size: int  # bytes in all; 0 for an extern array of no size (dynamic shared memory)
    align: int
    count: int = 1  # elements (vector lanes times array length)
    init: bytes | None = None
    extern: bool = False
    line: int = 0
    symbols: tuple[tuple[int, str], ...] = ()  # (byte offset, name): initializer elements that are a name's address


@dataclass(frozen=True)
class Param:
    name: str
    type: str
    size: int
    align: int
    offset: int  # in the parameter block, each parameter at its alignment
    count: int = 1
    pointer: str | None = None  # .ptr's state space ("global", "" for generic), None when not a pointer


@dataclass(frozen=True)
class Instruction:
    line: int
    opcode: str  # the whole mnemonic: ld.global.nc.v4.f32
    operands: tuple
    guard: Reg | None = None
    text: str = ""  # as written, for traces and faults


@dataclass(frozen=True)
class Prototype:
    """A .callprototype: the return values and parameters an indirect call passes."""
    returns: tuple[Param, ...]
    params: tuple[Param, ...]


@dataclass
class Function:
    name: str
    entry: bool
    line: int
    params: list[Param] = field(default_factory=list)
    returns: list[Param] = field(default_factory=list)
    registers: dict[str, str] = field(default_factory=dict)  # unique name -> type
    variables: dict[str, Variable] = field(default_factory=dict)  # declared in the body, by unique name
    body: list[Instruction] = field(default_factory=list)
    labels: dict[str, int] = field(default_factory=dict)  # label -> index of the instruction after it
    branch_targets: dict[str, list[str]] = field(default_factory=dict)  # name: .branchtargets L0, L1, ...
    call_targets: dict[str, list[str]] = field(default_factory=dict)  # name: .calltargets f0, f1, ...
    prototypes: dict[str, Prototype] = field(default_factory=dict)  # name: .callprototype (...) _ (...)
    directives: dict[str, tuple[int, ...]] = field(default_factory=dict)  # maxntid, reqntid, ...
    defined: bool = True

    @property
    def maxntid(self) -> tuple[int, ...] | None:
        return self.directives.get("maxntid")

    @property
    def reqntid(self) -> tuple[int, ...] | None:
        return self.directives.get("reqntid")

    @property
    def shared(self) -> list[Variable]:
        return [v for v in self.variables.values() if v.space == "shared"]

    @property
    def local(self) -> list[Variable]:
        return [v for v in self.variables.values() if v.space == "local"]

    @property
    def param_size(self) -> int:
        return max((p.offset + p.size for p in self.params), default=0)


@dataclass
class Module:
    version: tuple[int, int]
    target: list[str]
    address_size: int
    variables: dict[str, Variable]
    functions: dict[str, Function]

    @property
    def kernels(self) -> dict[str, Function]:
        return {n: f for n, f in self.functions.items() if f.entry}

    @property
    def arch(self) -> str:
        return next((t for t in self.target if t.startswith("sm_")), "")


class _Tokens:
    """The module's tokens (kind, text, line) with a cursor."""

    def __init__(self, text: str):
        code = _COMMENTS.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)  # keep line numbers
        starts = [0, *(m.end() for m in re.finditer("\n", code))]
        self.items: list[tuple[str, str, int]] = []
        pos = 0
        while pos < len(code):
            m = _TOKEN.match(code, pos)
            if not m:
                line = bisect.bisect_right(starts, pos)
                raise CodeObjectError(f"ptx: line {line}: unexpected character {code[pos]!r}")
            if m.lastgroup != "ws":
                self.items.append((m.lastgroup, m.group(), bisect.bisect_right(starts, pos)))
            pos = m.end()
        self.i = 0

    def peek(self, k: int = 0) -> tuple[str, str, int]:
        return self.items[self.i + k] if self.i + k < len(self.items) else ("eof", "", self.line)

    @property
    def last_line(self) -> int:
        """The line of the token taken last."""
        return self.items[self.i - 1][2] if self.i else self.line

    @property
    def line(self) -> int:
        return self.items[min(self.i, len(self.items) - 1)][2] if self.items else 0

    def next(self) -> tuple[str, str, int]:
        tok = self.peek()
        if tok[0] == "eof":
            raise CodeObjectError(f"ptx: line {tok[2]}: unexpected end of the module")
        self.i += 1
        return tok

    def take(self, text: str) -> bool:
        if self.peek()[1] == text:
            self.i += 1
            return True
        return False

    def expect(self, text: str) -> None:
        kind, got, line = self.peek()
        if got != text:
            raise CodeObjectError(f"ptx: line {line}: expected {text!r}, found {got or 'the end'!r}")
        self.i += 1

    def number(self) -> int:
        neg = self.take("-")
        kind, text, line = self.next()
        if kind != "num" or "." in text:
            raise CodeObjectError(f"ptx: line {line}: expected an integer, found {text!r}")
        return -_int(text) if neg else _int(text)

    def rest_of_line(self, line: int) -> list[str]:
        out = []
        while self.peek()[0] != "eof" and self.peek()[2] == line:
            out.append(self.next()[1])
        return out


class NotANumber(ValueError):
    """A literal that is no number; parse names its line."""


def _int(text: str) -> int:
    digits = text.rstrip("U")
    try:
        return int(digits, 16 if digits[:2] in ("0x", "0X") else 2 if digits[:2] in ("0b", "0B") else 8
                   if len(digits) > 1 and digits[0] == "0" else 10)
    except ValueError:
        raise NotANumber(f"{text!r} is not an integer") from None


def immediate(text: str) -> int | float:
    """An integer or float literal's value; 0f/0d literals are floats by their bits."""
    import struct

    try:
        if text[:2] in ("0f", "0F"):
            return struct.unpack("<f", int(text[2:], 16).to_bytes(4, "little"))[0]
        if text[:2] in ("0d", "0D"):
            return struct.unpack("<d", int(text[2:], 16).to_bytes(8, "little"))[0]
        return float(text) if "." in text else _int(text)
    except (ValueError, OverflowError):
        raise NotANumber(f"{text!r} is not a number") from None


def _declaration(t: _Tokens) -> tuple[int, str, int | None, list[int], str | None]:
    """After a state space: [.align N] [.ptr [.space] [.align N]] [.vN] .type -> (align, type, vector, dims, ptr);
    the name follows."""
    align, vector, ptr, typ = 0, None, None, None
    while (tok := t.peek())[0] == "id" and tok[1].startswith("."):
        word = t.next()[1][1:]
        if word == "align":
            value = t.number()
            align = align if ptr is not None else value  # after .ptr it is the pointee's alignment
        elif word == "ptr":
            ptr = ""
        elif word in ("v2", "v4", "v8"):
            vector = int(word[1:])
        elif ptr == "" and word in ("global", "shared", "const", "local"):
            ptr = word
        elif word in TYPE_SIZE:
            typ = word
        elif word not in ("attribute", "managed", "unified"):
            raise CodeObjectError(f"ptx: line {tok[2]}: unknown declaration modifier .{word}")
    if typ is None:
        raise CodeObjectError(f"ptx: line {t.line}: a declaration without a type")
    return align, typ, vector, [], ptr


def _dims(t: _Tokens) -> tuple[list[int], bool]:
    """[N][M]... after a name; ([], False) for a scalar, and unsized [] (extern arrays) as a 0."""
    dims, unsized = [], False
    while t.take("["):
        if t.take("]"):
            dims.append(0)
            unsized = True
            continue
        dims.append(t.number())
        t.expect("]")
    return dims, unsized


def _size(typ: str, vector: int | None, dims: list[int]) -> tuple[int, int]:
    count = (vector or 1)
    for d in dims:
        count *= d
    return TYPE_SIZE[typ] * count, count


def _initializer(t: _Tokens, typ: str, size: int, line: int) -> tuple[bytes, tuple[tuple[int, str], ...]]:
    """= value or = {v, v, ...} (nested braces flattened) as little-endian bytes of typ, zero-filled to size; an
    element that is a name (a function's or variable's address) is 0 in the bytes and listed as (offset, name)."""
    import struct

    values: list[int | float] = []
    symbols: list[tuple[int, str]] = []
    depth = 0
    while True:
        kind, text, ln = t.peek()
        if text == "{":
            depth += 1
        elif text == "}":
            depth -= 1
        elif text == "-":
            t.next()
            values.append(-immediate(t.next()[1]))
            continue
        elif kind in ("num", "fimm"):
            values.append(immediate(text))
        elif kind == "id" and not text.startswith((".", "%")) and TYPE_SIZE[typ] == 8 and typ[0] != "f":
            symbols.append((len(values) * 8, text))
            values.append(0)
        elif text != ",":
            if depth == 0:
                break
            raise CodeObjectError(f"ptx: line {ln}: initializers other than numbers are not supported ({text!r})")
        t.next()
        if depth == 0:
            break
    width = TYPE_SIZE[typ]
    fmt = {2: "e", 4: "f", 8: "d"}.get(width) if typ[0] == "f" else None
    out = b"".join(struct.pack("<" + fmt, v) if fmt else (int(v) & ((1 << 8 * width) - 1)).to_bytes(width, "little")
                   for v in values)
    if len(out) > size:
        raise CodeObjectError(f"ptx: line {line}: {len(values)} initializers for {size} bytes")
    return out + bytes(size - len(out)), tuple(symbols)


def _variable(t: _Tokens, space: str, extern: bool, line: int) -> list[Variable]:
    """A state-space declaration after its space: one variable, or registers-like lists for .param."""
    align, typ, vector, _, _ = _declaration(t)
    out = []
    while True:
        kind, name, ln = t.next()
        if kind != "id":
            raise CodeObjectError(f"ptx: line {ln}: expected a variable name, found {name!r}")
        dims, unsized = _dims(t)
        size, count = _size(typ, vector, dims)
        init, symbols = _initializer(t, typ, size, ln) if t.take("=") else (None, ())
        out.append(Variable(name, space, typ, size, align or TYPE_SIZE[typ] * (vector or 1), count, init,
                            extern or unsized, ln, symbols))
        if not t.take(","):
            break
    t.expect(";")
    return out


def _prototype(t: _Tokens) -> Prototype:
    """After .callprototype: [(return values)] _ [(parameters)] [.noreturn ...];"""
    returns = _params(t) if t.peek()[1] == "(" else []
    t.expect("_")
    params = _params(t) if t.peek()[1] == "(" else []
    while not t.take(";"):
        t.next()
    return Prototype(tuple(returns), tuple(params))


def _params(t: _Tokens) -> list[Param]:
    """( .param ... name, ... ) laid out at each parameter's alignment."""
    t.expect("(")
    out: list[Param] = []
    offset = 0
    while not t.take(")"):
        if out:
            t.expect(",")
        t.expect(".param")
        align, typ, vector, _, ptr = _declaration(t)
        kind, name, ln = t.next()
        if kind != "id":
            raise CodeObjectError(f"ptx: line {ln}: expected a parameter name, found {name!r}")
        dims, _ = _dims(t)
        size, count = _size(typ, vector, dims)
        align = align or TYPE_SIZE[typ] * (vector or 1)
        offset = -(-offset // align) * align
        out.append(Param(name, typ, size, align, offset, count, ptr))
        offset += size
    return out


class _Body:
    """A function body's statements: scopes, declarations, labels and instructions."""

    def __init__(self, t: _Tokens, fn: Function):
        self.t, self.fn = t, fn
        self.scopes: list[dict[str, str]] = [{p.name: p.name for p in (*fn.params, *fn.returns)}]
        self.count = 0

    def unique(self, name: str) -> str:
        taken = name in self.fn.registers or name in self.fn.variables or len(self.scopes) > 1
        self.count += taken
        unique = f"{name}@{self.count}" if taken else name
        self.scopes[-1][name] = unique
        return unique

    def resolve(self, name: str) -> str:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return name

    def parse(self) -> None:
        t = self.t
        t.expect("{")
        while True:
            kind, text, line = t.peek()
            if text == "}":
                t.next()
                if len(self.scopes) == 1:
                    return
                self.scopes.pop()
            elif text == "{":
                t.next()
                self.scopes.append({})
            elif text == ".reg":
                t.next()
                self.registers()
            elif text in _SPACES:
                t.next()
                for v in _variable(t, text[1:], False, line):
                    name = self.unique(v.name)
                    self.fn.variables[name] = replace(v, name=name)
            elif text == ".pragma":
                while t.next()[1] != ";":
                    pass
            elif text in _LINE_DIRECTIVES:
                t.next()
                t.rest_of_line(line)
            elif kind == "id" and t.peek(1)[1] == ":" and t.peek(2)[1] in (".branchtargets", ".calltargets"):
                t.next(), t.next()
                lists = self.fn.branch_targets if t.next()[1] == ".branchtargets" else self.fn.call_targets
                targets = [t.next()[1]]
                while t.take(","):
                    targets.append(t.next()[1])
                t.expect(";")
                lists[self.unique(text)] = targets
            elif kind == "id" and t.peek(1)[1] == ":" and t.peek(2)[1] == ".callprototype":
                t.next(), t.next(), t.next()
                self.fn.prototypes[self.unique(text)] = _prototype(t)
            elif kind == "id" and t.peek(1)[1] == ":":
                t.next()
                t.next()
                self.fn.labels[text] = len(self.fn.body)
            else:
                self.fn.body.append(self.instruction())

    def registers(self) -> None:
        t = self.t
        _, typ, vector, _, _ = _declaration(t)
        while True:
            kind, name, ln = t.next()
            if kind != "id":
                raise CodeObjectError(f"ptx: line {ln}: expected a register name, found {name!r}")
            if t.take("<"):
                n = t.number()
                t.expect(">")
                names = [f"{name}{i}" for i in range(n)]
            else:
                names = [name]
            for n in names:
                self.fn.registers[self.unique(n)] = typ
            if not t.take(","):
                break
        t.expect(";")

    def instruction(self) -> Instruction:
        t = self.t
        first = t.i
        line = t.peek()[2]
        guard = None
        if t.take("@"):
            neg = t.take("!")
            guard = Reg(self.resolve(t.next()[1]), neg)
        kind, opcode, ln = t.next()
        if kind != "id" or opcode.startswith("."):
            raise CodeObjectError(f"ptx: line {ln}: expected an instruction, found {opcode!r}")
        operands = []
        while not t.take(";"):
            if operands:
                t.expect(",")
            operands.append(self.operand())
        text = " ".join(tok[1] for tok in t.items[first:t.i - 1])
        return Instruction(line, opcode, tuple(operands), guard, text)

    def operand(self):
        t = self.t
        kind, text, line = t.peek()
        if text == "{":
            t.next()
            items = [self.operand()]
            while t.take(","):
                items.append(self.operand())
            t.expect("}")
            return Vec(tuple(items))
        if text == "(":
            t.next()
            items = []
            while not t.take(")"):
                if items:
                    t.expect(",")
                items.append(self.operand())
            return Group(tuple(items))
        if text == "[":
            t.next()
            base, offset = None, 0
            if t.peek()[0] == "id":
                base = self.value(t.next()[1])
                if isinstance(base, Special):
                    raise CodeObjectError(f"ptx: line {line}: a special register cannot be an address")
            elif t.peek()[0] == "num":
                offset = t.number()
            if t.peek()[1] in "+-" and t.peek()[1]:
                sign = -1 if t.next()[1] == "-" else 1
                offset += sign * t.number()
            t.expect("]")
            return Addr(base, offset)
        if text == "!":
            t.next()
            reg = self.value(t.next()[1])
            return Reg(reg.name, True)
        if text == "-" or kind in ("num", "fimm"):
            neg = t.take("-")
            kind, text, _ = t.next()
            value = immediate(text)
            if kind != "fimm":
                return Imm(-value if neg else value)
            width = 32 if text[1] in "fF" else 64
            return Imm(-value if neg else value, int(text[2:], 16) ^ (neg << (width - 1)), width)
        if kind == "id":
            t.next()
            value = self.value(text)
            if t.take("|"):
                return Pair(value, self.value(t.next()[1]))
            if t.peek()[1] == "+" and isinstance(value, Sym):  # name+offset as a value (mov %rd, sym+8)
                t.next()
                return Addr(value, t.number())
            if t.peek()[1] == "[" and isinstance(value, Sym):  # an array element's address (mov %rd, name[2])
                return self.element(value, line)
            return value
        raise CodeObjectError(f"ptx: line {line}: unexpected {text!r} in an operand")

    def element(self, array: Sym, line: int) -> Addr:
        """name[k]: the address of element k of an array (its element size known for the function's own arrays;
        element 0 of any)."""
        t = self.t
        t.expect("[")
        index = t.number()
        t.expect("]")
        v = self.fn.variables.get(array.name)
        if index and v is None:
            raise CodeObjectError(f"ptx: line {line}: {array.name}[{index}]: only a function's own arrays are "
                                  "indexed by element here (write the byte offset: name+offset)")
        return Addr(array, index * (v.size // max(v.count, 1) if v else 0))

    def value(self, text: str):
        if text == "_":
            return SINK
        if SPECIAL.match(text):
            return Special(text[1:])
        name = self.resolve(text)
        if name in self.fn.registers:
            return Reg(name)
        return Sym(name)


def parse(text: str | bytes) -> Module:
    """A PTX module's directives, variables and functions; CodeObjectError (with the line) when malformed."""
    t = _Tokens(text_of(text, "ptx"))
    try:
        return _module(t)
    except NotANumber as e:
        raise CodeObjectError(f"ptx: line {t.last_line}: {e}") from None


def _module(t: _Tokens) -> Module:
    version, target, address_size = None, [], 64
    variables: dict[str, Variable] = {}
    functions: dict[str, Function] = {}
    while t.peek()[0] != "eof":
        kind, word, line = t.next()
        if word == ".version":
            parts = t.rest_of_line(line)
            try:
                major, minor = (int(x) for x in "".join(parts).split("."))
            except ValueError:
                raise CodeObjectError(f"ptx: line {line}: bad .version {' '.join(parts)!r}") from None
            version = (major, minor)
        elif word == ".target":
            target = [w for w in t.rest_of_line(line) if w != ","]
        elif word == ".address_size":
            address_size = t.number()
        elif word in (".file", ".loc"):
            t.rest_of_line(line)
        elif word == ".section":  # debug sections: skipped whole
            t.next()
            t.expect("{")
            depth = 1
            while depth:
                depth += {"{": 1, "}": -1}.get(t.next()[1], 0)
        elif word in _LINKAGE or word in (".entry", ".func") or word in _SPACES:
            extern = word == ".extern"
            while word in _LINKAGE:
                extern |= word == ".extern"
                kind, word, line = t.next()
            if word in _SPACES:
                for v in _variable(t, word[1:], extern, line):
                    variables[v.name] = v
                continue
            if word not in (".entry", ".func"):
                raise CodeObjectError(f"ptx: line {line}: expected .entry, .func or a variable, found {word!r}")
            fn = _function(t, word == ".entry", line)
            if fn.name in functions and functions[fn.name].defined and fn.defined:
                raise CodeObjectError(f"ptx: line {line}: function {fn.name} is defined twice")
            if fn.defined or fn.name not in functions:
                functions[fn.name] = fn
        elif word == ".alias":
            while t.next()[1] != ";":
                pass
        else:
            raise CodeObjectError(f"ptx: line {line}: unexpected {word!r} at module scope")
    if version is None:
        raise CodeObjectError("ptx: no .version directive: not a PTX module")
    return Module(version, target, address_size, variables, functions)


def _function(t: _Tokens, entry: bool, line: int) -> Function:
    returns = _params(t) if t.peek()[1] == "(" else []
    kind, name, _ = t.next()
    if kind != "id":
        raise CodeObjectError(f"ptx: line {line}: expected a function name, found {name!r}")
    fn = Function(name, entry, line, returns=returns)
    fn.params = _params(t) if t.peek()[1] == "(" else []
    while (word := t.peek()[1]) in _PERF:
        t.next()
        values = []
        if word not in (".noreturn", ".explicitcluster", ".blocksareclusters"):
            values.append(t.number())
            while t.take(","):
                values.append(t.number())
        fn.directives[word[1:]] = tuple(values)
    if t.take(";"):
        fn.defined = False
        return fn
    _Body(t, fn).parse()
    return fn
