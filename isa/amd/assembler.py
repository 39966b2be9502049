"""Assemble LLVM-syntax AMD GPU assembly with the same tables the decoder reads.

For each encoding of the mnemonic, every operand and modifier is turned back into field values by
inverting its printer (enumerating the printer's fields, which are narrow), and the candidate counts only
if it disassembles to the same text: what asm produces, disasm reads back unchanged.
"""

from __future__ import annotations

import itertools
import re
import struct
from functools import cache

from usergpu.errors import DecodeError, Error
from usergpu.isa.amd import encoding as isa_encodings
from usergpu.isa.amd import text as isa_text
from usergpu.isa.amd.decoder import HALF, check_arch, decode, tables

SENTINEL = 0xABCD1234  # the literal the reverse maps are built with; a real literal is substituted for it
_LABEL = re.compile(r"^([A-Za-z_.$][\w.$]*):")
_HEX = re.compile(r"0x[0-9a-fA-F]+")
_WHOLE = re.compile(r"\b(v\d+)\b(?![.\[])")
_OPSEL = re.compile(r" op_sel:\[[01,]+\]")
# an integer operand (not a register's number, a float's digits or a modifier's value such as offset:16)
_INTEGER = re.compile(r"(?<![\w.\[:])-?(?:0x[0-9a-fA-F]+|\d+)(?![\w.])")


class AsmError(Error):
    """Assembly that does not encode: says the line, the text and why."""


@cache
def _index(arch: str) -> dict[str, list[tuple]]:
    """mnemonic -> [(family, opcode, row)], for every encoding the tables know."""
    families, ops, _ = tables(arch)
    out: dict[str, list[tuple]] = {}
    for fam in families:
        for opcode, row in ops[fam.name].items():
            out.setdefault(row[0].strip(), []).append((fam, opcode, row))  # gfx11 NSA samplers: "image_sample  v0"
    return out


@cache
def _reverse(arch: str, printer: str, widths: tuple[int, ...]) -> dict[str, list[tuple[int, ...]]]:
    """text -> every value of the printer's fields that prints it, smallest first (LLVM's choice)."""
    _, _, names = tables(arch)
    ctx = isa_text.Ctx(isa_encodings.GENERATION[arch], SENTINEL, names)
    fn = isa_text.printer(printer)[1]
    out: dict[str, list[tuple[int, ...]]] = {}
    domains = [_domain(w) for w in widths]
    for values in itertools.product(*domains):
        text = fn(ctx, *values)
        if text is not None and not (printer.endswith("_b16") and 240 <= values[0] <= 248):
            out.setdefault(text, []).append(values)
    return out


def _domain(width: int) -> list[int] | range:
    """A field's values in the order the assembler tries them: a 9-bit source names VGPRs as 256 + n, so where a
    printer reads v5 either way (VINTERP's sources), LLVM encodes that."""
    return [*range(256, 512), *range(256)] if width == 9 else range(1 << width)


def _pick(fields: tuple[str, ...], options: list[tuple[int, ...]], known: dict[str, int]) -> dict[str, int] | None:
    """The first option that agrees with the fields other operands already set (VOPD's two destinations)."""
    for values in options:
        if all(known.get(f, v) == v for f, v in zip(fields, values, strict=True)):
            return dict(zip(fields, values, strict=True))
    return None


def _operand(arch: str, fam, printer: str, fields: tuple[str, ...], text: str, labels: dict[str, int], pc: int,
             known: dict[str, int]):
    """(field values, literal or None) that print as text, or None."""
    if printer in ("lit", "lit16"):
        return ({}, int(text, 16)) if _HEX.fullmatch(text) else None
    if printer.startswith("img:"):  # an image register or address list: the first register of each
        regs = [int(n) for n in re.findall(r"v\[?(\d+)", text)]
        named = fields[:1] if printer.endswith(":data") else fields[1:-5]
        return (dict(zip(named, regs, strict=False)), None) if 0 < len(regs) <= len(named) else None
    if isa_text.printer(printer) is None:  # a printer the tables do not know ('?'): nothing to invert
        return None
    if not fields and not _HEX.fullmatch(text):  # a literal printed as a number (s_setreg_imm32_b32's 0)
        return _literal(arch, printer, text)
    widths = tuple(fam.fields[f][1] for f in fields)
    if sum(widths) > 16:  # a wide field (an offset): its candidates are the numbers the text holds
        return _search(arch, printer, fields, widths, text)
    table = _reverse(arch, printer, widths)
    half = _WHOLE.sub(r"\1.l", text)  # fake16 syntax: a whole VGPR where the true16 row reads its low half
    for key in (text, half):
        if key in table:
            got = _pick(fields, table[key], known)
            return None if got is None else (got, None)
    for m in _HEX.finditer(text):  # a literal constant: try it as a 32-bit and as a 16-bit one
        value = int(m.group(0), 16)
        for stand_in, lit in ((f"0x{SENTINEL:x}", value), (f"0x{SENTINEL & 0xFFFF:x}", value & 0xFFFF)):
            key = text[: m.start()] + stand_in + text[m.end() :]
            got = _pick(fields, table.get(key, []), known)
            if got is not None:
                return got, lit
    if text in labels and printer == "imm_dec":  # a branch target: words from the next instruction
        return {fields[0]: ((labels[text] - pc - 4) >> 2) & 0xFFFF}, None
    return None


def _literal(arch: str, printer: str, text: str):
    """({}, the 32-bit literal) that a fieldless literal printer prints as text (an integer or a float), or None."""
    try:
        value = int(text, 0) & 0xFFFFFFFF
    except ValueError:
        try:
            value = struct.unpack("<I", struct.pack("<f", float(text)))[0]
        except (ValueError, OverflowError):  # not a number, or a float past f32's range
            return None
    _, _, names = tables(arch)
    ctx = isa_text.Ctx(isa_encodings.GENERATION[arch], value, names)
    return ({}, value) if isa_text.printer(printer)[1](ctx) == text else None


def _search(arch: str, printer: str, fields: tuple, widths: tuple, text: str):
    numbers = {0} | {int(n, 0) for n in re.findall(r"-?(?:0x[0-9a-fA-F]+|\d+)", text)}
    domains = [_domain(w) if w <= 10 else sorted({n & ((1 << w) - 1) for n in numbers}) for w in widths]
    _, _, names = tables(arch)
    ctx = isa_text.Ctx(isa_encodings.GENERATION[arch], None, names)
    fn = isa_text.printer(printer)[1]
    for values in itertools.product(*domains):
        if fn(ctx, *values) == text:
            return dict(zip(fields, values, strict=True)), None
    return None


def _modifiers(rows: tuple, items: list[str], gen: int) -> dict[str, int] | None:
    """Field values for the trailing items, or None if an item fits none of the modifiers."""
    values: dict[str, int] = {}
    left = list(items)
    for style, name, fields, scales, bits in rows:
        if style.startswith("bits") and style[4:]:
            values.update(zip(fields, map(int, style[4:]), strict=True))
        found = None
        spans = (1, 2) if style in isa_text.STYLES else (1,)  # gfx12's image cache policy: "th:.. scope:.."
        for at, span in itertools.product(range(len(left)), spans):
            item = " ".join(left[at : at + span])
            for vals in _modifier_values(style, name, fields, scales, bits, item, gen):
                if isa_text.modifier(style, name, vals, scales, bits, gen) == f" {item}":
                    found = (at, span, vals)
                    break
            if found:
                break
        if found:
            del left[found[0] : found[0] + found[1]]
            values.update(zip(fields, found[2], strict=False))
        elif style == "map":  # not written: the value that prints nothing (MTBUF's default format)
            shown = {int(pair.split("=", 1)[0]) for pair in name.split("|")}
            quiet = next((v for v in range(1 << bits) if v not in shown), None)
            if quiet is not None:
                values[fields[0]] = quiet
    return None if left else values


def _modifier_values(style: str, name: str, fields: tuple, scales: tuple, bits: int, item: str, gen: int):
    """Candidate field values for one item (checked by printing them back)."""
    if style == "const":
        yield ()
    elif style == "flag":
        yield (1,)
    elif style == "bare" and item.isdigit():
        yield (int(item),)
    elif style.startswith("bits") and "[" in item:
        slots = [int(x) for x in item.split("[", 1)[1].rstrip("]").split(",")]
        yield tuple(slots[p - 1] if p - 1 < len(slots) else 0 for p in scales)
    elif style == "map":
        for pair in name.split("|"):
            value, form = pair.split("=", 1)
            if form == item:
                yield (int(value),)
    elif style == "dpp8" and "[" in item:
        sel = [int(x) for x in item.split("[", 1)[1].rstrip("]").split(",")]
        yield (sum(s << 3 * i for i, s in enumerate(sel)),)
    elif style == "swizzle":
        pattern = item.split(":", 1)[1] if ":" in item else ""
        yield from ((v & 0xFF, v >> 8) for v in range(1, 1 << 16) if isa_text.swizzle(v) == pattern)
    elif style in isa_text.STYLES:  # a style of one generation's own (gfx9's MTBUF format, gfx12's th + 8 * scope)
        yield from (_split(v, scales) for v in range(1 << bits) if isa_text.STYLES[style][0](v) == f" {item}")
    elif style == "dppctrl":
        yield from ((v,) for v in range(1 << 9) if isa_text.dpp_ctrl(v, gen) == item)
    elif ":" in item:
        try:
            number = int(item.split(":", 1)[1], 0)
        except ValueError:
            return
        yield _split(number & ((1 << bits) - 1), scales)


def _split(number: int, scales: tuple[int, ...]) -> tuple[int, ...]:
    """The field values of a modifier's value: sum(value * scale), e.g. offset1 * 256 + offset0."""
    parts = {}
    for i, scale in sorted(enumerate(scales or (1,)), key=lambda p: -p[1]):
        parts[i], number = divmod(number, scale) if scale else (0, number)  # scale 0: a field the value leaves 0
    return tuple(parts[i] for i in range(len(parts)))


def _try(arch: str, gen: int, fam, opcode: int, row: tuple, ops: list[str], items: list[str], text: str,
         labels: dict[str, int], pc: int) -> bytes | None:
    """The bytes of one candidate encoding, if the operands and modifiers fit it and it reads back as text."""
    _, _, operand_rows, modifier_rows, fixed = row
    extra = []
    while len(ops) > len(operand_rows):  # 'off offset:16': a slot that holds modifiers
        extra.insert(0, ops.pop())
    if len(ops) != len(operand_rows):
        return None
    mods = _modifiers(modifier_rows, [*extra, *items], gen)
    if mods is None:
        return None
    # a field the text does not set is at its default, the family's base value: an op_sel_hi bit (an unused
    # source's is 1, as LLVM encodes it), a generation's own style (gfx9's MTBUF format: 1)
    defaults = {f: spec[3] for f, spec in fam.fields.items()
                if len(spec) > 3 and (spec[2] == "opsel" or spec[2] in isa_text.STYLES)}
    values, literal = {**defaults, **dict(fixed), **mods}, None
    # modifiers, then operands of one field: an operand of several (global's vaddr with saddr, a buffer's vaddr
    # with offen/idxen) must agree with what they set
    pairs = sorted(zip(operand_rows, ops, strict=True), key=lambda p: p[0][0] != "=" and len(p[0][1]))
    for (printer, fields), token in pairs:
        if printer == "=":
            if token != fields:
                return None
            continue
        got = _operand(arch, fam, printer, fields, token, labels, pc, values)
        if got is None:
            return None
        values.update(got[0])
        literal = got[1] if got[1] is not None else literal
    word = fam.place(opcode)
    for f, v in values.items():
        lo, width = fam.fields[f][:2]
        word |= (v & ((1 << width) - 1)) << lo
    data = word.to_bytes(16, "little")[: fam.size] + (literal or 0).to_bytes(4, "little")
    try:
        inst = decode(data, arch)
    except DecodeError:
        return None
    for i, token in enumerate(ops):  # a branch label reads back as its offset
        if token in labels and i < len(inst.operands):
            text = text.replace(token, inst.operands[i].text)
    got, want = " ".join(inst.text.split()).partition(" ")[2], text.partition(" ")[2]
    return data[: inst.size] if want in (got, _OPSEL.sub("", HALF.sub(r"\1", got))) else None  # or its fake16 form


# opcodes whose float inline constants LLVM's assembler encodes as a literal of their f16 bits (it prints them
# back as that literal), though its disassembler reads the inline form as the same text
F16_LITERAL = {"v_pk_fmac_f16"}
_FLOAT_TEXT = {isa_text.inline(v, "f16"): bits for v, bits in isa_text.F16_BITS.items()}


def _check_immediates(text: str, arch: str) -> None:
    """An integer no encoding can hold (inline constants and literals are 32 bits) is refused as such."""
    for m in _INTEGER.finditer(text.partition(" ")[2]):
        if not -(1 << 31) <= int(m.group(0), 0) < 1 << 32:
            raise AsmError(f"{arch}: {text!r}: the immediate {m.group(0)} is out of range (an immediate or literal "
                           "constant is 32 bits: -0x80000000..0xffffffff)")


def encode_one(text: str, arch: str, pc: int = 0, labels: dict[str, int] | None = None) -> bytes:
    """One instruction's bytes."""
    labels = labels or {}
    gen = isa_encodings.GENERATION[check_arch(arch)]
    text = " ".join(_text(text).split())
    _check_immediates(text, arch)
    if text.split(" ")[0] in F16_LITERAL:
        text = re.sub(r"(?<=[ ,])(-?[\d.]+)(?=,|$)", lambda m: f"0x{_FLOAT_TEXT[m.group(1)]:x}"
                      if m.group(1) in _FLOAT_TEXT else m.group(1), text)
    mnemonic, operands = isa_text.split_text(text)
    index = _index(arch)
    # the shortest encoding first, as LLVM's assembler chooses (gfx9's v_nop is never its SDWA form)
    candidates = sorted((c for m in (mnemonic, f"{mnemonic}_e32", f"{mnemonic}_e64") for c in index.get(m, [])),
                        key=lambda c: c[0].size)
    if not candidates:
        raise AsmError(f"{arch}: unknown mnemonic {mnemonic!r} in {text!r}")
    for fam, opcode, row in candidates:
        # the words after the last operand are modifiers, unless the operand itself has spaces (s_waitcnt's)
        words = operands[-1].split(" ") if operands else []
        for k in range(max(len(words), 1) if row[3] else 1):
            ops = [*operands[:-1], " ".join(words[: len(words) - k])] if words else list(operands)
            data = _try(arch, gen, fam, opcode, row, ops, words[len(words) - k :], text, labels, pc)
            if data is not None:
                return data
    raise AsmError(f"{arch}: cannot encode {text!r}")


def _text(text: object) -> str:
    if not isinstance(text, str):
        raise AsmError(f"the assembly must be text (str), not {type(text).__name__}")
    return text


def asm(text: str, arch: str) -> bytes:
    """Assemble a program: one instruction a line, `label:` lines, `;` and `//` comments; branches to labels."""
    check_arch(arch)
    lines = []
    for raw in _text(text).splitlines():
        line = re.split(r";|//", raw, maxsplit=1)[0].strip()
        while (m := _LABEL.match(line)) is not None:
            lines.append(("label", m.group(1)))
            line = line[m.end() :].strip()
        if line and not line.startswith("."):
            lines.append(("inst", line))
    labels = {value: 0 for kind, value in lines if kind == "label"}
    for _ in range(2):  # sizes do not depend on label values: the second pass has every label's address
        pc, out, found = 0, [], {}
        for kind, value in lines:
            if kind == "label":
                found[value] = pc
                continue
            out.append(encode_one(value, arch, pc, labels))
            pc += len(out[-1])
        labels = found
    return b"".join(out)
