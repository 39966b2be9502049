"""The AMDHSA kernel descriptor from LLVM's own C++ header (llvm-22-dev), read with libclang.

ctypeslib2 reads C only; this header is C++ (namespace llvm::amdhsa, enums built by the
AMDHSA_BITS_ENUM_ENTRY macro), so its struct and enumerators are taken from libclang's AST directly.
"""

from __future__ import annotations

import os

from usergpu.autogen.generator import toolchain, writer
from usergpu.errors import ToolchainError

HEADER = "llvm/Support/AMDHSAKernelDescriptor.h"
CXX_FLAGS = ["-std=c++17"]

# libclang type kinds -> ctypes (the descriptor uses fixed-width integers only)
_INTS = {1: "c_uint8", 2: "c_uint16", 4: "c_uint32", 8: "c_uint64"}


def header():
    return toolchain.require(toolchain.LLVM_INCLUDE / HEADER, "llvm-22-dev")


def cxx_flags() -> list[str]:
    return [*CXX_FLAGS, "-I", str(toolchain.LLVM_INCLUDE)]


def _namespace(ci, cursor, path: list[str]):
    for c in cursor.get_children():
        if c.kind == ci.CursorKind.NAMESPACE and c.spelling == path[0]:
            return c if len(path) == 1 else _namespace(ci, c, path[1:])
    raise ToolchainError(f"namespace {'::'.join(path)} not found in {HEADER}")


def _ctype(ci, t) -> str:
    t = t.get_canonical()
    if t.kind == ci.TypeKind.CONSTANTARRAY:
        return f"{_ctype(ci, t.element_type)} * {t.element_count}"
    signed = t.kind in (ci.TypeKind.CHAR_S, ci.TypeKind.SCHAR, ci.TypeKind.SHORT, ci.TypeKind.INT, ci.TypeKind.LONG,
                        ci.TypeKind.LONGLONG)
    base = _INTS.get(t.get_size())
    if base is None or t.kind == ci.TypeKind.RECORD:
        raise ToolchainError(f"{HEADER}: no ctypes form for {t.spelling}")
    return "C." + (base.replace("uint", "int") if signed else base)


def sections() -> list[str]:
    """The kernel_descriptor_t struct, every llvm::amdhsa enumerator, and the bit fields grouped by register."""
    ci = toolchain.cindex()
    h = header()
    tu = ci.Index.create().parse(str(h), args=["-x", "c++", *cxx_flags(), *toolchain.clang_flags()])
    errors = [d for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error]
    if errors:
        raise ToolchainError(f"{HEADER}: {errors[0]}")
    ns = _namespace(ci, tu.cursor, ["llvm", "amdhsa"])
    consts, groups, struct = [], {}, None
    for c in ns.get_children():
        if c.kind == ci.CursorKind.ENUM_DECL:
            values = {e.spelling: e.enum_value for e in c.get_children()}
            consts += [f"{n} = {writer.hexint(v)}" for n, v in values.items()]
            fields = {n: (values[n + "_SHIFT"], values[n + "_WIDTH"]) for n in values if f"{n}_SHIFT" in values}
            if fields:
                key, named = _group(fields)
                groups.setdefault(key, {}).update(named)
        elif c.kind == ci.CursorKind.STRUCT_DECL and c.spelling == "kernel_descriptor_t" and c.is_definition():
            struct = c
    if struct is None:
        raise ToolchainError(f"{HEADER}: kernel_descriptor_t not found")
    rows = [f"({f.spelling!r}, {_ctype(ci, f.type)})" for f in struct.get_children() if f.kind == ci.CursorKind.FIELD_DECL]
    cls = (
        "class kernel_descriptor_t(Struct):\n"
        '    """The 64-byte kernel descriptor the command processor reads at dispatch."""\n'
        "    _cname_ = 'llvm::amdhsa::kernel_descriptor_t'\n" + writer.table("_fields_", rows, "[", "]", "    ")
    )
    bitfields = writer.table(
        "BITFIELDS",
        [f"{k!r}: {{{', '.join(f'{n!r}: {v!r}' for n, v in f.items())}}}" for k, f in groups.items()],
    )
    note = "# register -> field -> (shift, width), from the AMDHSA_BITS_ENUM_ENTRY enumerators above\n"
    return [cls, "# llvm::amdhsa enumerators\n" + "\n".join(consts), note + bitfields]


def _group(fields: dict[str, tuple[int, int]]) -> tuple[str, dict[str, tuple[int, int]]]:
    """Name a field group by the prefix its members share (COMPUTE_PGM_RSRC1, KERNEL_CODE_PROPERTY, ...)."""
    prefix = os.path.commonprefix(list(fields))
    prefix = prefix[: prefix.rfind("_") + 1]
    return prefix.rstrip("_"), {n[len(prefix) :]: v for n, v in fields.items()}
