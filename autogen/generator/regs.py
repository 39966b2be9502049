"""Register maps (include/asic_reg/<folder>/<prefix>_<ver>_offset.h and _sh_mask.h): one compact table of Reg
rows per IP block version (GC, and the MMHUB, NBIO, OSSSYS, MP, HDP, SMUIO blocks the AM driver programs).

`regNAME` / `regNAME_BASE_IDX` give the offset and segment, `ixNAME` an indirect register's index, `cfgNAME`
(NBIO's) a PCI configuration space register's offset, `NAME__FIELD__SHIFT` / `NAME__FIELD_MASK` the fields; names are grouped by these spellings, every value
comes from the C compiler (cmacros.constants).
"""

from __future__ import annotations

from pathlib import Path

from usergpu.autogen.generator import cmacros, toolchain, writer
from usergpu.errors import ToolchainError

DOC = """{block} {ver} registers of {arch}, from amdgpu's {prefix}_{ver}_offset.h and {prefix}_{ver}_sh_mask.h.

REGS maps a register name (the header's, without `reg`) to Reg(offset, base_idx, {{field: (shift, mask)}}).
offset is a dword offset relative to segment base_idx of the {block} IP instance's base addresses, which the
driver reads from the IP discovery table: the dword address is
`adev->reg_offset[{hwip}][inst][base_idx] + offset` (SOC15_REG_OFFSET), and the MMIO byte address is that
dword address * 4 (`Reg.address(bases) * 4`). Masks are in place: field = (value & mask) >> shift;
`REGS["{reg}"].encode({field}=1)` and `.decode(value)` do this.{hwip_note}

IND_REGS holds the indirect registers (`ixNAME`): offset is the index written to the block's index
register, base_idx is None. Registers whose header gives no _BASE_IDX have base_idx None in REGS.
FIELDS_ONLY holds sh_mask fields of names with neither a reg nor an ix define; SHIFT_ONLY the fields
whose header defines __SHIFT but no _MASK (their width is unknown, so they are not in a Reg).{extra}"""


CFG_DOC = """

CFG_REGS holds the PCI configuration space registers (`cfgNAME`): offset is the header's, a byte offset in
the function's configuration space (some carry a tag in bits 32 and up, as the header writes them), base_idx
is None. A name with both a reg and a cfg define has the same fields in REGS and CFG_REGS."""
MASK_DOC = """

MASK_ONLY holds the fields whose header defines _MASK but no __SHIFT (the shift is left to the reader)."""


def _values(path: Path) -> tuple[list[str], dict[str, int]]:
    """Macro names in header order and their values; every macro but the include guard must have one."""
    macros = cmacros.read(path, toolchain.clang_flags())
    values = cmacros.constants(macros, str(path), toolchain.c_flags())
    names = [m.name for m in macros if m.body]
    missing = [n for n in names if n not in values]
    if missing:
        raise ToolchainError(f"{path.name}: no integer value for {missing[:5]}")
    return names, values


def _masks(d: dict[str, int]) -> str:
    return "{" + ", ".join(f"{f!r}: {m:#x}" for f, m in d.items()) + "}"


def _fields(d: dict[str, tuple[int, int]]) -> str:
    return "{" + ", ".join(f"{f!r}: ({s}, {m:#x})" for f, (s, m) in d.items()) + "}"


def headers(version: str, folder: str = "gc", prefix: str | None = None) -> list[str]:
    """The offset and sh_mask headers of a block version, relative to drivers/gpu/drm/amd."""
    return [f"include/asic_reg/{folder}/{prefix or folder}_{version}_{k}.h" for k in ("offset", "sh_mask")]


def tables(
    version: str, folder: str = "gc", prefix: str | None = None
) -> tuple[dict, dict, dict, dict, dict, list[str]]:
    """(regs, indirect, config space, fields-only, shift-only) tables of a block version, and the banner's input
    lines. A name both reg and cfg defines (the same register seen through MMIO and through PCI configuration
    space) has its sh_mask fields in both rows."""
    paths = [toolchain.linux_header(h) for h in headers(version, folder, prefix)]
    (onames, off), (fnames, fv) = (_values(p) for p, _ in paths)
    regs: dict[str, list] = {}
    ind: dict[str, list] = {}
    cfg: dict[str, list] = {}
    for n in onames:
        if n.endswith("_BASE_IDX") and n[: -len("_BASE_IDX")] in off:
            continue
        if n.startswith("reg"):
            regs[n[3:]] = [off[n], off.get(f"{n}_BASE_IDX"), {}]
        elif n.startswith("ix"):
            ind[n[2:]] = [off[n], None, {}]
        elif n.startswith("cfg"):
            cfg[n[3:]] = [off[n], None, {}]
        else:
            raise ToolchainError(f"{paths[0][0].name}: {n} is neither regNAME, regNAME_BASE_IDX, ixNAME nor cfgNAME")
    if set(regs) & set(ind) or set(ind) & set(cfg):
        raise ToolchainError(f"both reg/cfg and ix defines for {sorted((set(regs) | set(cfg)) & set(ind))[:5]}")
    fields_only: dict[str, dict] = {}
    shift_only: dict[str, dict] = {}
    masks = {n.removesuffix("_MASK") for n in fnames if n.endswith("_MASK")}
    shifts = {n.removesuffix("__SHIFT") for n in fnames if n.endswith("__SHIFT")}
    if any(n.count("__") != 1 for n in masks | shifts):
        raise ToolchainError(f"sh_mask names not of the form NAME__FIELD__SHIFT/_MASK: {sorted(masks | shifts)[:5]}")
    mask_only: dict[str, dict] = {}
    for stem in [n.removesuffix("_MASK") for n in fnames if n.endswith("_MASK")]:
        if stem in shifts:
            continue
        owner, field = stem.split("__")
        mask_only.setdefault(owner, {})[field] = fv[f"{stem}_MASK"]
    for n in fnames:
        if not n.endswith("__SHIFT"):
            continue
        stem = n.removesuffix("__SHIFT")
        owner, field = stem.split("__")
        if stem not in masks:
            shift_only.setdefault(owner, {})[field] = fv[n]
            continue
        targets = [t[owner][2] for t in (regs, ind, cfg) if owner in t] or [fields_only.setdefault(owner, {})]
        for target in targets:
            target[field] = (fv[n], fv[f"{stem}_MASK"])
    return regs, ind, cfg, fields_only, shift_only, mask_only, [o for _, o in paths]


def render(
    version: str,
    arch: str,
    folder: str = "gc",
    prefix: str | None = None,
    hwip: str | None = None,
    example: tuple[str, str] = ("CP_ME_CNTL", "ME_HALT"),
    hwip_note: str = "",
) -> str:
    """The module of one block version: folder is its asic_reg folder, prefix its files' stem (the folder's name
    unless given), hwip the amd_hw_ip_block_type it is based on (<FOLDER>_HWIP unless given), example a register
    and one of its fields the docstring shows."""
    regs, ind, cfg, fields_only, shift_only, mask_only, inputs = tables(version, folder, prefix)
    reg, field = example
    if field not in regs.get(reg, (0, 0, {}))[2]:
        raise ToolchainError(f"{prefix or folder}_{version}: the docstring's example {reg}.{field} is not in it")
    none = [k for k, r in regs.items() if r[1] is None]
    extra = f"\n\nWithout _BASE_IDX in this header: {', '.join(none)}." if none else ""
    if mask_only:
        extra = MASK_DOC + extra
    if cfg:
        extra = CFG_DOC + extra

    def rows(t: dict) -> list[str]:
        return [f"{k!r}: Reg({o:#x}, {b}, {_fields(f)})" for k, (o, b, f) in t.items()]

    sections = [
        writer.table("REGS: dict[str, Reg]", rows(regs)),
        writer.table("IND_REGS: dict[str, Reg]", rows(ind)),
        *([writer.table("CFG_REGS: dict[str, Reg]", rows(cfg))] if cfg else []),
        writer.table("FIELDS_ONLY: dict[str, dict[str, tuple[int, int]]]",
                     [f"{k!r}: {_fields(f)}" for k, f in fields_only.items()]),
        writer.table("SHIFT_ONLY: dict[str, dict[str, int]]", [f"{k!r}: {f!r}" for k, f in shift_only.items()]),
        *([writer.table("MASK_ONLY: dict[str, dict[str, int]]", [f"{k!r}: {_masks(f)}" for k, f in mask_only.items()])]
          if mask_only else []),
    ]
    block = (prefix or folder).upper()
    doc = DOC.format(block=block, ver=version, arch=arch, prefix=prefix or folder, hwip=hwip or f"{block}_HWIP",
                     reg=reg, field=field, hwip_note=hwip_note and "\n" + hwip_note, extra=extra)
    return writer.module(doc, inputs, ["from usergpu.autogen._regs import Reg"], sections)
