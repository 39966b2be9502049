"""ISA opcode tables learned from llvm-mc-22: for each family of an arch, every opcode value it decodes,
its mnemonic, each operand's printer (isa_text.PRINTERS) and its trailing modifiers.

For an opcode, a base encoding gives each field a distinct value (v10, v20, s8, ...); then every field is
probed with other values, one at a time. The operand whose text changes is bound to that field; items
that appear after the operands are modifiers. Each operand's printer is the first printer of the bound
fields' kinds that gives exactly the texts llvm-mc printed; each modifier's style is read off its items.
"""

from __future__ import annotations

import itertools
import re
import struct
from collections import defaultdict

from usergpu.autogen import _data
from usergpu.autogen.generator import isa_image, llvmmc, writer
from usergpu.isa.amd import encoding as isa_encodings
from usergpu.isa.amd import text as isa_text
from usergpu.isa.amd.encoding import Family

LIT_BASE, LIT_PROBE = 0x40490FDB, 0x3F800000
BASE = {"vgpr": [10, 20, 30, 40, 50, 60], "sgpr": [8, 16, 24, 32], "sbase": [8, 12], "src": [276, 286, 296],
        "vsrc": [276, 286], "ssrc": [16, 24], "src_nolit": [276, 286, 296], "ssrc_nolit": [16, 24], "srsrc": [2], "vdst": [10]}
OPERAND_KINDS = {"vgpr", "sgpr", "sbase", "src", "ssrc", "saddr", "srsrc", "vsrc", "src_nolit", "ssrc_nolit", "vdst"}
MODIFIER_KINDS = {"flag", "omod", "offset", "opsel", "abs", "neg", "soffset21", "dpp8", "dppctrl", "mask",
                  "format", "sel", "enum"}
FIXED_STYLES = {"dpp8": "dpp8", "dppctrl": "dppctrl", "mask": "hexall"}  # printed by isa_text.modifier as such
MODIFIER_ITEM = re.compile(
    r"^([a-z][a-z0-9_]*:|(clamp|glc|slc|dlc|gds|nt|sc0|sc1|lds|tfe|offen|idxen|row_mirror|row_half_mirror)$)")
SRC_PROBES = [40, 106, 124, 126, 129, 193, 240, 248, 255]


def probes(kind: str, base: int, width: int) -> list[int]:
    """Values a field is probed with (each differs from its base value)."""
    if kind in ("vgpr", "vsrc", "vdst"):  # vdst: a VGPR or SGPR destination, which LLVM may name as a source
        return [base + 4, base + 5, *([251] if kind == "vdst" else [])]
    if kind == "sgpr":
        return [v for v in (base + 32, 106, 124, 126) if v != base]
    if kind in ("sbase", "srsrc"):
        return [base + 16 if kind == "sbase" else base + 1]
    if kind == "format":  # MTBUF's data format: every value, LLVM names them
        return list(range(1 << width))
    if kind == "saddr":
        return [24, 40]
    if kind in ("src", "ssrc", "src_nolit", "ssrc_nolit"):  # _nolit: a source that takes no literal (gfx9's VOP3)
        values = [base + 4 if kind.startswith("src") else base + 32, *SRC_PROBES]
        return [v for v in values if v != 255] if kind.endswith("_nolit") else values
    if kind == "imm":
        return [1, 0x1234, 0x8000, 0xFFFF]
    if kind == "omod":
        return [1, 2, 3]
    if kind in isa_text.STYLES:
        return [v for v in isa_text.STYLES[kind][1] if v != base]
    if kind == "enum":  # a small enumeration: every other value
        return [v for v in range(1 << width) if v != base]
    if kind == "sel":  # a small enumeration (SDWA's selects) whose all-ones value is reserved (llvm-mc crashes)
        return [v for v in range((1 << width) - 1) if v != base]
    if kind in ("offset", "soffset21"):
        return [16, 1, 1 << (width - 1)]
    if kind in ("dpp8", "dppctrl", "mask"):
        return {"dpp8": [0o76543210, 0o12345670], "dppctrl": [0x1B, 0x101, 0x111, 0x121, 0x140, 0x150, 0x160],
                "mask": [0, 5]}[kind]
    return [base ^ 1] if width == 1 else [1]


def base_values(fam: Family) -> dict[str, int]:
    used: dict[str, int] = defaultdict(int)
    out = {}
    for name, spec in fam.fields.items():
        kind = spec[2]
        pool = BASE.get(kind)
        out[name] = spec[3] if len(spec) > 3 else pool[used[kind] % len(pool)] if pool else 0
        used[kind] += 1
    return out


def encode(fam: Family, op: int, values: dict[str, int], lit: int) -> bytes:
    word = fam.place(op)
    for name, v in values.items():
        lo, width = fam.fields[name][:2]
        word |= (v & ((1 << width) - 1)) << lo
    return word.to_bytes(16, "little")[: fam.size] + struct.pack("<I", lit)


def split(text: str, fam: Family) -> tuple[str, list[str], list[str]]:
    """mnemonic, operands, trailing modifier items (for families that have modifiers)."""
    mnemonic, operands = isa_text.split_text(text)
    items: list[str] = []
    if operands and "::" not in mnemonic and any(spec[2] in MODIFIER_KINDS for spec in fam.fields.values()):
        last, *items = operands[-1].split(" ")
        operands[-1] = last
        if not last or MODIFIER_ITEM.match(last):
            operands.pop()
            items = [last, *items] if last else items
    return mnemonic, operands, items


def _bases(fam: Family) -> list[dict[str, int]]:
    """The base encoding, then versions of it with operand fields zeroed (LLVM rejects some unused ones)."""
    full = base_values(fam)
    names = [n for n, spec in fam.fields.items() if spec[2] in OPERAND_KINDS or full[n] and spec[2] == "flag"]
    out = []
    for k in range(len(names) + 1):
        for zeroed in itertools.combinations(reversed(names), k):
            out.append({**full, **dict.fromkeys(zeroed, 0)})
    # then sources that must be scalar (v_readlane's lane select): each source an SGPR in turn
    out += [{**full, n: full[n] - 256} for n in names if fam.fields[n][2] == "src"]
    # and destinations some opcodes hard-wire (v_cmpx_*_e64 writes exec: its vdst must read exec_lo)
    out += [{**full, n: v} for n in names for v in (126, 124) if fam.fields[n][1] >= 7]
    return out


def learn(arch: str, fam: Family, names: dict | None = None) -> dict[int, tuple]:
    """opcode -> (mnemonic, literal?, operands, modifiers) for the opcodes llvm-mc decodes in this family."""
    names = names if names is not None else {}
    if isa_image.is_image(fam):
        return isa_image.learn(arch, fam, names)
    gen = isa_encodings.GENERATION[arch]
    families = isa_encodings.FAMILIES[arch]
    earlier = families[: families.index(fam)]
    # an opcode whose encoding an earlier family claims is that family's (SOP2 ops 0x60.. are SOPK)
    ops = [op for op in range(1 << (fam.op[1] + fam.opx[1]))
           if fam.matches(fam.place(op)) and not any(f.matches(fam.place(op)) for f in earlier)]
    bases = _bases(fam)
    trials = [(op, b) for b in bases for op in ops]
    chosen: dict[int, tuple[dict[str, int], tuple[str, int]]] = {}
    for (op, b), res in zip(trials, llvmmc.disassemble([encode(fam, op, b, LIT_BASE) for op, b in trials], arch),
                            strict=True):
        if res and res[1] <= fam.size + 4 and op not in chosen and "/*" not in res[0]:
            chosen[op] = (b, res)
    plan = []
    for op, (base, _) in chosen.items():
        for name, spec in fam.fields.items():
            plan += [(op, name, v, LIT_BASE) for v in probes(spec[2], base[name], spec[1])]
        plan.append((op, "literal", 0, LIT_PROBE))
    encs = []
    for op, name, v, lit in plan:
        base = chosen[op][0]
        values = base if name == "literal" else {**base, name: v}
        encs.append(encode(fam, op, values, lit))
    seen: dict[int, list] = defaultdict(list)
    for probe, res in zip(plan, llvmmc.disassemble(encs, arch), strict=True):
        seen[probe[0]].append((probe, res))
    ctx = (gen, names)
    rows = {op: _row(fam, ctx, chosen[op][0], chosen[op][1], seen[op]) for op in sorted(chosen)}
    return _tabulate(arch, fam, chosen, rows, names)


def _tabulate(arch: str, fam: Family, chosen: dict, rows: dict[int, tuple], names: dict) -> dict[int, tuple]:
    """Operands of one narrow field that no printer explains (EXP's target, an attribute channel) read from a
    table of what llvm-mc prints for every value of the field, kept in NAMES under 'FAMILY.field'."""
    todo = {(op, i): row[2][i][1][0] for op, row in rows.items() for i, o in enumerate(row[2])
            if o[0] == "?" and len(o[1]) == 1 and fam.fields[o[1][0]][1] <= 8}
    for (op, i), field in todo.items():
        key = f"{fam.name}.{field}"
        if key not in names:
            base = chosen[op][0]
            values = range(1 << fam.fields[field][1])
            encs = [encode(fam, op, {**base, field: v}, LIT_BASE) for v in values]
            table = {}
            for v, res in zip(values, llvmmc.disassemble(encs, arch), strict=True):
                if res and "/*" not in res[0]:
                    toks = split(res[0], fam)[1]
                    if i < len(toks):
                        table[v] = toks[i]
            names[key] = table
        mnemonic, literal, operands, modifiers, fixed = rows[op]
        operands = (*operands[:i], (f"tab:{key}", (field,)), *operands[i + 1 :])
        rows[op] = (mnemonic, literal, operands, modifiers, fixed)
    return rows


def _row(fam: Family, gen: tuple[int, dict], base: dict[str, int], found: tuple[str, int], observed: list) -> tuple:
    text, size = found
    mnemonic, tokens, base_items = split(text, fam)
    bound: dict[int, list[str]] = defaultdict(list)
    obs: dict[int, list[tuple[dict[str, int], int, str]]] = {i: [(base, LIT_BASE, t)] for i, t in enumerate(tokens)}
    new_items: dict[str, list[tuple[int, str]]] = defaultdict(list)  # field -> (value, item it adds)
    moved: set[str] = set()  # base items that some probe changes
    valid: dict[str, int] = defaultdict(int)  # field -> how many of its probes LLVM decoded
    for (_, name, v, lit), res in observed:
        if res is None or res[1] > fam.size + 4:
            continue
        valid[name] += 1
        if "/*" in res[0]:  # LLVM's own note that an operand is invalid here: not a form to learn
            continue
        m, toks, its = split(res[0], fam)
        if m == mnemonic and not tokens and len(toks) == 1 and name in fam.fields:  # s_endpgm 5: shown if not 0
            new_items[name].append((v & ((1 << fam.fields[name][1]) - 1), f"={toks[0]}"))
            continue
        if m != mnemonic or len(toks) != len(tokens):
            continue
        values = base if name == "literal" else {**base, name: v & ((1 << fam.fields[name][1]) - 1)}
        for i, (a, b) in enumerate(zip(tokens, toks, strict=True)):
            if a != b:
                if name not in bound[i]:
                    bound[i].append(name)
                obs[i].append((values, lit, b))
        if name != "literal":
            new_items[name] += [(values[name], item) for item in its if item not in base_items]
            gone = set(base_items) - set(its)
            moved |= gone
            # an item that goes when the field leaves its base value is that value's item (offen, base 1)
            new_items[name] += [(base[name], item) for item in gone if item not in set().union(*(
                {i for _, i in new_items[f]} for f in new_items if f != name))]
    operands = tuple(_choose(fam, gen, bound[i], obs[i], t) for i, t in enumerate(tokens))
    modifiers = _modifiers(fam, base, new_items)
    modifiers += [("const", i, (), (), 0) for i in base_items if i not in moved]
    modifiers.sort(key=lambda m: _rank(m[1], fam.name))
    # a field no probe of which LLVM accepts must keep its base value: anything else is an illegal encoding
    fixed = tuple((f, base[f]) for f, spec in fam.fields.items()
                  if not valid[f] and probes(spec[2], base[f], spec[1]) and not _overlaps(fam, f))
    return mnemonic, size > fam.size, operands, tuple(modifiers), fixed


# the order LLVM's printer puts trailing modifiers in (its operand order), by item name
MODIFIER_ORDER = ["format", "idxen", "offen", "offset", "offset0", "offset1", "gds", "glc", "slc", "dlc", "sc0", "nt",
                  "sc1", "bitop3", "op_sel", "op_sel_hi", "index_key", "neg_lo", "neg_hi", "clamp", "mul", "div", "dpp8",
                  "quad_perm", "row_shl", "row_shr", "row_ror", "row_mirror", "row_half_mirror", "row_share",
                  "row_xmask", "wave_shl", "wave_rol", "wave_shr", "wave_ror", "row_bcast", "row_mask", "bank_mask",
                  "bound_ctrl", "fi"]


# families whose printer orders some modifiers otherwise
FAMILY_ORDER = {"VINTERP": ["clamp", "op_sel"]}


def _rank(name: str, family: str = "") -> tuple[int, int]:
    key = _item_name(name.split("|")[0])
    first = FAMILY_ORDER.get(family, [])
    return (first.index(key) if key in first else len(first),
            MODIFIER_ORDER.index(key) if key in MODIFIER_ORDER else len(MODIFIER_ORDER))


def _overlaps(fam: Family, name: str) -> bool:
    """Whether a field shares bits with another (VOP3's sdst with abs/op_sel): its probes say nothing alone."""
    lo, width = fam.fields[name][:2]
    return any(o != name and spec[0] < lo + width and lo < spec[0] + spec[1] for o, spec in fam.fields.items())


def _item_name(item: str) -> str:
    return re.split(r"[:\[]", item.lstrip(" "))[0].split("=")[-1]


def _modifiers(fam: Family, base: dict[str, int], new_items: dict[str, list[tuple[int, str]]]) -> list[tuple]:
    """Group the items fields add into modifiers: one per field where a field has forms of its own (omod,
    dpp_ctrl), else one per item name across fields (op_sel:[..] from op_sel bits, offset from offset0/1)."""
    out, by_name = [], defaultdict(list)
    for f, seen in new_items.items():
        if not seen:
            continue
        kind = fam.fields[f][2]
        names = {_item_name(i) for _, i in seen}
        if any(":swizzle(" in i for _, i in seen):  # ds_swizzle: offset1:offset0 as one 16-bit swizzle pattern
            by_name[names.pop() if len(names) == 1 else "offset"] += [(f, v, i) for v, i in seen]
        elif all(i.startswith("=") for _, i in seen):
            out.append(("bare", "", (f,), (1,), fam.fields[f][1]))
        elif kind in FIXED_STYLES or kind in isa_text.STYLES:
            out.append((FIXED_STYLES.get(kind, kind), _item_name(seen[0][1]), (f,), (), fam.fields[f][1]))
        elif len(names) > 1 or not all(re.fullmatch(r"[a-z_0-9]+(:-?(0x[0-9a-f]+|\d+)|:\[[01,]+\])?", i)
                                       for _, i in seen):
            pairs = "|".join(f"{v}={i}" for v, i in sorted(set(seen)))
            out.append(("map", pairs, (f,), (), fam.fields[f][1]))
        else:
            by_name[names.pop()] += [(f, v, i) for v, i in seen]
    for name, seen in by_name.items():
        m = _modifier(fam, base, name, seen)
        if m:
            out.append(m)
    return out


def _choose(fam: Family, gen: tuple[int, dict], fields: list[str], obs: list, token: str) -> tuple:
    """(printer, fields) that reproduces every observation, ('=', text) for a fixed operand, or ('?', fields).

    When no printer explains all the fields that change the operand, the largest subset of them that a
    printer explains (on the observations where the other fields keep their base values) is taken: LLVM
    switches to other forms when fields an opcode does not use are set.
    """
    real = [f for f in fam.fields if f in fields]
    if not real and "literal" not in fields:
        return ("=", token)
    if not real:  # the literal constant itself (v_fmamk_f32's K)
        for name, (sig, fn) in isa_text.PRINTERS.items():
            if sig == () and all(_apply(fn, gen, lit, []) == text for _, lit, text in obs):
                return (name, ())
    base = obs[0][0]
    signatures = {sig for sig, _ in isa_text.PRINTERS.values()}
    for k in range(len(real), 0, -1):
        for subset in itertools.combinations(real, k):
            kinds = tuple(isa_text.COMPATIBLE.get(fam.fields[f][2], fam.fields[f][2]) for f in subset)
            if kinds not in signatures:
                continue
            rest = [f for f in real if f not in subset]
            seen = [o for o in obs if all(o[0][f] == base[f] for f in rest)]
            for name, (sig, fn) in isa_text.PRINTERS.items():
                if sig == kinds and all(
                    _apply(fn, gen, lit, [values[f] for f in subset]) == text for values, lit, text in seen
                ):
                    return (name, subset)
    return ("?", tuple(real))


def _apply(fn, gen: tuple[int, dict], lit: int, args: list[int]) -> str | None:
    try:
        return fn(isa_text.Ctx(gen[0], lit, gen[1]), *args)
    except (KeyError, ValueError, IndexError):
        return None


def _modifier(fam: Family, base: dict[str, int], name: str, seen: list[tuple[str, int, str]]) -> tuple | None:
    """(style, name, fields, scales, bits) of one trailing modifier, from the items its fields produced."""
    fields = sorted({f for f, _, _ in seen if fam.fields[f][1] == 1 or "[" not in seen[0][2]},
                    key=list(fam.fields).index)
    if all(f not in fam.fields for f in fields):
        return None
    if any(":swizzle(" in i for _, _, i in seen):
        lows = [fam.fields[f][0] for f in fields]
        return ("swizzle", name, tuple(fields), tuple(1 << (lo - min(lows)) for lo in lows), 16)
    first = {f: next((v, i) for g, v, i in seen if g == f) for f in fields}
    if any("[" in i for _, i in first.values()):  # op_sel:[0,1,0]: each field flips one position from its default
        first = {f: (v, i) for f, (v, i) in first.items() if str(1 - base[f]) in i.split("[")[1]}
        fields = list(first)
        if not fields:
            return None
    bits = max(fam.fields[f][1] for f in fields)
    sample = next(iter(first.values()))[1]
    if "[" in sample:  # printed unless every field is at its default (op_sel_hi's is 1); bits: how many slots
        slots = len(sample.split("[")[1].split(","))
        # printed at the base values too: then its default is all 0s (fma_mix's op_sel_hi:[1,1,1]), or it has none
        # (printed always: v_mfma_scale's op_sel_hi:[0,0,0])
        shown = any(v == base[g] for g, v, _ in seen if g in fields)
        defaults = "".join(str(base[f]) for f in fields)
        defaults = ("" if "1" not in defaults else "0" * len(fields)) if shown else defaults
        return ("bits" + defaults, name, tuple(fields), tuple(i.split("[")[1].rstrip("]").split(",").index(str(1 - base[f])) + 1 for f, (_, i) in first.items()),
                slots)
    if ":" not in sample:
        return ("flag", name, tuple(fields), (1,), bits)
    scales, signed, hexa, always = [], False, False, False
    for f in fields:
        pos = [(v, i.split(":", 1)[1]) for g, v, i in seen if g == f]
        hexa |= any("0x" in t for _, t in pos)
        signed |= any(t.startswith("-") for _, t in pos)
        always |= any(not v for v, _ in pos)  # an item at the value 0 (SMEM's offset:0x0): always printed
        v, t = min((p for p in pos if p[0]), key=lambda p: p[0])
        if not re.fullmatch(r"-?(0x[0-9a-f]+|\d+)", t):  # a named form (ds_swizzle's swizzle(...)): not numeric
            return None
        scales.append(int(t, 0) // v if not t.startswith("-") else 1)
    width = max(fam.fields[f][1] + (s.bit_length() - 1) for f, s in zip(fields, scales, strict=True))
    style = ("s" if signed else "") + ("hex" if hexa else "dec") + ("!" if always else "")
    return (style, name, tuple(fields), tuple(scales), width)


def find(arch: str, fam: Family, mnemonic: str) -> int | None:
    """The opcode of a mnemonic in a family, by disassembling each opcode with zeroed fields."""
    ops = range(1 << (fam.op[1] + fam.opx[1]))
    for op, res in zip(ops, llvmmc.disassemble([encode(fam, op, {}, 0) for op in ops], arch), strict=True):
        if res and res[0].split(" ")[0] == mnemonic:
            return op
    return None


def learn_names(arch: str) -> dict[str, dict[int, str]]:
    """LLVM's symbolic operand names: every s_sendmsg immediate that prints other than as a number, the hwreg
    ids, and the s_sendmsg_rtn message ids (where the arch has these instructions)."""
    fams = {f.name: f for f in isa_encodings.FAMILIES[arch]}
    names: dict[str, dict[int, str]] = {}
    probes = (("sendmsg", "SOPP", "s_sendmsg", "simm16", range(1 << 16), r"s_sendmsg (.*)"),
              ("hwreg", "SOPK", "s_getreg_b32", "simm16", [i | 31 << 11 for i in range(64)], r".*hwreg\((\w+)\)"),
              ("sendmsg_rtn", "SOP1", "s_sendmsg_rtn_b32", "ssrc0", range(256), r"s_sendmsg_rtn_b32 s\d+, (.*)"))
    for key, fam_name, mnemonic, field_name, values, pattern in probes:
        fam = fams.get(fam_name)
        op = find(arch, fam, mnemonic) if fam else None
        if op is None:
            continue
        encs = [encode(fam, op, {field_name: v}, 0) for v in values]
        table = {}
        for v, res in zip(values, llvmmc.disassemble(encs, arch), strict=True):
            m = re.fullmatch(pattern, res[0]) if res else None
            if m and not m.group(1).isdigit():
                table[v & 63 if key == "hwreg" else v] = m.group(1)
        names[key] = table
    depctr = _learn_depctr(arch, fams.get("SOPP"))
    if depctr:
        names["depctr"] = depctr
    return names


def _learn_depctr(arch: str, fam: Family | None) -> dict[str, tuple[int, int]]:
    """s_waitcnt_depctr's counters, name -> (shift, width), from which bits change which depctr_*(n)."""
    op = find(arch, fam, "s_waitcnt_depctr") if fam else None
    if op is None:
        return {}
    encs = [encode(fam, op, {"simm16": 1 << b}, 0) for b in range(16)] + [encode(fam, op, {"simm16": 0}, 0)]
    texts = [res[0] if res else "" for res in llvmmc.disassemble(encs, arch)]
    at_zero = dict(re.findall(r"(depctr_\w+)\((\d+)\)", texts[-1]))
    bits: dict[str, list[int]] = defaultdict(list)
    for b, text in enumerate(texts[:16]):
        if "(" not in text:  # printed as a plain number: a reserved bit
            continue
        now = dict(re.findall(r"(depctr_\w+)\((\d+)\)", text))
        for name, value in at_zero.items():
            if now.get(name) != value:  # gone: the bit took the counter to its maximum
                bits[name].append(b)
    return {name: (min(bits[name]), len(bits[name])) for name in at_zero if name in bits}  # in LLVM's order


def render(arch: str) -> dict[str, str | bytes]:
    """isa_ARCH.py and its data file isa_ARCH.msgpack, from what llvm-mc-22 prints."""
    names = learn_names(arch)
    ops = {fam.name: learn(arch, fam, names) for fam in isa_encodings.FAMILIES[arch]}
    return files(arch, ops, names)


def files(arch: str, ops: dict[str, dict[int, tuple]], names: dict) -> dict[str, str | bytes]:
    """The module, which reads its tables from the data file (they load in milliseconds without bytecode)."""
    doc = (f"Opcode tables of {arch}, learned from llvm-mc-22 (usergpu.autogen.generator.isa): per family,\n"
           "opcode -> (mnemonic, takes a literal, operands as (printer, fields), modifiers as\n"
           "(style, name, fields, scales, bits), fields that must hold a value as (field, value)); printers and\n"
           "styles are those of usergpu.isa.amd.text. OPS holds the families by name, NAMES LLVM's symbolic\n"
           f"names; both are read from isa_{arch}.msgpack (usergpu.autogen._data).")
    body = ('_TABLES = _data.load(__file__)\nOPS, NAMES = _TABLES["OPS"], _TABLES["NAMES"]\n'
            f"globals().update(OPS)  # each family by its name too: isa_{arch}.SOP1")
    module = writer.module(doc, [f"llvm-22: {llvmmc.LLVM_MC} {' '.join(llvmmc.target(arch)[1:])}"], ["from usergpu.autogen import _data"],
                           [body])
    return {f"isa_{arch}.py": module, f"isa_{arch}.msgpack": _data.pack({"OPS": ops, "NAMES": names})}
