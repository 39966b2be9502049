"""SDMA packet headers (sdma_v6_0_0_pkt_open.h, vega10_sdma_pkt_open.h): constants and helper macros as in
pm4, plus one ctypes structure per packet from its `<P>_<DWORD>_<field>_offset/_mask/_shift` defines.

A packet P exists where `P_HEADER_op_offset` is defined; each field define belongs to the longest such P
that prefixes it. The dword index is `_offset`, the bits are `_mask << _shift`, all valued by the compiler.
"""

from __future__ import annotations

import ctypes
import re
from collections import Counter, defaultdict

from usergpu.autogen.generator import cmacros, pm4, toolchain, writer
from usergpu.errors import ToolchainError

FIELD = re.compile(r"([A-Z0-9_]+?)_([a-z][a-z0-9_]*)")  # <DWORD>_<field>: dwords are upper case, fields lower
# vega10's header opens with a bare `SDMA_PKT_HEADER_op/sub_op`: the header dword every packet shares,
# whose "packet" would be SDMA_PKT. It becomes class SDMA_PKT_HEADER (its _cname_ keeps the C prefix).
CLASS_NAME = {"SDMA_PKT": "SDMA_PKT_HEADER"}

Layout = dict[str, list[tuple[str, str, int, int, int]]]  # packet -> [(dword, field, index, mask, shift)]


def packets(macros: list[cmacros.Macro], values: dict[str, int]) -> tuple[Layout, set[str]]:
    """Each packet's fields in header order, and the names of the defines they were read from."""
    names = sorted((n.removesuffix("_HEADER_op_offset") for n in values if n.endswith("_HEADER_op_offset")),
                   key=len, reverse=True)  # longest first: COPY_LINEAR_BC before COPY_LINEAR
    out: Layout = defaultdict(list)
    used: set[str] = set()
    for m in macros:
        if not m.name.endswith("_offset") or m.params is not None:
            continue
        stem = m.name.removesuffix("_offset")
        hit = next(((p, FIELD.fullmatch(stem[len(p) + 1 :])) for p in names if stem.startswith(p + "_")), None)
        if hit is None or hit[1] is None:
            raise ToolchainError(f"{m.name}: no packet P with P_HEADER_op_offset owns it")
        trio = [f"{stem}_{k}" for k in ("offset", "mask", "shift")]
        if any(t not in values for t in trio):
            raise ToolchainError(f"{stem}: _offset without a valued _mask and _shift")
        dword, field = hit[1].groups()
        out[hit[0]].append((dword, field, *(values[t] for t in trio)))
        used.update(trio)
    return dict(out), used  # packets in the order the header defines them


def py_names(fields: list[tuple[str, str, int, int, int]]) -> list[str]:
    """Field names as the header spells them; prefixed with the lower-case dword where two dwords share one."""
    count = Counter(f[1] for f in fields)
    names = [f[1] if count[f[1]] == 1 else f"{f[0].lower()}_{f[1]}" for f in fields]
    if len(set(names)) != len(names):
        raise ToolchainError(f"field names still clash after adding the dword: {names}")
    return names


def _class(packet: str, fields: list[tuple[str, str, int, int, int]]) -> str:
    """A LittleEndianStructure of c_uint32 bit fields, dword by dword, gaps as _reserved_<dword>_<bit>."""
    dwords: dict[int, str] = {}
    for dword, field, index, mask, shift in fields:
        if dwords.setdefault(index, dword) != dword:
            raise ToolchainError(f"{packet}: dwords {dwords[index]} and {dword} both at index {index}")
        if mask & (mask + 1) or mask == 0 or (mask << shift) >> 32:
            raise ToolchainError(f"{packet}_{dword}_{field}: mask {mask:#x} << {shift} is not a field of a dword")
    if sorted(dwords) != list(range(len(dwords))) or list(dwords) != sorted(dwords):
        raise ToolchainError(f"{packet}: dword indices {sorted(dwords)} are not 0..n-1 in header order")
    if packet in CLASS_NAME and set(dwords.values()) != {"HEADER"}:
        raise ToolchainError(f"{packet}: the shared header holds dwords other than HEADER")
    rows = []
    named = list(zip(py_names(fields), fields, strict=True))
    for index, dword in dwords.items():
        bits = sorted((f[4], f[3].bit_length(), name) for name, f in named if f[2] == index)
        at = 0
        for shift, width, name in bits:
            if shift < at:
                # alternative layouts of one dword would need a union; 6.12's headers have none, so say so
                raise ToolchainError(f"{packet}_{dword}: {name} overlaps another field of the dword")
            if shift > at:
                rows.append(f"('_reserved_{index}_{at}', C.c_uint32, {shift - at})")
            rows.append(f"({name!r}, C.c_uint32, {width})")
            at = shift + width
        if at < 32:
            rows.append(f"('_reserved_{index}_{at}', C.c_uint32, {32 - at})")
    head = [
        f"class {CLASS_NAME.get(packet, packet)}(C.LittleEndianStructure):",
        f"    _cname_ = {packet!r}",
        f"    _dwords_ = {tuple(dwords.values())!r}",
    ]
    return "\n".join(head) + "\n" + writer.table("_fields_", rows, "[", "]", indent="    ")


def render(rel: str, doc: str) -> str:
    path, origin = toolchain.linux_header(rel)
    macros = cmacros.read(path, toolchain.clang_flags())
    values = cmacros.constants(macros, str(path), toolchain.c_flags())
    layout, used = packets(macros, values)
    lines, left_out = pm4.macro_lines(macros, path, frozenset(used), values)
    classes = [_class(p, f) for p, f in layout.items()]
    sections = [
        "# integer #defines and bit-field helpers (FieldMacro: const | (arg << shift) & mask), in header order;\n"
        "# the packets' _offset/_mask/_shift defines are the structures below\n" + "\n".join(lines),
        pm4.left_out_section(left_out),
        "# one structure per packet: c_uint32 bit fields in dword order (_dwords_), named as the header spells\n"
        "# them, prefixed with the lower-case dword name where two dwords of a packet share a field name;\n"
        "# _cname_ is the C prefix of the packet's <_cname_>_<DWORD>_<field>_offset/_mask/_shift defines\n"
        + "\n\n\n".join(classes),
        writer.table("PACKETS", [CLASS_NAME.get(p, p) for p in layout], "(", ")"),
    ]
    imports = ["import ctypes as C", "", "from usergpu.autogen._support import FieldMacro"]
    text = writer.module(doc, [origin], imports, sections)
    _prove(text, layout)
    return text


def _prove(text: str, layout: Layout) -> None:
    """Each emitted field, set to all ones, lands on mask << shift of its dword; sizes are dwords * 4."""
    ns: dict = {}
    exec(compile(text, "<generated>", "exec"), ns)
    for packet, fields in layout.items():
        cls = ns[CLASS_NAME.get(packet, packet)]
        n = len(cls._dwords_)
        names = py_names(fields)
        if ctypes.sizeof(cls) != 4 * n or {f[0] for f in cls._fields_ if not f[0].startswith("_")} != set(names):
            raise ToolchainError(f"{packet}: {ctypes.sizeof(cls)} bytes for {n} dwords, or fields missing")
        for name, (_, _, index, mask, shift) in zip(names, fields, strict=True):
            pkt = cls()
            setattr(pkt, name, cmacros.MASK32)
            got = list((ctypes.c_uint32 * n).from_buffer_copy(bytes(pkt)))
            if got != [mask << shift if i == index else 0 for i in range(n)]:
                raise ToolchainError(f"{packet}.{name}: set to all ones gives dwords {got}")
