"""compile_opencl for either vendor: an NVIDIA arch (sm_*) gets PTX, any other an AMDGPU code object."""

from __future__ import annotations


def compile_opencl(src: str, arch: str = "gfx1100", options: list[str] | None = None) -> bytes:
    """OpenCL C 2.0 source compiled for arch: PTX for sm_80, sm_90, ...; an AMDGPU ELF code object for gfx*."""
    if arch.startswith("sm_"):
        from usergpu.isa.nv import compile_opencl as nv
        return nv(src, arch, options)
    from usergpu.isa.amd.codeobj import compile_opencl as amd
    return amd(src, arch, options)
