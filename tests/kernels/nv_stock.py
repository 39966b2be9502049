"""Stock cubins for tests: PTX assembled by ptxas alone, as nvcc and ptxas users have them, with no .usergpu.ptx
section (usergpu.assemble_ptx adds one)."""

from __future__ import annotations

import subprocess
import tempfile
from functools import cache
from pathlib import Path

import nv_corpus


@cache
def cubin(ptx: bytes, arch: str) -> bytes:
    """ptxas's cubin of the PTX for arch, once per (PTX, arch)."""
    with tempfile.TemporaryDirectory(prefix="usergpu-test-ptxas-") as tmp:
        src, out = Path(tmp, "kernel.ptx"), Path(tmp, "kernel.cubin")
        src.write_bytes(ptx)
        subprocess.run([str(nv_corpus.tool("bin/ptxas")), f"-arch={arch}", str(src), "-o", str(out)], check=True,
                       capture_output=True)
        return out.read_bytes()
