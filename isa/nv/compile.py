"""NVIDIA kernels without the CUDA toolkit: CUDA C and OpenCL C to PTX with clang-22, PTX to a cubin with ptxas.

clang compiles CUDA device code with -nocudainc -nocudalib and an empty --cuda-path, so the PTX does not depend on
what CUDA installation a machine happens to have; cuda_prelude.h gives the qualifiers, the built-in variables and
CUDA's one-instruction device functions. NVIDIA's libdevice (math functions, __nv_*) and ptxas come from PyPI's
nvidia-cuda-nvcc (the `nv` extra); libdevice is linked only into a kernel that calls one of its functions, as
libclc is on the AMD side. assemble_ptx keeps the PTX inside the cubin it makes (section .usergpu.ptx), so the
PTX emulator can run a cubin through the PTX it came from.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import struct
import subprocess
import tempfile
from functools import cache, lru_cache
from pathlib import Path

from usergpu.errors import CodeObjectError, CompileError, ToolchainError
from usergpu.isa.text import text_of

CLANG = "clang-22"
TIMEOUT_S = 300
PTX_ISA = "ptx87"  # PTX 8.7: every arch from sm_80 to sm_120 (ptxas 13 reads it); clang's default is older
PRELUDE = Path(__file__).with_name("cuda_prelude.h")
NV_PACKAGE = "nvidia-cuda-nvcc"  # PyPI: ptxas and libdevice (pip install 'usergpu[nv]'; make test installs it)
LIBCLC_NVPTX = Path("/usr/lib/clc/nvptx64--nvidiacl.bc")  # Debian libclc-22
PTX_SECTION = ".usergpu.ptx"
_COMMON = ("-O2", "-S", "-Xclang", "-target-feature", "-Xclang", f"+{PTX_ISA}")
# the declarations (-skip-function-bodies: a template's body multiplies the dump tenfold) as JSON, for param_types
AST_DUMP = ("-fsyntax-only", "-Xclang", "-skip-function-bodies", "-Xclang", "-ast-dump=json")
# device functions CUDA's driver gives every module (clang lowers printf to vprintf), run by the PTX emulator
DRIVER_FUNCTIONS = frozenset({"vprintf"})
_ARCH = re.compile(r"sm_(\d+)[af]?$")
# a function the module declares but does not define: `.extern .func (...) name(...);` or `.func name(...);`
_DECLARED = re.compile(r"^\s*(?:\.extern\s+)?\.func\s+(?:\([^)]*\)\s*)?(\w+)\s*\([^)]*\)\s*;", re.M)
_COMMENT = re.compile(r"//[^\n]*")
# PTX text: comments and blank space, then .version (the PTX ISA's first directive); each comment taken whole (an
# atomic group), so that a .version inside one does not count
_PTX_START = re.compile(rb"\s*(?:(?>//[^\n]*|/\*.*?\*/)\s*)*\.version\s", re.S)
_TARGET = re.compile(r"^\s*\.target\s+(sm_\d+[af]?)", re.M)
_DEFINED = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.func\s+(?:\([^)]*\)\s*)?(\w+)\s*\([^)]*\)\s*\{", re.M)


def check_arch(arch: str) -> str:
    """arch as clang and ptxas name it (sm_80, sm_90a, ...); anything else is a CompileError."""
    m = _ARCH.match(arch)
    if not m or int(m.group(1)) < 50:
        raise CompileError(arch, "usergpu", f"{arch!r} is not an NVIDIA GPU architecture (sm_80, sm_89, sm_90, ...)")
    return arch


def _clang() -> str:
    if path := shutil.which(CLANG):
        return path
    raise ToolchainError(f"{CLANG} not found on PATH: install the Debian package clang-22")


@cache
def nvidia_tool(name: str) -> Path:
    """A tool or file of PyPI's NVIDIA packages (bin/ptxas, bin/nvdisasm, nvvm/libdevice/libdevice.10.bc)."""
    import importlib.util

    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        found = sorted(Path(root).glob(f"*/{name}"))
        if found:
            return found[-1]
    package = "nvidia-cuda-nvdisasm" if name.endswith("nvdisasm") else NV_PACKAGE
    raise ToolchainError(f"{Path(name).name} not found: install the PyPI package {package} "
                         "(pip install 'usergpu[nv]'; make test does)")


def _run(argv: list[str], arch: str, tmp: str, tool: str | None = None) -> None:
    """The tool run; CompileError with its diagnostics when it fails."""
    _wait(subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True), arch, tmp,
          tool or Path(argv[0]).name)


def _wait(proc: subprocess.Popen, arch: str, tmp: str, tool: str, errors: Path | None = None) -> None:
    """proc ended; CompileError with its diagnostics (its stderr pipe's, or the file errors it wrote them to) when
    it failed or ran past TIMEOUT_S."""
    try:
        out, err = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise CompileError(arch, tool, f"timed out after {TIMEOUT_S} s") from None
    if proc.returncode:
        raise CompileError(arch, tool, (errors.read_text() if errors else err or out).replace(f"{tmp}/", ""))


def undefined_functions(ptx: str) -> list[str]:
    """The functions a PTX module calls but does not define (libdevice's __nv_* when a kernel uses math), but for
    those CUDA's driver gives every module."""
    code = _COMMENT.sub("", ptx)
    return sorted(set(_DECLARED.findall(code)) - set(_DEFINED.findall(code)) - DRIVER_FUNCTIONS)


def _to_ptx(argv: list[str], src: str | bytes, suffix: str, arch: str) -> str:
    """PTX from clang, its kernels' C parameters in comment lines (param_types: from clang's AST, dumped while the
    PTX compiles); compiled again with libdevice linked when the first result still calls functions it does not
    define."""
    with tempfile.TemporaryDirectory(prefix="usergpu-nv-") as tmp:
        path, out, ast, errors = (Path(tmp, name) for name in (f"kernel{suffix}", "kernel.ptx", "ast.json", "ast.err"))
        path.write_text(text_of(src, "CUDA C" if suffix == ".cu" else "OpenCL C"))
        with open(ast, "w") as sink, open(errors, "w") as diagnostics:  # files, not pipes: megabytes never wait
            dump = subprocess.Popen([*(a for a in argv if a != "-S"), *AST_DUMP, str(path)], stdout=sink,
                                    stderr=diagnostics)
        try:
            argv = [*argv, str(path), "-o", str(out)]
            _run(argv, arch, tmp)
            ptx = out.read_text()
            if undefined_functions(ptx):
                libdevice = nvidia_tool("nvvm/libdevice/libdevice.10.bc")
                _run([*argv[:-3], "-Xclang", "-mlink-builtin-bitcode", "-Xclang", str(libdevice), *argv[-3:]], arch,
                     tmp)
                ptx = out.read_text()
                if missing := undefined_functions(ptx):
                    raise CompileError(arch, CLANG, f"the kernel calls functions nothing defines: {', '.join(missing)}")
        except BaseException:
            dump.kill()
            dump.wait()
            raise
        _wait(dump, arch, tmp, f"{CLANG} -ast-dump", errors)
        from usergpu.isa.nv import param_types  # here: it loads numpy, which disasm and the CLI do not need

        return ptx + param_types.comment(param_types.from_ast_json(ast.read_text()))


def compile_cuda(src: str | bytes, arch: str = "sm_90", options: list[str] | None = None) -> bytes:
    """PTX (bytes) for CUDA C device code, for arch (sm_80, sm_86, sm_89, sm_90, sm_120, ...).

    Kernels need no CUDA headers: cuda_prelude.h is included first. options go to clang after the defaults (e.g.
    ['-O3'], ['-DN=4']). Raises ToolchainError when clang-22 is missing (or, for a kernel calling math functions,
    libdevice); CompileError with clang's diagnostics when it fails.
    """
    check_arch(arch)
    with tempfile.TemporaryDirectory(prefix="usergpu-nocuda-") as empty:  # a CUDA installation with nothing in it
        argv = [_clang(), "-x", "cuda", "--cuda-device-only", "-nocudainc", "-nocudalib", f"--cuda-path={empty}",
                f"--cuda-gpu-arch={arch}", "-include", str(PRELUDE), *_COMMON, *(options or [])]
        return _to_ptx(argv, src, ".cu", arch).encode()


def compile_opencl(src: str | bytes, arch: str = "sm_90", options: list[str] | None = None) -> bytes:
    """PTX (bytes) for OpenCL C 2.0 source, for an NVIDIA arch, with libclc's nvptx library for OpenCL's built-in
    functions (and libdevice, which libclc calls for math)."""
    check_arch(arch)
    if not LIBCLC_NVPTX.is_file():
        raise ToolchainError(f"{LIBCLC_NVPTX} not found: install the Debian package libclc-22")
    argv = [_clang(), "-x", "cl", "-cl-std=CL2.0", "-target", "nvptx64-unknown-nvidiacl", f"-march={arch}",
            "-nogpulib", *_COMMON, "-Xclang", "-mlink-builtin-bitcode", "-Xclang", str(LIBCLC_NVPTX),
            "-Wno-linker-warnings", *(options or [])]
    return _to_ptx(argv, src, ".cl", arch).encode()


def assemble_ptx(ptx: bytes | str, arch: str = "sm_90", options: list[str] | None = None) -> bytes:
    """A cubin (ELF) for PTX, by ptxas; the PTX rides along in section .usergpu.ptx. CompileError with ptxas's
    diagnostics when it rejects the PTX; ToolchainError when ptxas is not installed."""
    check_arch(arch)
    text = text_of(ptx, "PTX")
    ptxas = nvidia_tool("bin/ptxas")
    with tempfile.TemporaryDirectory(prefix="usergpu-ptxas-") as tmp:
        src, out = Path(tmp, "kernel.ptx"), Path(tmp, "kernel.cubin")
        src.write_text(text)
        _run([str(ptxas), f"-arch={arch}", *(options or []), str(src), "-o", str(out)], arch, tmp, "ptxas")
        return add_section(out.read_bytes(), PTX_SECTION, text.encode())


def add_section(elf: bytes, name: str, data: bytes) -> bytes:
    """The ELF64 with one more section (name, data), every existing section keeping its index: the data, a new
    section-name table (the old one plus name) and a new section header table go at the end. (llvm-objcopy
    rewrites a cubin's tables in an order NVIDIA's tools then reject.)"""
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<3H", elf, 0x3A)
    headers = bytearray(elf[shoff:shoff + shentsize * shnum])
    old = struct.unpack_from("<IIQQQQIIQQ", headers, shstrndx * shentsize)
    names = elf[old[4]:old[4] + old[5]] + b"\0" * (not elf[old[4]:old[4] + old[5]].endswith(b"\0"))
    out = bytearray(elf)
    data_off = len(out)
    out += data
    strtab_off = len(out)
    strtab = names + name.encode() + b"\0" + b".shstrtab\0"
    out += strtab
    out += b"\0" * (-len(out) % 8)
    headers += struct.pack("<IIQQQQIIQQ", len(names), 1, 0, 0, data_off, len(data), 0, 0, 1, 0)  # SHT_PROGBITS
    headers += struct.pack("<IIQQQQIIQQ", len(names) + len(name) + 1, 3, 0, 0, strtab_off, len(strtab), 0, 0, 1, 0)
    struct.pack_into("<Q", out, 0x28, len(out))
    struct.pack_into("<2H", out, 0x3C, shnum + 2, shnum + 1)
    return bytes(out + headers)


def is_ptx(code: bytes | bytearray | str) -> bool:
    """Whether code is PTX text (comments, then .version), not a cubin or anything else."""
    return _PTX_START.match(code.encode() if isinstance(code, str) else bytes(code)) is not None


def jit_arch(ptx: str, arch: str) -> str:
    """The arch PTX is assembled for to run on a GPU of arch, as the driver's JIT does it at load: arch itself for
    PTX of an older or the same arch; the PTX's own target for an arch-specific one (sm_90a) of arch's number;
    CodeObjectError for PTX of a newer arch or of another's arch-specific features."""
    m = _TARGET.search(ptx)
    if m is None:
        return arch  # no .target to go by: ptxas says what is wrong
    target = m.group(1)
    have, want = int(_ARCH.match(arch).group(1)), int(_ARCH.match(target).group(1))
    specific = target[-1] in "af"
    if want > have or (specific and want != have):
        raise CodeObjectError(f"the PTX targets {target}; the GPU is {arch}, which "
                              f"{'lacks its arch-specific features' if specific and want < have else 'is older'}: "
                              f"compile it for {arch}")
    return target if specific else arch


def assemble_for(ptx: bytes | bytearray | str, arch: str) -> bytes:
    """A cubin of PTX text for a GPU of arch (jit_arch), assembled once: kept in memory and on disk
    ($XDG_CACHE_HOME/usergpu/ptxas, by the PTX, the arch and the ptxas that made it)."""
    return _assembled(ptx.encode() if isinstance(ptx, str) else bytes(ptx), check_arch(arch))


@lru_cache(maxsize=64)
def _assembled(ptx: bytes, arch: str) -> bytes:
    text = text_of(ptx, "PTX")
    target = jit_arch(text, arch)
    ptxas = nvidia_tool("bin/ptxas")
    made = ptxas.stat()
    key = hashlib.sha256(f"{ptxas}:{made.st_size}:{made.st_mtime_ns}:{target}\n".encode() + ptx).hexdigest()
    path = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache", "usergpu", "ptxas", f"{key[:32]}.cubin")
    if path.is_file():
        return path.read_bytes()
    data = assemble_ptx(text, target)
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_suffix(f".{os.getpid()}.part")  # written whole, then renamed: safe with other processes
    part.write_bytes(data)
    part.replace(path)
    return data
