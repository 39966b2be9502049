"""Decode AMD GPU machine code with the generated opcode tables: bytes -> Instruction records.

The family is found by the hand-written encodings (usergpu.isa.amd.encoding), the opcode's row by
the table learned from LLVM (usergpu.autogen.isa_<arch>), and every operand's text by the printer that
row names (usergpu.isa.amd.text). Anything that is not a legal instruction raises DecodeError.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, replace
from functools import cache

from usergpu.errors import DecodeError, Error
from usergpu.isa.amd import encoding as isa_encodings
from usergpu.isa.amd import text as isa_text
from usergpu.isa.amd.encoding import Family

ARCHS = tuple(isa_encodings.FAMILIES)
_RANGE = re.compile(r"^-?\|?([vs]|ttmp)(?:(\d+)|\[(\d+):(\d+)\])")


@dataclass(frozen=True)
class Operand:
    text: str
    printer: str
    fields: dict[str, int]

    @property
    def registers(self) -> tuple[str, int, int] | None:
        """(register file 'v'/'s'/'ttmp', first, count) when the operand names registers."""
        m = _RANGE.match(self.text)
        if not m:
            return None
        first = int(m.group(2) or m.group(3))
        return m.group(1), first, 1 if m.group(2) else int(m.group(4)) - first + 1


@dataclass(frozen=True)
class Instruction:
    arch: str
    offset: int
    family: str
    opcode: int
    mnemonic: str
    size: int
    fields: dict[str, int]
    literal: int | None
    operands: tuple[Operand, ...]
    modifiers: tuple[str, ...]

    @property
    def text(self) -> str:
        """The instruction as llvm-objdump prints it."""
        ops = ", ".join(o.text for o in self.operands)
        if "::" in self.mnemonic:  # dual issue (VOPD): "X ops :: Y ops"
            mx, my = self.mnemonic.split("::")
            xs, _, ys = ops.partition(", ::, ")
            return f"{mx} {xs} :: {my} {ys}"
        return self.mnemonic + (f" {ops}" if ops else "") + "".join(self.modifiers)


class ArgumentError(DecodeError):
    """An argument decode, disasm or asm cannot take: an arch the tables do not cover (it says which they do), data
    that is not bytes, an offset outside the data. A DecodeError: what was asked for cannot be decoded."""

    def __init__(self, arch: object, offset: object, why: str):
        Error.__init__(self, why)
        self.arch, self.offset, self.data = arch, offset, b""


def check_arch(arch: object) -> str:
    """arch, if the tables cover it."""
    if not isinstance(arch, str) or arch not in isa_encodings.FAMILIES:
        raise ArgumentError(arch, 0, f"unsupported arch {arch!r} (supported: {', '.join(ARCHS)})")
    return arch


def checked(data: object, arch: object, offset: object = 0) -> bytes:
    """data as bytes (or as the view of memory it is), once arch and offset (0 .. its length) are checked: what
    every entry point decodes."""
    check_arch(arch)
    if not isinstance(data, bytes):
        try:
            data = memoryview(data).tobytes()  # bytearray, memoryview, a numpy array: any buffer
        except TypeError:  # else a view whose slices are bytes (the emulator's of GPU memory), read as it is
            if isinstance(data, str) or not (hasattr(data, "__getitem__") and hasattr(data, "__len__")):
                raise ArgumentError(arch, offset, f"{arch}: the code must be bytes (or a buffer), not "
                                                  f"{type(data).__name__}") from None
    if not isinstance(offset, int) or isinstance(offset, bool):
        raise ArgumentError(arch, offset, f"{arch}: the offset must be an int, not {type(offset).__name__}")
    if not 0 <= offset <= len(data):
        raise ArgumentError(arch, offset, f"{arch}: offset {offset} is outside the {len(data)} bytes given "
                                          f"(0..{len(data)})")
    return data


@cache
def tables(arch: str) -> tuple[list[Family], dict[str, dict[int, tuple]], dict[str, dict[int, str]]]:
    """The arch's encoding families (in match order), opcode tables by family, and symbolic names."""
    module = importlib.import_module(f"usergpu.autogen.isa_{check_arch(arch)}")
    return isa_encodings.FAMILIES[arch], module.OPS, module.NAMES


# What bytes decoded to. A kernel's instructions are decoded again wherever it is loaded anew (an emulator's
# dispatch of a new code object, a walk for native code): decoding costs some 60 µs, a look-up 2. Kept by the
# instruction's own bytes, (arch, bytes, True), where its family is one the bytes after it cannot change
# (_by_own_bytes), else by up to MAX_SIZE bytes from its start, (arch, bytes, False).
_KNOWN: dict[tuple[str, bytes, bool], Instruction] = {}
KNOWN_KEPT = 1 << 16
MAX_SIZE = 16  # gfx950's VOP3PX2
SIZES = (4, 8, 12, 16)


@cache
def _by_own_bytes(arch: str) -> frozenset[str]:
    """The arch's families whose instructions decode alike whatever bytes follow them: no field past their size,
    and no family tried before them that tests bits past their size and could match where they do (gfx950's
    VOP3PX2, 16 bytes, comes before VOP3P, whose first 8 bytes it can share)."""
    def tested(f: Family) -> int:  # the bits matches() looks at
        op = ((1 << f.op[1]) - 1) << f.op[0] | ((1 << f.opx[1]) - 1) << f.opx[0] if f.ops is not None else 0
        return f.mask | op

    families, out = isa_encodings.FAMILIES[arch], set()
    for i, f in enumerate(families):
        own = (1 << 8 * f.size) - 1
        if tested(f) & ~own or any(s[0] + s[1] > 8 * f.size for s in f.fields.values()):
            continue
        if all(not tested(g) & ~own or g.value & tested(g) & f.mask & own != f.value & tested(g) & f.mask & own
               for g in families[:i]):
            out.add(f.name)
    return frozenset(out)


def decode(data: bytes, arch: str, offset: int = 0) -> Instruction:
    """The instruction at data[offset:]."""
    data = checked(data, arch, offset)
    head = bytes(data[offset : offset + MAX_SIZE])
    inst = next((got for n in SIZES if n <= len(head) and (got := _KNOWN.get((arch, head[:n], True)))), None)
    if inst is None:
        inst = _KNOWN.get((arch, head, False))
    if inst is None:
        inst = _decode(data, arch, offset)
        if len(_KNOWN) >= KNOWN_KEPT:
            _KNOWN.clear()
        own = inst.family in _by_own_bytes(arch)
        _KNOWN[(arch, head[: inst.size] if own else head, own)] = inst
    return inst if inst.offset == offset else replace(inst, offset=offset)


def _decode(data: bytes, arch: str, offset: int) -> Instruction:
    """decode() of checked arguments."""
    families, ops, names = tables(arch)
    gen = isa_encodings.GENERATION[arch]
    avail = len(data) - offset
    if avail < 4:
        raise DecodeError(arch, offset, data[offset:], "truncated instruction")
    word = int.from_bytes(data[offset : offset + MAX_SIZE].ljust(MAX_SIZE, b"\0"), "little")
    fam = next((f for f in families if f.matches(word)), None)
    if fam is None or fam.size > avail:
        raise DecodeError(arch, offset, data[offset : offset + 8], "no encoding family matches" if fam is None
                          else f"truncated {fam.name} instruction")
    opcode = fam.opcode(word)
    row = ops[fam.name].get(opcode)
    if row is None:
        raise DecodeError(arch, offset, data[offset : offset + fam.size], f"no {fam.name} opcode {opcode:#x}")
    mnemonic, has_literal, operand_rows, modifier_rows, fixed = row
    fields = {n: (word >> spec[0]) & ((1 << spec[1]) - 1) for n, spec in fam.fields.items()}
    wrong = [f"{n}={fields[n]:#x} (must be {v:#x})" for n, v in fixed if fields[n] != v]
    if wrong:
        raise DecodeError(arch, offset, data[offset : offset + fam.size], f"{mnemonic}: {', '.join(wrong)}")
    takes_literal = has_literal or any(
        fields[f] == 255 and fam.fields[f][2] in ("src", "ssrc") for p, fs in operand_rows if p != "=" for f in fs
    )
    size = fam.size + 4 * takes_literal
    if size > avail:
        raise DecodeError(arch, offset, data[offset : offset + fam.size], "truncated literal constant")
    literal = int.from_bytes(data[offset + fam.size : offset + size], "little") if takes_literal else None
    ctx = isa_text.Ctx(gen, literal, names)
    operands = []
    for printer, names in operand_rows:
        if printer == "=":
            operands.append(Operand(names, printer, {}))
            continue
        values = {n: fields[n] for n in names}
        found = isa_text.printer(printer)
        text = found[1](ctx, *values.values()) if found else None
        if text is None:
            raise DecodeError(arch, offset, data[offset : offset + size],
                              f"{mnemonic}: operand {', '.join(f'{k}={v:#x}' for k, v in values.items())} is not valid")
        operands.append(Operand(text, printer, values))
    modifiers = []
    for style, name, names, scales, bits in modifier_rows:
        text = isa_text.modifier(style, name, tuple(fields[n] for n in names), scales, bits, gen)
        if text is None:
            raise DecodeError(arch, offset, data[offset : offset + size], f"{mnemonic}: reserved {name} value")
        if text:
            modifiers.append(text)
    if _fake16(fam, operand_rows, modifier_rows, fields):
        operands = [Operand(HALF.sub(r"\1", o.text), o.printer, o.fields) for o in operands]
        modifiers = [m for m in modifiers if not m.startswith(" op_sel:")]
    return Instruction(arch, offset, fam.name, opcode, mnemonic, size, fields, literal, tuple(operands),
                       tuple(modifiers))


HALF = re.compile(r"\b(v\d+)\.[lh]\b")  # a VGPR half, as true16 text names it


def _fake16(fam: Family, operand_rows: tuple, modifier_rows: tuple, fields: dict[str, int]) -> bool:
    """Whether LLVM reads a true16 instruction (16-bit operands as VGPR halves, chosen by op_sel) in its fake16
    form instead: it does when an op_sel bit is set that the true16 form has no place for (no operand reads it,
    op_sel:[...] does not show it). That form names whole VGPRs and prints no op_sel."""
    placed = {f for p, fs in operand_rows if p != "=" for f in fs if f.startswith("opsel")}
    if not placed:
        return False
    placed |= {f for m in modifier_rows for f in m[2]}
    return any(v and name.startswith("opsel") and fam.fields[name][2] == "opsel" and name not in placed
               for name, v in fields.items())


def decode_all(data: bytes, arch: str, start: int = 0) -> list[Instruction]:
    """Every instruction of data from start, in order."""
    data = checked(data, arch, start)
    out, offset = [], start
    while offset < len(data):
        inst = _decode(data, arch, offset)
        out.append(inst)
        offset += inst.size
    return out
