"""OpenCL C's library functions (get_global_id, barrier, sqrt, vload4, atomic_add, ...) from Debian's libclc-22.

libclc's amdgcn-amd-amdhsa.bc is target-independent bitcode: clang links it with -mlink-builtin-bitcode, which
pulls in only the functions the kernel calls, gives them the kernel's -mcpu and features (wave64 included),
internalizes them and optimizes them together with the kernel, so nothing of the library is left in the code
object but what was inlined.

libclc reads the global offset and the work dimension from implicit-argument words 1..3 and 0, the layout Mesa's
runtime passes. Under HSA those words are other hidden arguments (code object v5+: hidden_block_count_*, so
get_global_id(0) came out offset by the grid's Y block count). WORKITEM replaces the three functions that read
them with the HSA ABI's: it is linked ahead of libclc, so libclc's own copies are never pulled in.
"""

from __future__ import annotations

import re
import subprocess
from functools import cache
from pathlib import Path

from usergpu.errors import ToolchainError

LIBCLC = Path("/usr/lib/clc/amdgcn-amd-amdhsa.bc")
PACKAGE = "libclc-22"
DEFAULT_CODE_OBJECT_VERSION = 6  # clang-22's

# hidden_global_offset_x/y/z (8 bytes each) sit at implicitarg+40 in code object v5 and v6, at +0 in v4; the work
# dimension is the dispatch packet's setup field (bits 0..1) in every version.
WORKITEM = r"""
#define OVERLOAD __attribute__((overloadable))
size_t OVERLOAD get_global_offset(uint d) {
  return d < 3 ? ((__constant ulong *)(__builtin_amdgcn_implicitarg_ptr() + GLOBAL_OFFSET))[d] : 0;
}
uint OVERLOAD get_work_dim(void) { return ((__constant ushort *)__builtin_amdgcn_dispatch_ptr())[1] & 3; }
size_t OVERLOAD get_global_id(uint d) {
  return get_group_id(d) * get_local_size(d) + get_local_id(d) + get_global_offset(d);
}
"""
_GLOBAL_OFFSET = {4: 0}  # else 40
_VERSION = re.compile(r"-mcode-object-version=(\d+)$")


def library(needed: list[str]) -> Path:
    """libclc's bitcode for amdgcn-amd-amdhsa; ToolchainError naming the Debian package when it is missing."""
    if not LIBCLC.is_file():
        raise ToolchainError(f"the kernel calls {', '.join(dict.fromkeys(needed))}: OpenCL C's built-in functions "
                             f"come from libclc, and {LIBCLC} is missing: install the Debian package {PACKAGE}")
    return LIBCLC


def code_object_version(options: list[str]) -> int:
    """The code object version clang will emit for these options (the last -mcode-object-version= wins)."""
    found = [int(m.group(1)) for m in map(_VERSION.match, options) if m]
    return found[-1] if found else DEFAULT_CODE_OBJECT_VERSION


@cache
def workitem_bitcode(clang: str, version: int) -> bytes:
    """WORKITEM as target-independent bitcode for this code object version (built once per process; the version is
    also a module flag, which must match the kernel's)."""
    argv = [clang, "-x", "cl", "-cl-std=CL2.0", "-target", "amdgcn-amd-amdhsa", "-nogpulib", "-O2", "-emit-llvm",
            f"-mcode-object-version={version}", f"-DGLOBAL_OFFSET={_GLOBAL_OFFSET.get(version, 40)}", "-c", "-", "-o",
            "-"]
    res = subprocess.run(argv, input=WORKITEM.encode(), capture_output=True, timeout=300)
    if res.returncode:
        raise ToolchainError(f"{Path(clang).name} could not build usergpu's HSA work-item functions for libclc:\n"
                             f"{res.stderr.decode(errors='replace').rstrip()}")
    return res.stdout


def link_options(clang: str, tmp: Path, options: list[str], needed: list[str]) -> list[str]:
    """The clang options that link the work-item functions, then libclc, into a kernel compiled with options that
    calls the functions needed."""
    lib = library(needed)
    workitem = tmp / "workitem.bc"
    workitem.write_bytes(workitem_bitcode(clang, code_object_version(options)))
    return [arg for path in (workitem, lib) for arg in ("-Xclang", "-mlink-builtin-bitcode", "-Xclang", str(path))]
