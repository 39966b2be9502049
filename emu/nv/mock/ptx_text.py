"""A program that is PTX text, as tinygrad's NV runtime loads one for a mock interface (its NVProgram: on MOCKIface
the lib it copies to the program address is the PTX its renderer emitted, NUL-padded, not a cubin), and the kernel
arguments as that runtime passes them to a mock: constant bank 0 holds the number of buffers and of values at
words 80 and 81, and after its driver words (0x160 bytes; 0x380 from Blackwell, whose driver words reach word 223)
each buffer's address, then each value, 8 bytes apiece. The mock GPU runs such a
program on the PTX emulator as it runs a cubin's PTX; each argument goes to the kernel's parameter of its place,
cut to that parameter's size."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from usergpu.emu.nv.ptx.launch import compiled, map_globals, module_of
from usergpu.errors import CodeObjectError
from usergpu.isa.nv.cubin import sm_number

COUNTS = 0x140  # constant bank 0: (buffers, values) as two words


def args_at(arch: str) -> int:
    """Where the 8-byte arguments start in constant bank 0."""
    return 0x380 if sm_number(arch) >= 100 else 0x160
STARTS = (b"//", b".version", b".target")  # how PTX text begins (a comment or its first directives)
WHITESPACE = frozenset(b" \t\n\r\x0b\x0c")  # what bytes.lstrip() strips


@dataclass
class TextImage:
    """PTX text found at a program address: parsed once, its variables mapped once, while it stays there."""

    kernel: str
    compiled: object
    globals: dict[str, int]

    def unload(self, memory) -> None:
        for address in self.globals.values():
            memory.unmap(address)


def text_at(memory, va: int) -> tuple[int, bytes] | None:
    """The base of the mapping holding va and the PTX text at va (up to its NUL); None where the bytes there are
    not PTX text."""
    base, buf = memory.mapping(va, "execute")
    at = va - base
    first = at
    while first < len(buf) and buf[first] in WHITESPACE:  # a launch's look: no copy of the rest of the mapping
        first += 1
    if not bytes(buf[first : first + max(map(len, STARTS))]).startswith(STARTS):
        return None
    return base, bytes(memoryview(buf)[at:]).split(b"\0", 1)[0]


def image(vas, base: int, va: int, text: bytes) -> TextImage:
    """The program of the text at va (in the mapping at base), parsed and mapped on its first launch there; kept
    by the mapping's base, as a cubin image is, so that it goes when the mapping does."""
    key = (base, text)
    found = vas.images.get(key)
    if found is None:
        module = module_of(text)  # bytes that are not UTF-8: a CodeObjectError naming the byte
        if len(module.kernels) != 1:
            raise CodeObjectError(f"the PTX at program address {va:#x} has {len(module.kernels)} kernels "
                                  f"({', '.join(module.kernels) or 'none'}): a program launched by address has one")
        name = next(iter(module.kernels))
        c = compiled(module, name)
        found = vas.images[key] = TextImage(name, c, map_globals(c.prog, vas.memory))
    return found


def params(vas, cbank0: int, prog, arch: str) -> bytes:
    """The kernel's parameter block from the arguments at constant bank 0 (see the module doc)."""
    buffers, values = struct.unpack("<II", vas.read(cbank0 + COUNTS, 8).tobytes())
    declared, count = prog.kernel.params, buffers + values
    if count != len(declared):
        raise CodeObjectError(f"kernel {prog.kernel.name} takes {len(declared)} parameters; constant bank 0 at "
                              f"{cbank0:#x} passes {buffers} buffers and {values} values")
    words = struct.unpack(f"<{count}Q", vas.read(cbank0 + args_at(arch), 8 * count).tobytes()) if count else ()
    out = bytearray(prog.param_size)
    for p, word in zip(declared, words, strict=True):
        out[p.offset:p.offset + p.size] = (word & ((1 << 8 * p.size) - 1)).to_bytes(p.size, "little")
    return bytes(out)
