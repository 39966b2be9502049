"""Image instructions (gfx11 MIMG, gfx12 VIMAGE/VSAMPLE) learned from llvm-mc-22.

The widths of their register operands depend on other fields: the data on dmask, d16 and tfe (a gather4 always
returns four channels), the address on dim, a16 and the opcode's arguments. LLVM's disassembler picks the opcode
variant of those widths, and keeps the variant it decoded (the default) when none exists or when the wider
register would pass v255. Rather than model LLVM's variant tables, the learner records what it prints: per
opcode, the widths for every combination of the fields that set them (a shape table, isa_text.image_shape),
and the default widths. Modifiers, the resource operands' texts and the cache policy are probed one by one.
"""

from __future__ import annotations

import itertools
import re

from usergpu.autogen.generator import isa as learner  # its encode(); learner.learn hands image families here
from usergpu.autogen.generator import llvmmc
from usergpu.isa.amd import text as isa_text
from usergpu.isa.amd.encoding.family import Family

DMASKS = (1, 3, 7, 15)  # one dmask of each channel count, in the order of isa_text.image_index
SHAPE = ("dmask", "d16", "tfe", "dim", "a16")
FLAGS = ("unorm", "glc", "slc", "dlc", "nv", "r128", "a16", "tfe", "lwe", "d16")
ORDER = ("dmask", "dim", "unorm", "glc", "slc", "dlc", "cpol", "nv", "r128", "a16", "tfe", "lwe", "d16")  # LLVM's
BASE_RSRC = {"srsrc": (2, 8), "ssamp": (1, 4)}  # field value (gfx11: register / 4, gfx12: register)
_REG = re.compile(r"v(\d+)$|v\[(\d+):(\d+)\]$")


def is_image(fam: Family) -> bool:
    return any(spec[2] == "img" for spec in fam.fields.values())


def _widths(text: str) -> list[int] | None:
    """The widths of a register or a bracketed list of registers."""
    parts = text[1:-1].split(", ") if text.startswith("[") else [text]
    out = []
    for p in parts:
        m = _REG.match(p)
        if not m:
            return None
        out.append(1 if m.group(1) else int(m.group(3)) - int(m.group(2)) + 1)
    return out


def _shape(text: str) -> tuple[int, tuple[int, ...]] | None:
    """(data width, address widths) of an image instruction's text."""
    ops = isa_text.split_text(text)[1]
    data, addr = (_widths(ops[0]), _widths(ops[1])) if len(ops) > 1 else (None, None)
    return None if not data or not addr or len(data) != 1 else (data[0], tuple(addr))


def _run(arch: str, fam: Family, probes: list[tuple[int, dict[str, int]]]) -> list[str | None]:
    res = llvmmc.disassemble([learner.encode(fam, op, v, 0) for op, v in probes], arch)
    return [r[0] if r and r[1] == fam.size and "/*" not in r[0] else None for r in res]


def learn(arch: str, fam: Family, names: dict) -> dict[int, tuple]:
    """opcode -> row (as generator.isa.learn gives) for an image family; shape tables go into names."""
    gen12 = "scope" in fam.fields
    vaddrs = tuple(n for n in fam.fields if n.startswith("vaddr"))
    base = {n: 20 + 10 * i for i, n in enumerate(vaddrs[:4])}  # VIMAGE's fifth (BVH only) must otherwise be 0
    base |= {n: v[gen12] for n, v in BASE_RSRC.items() if n in fam.fields} | {"vdata": 0}
    # a first working form of each opcode: BVH wants every channel and r128 (gfx11: unorm too); some opcodes
    # want their unused last addresses at 0
    forms = [{"dmask": 1}, {"dmask": 15}, {"dmask": 15, "r128": 1}, {"dmask": 15, "r128": 1, "unorm": 1}]
    starts = [{k: v for k, v in {**base, **dict.fromkeys(vaddrs[n:], 0), **form}.items() if k in fam.fields}
              for n in range(len(vaddrs), 0, -1) for form in forms]
    ops = range(1 << fam.op[1])
    trials = [(op, s) for s in starts for op in ops]
    found: dict[int, tuple[dict, str]] = {}
    for (op, s), text in zip(trials, _run(arch, fam, trials), strict=True):
        if text and op not in found:
            found[op] = (s, text)
    rows = {}
    for op in sorted(found):
        rows[op] = _row(arch, fam, op, *found[op], vaddrs, names)
    return rows


def _row(arch: str, fam: Family, op: int, base: dict, text: str, vaddrs: tuple, names: dict) -> tuple:
    mnemonic = text.split(" ")[0]
    if text[len(mnemonic) :].startswith("  "):  # LLVM's gfx11 NSA samplers print a second space
        mnemonic += " "
    tokens = isa_text.split_text(text)[1]
    key = f"{fam.name}.{op:x}"
    names.setdefault("image", {})[key] = _shapes(arch, fam, op, base, names)
    shape_fields = ("vdata", *vaddrs, *SHAPE)
    operands = [(f"img:{key}:data", shape_fields), (f"img:{key}:addr", shape_fields)]
    for field, token in zip(("srsrc", "ssamp"), tokens[2:4], strict=False):
        width = len(_rsrc_regs(token))
        table = f"{fam.name}.{field}{width}"
        if table not in names:
            names[table] = _tabulate(arch, fam, op, base, field, tokens.index(token))
        operands.append((f"tab:{table}", (field,)))
    modifiers, fixed = _modifiers(arch, fam, op, base, text)
    return mnemonic, False, tuple(operands), tuple(modifiers), tuple(fixed)


def _rsrc_regs(token: str) -> range:
    m = re.match(r"(?:s|ttmp)\[(\d+):(\d+)\]", token.split(" ")[0])
    return range(int(m.group(1)), int(m.group(2)) + 1) if m else range(1)


def _tabulate(arch: str, fam: Family, op: int, base: dict, field: str, index: int) -> dict[int, str]:
    values = range(1 << fam.fields[field][1])
    out = {}
    for v, text in zip(values, _run(arch, fam, [(op, {**base, field: v}) for v in values]), strict=True):
        if text:
            out[v] = isa_text.split_text(text)[1][index].split(" ")[0]
    return out


def _shapes(arch: str, fam: Family, op: int, base: dict, names: dict) -> tuple:
    """(the number of the opcode's shape table in names['image_tables'], the default shape or None)."""
    combos = list(itertools.product(DMASKS, (0, 1), (0, 1), range(8), (0, 1)))
    present = [f for f in SHAPE if f in fam.fields]
    probes = [(op, {**base, **{f: v for f, v in zip(SHAPE, c, strict=True) if f in present}}) for c in combos]
    table = [_shape(t) if t else None for t in _run(arch, fam, probes)]
    # the default: what prints when the widened data register would pass v255
    wide = sorted((i for i, s in enumerate(table) if s and s[0] > 1), key=lambda i: -table[i][0])[:8]
    tries = [(op, {**probes[i][1], "vdata": 257 - table[i][0]}) for i in wide]
    default = None
    for i, text in zip(wide, _run(arch, fam, tries), strict=True):
        got = _shape(text) if text else None
        if got and got != table[i]:
            default = got
            break
    tables = names.setdefault("image_tables", {})
    packed = isa_text.pack_shapes(table)
    number = next((i for i, t in tables.items() if t == packed), len(tables))
    tables[number] = packed
    return number, default


def _modifiers(arch: str, fam: Family, op: int, base: dict, text: str) -> tuple[list, list]:
    """The trailing modifiers that print (in LLVM's order), and the fields that must hold a value."""
    plain = ("vdata", "srsrc", "ssamp", "th", "scope", "dim")
    fields = [f for f in fam.fields if f not in plain]
    probes = [(("field", f), {f: 0 if base.get(f) else 70 if f.startswith("vaddr") else 1}) for f in fields]
    probes += [(("dim", d), {"dim": d}) for d in range(8)]
    if "th" in fam.fields:
        probes += [(("cpol", (th, sc)), {"th": th, "scope": sc}) for th in range(8) for sc in range(4)]
    texts = _run(arch, fam, [(op, {**base, **v}) for _, v in probes])
    items = text.split(" ")
    mods: dict[str, tuple] = {}
    fixed, dims, cpol = [], {}, {}
    for ((what, arg), _), got in zip(probes, texts, strict=True):
        if what == "field" and got is None and arg not in SHAPE[1:]:
            fixed.append((arg, base.get(arg, 0)))
        elif what == "field" and arg in FLAGS and (arg in items if base.get(arg) else got and arg in got.split(" ")):
            mods[arg] = ("flag", arg, (arg,), (1,), 1)
        elif what == "dim" and got and (m := re.search(r" (dim:\S+)", got)):
            dims[arg] = m.group(1)
        elif what == "cpol" and got:
            cpol[arg] = got
    if "dmask:" in text:
        mods["dmask"] = ("hex", "dmask", ("dmask",), (1,), 4)
    if dims:
        mods["dim"] = ("map", "|".join(f"{v}={t}" for v, t in sorted(dims.items())), ("dim",), (), 3)
    if cpol:
        mods["cpol"] = (f"g12cpol_{_cpol_kind(cpol)}", "cpol", ("th", "scope"), (1, 8), 5)
    return [mods[k] for k in ORDER if k in mods], fixed


def _cpol_kind(seen: dict[tuple[int, int], str]) -> str:
    """gfx12's th/scope: the opcode kind (load, store, atomic) whose names LLVM prints."""
    from usergpu.isa.amd.text import gfx12 as isa_text_gfx12

    return next((kind for kind in isa_text_gfx12.KINDS
                 if all(isa_text_gfx12.cpol(th, sc, kind) in t for (th, sc), t in seen.items())), "load")
