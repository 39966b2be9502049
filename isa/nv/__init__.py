"""NVIDIA code objects: compiling (CUDA C / OpenCL C to PTX, PTX to cubin), PTX modules and cubins."""

from usergpu.isa.nv.compile import assemble_ptx, compile_cuda, compile_opencl

__all__ = ["assemble_ptx", "compile_cuda", "compile_opencl"]
