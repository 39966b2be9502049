"""compile_opencl(): OpenCL C source to a linked AMDGPU code object with clang-22 and ld.lld-22.

No device library is linked (-nogpulib), so the OpenCL work-item and synchronisation functions (get_global_id,
barrier, ...) are declared by clang's default header but have no definition: a kernel that calls one fails to
link with 'undefined symbol'. Kernels use clang builtins instead (__builtin_amdgcn_workitem_id_x(), ...);
tests/kernels/helpers.h shows the usual ones built from them.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from usergpu.emu.amd.codeobj.errors import CompileError
from usergpu.errors import ToolchainError

CLANG, LLD = "clang-22", "ld.lld-22"
TIMEOUT_S = 300
_NO_DEVICE_LIB = ("note: no device library is linked: OpenCL built-in functions such as get_global_id or barrier "
                  "are undefined; use __builtin_amdgcn_* builtins (see tests/kernels/helpers.h)")


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
            diag += "\n" + _NO_DEVICE_LIB
        raise CompileError(arch, tool, diag)


def compile_opencl(src: str, arch: str, options: list[str] | None = None) -> bytes:
    """The ELF code object for OpenCL C 2.0 source, for arch (gfx1100, gfx1200, gfx942, gfx950, or any clang knows).

    options go to clang after the defaults (e.g. ['-I', dir], ['-mcode-object-version=5'], ['-cl-kernel-arg-info']).
    Raises ToolchainError when clang-22/ld.lld-22 are missing, CompileError with their diagnostics when they fail.
    """
    clang, lld = _tool(CLANG), _tool(LLD)
    with tempfile.TemporaryDirectory(prefix="usergpu-cl-") as tmp:
        cl, obj, out = (str(Path(tmp, name)) for name in ("kernel.cl", "kernel.o", "kernel.hsaco"))
        Path(cl).write_text(src)
        # relative paths in options (-I dir) stay relative to the caller's working directory
        _run([clang, "-x", "cl", "-cl-std=CL2.0", "-target", "amdgcn-amd-amdhsa", f"-mcpu={arch}", "-O2",
              "-nogpulib", *(options or []), "-c", cl, "-o", obj], arch, tmp)
        _run([lld, "-shared", "--no-undefined", obj, "-o", out], arch, tmp)
        return Path(out).read_bytes()
