"""nv_classes: the hardware classes a compute runtime drives, from NVIDIA's own headers: open-gpu-doc's class headers
(GPFIFO clc56f; copy clc6b5, clc7b5, clc8b5, clc9b5, clcab5; compute clc6c0, clc7c0, clc9c0, clcbc0, clcdc0,
clcec0) and QMD headers (V03_00 of clc6c0qmd.h, clc7c0qmd.h and clc9c0qmd.h, Hopper's V04_00 of clcbc0qmd.h,
Blackwell's V05_00 of clcdc0qmd.h and clcec0qmd.h); the class headers open-gpu-doc lacks (the GPFIFO classes clc86f,
clc96f, clca6f and Blackwell's usermode clc761) and nvtypes.h from the RM SDK of the newest
nvidia-open-gpu-kernel-modules release; constant bank 0 per arch from nv_facts.py (measured with ptxas).

NVIDIA writes a bit range as `hi:lo` (a method's dword) or `MW(hi:lo)` (a multi-word structure), an indexed one as a
macro of the element (`NAME(i)`, `MW((320+(i)*16):(320+(i)*16))`); the C compiler values them as `(1 ? X)` and
`(0 ? X)` (nvmisc.h's DRF_EXTENT/DRF_BASE), with MW taken as its argument, an indexed one at elements 0..2 (its
stride, proven linear). The headers list each method, then its fields, each followed by its named values, so a field
belongs to the method it follows when its name extends the method's (a method has at least one field); the fields
that follow no method (the GP entry and pushbuffer header words) are kept by name alone.
"""

from __future__ import annotations

import re
from pathlib import Path

from usergpu.autogen.generator import cmacros, cstructs, nv_facts, toolchain, writer
from usergpu.autogen.generator.amdkernel import _write
from usergpu.autogen.generator.spec import Module
from usergpu.errors import ToolchainError

# the class headers describe hardware, not the driver: the newest release's RM SDK gives what open-gpu-doc lacks
RELEASE = toolchain.NV_RELEASES[-1]
# where a class header comes from -> its file and banner
SOURCES = {"doc": lambda name: toolchain.doc_file(f"classes/{name}.h"),
           "rm": lambda name: toolchain.nv_file(RELEASE, f"{toolchain.NV_SDK}/class/{name}.h")}
CLASS_HEADERS = (
    ("doc", "host/clc56f"), ("rm", "clc86f"), ("rm", "clc96f"), ("rm", "clca6f"), ("rm", "clc761"),
    *(("doc", f"dma-copy/{h}") for h in ("clc6b5", "clc7b5", "clc8b5", "clc9b5", "clcab5")),
    *(("doc", f"compute/{h}") for h in ("clc6c0", "clc7c0", "clc9c0", "clcbc0", "clcdc0", "clcec0")),
)
QMD_HEADERS = {  # open-gpu-doc's compute/ QMD header -> the version kept
    "clc6c0qmd": "NVC6C0_QMDV03_00", "clc7c0qmd": "NVC7C0_QMDV03_00", "clc9c0qmd": "NVC9C0_QMDV03_00",
    "clcbc0qmd": "NVCBC0_QMDV04_00", "clcdc0qmd": "NVCDC0_QMDV05_00", "clcec0qmd": "NVCEC0_QMDV05_00",
}
# the names bound: all but the other QMD versions' a QMD header also describes (V02, V04_01, V05_01, ...)
SELECT = re.compile(rf"^(?!NV[0-9A-F]{{4}}_QMDV\d\d_\d\d_)|^(?:{'|'.join(QMD_HEADERS.values())})_")
RANGE = re.compile(r"^\d+ : \d+$")
METHOD = re.compile(r"^NV[0-9A-F]{4}_(?!.*__)\w+$")  # a class's own name; `__` marks a header's meta value (__SIZE)
CLASS_ID = re.compile(r"^BLACKWELL_[A-Z_]+_[A-Z]$")  # the Blackwell class ids (BLACKWELL_CLASSES)

DOC = """NVIDIA hardware classes from NVIDIA's headers (open-gpu-doc's classes/, and the RM SDK for the GPFIFO classes
from Hopper on and Blackwell's usermode): GPFIFO (AMPERE_CHANNEL_GPFIFO_A c56f, HOPPER_CHANNEL_GPFIFO_A c86f,
BLACKWELL_CHANNEL_GPFIFO_A/B c96f/ca6f), copy (c6b5, c7b5, c8b5, c9b5, cab5) and compute (c6c0, c7c0, c9c0, cbc0,
cdc0, cec0) methods, their fields and named values, the USERD control structs (Nvc56fControl: GPGet, GPPut), the QMD
layouts (V03_00 of Ampere and Ada, Hopper's V04_00, Blackwell's V05_00, each in full), the Blackwell class ids and
constant bank 0's layout per arch (measured with ptxas: the generator's facts table, nv_facts.py).

Tables: METHODS (C name -> Method: byte offset, stride of an indexed method, fields), FIELDS (bit ranges that belong
to no method, by C name: the GP entry and pushbuffer header words), QMD (C prefix -> Layout: size and fields),
BLACKWELL_CLASSES (name -> class id), CBANK0 (arch -> offsets of the parameters, %ntid and %nctaid). A field's
C name is its method's or QMD's, `_`, and the field's."""


def _headers() -> list[tuple[Path, str]]:
    """The class headers, then the QMD headers: (file, banner) each."""
    return ([SOURCES[where](name) for where, name in CLASS_HEADERS]
            + [toolchain.doc_file(f"classes/compute/{h}.h") for h in QMD_HEADERS])


def include_flags() -> list[str]:
    """The RM SDK's folder, which the class headers include nvtypes.h from."""
    return ["-I", str(toolchain.nv_file(RELEASE, toolchain.NV_SDK)[0])]


def translation_unit() -> Path:
    """The class headers, then the QMD headers (the ABI tests compile against it)."""
    lines = ['#include "nvtypes.h"', *(f'#include "{p}"' for p, _ in _headers())]
    return _write(toolchain.CACHE / "include" / "usergpu_nv_classes.h", "\n".join(lines) + "\n")


def _ranges_header() -> Path:
    """The translation unit with MW(x) taken as x, so that (1 ? X) values any range."""
    text = f'#define MW(x) x\n#include "{translation_unit()}"\n'
    return _write(toolchain.CACHE / "include" / "usergpu_nv_classes_ranges.h", text)


def _is_range(m: cmacros.Macro) -> bool:
    body = " ".join(m.body)
    return bool(RANGE.match(body)) or body.startswith("MW (")


def _value(m: cmacros.Macro, i: int | None) -> str:
    return f"{m.name}({i})" if m.params else m.name


def _evaluate(macros: list[cmacros.Macro]) -> dict[tuple[str, str, int | None], int]:
    """(name, 'hi'|'lo'|'v', element) -> value for each range (hi, lo) and offset-like macro (v); an indexed macro
    at elements 0..2, so that its stride is measured and proven linear."""
    exprs = {}
    for m in macros:
        for i in ((0, 1, 2) if m.params else (None,)):
            if _is_range(m):
                exprs[(m.name, "hi", i)] = f"(1 ? {_value(m, i)})"
                exprs[(m.name, "lo", i)] = f"(0 ? {_value(m, i)})"
            elif m.params:
                exprs[(m.name, "v", i)] = _value(m, i)
    keys = {f"k{n}": k for n, k in enumerate(exprs)}
    values = cmacros._evaluate({n: exprs[k] for n, k in keys.items()}, str(_ranges_header()), include_flags() +
                               toolchain.c_flags(), "c")
    return {keys[n]: v for n, v in values.items()}


def _stride(values: dict, name: str, part: str) -> int:
    v0, v1, v2 = (values[(name, part, i)] for i in (0, 1, 2))
    if v2 - v1 != v1 - v0 or v1 <= v0:
        raise ToolchainError(f"{name}(i): {part} {v0}, {v1}, {v2} is not linear in i")
    return v1 - v0


def _range(values: dict, m: cmacros.Macro) -> tuple[int, int, int]:
    """(hi, lo, stride) of a range macro."""
    if not m.params:
        return values[(m.name, "hi", None)], values[(m.name, "lo", None)], 0
    stride = _stride(values, m.name, "lo")
    if _stride(values, m.name, "hi") != stride:
        raise ToolchainError(f"{m.name}(i): hi and lo move by different strides")
    return values[(m.name, "hi", 0)], values[(m.name, "lo", 0)], stride


def _field(hi: int, lo: int, stride: int) -> str:
    return f"Field({hi}, {lo}{f', {stride}' if stride else ''})"


def _methods(macros: list[cmacros.Macro], values: dict, consts: dict[str, int]) -> tuple[list[str], list[str]]:
    """METHODS and FIELDS rows of one class header, from the order its macros come in: a value becomes a method
    when the range after it extends its name (a value that does not, such as an alias of another method's named
    value, leaves the method before it current)."""
    methods: dict[str, tuple[int, int, dict[str, str]]] = {}
    orphans: dict[str, str] = {}
    method = pending = field = None
    for m in macros:
        if _is_range(m):
            hi, lo, stride = _range(values, m)
            if hi > 31 or lo > hi:
                raise ToolchainError(f"{m.name}: {hi}:{lo} is not a range of a dword")
            if pending and m.name.startswith(f"{pending[0]}_"):
                method, (offset, step) = pending[0], pending[1:]
                methods[method] = (offset, step, {})
            if method and m.name.startswith(f"{method}_"):
                methods[method][2][m.name.removeprefix(f"{method}_")] = _field(hi, lo, stride)
            elif orphans.setdefault(m.name, _field(hi, lo, stride)) != _field(hi, lo, stride):
                raise ToolchainError(f"{m.name} is defined twice, as two ranges")
            pending, field = None, m.name
        elif field and m.name.startswith(f"{field}_"):
            continue  # a named value of the field before it: a plain constant of the module
        elif METHOD.match(m.name) and m.name in consts:
            pending = (m.name, consts[m.name], 0)
        elif METHOD.match(m.name) and (m.name, "v", 0) in values:
            pending = (m.name, values[(m.name, "v", 0)], _stride(values, m.name, "v"))
    rows = [f"{name!r}: Method({offset:#x}, {stride}, {{{', '.join(f'{k!r}: {v}' for k, v in fields.items())}}})"
            for name, (offset, stride, fields) in methods.items()]
    return rows, [f"{name!r}: {f}" for name, f in orphans.items()]


def _qmd(macros: list[cmacros.Macro], values: dict, prefix: str) -> str:
    """The QMD row of a header's version `prefix`: its ranges (an indexed one by element 0 and its stride), sized by
    the dwords they span."""
    fields = {m.name.removeprefix(f"{prefix}_"): _range(values, m) for m in macros
              if _is_range(m) and m.name.startswith(f"{prefix}_")}
    if not fields:
        raise ToolchainError(f"no {prefix}_* field")
    return _layout(prefix, 4 * ((max(hi for hi, _, _ in fields.values()) + 32) // 32), fields)


def _layout(prefix: str, size: int, fields: dict[str, tuple[int, int, int]]) -> str:
    """A QMD row, one field a line."""
    inner = "".join(f"        {k!r}: {_field(*v)},\n" for k, v in fields.items())
    return f"{prefix!r}: Layout({size}, {{\n{inner}    }})"


def render() -> str:
    files = _headers()
    tu = translation_unit()
    out, records = cstructs.sections([tu, *(p for p, _ in files)], select=SELECT, flags=tuple(include_flags()))
    ns: dict = {}
    exec(compile(writer.module("", [], writer.imports("\n".join(out)), out), "<nv_classes>", "exec"), ns)
    consts = {k: v for k, v in ns.items() if isinstance(v, int) and not isinstance(v, bool)}
    per_file = [cmacros.read(p, include_flags() + toolchain.clang_flags()) for p, _ in files]
    values = _evaluate([m for ms in per_file for m in ms])
    methods, orphans = [], []
    for ms in per_file[:len(CLASS_HEADERS)]:
        rows, loose = _methods(ms, values, consts)
        methods += rows
        orphans += loose
    qmds = [_qmd(ms, values, prefix) for ms, prefix in zip(per_file[len(CLASS_HEADERS):], QMD_HEADERS.values(),
                                                              strict=True)]
    out += [
        "# Blackwell class ids (the class headers')\n"
        + writer.table("BLACKWELL_CLASSES", [f"{k!r}: {k}" for k in sorted(consts) if CLASS_ID.match(k)]),
        "# class method -> Method(byte offset, stride of NAME(i), fields)\n" + writer.table("METHODS", methods),
        "# bit ranges of no method: GP entry and pushbuffer header words\n" + writer.table("FIELDS", orphans),
        "# QMD -> Layout(bytes, fields)\n" + writer.table("QMD", qmds),
        "# constant bank 0 per arch: byte offsets of the parameters, %ntid.xyz, %nctaid.xyz (nv_facts.py)\n"
        + writer.table("CBANK0", [f"{arch!r}: {{{', '.join(f'{k!r}: {v:#x}' for k, v in offsets.items())}}}"
                                  for arch, offsets in nv_facts.CBANK0.items()]),
    ]
    inputs = [banner for _, banner in files] + ["usergpu: autogen/generator/nv_facts.py (constant bank 0, measured)"]
    text = writer.module(DOC, inputs, _imports(out), out)
    cstructs.prove_layouts(text, records)
    return text


def _imports(out: list[str]) -> list[str]:
    """writer's imports, with the records of _nvclass the tables use (first of usergpu's, in isort's order)."""
    lines = writer.imports("\n".join(out))
    records = [r for r in ("Field", "Layout", "Method") if any(f"{r}(" in s for s in out)]
    ours = f"from usergpu.autogen._nvclass import {', '.join(records)}"
    at = next((n for n, line in enumerate(lines) if line.startswith("from usergpu")), None)
    return [*lines, "", ours] if at is None else [*lines[:at], ours, *lines[at:]]


MODULES: list[Module] = [
    Module("nv_classes", f"{toolchain.NV_DOC}, {toolchain.NV_SOURCE} {RELEASE} ({toolchain.nv_source(RELEASE)})",
           render),
]
