"""AMDGPU ELF code objects: parsing (sections, symbols, kernel descriptors, metadata) and compiling.

    co = parse(compile_opencl(src, "gfx1100"))
    k = co.kernels["vadd"]; k.entry, k.code, k.args, k.fields, k.user_sgprs
"""

from usergpu.errors import CompileError
from usergpu.isa.amd.codeobj.codeobj import CodeObject, parse
from usergpu.isa.amd.codeobj.compile import compile_opencl
from usergpu.isa.amd.codeobj.kernel import Arg, Kernel
from usergpu.isa.elf import Section, Segment, Symbol

__all__ = ["Arg", "CodeObject", "CompileError", "Kernel", "Section", "Segment", "Symbol", "compile_opencl", "parse"]
