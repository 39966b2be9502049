"""Generated C compiled once with clang-22 and loaded through cffi (ABI mode: a shared object, dlopen'ed), cached
on disk under ~/.cache/usergpu/native by a digest its backend gives (the code's bytes, the backend's own sources,
the host CPU: the code is built for it), and in memory for the process's life. Both emulators' native backends
build here."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path

from usergpu.errors import Error

HERE = Path(__file__).parent
CLANG = "clang-22"
FLAGS = ("-O2", "-march=native", "-fwrapv", "-ffp-contract=off", "-fno-math-errno", "-fPIC", "-shared", "-w")
QUICK = ("-O0", *FLAGS[1:])  # a first build that compiles in a third of the time (and runs several times slower)


class CompileError(Error, RuntimeError):
    """clang-22 could not build a kernel's C: a bug of the backend (the C is generated), reported with clang's first
    lines."""


@cache
def compiler() -> str | None:
    """clang-22's path, or None where it is not installed."""
    return shutil.which(CLANG)


def cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "usergpu" / "native"


@cache
def ffi(decls: str):
    """cffi's view of a backend's declarations (its State and entry points): an out-of-line module, made once into
    the cache (parsing the declarations with pycparser in every process costs more than the rest of a cached
    kernel's start)."""
    import importlib.util

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
def fingerprint(folders: tuple[Path, ...]) -> str:
    """The sources (.py, .h) of the folders given and of this one (and any file given: a data table the code
    generator reads), and the CPU the code is built for: a change to any is a new kernel cache."""
    h = hashlib.sha256()
    for folder in (*folders, HERE):
        paths = [folder] if folder.is_file() else sorted(p for p in folder.iterdir() if p.suffix in (".py", ".h"))
        for path in paths:
            h.update(path.read_bytes())
    try:
        flags = next((line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags")), "")
    except OSError:
        flags = ""
    h.update(flags.encode() + " ".join(FLAGS).encode())
    return h.hexdigest()


def digest(folders: Iterable[Path], *parts: bytes) -> str:
    """A kernel's name in the cache: the backend's fingerprint and the parts that make the kernel what it is."""
    return hashlib.sha256(fingerprint(tuple(folders)).encode() + b"\0".join(parts)).hexdigest()[:32]


_LOADED: dict[str, object] = {}  # digest -> library, for the process


def load(name: str, source: Callable[[], str], decls: str, folder: Path, flags: tuple[str, ...] = FLAGS) -> object:
    """The loaded library called name (a digest): from memory, from the disk cache, or compiled now with flags from
    source() (after <stdint.h> and decls, with folder and this one on the include path)."""
    lib = _LOADED.get(name)
    if lib is not None:
        return lib
    path = cache_dir() / f"{name}.so"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
            c = Path(tmp) / "kernel.c"
            c.write_text("#include <stdint.h>\n" + decls + "\n" + source())
            out = Path(tmp) / "kernel.so"
            done = subprocess.run([compiler(), *flags, "-I", str(folder), "-I", str(HERE), str(c), "-o", str(out),
                                   "-lm"], capture_output=True, text=True)
            if done.returncode:
                raise CompileError(f"{CLANG} could not build a kernel: {done.stderr.strip()[:2000]}")
            os.replace(out, path)  # atomic: a second process building the same kernel meets a whole file
    lib = _LOADED[name] = ffi(decls).dlopen(str(path))
    return lib


def cached(name: str) -> bool:
    """A library of this name is loaded or on disk."""
    return name in _LOADED or (cache_dir() / f"{name}.so").exists()
