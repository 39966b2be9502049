"""AMDGPU ELF code objects: parsing (sections, symbols, kernel descriptors, metadata) and compiling.

    co = parse(compile_opencl(src, "gfx1100"))
    k = co.kernels["vadd"]; k.entry, k.code, k.args, k.fields, k.user_sgprs
"""

from usergpu.emu.amd.codeobj.codeobj import CodeObject, parse
from usergpu.emu.amd.codeobj.compile import compile_opencl
from usergpu.emu.amd.codeobj.elf import Section, Segment, Symbol
from usergpu.emu.amd.codeobj.kernel import Arg, Kernel
from usergpu.errors import CompileError

__all__ = ["Arg", "CodeObject", "CompileError", "Kernel", "Section", "Segment", "Symbol", "compile_opencl", "parse"]
