"""Compile a kernel's C once with clang-22 and load it through cffi (ABI mode: a shared object, dlopen'ed), cached
on disk under ~/.cache/usergpu/native by a hash of the instructions, arch, wave size, this backend's own sources and
the host CPU (the code is built for it), and in memory for the process's life."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from functools import cache
from pathlib import Path

from usergpu.errors import Error

HERE = Path(__file__).parent
CLANG = "clang-22"
FLAGS = ("-O2", "-march=native", "-fwrapv", "-ffp-contract=off", "-fno-math-errno", "-fPIC", "-shared", "-w")
# what a kernel's C sees of the emulator's state: the reference backend's arrays (executor.py fills it in)
STATE = """typedef struct {
    uint32_t *v; uint32_t *s; uint32_t *scc; int64_t *pc; uint8_t *done; uint8_t *waiting; int64_t *steps;
    int64_t n; int64_t vgprs; int64_t budget; int64_t quota; int64_t entry;
    int64_t *gstart; int64_t ngroups; int64_t gi; int64_t *group;
    uint8_t *lds; int64_t lds_size; uint8_t *scratch; int64_t scratch_size;
    uint64_t *base; uint64_t *end; uint8_t **host; uint8_t *writable; int64_t nranges; int64_t last;
    int32_t denorm32; int32_t denorm16;
    int64_t wave; uint64_t fault_addr; int32_t fault_access; int32_t fault_why; int64_t fault_size;
} State;
"""


class CompileError(Error, RuntimeError):
    """clang-22 could not build a kernel's C: a bug of this backend (the C is generated), reported with clang's
    first lines."""


@cache
def compiler() -> str | None:
    """clang-22's path, or None where it is not installed."""
    return shutil.which(CLANG)


@cache
def ffi():
    """cffi's view of State and run(): an out-of-line module, made once into the cache (parsing the declarations
    with pycparser in every process costs more than the rest of a cached kernel's start)."""
    import importlib.util

    decls = STATE + "int run(State *st);"
    path = cache_dir() / f"state_{hashlib.sha256(decls.encode()).hexdigest()[:16]}.py"
    if not path.exists():
        import cffi

        builder = cffi.FFI()
        builder.set_source("_usergpu_native_state", None)
        builder.cdef(decls)
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
            os.replace(builder.compile(tmpdir=tmp), path)
    spec = importlib.util.spec_from_file_location("_usergpu_native_state", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ffi


@cache
def _fingerprint() -> str:
    """This backend's sources and the CPU the code is built for: a change to either is a new kernel cache."""
    h = hashlib.sha256()
    for name in sorted(p.name for p in HERE.iterdir() if p.suffix in (".py", ".h")):
        h.update((HERE / name).read_bytes())
    try:
        flags = next((line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags")), "")
    except OSError:
        flags = ""
    h.update(flags.encode() + " ".join(FLAGS).encode())
    return h.hexdigest()


def cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "usergpu" / "native"


PREFIX = 64  # bytes at the entry that name a kernel's spans in the index
_LOADED: dict[str, object] = {}  # digest -> library, for the process
_SPANS: dict[str, list[tuple[int, int]]] = {}  # entry key -> the spans its kernels were compiled from
_FOUND: dict[tuple, list] = {}  # (arch, lanes, the entry's first bytes) -> (span, its bytes, library) found before


def _digest(*parts: bytes) -> str:
    return hashlib.sha256(_fingerprint().encode() + b"\0".join(parts)).hexdigest()[:32]


def _entry_key(code, entry: int, arch: str, lanes: int) -> str:
    return _digest(f"{arch} {lanes}".encode(), code[entry : entry + PREFIX])


def _span_key(code, entry: int, arch: str, lanes: int, span: tuple[int, int]) -> str:
    lo, hi = span
    return _digest(f"{arch} {lanes} {lo} {hi}".encode(), code[entry + lo : entry + hi])


def find(code, entry: int, arch: str, lanes: int) -> object | None:
    """A kernel compiled before (in this process or any, by the bytes of its code): found in this process by
    comparing bytes (a suite launches its kernels again and again), else each span the index lists for its entry's
    first bytes, hashed and looked up; None if none matches."""
    key = (arch, lanes, code[entry : entry + PREFIX])
    for (lo, hi), data, lib in _FOUND.get(key, ()):
        if code[entry + lo : entry + hi] == data:
            return lib
    got = _find(code, entry, arch, lanes)
    if got is None:
        return None
    (lo, hi), lib = got
    _FOUND.setdefault(key, []).append(((lo, hi), code[entry + lo : entry + hi], lib))
    return lib


def _find(code, entry: int, arch: str, lanes: int) -> tuple[tuple[int, int], object] | None:
    ekey = _entry_key(code, entry, arch, lanes)
    spans = _SPANS.get(ekey)
    if spans is None:
        index = cache_dir() / f"{ekey}.spans"
        text = index.read_text() if index.exists() else ""
        lines = (tuple(map(int, line.split())) for line in text.splitlines() if line)
        spans = _SPANS[ekey] = list(dict.fromkeys(lines))
    for span in spans:
        digest = _span_key(code, entry, arch, lanes, span)
        if digest in _LOADED or (cache_dir() / f"{digest}.so").exists():
            return span, load(digest, None)
    return None


def compile_kernel(code, entry: int, arch: str, lanes: int, span: tuple[int, int], source) -> object:
    """Compile a kernel whose instructions lie in span, and index it for find()."""
    lib = load(_span_key(code, entry, arch, lanes, span), source)
    ekey = _entry_key(code, entry, arch, lanes)
    if span in _SPANS.setdefault(ekey, []):
        return lib
    _SPANS[ekey].append(span)
    with open(cache_dir() / f"{ekey}.spans", "a") as index:  # lines appended whole: safe with other processes
        index.write(f"{span[0]} {span[1]}\n")
    return lib


def load(digest: str, source) -> object:
    """The loaded library for a kernel: from memory, from the disk cache, or compiled now (source() gives its C,
    which wave.h completes, after the State it works on)."""
    lib = _LOADED.get(digest)
    if lib is not None:
        return lib
    path = cache_dir() / f"{digest}.so"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
            c = Path(tmp) / "kernel.c"
            c.write_text("#include <stdint.h>\n" + STATE + source())
            out = Path(tmp) / "kernel.so"
            done = subprocess.run([compiler(), *FLAGS, "-I", str(HERE), str(c), "-o", str(out), "-lm"],
                                  capture_output=True, text=True)
            if done.returncode:
                raise CompileError(f"{CLANG} could not build a kernel: {done.stderr.strip()[:2000]}")
            os.replace(out, path)  # atomic: a second process building the same kernel meets a whole file
    lib = _LOADED[digest] = ffi().dlopen(str(path))
    return lib
