"""OpenCL C printf on AMD GPUs, buffered: LLVM's AMDGPU printf lowering (AMDGPUPrintfRuntimeBinding, which clang
uses for OpenCL C whatever -mprintf-kind says; that flag picks HIP's scheme) turns each printf into a call to
__printf_alloc(bytes) and stores a record in the space it returns: the printf's id (4 bytes), then each argument's
bytes, each padded to 4 (a float for %f stays a float, a char or short is widened to 4 bytes, a vector keeps its
elements, a constant %s string is stored inline, a non-constant one as "???"). The code object's metadata
amdhsa.printf has one entry per printf, "id:nargs:size0:...:format" (the format's newline, ':' and a few others
escaped).

The buffer, at the kernel's hidden_printf_buffer argument, starts with a header: the bytes used so far after the
header, then the buffer's whole size; __printf_alloc takes space with an atomic compare-and-swap and returns NULL
(the record is dropped) when it does not fit. The host reads the records after the kernel is done.

__printf_alloc is the device library's: ALLOC is usergpu's, for code built without ROCm's device libraries
(compile_options puts it before the kernel's source; clang's atomic builtins, so it needs no library).
"""

from __future__ import annotations

import re
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from usergpu.errors import CodeObjectError, Error
from usergpu.isa.amd.codeobj.kernel import Kernel
from usergpu.isa.printf import sprintf

HEADER = 8  # u32 bytes used after the header, u32 the buffer's size (header included)
BUFFER_BYTES = 1 << 20  # a launch's printf buffer, as ROCm's default
ALLOC_SYMBOL = "__printf_alloc"
# implicit-argument word (8 bytes) holding hidden_printf_buffer: 9 in code object v5 and v6, 3 in v4
BUFFER_WORD = {4: 3}
DEFAULT_WORD = 9
ALLOC = r"""#ifndef USERGPU_PRINTF_ALLOC
#define USERGPU_PRINTF_ALLOC
__attribute__((visibility("hidden"))) __global char *__printf_alloc(uint bytes) {
  __global uint *buf = (__global uint *)((__constant ulong *)__builtin_amdgcn_implicitarg_ptr())[USERGPU_PRINTF_WORD];
  __global atomic_uint *used = (__global atomic_uint *)buf;
  uint room = buf[1] - 8;
  uint at = __opencl_atomic_load(used, memory_order_relaxed, memory_scope_device);
  do {
    if (at > room || bytes > room - at) return 0;
  } while (!__opencl_atomic_compare_exchange_weak(used, &at, at + bytes, memory_order_relaxed, memory_order_relaxed,
                                                  memory_scope_device));
  return (__global char *)buf + 8 + at;
}
#endif
"""
_ESCAPE = re.compile(r"\\([abfnrv]|[0-7]{1,3})")
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "v": "\v"}
_ENTRY = re.compile(r"^(\d+):(\d+):((?:\d+:)*)(.*)$", re.S)


class PrintfBufferError(Error):
    """A printf buffer the kernel's records do not fill as the code object's printf table says: where, and what
    was expected against what was found."""

    def __init__(self, offset: int, expected: str, got: str):
        self.offset, self.expected, self.got = offset, expected, got
        super().__init__(f"printf buffer at offset {offset:#x}: expected {expected}, got {got}")


@dataclass(frozen=True)
class Format:
    id: int
    sizes: tuple[int, ...]  # each stored argument's bytes
    text: str  # the format as the source wrote it

    @property
    def record_size(self) -> int:
        return 4 + sum(self.sizes)


def compile_options(tmp: Path, version: int) -> list[str]:
    """clang options that give a kernel compiled for code object version its __printf_alloc (ALLOC, written into
    the directory tmp and included before the source)."""
    path = Path(tmp) / "usergpu_printf_alloc.cl"
    path.write_text(ALLOC)
    return ["-include", str(path), f"-DUSERGPU_PRINTF_WORD={BUFFER_WORD.get(version, DEFAULT_WORD)}"]


def unescape(text: str) -> str:
    """A metadata format string as the source wrote it (\\n, \\72 for ':', ...; other backslashes stay)."""
    return _ESCAPE.sub(lambda m: _ESCAPES.get(m.group(1)) or chr(int(m.group(1), 8)), text)


def formats(metadata: dict) -> dict[int, Format]:
    """The printf table of a code object's metadata (amdhsa.printf) by id; CodeObjectError for an entry that is
    not "id:nargs:sizes...:format"."""
    entries = metadata.get("amdhsa.printf", [])
    if not isinstance(entries, list):
        raise CodeObjectError(f"metadata amdhsa.printf is {type(entries).__name__}, not a list of strings")
    table = {}
    for i, entry in enumerate(entries):
        m = _ENTRY.match(entry) if isinstance(entry, str) else None
        sizes = tuple(int(s) for s in m.group(3).split(":")[:-1]) if m else ()
        if m is None or len(sizes) > int(m.group(2)):
            raise CodeObjectError(f"metadata amdhsa.printf[{i}] is {entry!r}, not 'id:nargs:size...:format'")
        table[int(m.group(1))] = Format(int(m.group(1)), sizes, unescape(m.group(4)))
    return table


def takes_buffer(k: Kernel) -> bool:
    """Whether the kernel calls printf (its metadata has a hidden_printf_buffer argument)."""
    return any(a.value_kind == "hidden_printf_buffer" for a in k.args)


def header(size: int | None = None) -> bytes:
    """The header of an empty printf buffer of size bytes (BUFFER_BYTES)."""
    return struct.pack("<II", 0, size or BUFFER_BYTES)


def new_buffer(size: int | None = None) -> np.ndarray:
    """An empty printf buffer's bytes (BUFFER_BYTES)."""
    size = size or BUFFER_BYTES
    buf = np.zeros(size, np.uint8)
    buf[:HEADER] = np.frombuffer(header(size), np.uint8)
    return buf


def reset(buf: memoryview) -> None:
    """Empty a printf buffer for the next launch: none of it used."""
    struct.pack_into("<I", buf, 0, 0)


def decode(buf: bytes | memoryview, table: dict[int, Format]) -> list[bytes]:
    """Each record's printed text, in buffer order (a thread's printfs in its order); PrintfBufferError for a
    header or a record the table does not account for."""
    data = memoryview(buf).cast("B")
    if len(data) < HEADER:
        raise PrintfBufferError(0, f"a {HEADER}-byte header", f"{len(data)} bytes")
    used, size = struct.unpack_from("<II", data)
    if size != len(data) or used > size - HEADER:
        raise PrintfBufferError(0, f"a header of size {len(data)} and at most {len(data) - HEADER} bytes used",
                                f"size {size}, {used} bytes used")
    out, at, end = [], HEADER, HEADER + used
    while at < end:
        if end - at < 4:
            raise PrintfBufferError(at, "a 4-byte printf id", f"{end - at} bytes")
        (pid,) = struct.unpack_from("<I", data, at)
        fmt = table.get(pid)
        if fmt is None:
            raise PrintfBufferError(at, f"a printf id of the code object ({', '.join(map(str, sorted(table)))})",
                                    f"{pid}")
        if fmt.record_size > end - at:
            raise PrintfBufferError(at, f"a {fmt.record_size}-byte record for printf {pid} ({fmt.text!r})",
                                    f"{end - at} bytes")
        args, p = [], at + 4
        for n in fmt.sizes:
            args.append(bytes(data[p : p + n]))
            p += n
        out.append(sprintf(fmt.text, args))
        at = p
    return out


def drain(buf: memoryview, table: dict[int, Format]) -> None:
    """Print what a finished kernel's threads wrote to sys.stdout (flushed) and empty the buffer for the next
    launch."""
    try:
        chunks = decode(buf, table)
    finally:
        reset(buf)
    if chunks:
        sys.stdout.write(b"".join(chunks).decode("utf-8", errors="replace"))
        sys.stdout.flush()
