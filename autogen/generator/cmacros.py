"""#define macros of a header, read with libclang and valued by the C compiler itself.

Object-like macros that are integer constant expressions become ints. Function-like macros that build
a dword from bit fields (the PM4/SDMA field helpers: ``F(a, b) = C | (a & m) << s | ...``) become
``(constant, ((param, shift, mask), ...))``, found by probing the compiled macro and proven on random
arguments; any other macro is left out and named in the generated module.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path

from usergpu.autogen.generator import toolchain
from usergpu.errors import ToolchainError

MASK32 = 0xFFFFFFFF


@dataclass(frozen=True)
class Macro:
    name: str
    params: tuple[str, ...] | None  # None for an object-like macro
    body: tuple[str, ...]  # the replacement tokens


def read(header: Path, flags: list[str], lang: str = "c", files: tuple[Path, ...] = ()) -> list[Macro]:
    """The macros defined in header (and in files, if given), in definition order."""
    ci = toolchain.cindex()
    opts = ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD | ci.TranslationUnit.PARSE_SKIP_FUNCTION_BODIES
    tu = ci.Index.create().parse(str(header), args=["-x", lang, *flags], options=opts)
    wanted = {str(p) for p in (header, *files)}
    out = []
    for cur in tu.cursor.get_children():
        if cur.kind != ci.CursorKind.MACRO_DEFINITION or cur.location.file is None:
            continue
        if cur.location.file.name not in wanted:
            continue
        toks = list(cur.get_tokens())
        if not toks:
            continue
        params = None
        rest = toks[1:]
        name_end = toks[0].extent.end
        if rest and rest[0].spelling == "(" and rest[0].extent.start.column == name_end.column and (
            rest[0].extent.start.line == name_end.line
        ):
            close = next(i for i, t in enumerate(rest) if t.spelling == ")")
            params = tuple(t.spelling for t in rest[1:close] if t.spelling != ",")
            rest = rest[close + 1 :]
        out.append(Macro(cur.spelling, params, tuple(t.spelling for t in rest)))
    return out


def _evaluate(exprs: dict[str, str], include: str, flags: list[str], lang: str) -> dict[str, int]:
    """Value each integer-constant C expression with the compiler; expressions that do not compile are dropped."""
    keys = list(exprs)
    alive = set(range(len(keys)))
    # each probe on its own line so that a compile error drops exactly that expression
    check = "_Generic((E), float: 0, double: 0, long double: 0, char *: 0, const char *: 0, void *: 0, default: 1)"
    line = 'if ({c}) {{ if ((E) < 0) printf("%d %lld\\n", {i}, (long long)(E)); else printf("%d %llu\\n", {i}, (unsigned long long)(E)); }}'
    for _ in range(20):
        lines = ["#include <stdio.h>", f"#include \"{include}\""]
        where: dict[int, int] = {}  # source line number -> index of the expression probed there
        for n, i in enumerate(sorted(alive)):
            if n % 2000 == 0:
                lines.append(("}" if n else "") + f"static void f{n // 2000}(void) {{")
            lines.append(line.format(c=check, i=i).replace("(E)", f"({exprs[keys[i]]})"))
            where[len(lines)] = i
        nfun = (len(alive) + 1999) // 2000
        lines.append(("}" if alive else "") + "int main(void) {" + "".join(f"f{k}();" for k in range(nfun)) + "}")
        run = toolchain.compile_and_run("\n".join(lines) + "\n", lang, flags)
        if run.returncode == 0:
            values = {}
            for row in run.stdout.splitlines():
                i, v = row.split()
                values[keys[int(i)]] = int(v)
            return values
        drop = {where[int(n)] for n in re.findall(r"probe\.c(?:pp)?:(\d+):\d+: error", run.stderr) if int(n) in where}
        if not drop:
            raise ToolchainError(f"probe program failed outside the probes: {run.stderr[-2000:]}")
        alive -= drop
    raise ToolchainError("probe program did not converge")


def constants(macros: list[Macro], include: str, flags: list[str], lang: str = "c") -> dict[str, int]:
    """The object-like macros that are integer constant expressions, by name."""
    return _evaluate({m.name: m.name for m in macros if m.params is None and m.body}, include, flags, lang)


def field_macros(
    macros: list[Macro], include: str, flags: list[str], lang: str = "c"
) -> tuple[dict[str, tuple[int, tuple[tuple[str, int, int], ...]]], list[str]]:
    """Function-like macros that pack bit fields into a dword, as (constant, ((param, shift, mask), ...)).

    Returns the fields and the names of the function-like macros that are not of that form.
    """
    funcs = [m for m in macros if m.params]
    rng = random.Random(0)  # fixed seed: the output is reproducible
    probes: dict[str, str] = {}
    trials: dict[str, list[tuple[int, ...]]] = {}
    for m in funcs:
        n = len(m.params)
        args = [tuple(0 for _ in range(n))]
        args += [tuple(MASK32 if j == i else 0 for j in range(n)) for i in range(n)]
        args += [tuple(rng.getrandbits(32) for _ in range(n)) for _ in range(4)]
        trials[m.name] = args
        for k, a in enumerate(args):
            probes[f"{m.name}#{k}"] = f"{m.name}({', '.join(f'{v:#x}u' for v in a)})"
    values = _evaluate(probes, include, flags, lang)
    fields, skipped = {}, []
    for m in funcs:
        got = [values.get(f"{m.name}#{k}") for k in range(len(trials[m.name]))]
        if any(v is None or v < 0 or v > MASK32 for v in got):
            skipped.append(m.name)
            continue
        const = got[0]
        parts = []
        for i, p in enumerate(m.params):
            mask = got[1 + i] & ~const & MASK32
            shift = (mask & -mask).bit_length() - 1 if mask else 0
            parts.append((p, shift, mask))
        model = tuple(parts)
        ok = all(
            const | _pack(model, a) == v for a, v in zip(trials[m.name], got, strict=True)
        ) and any(mask for _, _, mask in parts)
        if ok:
            fields[m.name] = (const, model)
        else:
            skipped.append(m.name)
    return fields, skipped


def _pack(model: tuple[tuple[str, int, int], ...], args: tuple[int, ...]) -> int:
    out = 0
    for (_, shift, mask), a in zip(model, args, strict=True):
        out |= (a << shift) & mask
    return out
