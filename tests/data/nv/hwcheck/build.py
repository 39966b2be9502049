"""Rebuild the hardware check's cubins from hwcheck.cu: `python tests/data/nv/hwcheck/build.py` (clang-22 and the
`nv` extra's ptxas). Writes hwcheck-ARCH.cubin next to this file for each arch the check ships, and prints the
ptxas that made them (record it in README.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import usergpu
from usergpu.isa.nv.compile import nvidia_tool
from usergpu.tools.hwcheck.nv import ARCHS, cubin_path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "hwcheck.cu"


def build(arch: str) -> bytes:
    """The cubin for arch: CUDA C to PTX by clang-22, PTX to SASS by ptxas (the PTX kept inside)."""
    return usergpu.assemble_ptx(usergpu.compile_cuda(SOURCE.read_text(), arch), arch)


def main() -> int:
    for arch in ARCHS:
        data = build(arch)
        cubin_path(HERE, arch).write_bytes(data)
        print(f"{cubin_path(HERE, arch).name}: {len(data)} bytes")
    version = subprocess.run([str(nvidia_tool("bin/ptxas")), "--version"], capture_output=True, text=True).stdout
    print("ptxas:", ", ".join(version.strip().splitlines()[-2:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
