"""compile_opencl(): OpenCL C source to a linked AMDGPU code object with clang-22 and ld.lld-22.

A kernel is first compiled alone, as one written with clang builtins only (__builtin_amdgcn_workitem_id_x(), ...;
tests/kernels/helpers.h) needs. When the object still calls OpenCL C library functions (get_global_id, barrier,
exp, vload4, ...), it is compiled again with libclc linked in (libclc.py), so such kernels pay for the library
and the others do not.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from usergpu.errors import CompileError, ToolchainError
from usergpu.isa import elf
from usergpu.isa.amd.codeobj import libclc, printf
from usergpu.isa.text import text_of

CLANG, LLD = "clang-22", "ld.lld-22"
TIMEOUT_S = 300
_NOT_IN_LIBCLC = f"note: libclc ({libclc.PACKAGE}) was linked: these functions are not OpenCL C built-ins it defines"
_MANGLED = re.compile(r"_Z(\d+)")


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise ToolchainError(f"{name} not found on PATH: install the Debian packages clang-22 and lld-22")
    return path


def _run(argv: list[str], arch: str, tmp: str) -> None:
    tool = Path(argv[0]).name
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise CompileError(arch, tool, f"timed out after {TIMEOUT_S} s") from None
    if res.returncode:
        diag = (res.stderr or res.stdout).replace(f"{tmp}/", "")
        if tool == LLD and "undefined" in diag:
            diag += "\n" + _NOT_IN_LIBCLC
        raise CompileError(arch, tool, diag)


def undefined_symbols(obj: bytes) -> list[str]:
    """The symbols a relocatable object uses but does not define, functions as the source names them (get_global_id
    for _Z13get_global_idj)."""
    sections = elf.read_sections(obj, elf.read_header(obj))
    names = [s.name for t in sections if t.type == elf.SHT_SYMTAB for s in elf.read_symbols(sections, t)
             if s.shndx == elf.SHN_UNDEF and s.binding != "LOCAL" and s.name]
    return [n[m.end():m.end() + int(m.group(1))] if (m := _MANGLED.match(n)) else n for n in names]


def compile_opencl(src: str | bytes, arch: str, options: list[str] | None = None) -> bytes:
    """The ELF code object for OpenCL C 2.0 source, for arch (gfx1100, gfx1200, gfx942, gfx950, or any clang knows).

    options go to clang after the defaults (e.g. ['-I', dir], ['-mcode-object-version=5']). The metadata names
    each argument and its type (-cl-kernel-arg-info), so a launch can check what it is given against them.
    Raises ToolchainError when clang-22/ld.lld-22 are missing, or libclc-22 is and the kernel calls OpenCL C's
    built-in functions; CompileError with the tools' diagnostics when they fail.
    """
    clang, lld = _tool(CLANG), _tool(LLD)
    options = list(options or [])
    with tempfile.TemporaryDirectory(prefix="usergpu-cl-") as tmp:
        cl, obj, out = (str(Path(tmp, name)) for name in ("kernel.cl", "kernel.o", "kernel.hsaco"))
        Path(cl).write_text(text_of(src, "OpenCL C"))
        # relative paths in options (-I dir) stay relative to the caller's working directory
        argv = [clang, "-x", "cl", "-cl-std=CL2.0", "-target", "amdgcn-amd-amdhsa", f"-mcpu={arch}", "-O2",
                "-nogpulib", "-cl-kernel-arg-info", *options, "-c", cl, "-o", obj]
        _run(argv, arch, tmp)
        if needed := undefined_symbols(Path(obj).read_bytes()):
            # printf's lowering calls __printf_alloc, no libclc function: usergpu's is included before the source
            # (the lowering runs after -mlink-builtin-bitcode has linked, so it must be in the module already)
            extra = printf.compile_options(Path(tmp), libclc.code_object_version(options)) \
                if printf.ALLOC_SYMBOL in needed else []
            if rest := [n for n in needed if n != printf.ALLOC_SYMBOL]:
                extra += libclc.link_options(clang, Path(tmp), options, rest)
            _run(argv[:-4] + extra + argv[-4:], arch, tmp)
        _run([lld, "-shared", "--no-undefined", obj, "-o", out], arch, tmp)
        return Path(out).read_bytes()
