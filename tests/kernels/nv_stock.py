"""Stock cubins for tests, as nvcc and ptxas users have them, with no .usergpu.ptx section (usergpu.assemble_ptx
adds one): PTX assembled by ptxas alone, or CUDA C compiled by nvcc (both from PyPI's nvidia-cuda-nvcc); and the
parameter layout a PTX kernel declares, worked out here independently of usergpu's readers."""

from __future__ import annotations

import subprocess
import tempfile
from functools import cache
from pathlib import Path

import nv_corpus

from usergpu.isa.nv import ptx as ptx_module


@cache
def cubin(ptx: bytes, arch: str) -> bytes:
    """ptxas's cubin of the PTX for arch, once per (PTX, arch)."""
    with tempfile.TemporaryDirectory(prefix="usergpu-test-ptxas-") as tmp:
        src, out = Path(tmp, "kernel.ptx"), Path(tmp, "kernel.cubin")
        src.write_bytes(ptx)
        subprocess.run([str(nv_corpus.tool("bin/ptxas")), f"-arch={arch}", str(src), "-o", str(out)], check=True,
                       capture_output=True)
        return out.read_bytes()


@cache
def nvcc(source: str, arch: str, output: str = "cubin") -> bytes:
    """nvcc's -cubin (or -ptx) of CUDA C for arch, once per (source, arch, output)."""
    with tempfile.TemporaryDirectory(prefix="usergpu-test-nvcc-") as tmp:
        src, out = Path(tmp, "kernel.cu"), Path(tmp, f"kernel.{output}")
        src.write_text(source)
        subprocess.run([str(nv_corpus.tool("bin/nvcc")), f"-{output}", f"-arch={arch}", str(src), "-o", str(out)],
                       check=True, capture_output=True)
        return out.read_bytes()


def declared(fn: ptx_module.Function) -> list[tuple[int, int]]:
    """(offset, size) of each parameter as the PTX declares it: at its .align (its type's size without one), its
    type's size times its count."""
    out, at = [], 0
    for p in fn.params:
        size = ptx_module.TYPE_SIZE[p.type] * p.count
        at = -(-at // p.align) * p.align
        out.append((at, size))
        at += size
    return out
