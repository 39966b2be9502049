"""The AMD backend's kernels in the shared native build (emu/native/build.py): named by a hash of the
instructions, arch, wave size, this backend's own sources and the host CPU, and found again by their code's bytes
through an index of the spans each entry's kernels were compiled from."""

from __future__ import annotations

from pathlib import Path

from usergpu.emu.native import build as shared
from usergpu.emu.native.build import CLANG, CompileError, cache_dir, compiler  # noqa: F401 (this backend's names)

HERE = Path(__file__).parent
# what a kernel's C follows besides this folder: the executor's semantics (operands, ALU signatures) and the opcode
# tables its instructions decode by
SOURCES = (HERE, HERE.parent, *sorted((HERE.parents[3] / "autogen").glob("isa_*.msgpack")))
# what a kernel's C sees of the emulator's state: the reference backend's arrays (executor.py fills it in)
STATE = """typedef struct {
    uint32_t *v; uint32_t *s; uint32_t *scc; int64_t *pc; uint8_t *done; uint8_t *waiting; int64_t *steps;
    int64_t n; int64_t vgprs; int64_t budget; int64_t quota; int64_t entry;
    int64_t *gstart; int64_t ngroups; int64_t gi; int64_t *group;
    uint8_t *lds; int64_t lds_size; uint8_t *scratch; int64_t scratch_size;
    uint64_t *base; uint64_t *end; uint8_t **host; uint8_t *writable; int64_t nranges; int64_t last;
    int32_t denorm32; int32_t denorm16;
    int64_t wave; uint64_t fault_addr; int32_t fault_access; int32_t fault_why; int64_t fault_size;
    int64_t lds_outside;
} State;
"""
DECLS = STATE + "int run(State *st);"


PREFIX = 64  # bytes at the entry that name a kernel's spans in the index
_SPANS: dict[str, list[tuple[int, int]]] = {}  # entry key -> the spans its kernels were compiled from
_FOUND: dict[tuple, list] = {}  # (arch, lanes, the entry's first bytes) -> (span, its bytes, library) found before


def ffi():
    """cffi's view of State and run()."""
    return shared.ffi(DECLS)


def _digest(*parts: bytes) -> str:
    return shared.digest(SOURCES, *parts)


def _entry_key(code, entry: int, arch: str, lanes: int) -> str:
    return _digest(f"{arch} {lanes}".encode(), code[entry : entry + PREFIX])


def span_key(code, entry: int, arch: str, lanes: int, span: tuple[int, int]) -> str:
    """The digest a kernel's compiled span is cached under."""
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
        digest = span_key(code, entry, arch, lanes, span)
        if shared.cached(digest):
            return span, load(digest, None)
    return None


def compile_kernel(code, entry: int, arch: str, lanes: int, span: tuple[int, int], source) -> object:
    """Compile a kernel whose instructions lie in span, and index it for find()."""
    lib = load(span_key(code, entry, arch, lanes, span), source)
    ekey = _entry_key(code, entry, arch, lanes)
    if span in _SPANS.setdefault(ekey, []):
        return lib
    _SPANS[ekey].append(span)
    with open(cache_dir() / f"{ekey}.spans", "a") as index:  # lines appended whole: safe with other processes
        index.write(f"{span[0]} {span[1]}\n")
    return lib


def quick_key(code, entry: int, arch: str, lanes: int, span: tuple[int, int]) -> str:
    """The name a kernel's quick build is cached under (not indexed: find() finds optimised builds)."""
    return span_key(code, entry, arch, lanes, span) + "-quick"


def quick_cached(code, entry: int, arch: str, lanes: int, span: tuple[int, int]) -> bool:
    return shared.cached(quick_key(code, entry, arch, lanes, span))


def compile_quick(code, entry: int, arch: str, lanes: int, span: tuple[int, int], source) -> object:
    """A kernel's quick build (QUICK: a fraction of the optimised build's clang time, its code several times
    slower), loaded from the cache or made now."""
    return shared.load(quick_key(code, entry, arch, lanes, span), source, DECLS, HERE, shared.QUICK)


def load(digest: str, source) -> object:
    """The loaded library for a kernel (source() gives its C, which wave.h completes, after the State)."""
    return shared.load(digest, source, DECLS, HERE)
