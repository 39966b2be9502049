"""How LLVM's AMDGPU assembly spells operands (hand-written facts of its syntax, not generated): the printers
every generation shares (base.py) and those particular to gfx9 (gfx9.py) and gfx12 (gfx12.py), in one table.

The ISA table generator picks, for each operand of each opcode, the printer that reproduces what llvm-mc prints on
its probes; the disassembler applies the same printer, and the assembler inverts it. Which printer an operand uses
is data (usergpu.autogen.isa_<arch>).
"""

from __future__ import annotations

from collections.abc import Callable

from usergpu.isa.amd.text import base, gfx9, gfx12
from usergpu.isa.amd.text.base import (
    COMPATIBLE,
    F16_BITS,
    NULL,
    SRC_NAMES,
    TYPES,
    Ctx,
    Printer,
    _shex,
    dpp_ctrl,
    image_shape,
    image_text,
    inline,
    pack_shapes,
    split_text,
    swizzle,
)

# every printer by name
PRINTERS: dict[str, tuple[tuple[str, ...], Printer]] = {**base.PRINTERS, **gfx9.PRINTERS, **gfx12.PRINTERS}
# trailing-modifier styles of one generation's own, named by the field kind that has it: kind -> (its text from the
# field's value, with the leading space, '' when not printed; the values the generator probes)
STYLES: dict[str, tuple[Callable[[int], str | None], tuple[int, ...]]] = {**gfx9.STYLES, **gfx12.STYLES}


def modifier(style: str, name: str, values: tuple[int, ...], scales: tuple[int, ...], bits: int, gen: int = 11) -> str:
    """A trailing modifier's text (with its leading space), '' when it is not printed, None when invalid."""
    if style == "const":
        return f" {name}"
    if style.startswith("bits"):  # op_sel:[a,b,c]: one position per field, unless all are at their defaults
        if "".join(map(str, values)) == style[4:]:
            return ""
        slots = [int(style[4])] * bits if style[4:] else [0] * bits
        for v, pos in zip(values, scales, strict=True):
            slots[pos - 1] = v
        return f" {name}:[{','.join(map(str, slots))}]"
    if style == "map":
        forms = dict(pair.split("=", 1) for pair in name.split("|"))
        return f" {forms[str(values[0])]}" if str(values[0]) in forms else ""
    v = sum(x * s for x, s in zip(values, scales, strict=False)) if scales else values[0]
    if style in STYLES:
        return STYLES[style][0](v)
    if style == "dpp8":
        return f" dpp8:[{','.join(str(v >> 3 * i & 7) for i in range(8))}]"
    if style == "dppctrl":
        text = dpp_ctrl(v, gen)
        return None if text is None else f" {text}"
    if style == "swizzle":
        return f" {name}:{swizzle(v)}" if v else ""
    if style == "hexall":
        return f" {name}:0x{v:x}"
    if not v and not style.endswith("!"):  # '!': printed at 0 too
        return ""
    style = style.rstrip("!")
    if style == "bare":  # an operand shown only when not zero (s_endpgm 5)
        return f" {v}"
    if style == "flag":
        return f" {name}"
    if style == "dec":
        return f" {name}:{v}"
    if style == "sdec":
        return f" {name}:{v - (1 << bits) if v >> (bits - 1) & 1 else v}"
    if style == "hex":
        return f" {name}:0x{v:x}"
    return f" {name}:{_shex(v, bits)}"  # shex


def printer(name: str) -> tuple[tuple[str, ...], Printer] | None:
    """A printer by name; 'tab:KEY' is a table of LLVM's texts for every value, learned into the arch's NAMES;
    'img:KEY:data' and 'img:KEY:addr' an image instruction's data and address registers (image_shape)."""
    if name.startswith("tab:"):
        key = name[4:]
        return (("table",), lambda c, v: c.names.get(key, {}).get(v))
    if name.startswith("img:"):
        key, part = name[4:].rsplit(":", 1)
        return (("image",), lambda c, *v: image_text(c.names, key, part, v))
    return PRINTERS.get(name)


__all__ = ["COMPATIBLE", "F16_BITS", "NULL", "PRINTERS", "SRC_NAMES", "STYLES", "TYPES", "Ctx", "Printer",
           "dpp_ctrl", "image_shape", "image_text", "inline", "modifier", "pack_shapes", "printer",
           "split_text", "swizzle"]
