"""GC register maps (gc_<ver>_offset.h, gc_<ver>_sh_mask.h): one compact table of Reg rows per GC version.

`regNAME` / `regNAME_BASE_IDX` give the offset and segment, `ixNAME` an indirect register's index,
`NAME__FIELD__SHIFT` / `NAME__FIELD_MASK` the fields; names are grouped by these spellings, every value
comes from the C compiler (cmacros.constants).
"""

from __future__ import annotations

from pathlib import Path

from usergpu.autogen.generator import cmacros, toolchain, writer
from usergpu.errors import ToolchainError

DOC = """GC {ver} registers of {arch}, from amdgpu's gc_{ver}_offset.h and gc_{ver}_sh_mask.h.

REGS maps a register name (the header's, without `reg`) to Reg(offset, base_idx, {{field: (shift, mask)}}).
offset is a dword offset relative to segment base_idx of the GC IP instance's base addresses, which the
driver reads from the IP discovery table: the dword address is
`adev->reg_offset[GC_HWIP][inst][base_idx] + offset` (SOC15_REG_OFFSET), and the MMIO byte address is that
dword address * 4 (`Reg.address(bases) * 4`). Masks are in place: field = (value & mask) >> shift;
`REGS["CP_ME_CNTL"].encode(ME_HALT=1)` and `.decode(value)` do this.

IND_REGS holds the indirect registers (`ixNAME`): offset is the index written to the block's index
register, base_idx is None. Registers whose header gives no _BASE_IDX have base_idx None in REGS.
FIELDS_ONLY holds sh_mask fields of names with neither a reg nor an ix define; SHIFT_ONLY the fields
whose header defines __SHIFT but no _MASK (their width is unknown, so they are not in a Reg).{extra}"""


def _values(path: Path) -> tuple[list[str], dict[str, int]]:
    """Macro names in header order and their values; every macro but the include guard must have one."""
    macros = cmacros.read(path, toolchain.clang_flags())
    values = cmacros.constants(macros, str(path), toolchain.c_flags())
    names = [m.name for m in macros if m.body]
    missing = [n for n in names if n not in values]
    if missing:
        raise ToolchainError(f"{path.name}: no integer value for {missing[:5]}")
    return names, values


def _fields(d: dict[str, tuple[int, int]]) -> str:
    return "{" + ", ".join(f"{f!r}: ({s}, {m:#x})" for f, (s, m) in d.items()) + "}"


def tables(version: str) -> tuple[dict, dict, dict, dict, list[str]]:
    """(regs, indirect, fields-only, shift-only) tables of a GC version, and the banner's input lines."""
    paths = [toolchain.linux_header(f"include/asic_reg/gc/gc_{version}_{k}.h") for k in ("offset", "sh_mask")]
    (onames, off), (fnames, fv) = (_values(p) for p, _ in paths)
    regs: dict[str, list] = {}
    ind: dict[str, list] = {}
    for n in onames:
        if n.endswith("_BASE_IDX") and n[: -len("_BASE_IDX")] in off:
            continue
        if n.startswith("reg"):
            regs[n[3:]] = [off[n], off.get(f"{n}_BASE_IDX"), {}]
        elif n.startswith("ix"):
            ind[n[2:]] = [off[n], None, {}]
        else:
            raise ToolchainError(f"{paths[0][0].name}: {n} is neither regNAME, regNAME_BASE_IDX nor ixNAME")
    if set(regs) & set(ind):
        raise ToolchainError(f"both reg and ix defines for {sorted(set(regs) & set(ind))[:5]}")
    fields_only: dict[str, dict] = {}
    shift_only: dict[str, dict] = {}
    masks = {n.removesuffix("_MASK") for n in fnames if n.endswith("_MASK")}
    shifts = {n.removesuffix("__SHIFT") for n in fnames if n.endswith("__SHIFT")}
    if masks - shifts or any(n.count("__") != 1 for n in masks | shifts):
        raise ToolchainError(f"sh_mask names not of the form NAME__FIELD__SHIFT/_MASK: {sorted(masks - shifts)[:5]}")
    for n in fnames:
        if not n.endswith("__SHIFT"):
            continue
        stem = n.removesuffix("__SHIFT")
        owner, field = stem.split("__")
        if stem not in masks:
            shift_only.setdefault(owner, {})[field] = fv[n]
            continue
        row = regs.get(owner) or ind.get(owner)
        target = row[2] if row else fields_only.setdefault(owner, {})
        target[field] = (fv[n], fv[f"{stem}_MASK"])
    return regs, ind, fields_only, shift_only, [o for _, o in paths]


def render(version: str, arch: str) -> str:
    regs, ind, fields_only, shift_only, inputs = tables(version)
    none = [k for k, r in regs.items() if r[1] is None]
    extra = f"\n\nWithout _BASE_IDX in this header: {', '.join(none)}." if none else ""

    def rows(t: dict) -> list[str]:
        return [f"{k!r}: Reg({o:#x}, {b}, {_fields(f)})" for k, (o, b, f) in t.items()]

    sections = [
        writer.table("REGS: dict[str, Reg]", rows(regs)),
        writer.table("IND_REGS: dict[str, Reg]", rows(ind)),
        writer.table("FIELDS_ONLY: dict[str, dict[str, tuple[int, int]]]",
                     [f"{k!r}: {_fields(f)}" for k, f in fields_only.items()]),
        writer.table("SHIFT_ONLY: dict[str, dict[str, int]]", [f"{k!r}: {f!r}" for k, f in shift_only.items()]),
    ]
    doc = DOC.format(ver=version, arch=arch, extra=extra)
    return writer.module(doc, inputs, ["from usergpu.autogen._regs import Reg"], sections)
