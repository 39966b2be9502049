"""PM4 packet headers (amdgpu's nvd.h, soc15d.h): every integer #define and every bit-field helper macro,
valued by the C compiler (cmacros); the function-like macros that are neither are named in LEFT_OUT.
"""

from __future__ import annotations

from pathlib import Path

from usergpu.autogen.generator import cmacros, toolchain, writer


def field_macro(const: int, fields: tuple[tuple[str, int, int], ...]) -> str:
    args = ", ".join(f"({p!r}, {shift}, {mask:#x})" for p, shift, mask in fields)
    return f"FieldMacro({writer.hexint(const)}, ({args}{',' * (len(fields) == 1)}))"


def macro_lines(
    macros: list[cmacros.Macro], path: Path, skip: frozenset[str] = frozenset(), values: dict[str, int] | None = None
) -> tuple[list[str], list[str]]:
    """`NAME = value` / `NAME = FieldMacro(...)` in header order, and the macros left out (neither form).

    Names in skip are represented otherwise by the caller (e.g. SDMA packet layouts) and are not emitted.
    """
    flags = toolchain.c_flags()
    values = cmacros.constants(macros, str(path), flags) if values is None else values
    fields, _ = cmacros.field_macros(macros, str(path), flags)
    lines, left_out = [], []
    for m in macros:
        if m.name in skip or (m.params is None and not m.body):  # empty body: the include guard
            continue
        if m.name in values:
            lines.append(f"{m.name} = {writer.hexint(values[m.name])}")
        elif m.name in fields:
            lines.append(f"{m.name} = {field_macro(*fields[m.name])}")
        else:
            left_out.append(m.name)
    return lines, left_out


def left_out_section(left_out: list[str]) -> str:
    return (
        "# function-like #defines that are not bit-field helpers (field extractors such as CP_PACKET_GET_COUNT(h),\n"
        "# macros built on helpers the header does not define), and #defines with no integer value: not generated\n"
        + writer.table("LEFT_OUT", [repr(n) for n in left_out], "(", ")")
    )


def render(rel: str, doc: str) -> str:
    path, origin = toolchain.linux_header(rel)
    macros = cmacros.read(path, toolchain.clang_flags())
    lines, left_out = macro_lines(macros, path)
    sections = [
        "# integer #defines and bit-field helpers (FieldMacro: const | (arg << shift) & mask), in header order\n"
        + "\n".join(lines),
        left_out_section(left_out),
    ]
    return writer.module(doc, [origin], ["from usergpu.autogen._support import FieldMacro"], sections)
