"""An NVIDIA kernel's parameters as its C source declares them (name and C type), which PTX does not keep (a .u64
is a float* or a size_t alike). compile_cuda and compile_opencl read them from clang's AST and write them into the
PTX they return as one comment line per kernel, which ptxas ignores and assemble_ptx's cubins carry with the PTX:

    // usergpu.params vadd [["a", "float*"], ["n", "unsigned int"]]

(a null type: one no check applies to, such as an OpenCL __local pointer). For PTX without those lines (nvcc's,
another clang's), a C++ kernel's mangled name still says its parameters' types, without their names."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType

from usergpu.errors import CodeObjectError
from usergpu.isa.argtypes import element_type

MARK = "// usergpu.params "
_LINE = re.compile(r"^[ \t]*// usergpu\.params (\S+) (.*)$", re.M)
KERNEL_ATTRS = ("CUDAGlobalAttr", "DeviceKernelAttr")  # __global__; OpenCL's __kernel
# what a parameter's type says that no check needs: qualifiers, the address space a pointer points into, tags
_DROP = re.compile(r"\b(?:const|volatile|restrict|__restrict|__restrict__|__private|__global|__constant|__generic|"
                   r"struct|union|enum|class)\b")
_LOCAL = re.compile(r"\b__local\b")  # an OpenCL __local pointer: a size of shared memory, not an array
CXXFILT = "llvm-cxxfilt-22"


@dataclass(frozen=True)
class CParam:
    name: str | None
    type: str | None  # 'float*', 'unsigned int', 'S'; None: unknown


def normal(c_type: str) -> str:
    """A C type as the checks name it: 'const float *__restrict' -> 'float*', '__private int' -> 'int'."""
    return re.sub(r"\s*\*\s*", "*", " ".join(_DROP.sub(" ", c_type).split()))


def _resolved(qual: dict, typedefs: dict[str, str]) -> str | None:
    """A clang JSON type ({qualType, desugaredQualType}) as a normal type name, through typedefs to a type the
    checks know where one leads there ('real *' with typedef float real -> 'float*')."""
    if _LOCAL.search(qual.get("qualType", "")):
        return None
    names = [normal(t) for t in (qual.get("qualType"), qual.get("desugaredQualType")) if t]
    for name in names:
        base = name.rstrip("*")
        name = typedefs.get(base, base) + name[len(base):]
        if element_type(name) is not None:
            return name
    return names[0] if names else None


def from_ast(ast: dict) -> dict[str, list[CParam]]:
    """The kernels of clang's JSON AST (-Xclang -ast-dump=json; -skip-function-bodies keeps it small) by the name
    the PTX gives them (their mangled name), each with its parameters' names and types. A template kernel only a
    body instantiates is not there: its mangled name still says its types."""
    typedefs: dict[str, str] = {}
    kernels: dict[str, list[CParam]] = {}
    stack = [ast]
    while stack:
        node = stack.pop()
        inner = node.get("inner", [])
        kind = node.get("kind")
        if kind in ("TypedefDecl", "TypeAliasDecl") and "name" in node:
            typedefs[node["name"]] = _resolved(node.get("type", {}), typedefs) or node["name"]
        elif kind == "FunctionDecl" and node.get("mangledName") and any(i.get("kind") in KERNEL_ATTRS for i in inner):
            found = [CParam(p.get("name"), _resolved(p.get("type", {}), typedefs))
                     for p in inner if p.get("kind") == "ParmVarDecl"]
            had = kernels.get(node["mangledName"], [])
            if sum(p.name is not None for p in found) >= sum(p.name is not None for p in had):
                kernels[node["mangledName"]] = found  # of a kernel declared twice, the declaration naming more
        stack.extend(reversed(inner))  # in source order: a typedef before its use
    return kernels


def from_ast_json(text: str) -> dict[str, list[CParam]]:
    """from_ast of clang's JSON AST text, parsing only the top-level declarations that hold a kernel or a typedef
    (clang writes each at four spaces' indent): a prelude's hundreds of inline functions are most of the text."""
    items = text.split("\n    {\n")[1:]
    wanted = [json.loads("{" + item[:item.rindex("\n    }")] + "}") for item in items if any(
        f'"{kind}"' in item for kind in (*KERNEL_ATTRS, "TypedefDecl", "TypeAliasDecl"))]
    return from_ast({"inner": wanted}) if items else from_ast(json.loads(text))


def comment(kernels: dict[str, list[CParam]]) -> str:
    """The PTX comment lines that carry the kernels' parameters."""
    return "".join(f"{MARK}{name} {json.dumps([[p.name, p.type] for p in ps])}\n" for name, ps in kernels.items())


@lru_cache(maxsize=64)
def read(ptx: str | None) -> Mapping[str, tuple[CParam, ...]]:
    """The kernels' parameters that PTX text carries in its usergpu.params lines (read once per text: a launch asks
    each time); CodeObjectError for a line that does not say them as compile_cuda writes them."""
    out = {}
    for m in _LINE.finditer(ptx or ""):
        try:
            items = json.loads(m.group(2))
            if not isinstance(items, list) or not all(isinstance(i, list) and len(i) == 2 and all(
                    x is None or isinstance(x, str) for x in i) for i in items):
                raise ValueError
        except ValueError:
            line = ptx.count("\n", 0, m.start()) + 1
            raise CodeObjectError(f"ptx: line {line}: usergpu.params for {m.group(1)} is not a list of [name, C type]"
                                  f" pairs: {m.group(2)[:80]!r}") from None
        out[m.group(1)] = tuple(CParam(n, t) for n, t in items)
    return MappingProxyType(out)


def of_mangled(name: str) -> tuple[CParam, ...] | None:
    """The parameter types a C++ kernel's mangled name says (_Z4vaddPKfS0_Pfj: float*, float*, float*, unsigned
    int), without names; None for a C name, or where llvm-cxxfilt is not installed or cannot read it."""
    if not name.startswith("_Z"):
        return None
    listed = _split_params(_demangle(name))
    return None if listed is None else tuple(CParam(None, normal(t)) for t in listed)


@lru_cache(maxsize=1024)
def _demangle(name: str) -> str:
    tool = shutil.which(CXXFILT)
    if tool is None:
        return name
    try:
        return subprocess.run([tool, name], capture_output=True, text=True, timeout=10).stdout.strip() or name
    except (OSError, subprocess.SubprocessError):
        return name


def _split_params(signature: str) -> list[str] | None:
    """The parameters of a demangled 'ns::f<int>(int*, float)'; None when it does not end in a parameter list."""
    if not signature.endswith(")"):
        return None
    depth, start = 0, None
    for i in range(len(signature) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(signature[i], 0)
        if depth == 0:
            start = i
            break
    if start is None:
        return None
    inside, items, depth, part = signature[start + 1:-1], [], 0, ""
    for ch in inside:
        if ch == "," and depth == 0:
            items.append(part)
            part = ""
            continue
        depth += {"(": 1, "<": 1, "[": 1, ")": -1, ">": -1, "]": -1}.get(ch, 0)
        part += ch
    items.append(part)
    items = [i.strip() for i in items]
    return [] if items in ([""], ["void"]) else items
