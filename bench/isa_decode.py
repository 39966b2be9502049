"""Decoder speed: instructions decoded per second, and disassembling a large code object against llvm-objdump-22
on the same file, in the same process (ratio > 1: ours is slower).

    .venv/bin/python bench/isa_decode.py [arch]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import usergpu
from usergpu.isa import amd as isa
from usergpu.isa.amd.codeobj import parse

KERNELS = Path(__file__).resolve().parents[1] / "tests" / "kernels"


def main(arch: str = "gfx1100") -> None:
    objects = [usergpu.compile_opencl(f.read_text(), arch, ["-I", str(KERNELS)]) for f in sorted(KERNELS.glob("*.cl"))]
    texts = [bytes(parse(co).section(".text").data) for co in objects]
    start = time.perf_counter()
    count = sum(len(isa.decode_all(t, arch)) for t in texts)
    ours = time.perf_counter() - start
    print(f"{arch}: decoded {count} instructions in {ours:.3f} s: {count / ours:,.0f} instructions/s")
    start = time.perf_counter()
    for t in texts:
        isa.disasm(t, arch)
    ours = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, co in enumerate(objects):
            paths.append(Path(tmp) / f"{i}.o")
            paths[-1].write_bytes(co)
        start = time.perf_counter()
        subprocess.run(["llvm-objdump-22", "-d", f"--mcpu={arch}", *map(str, paths)], capture_output=True, check=True)
        theirs = time.perf_counter() - start
    print(f"disassembly of {len(objects)} code objects: ours {ours:.3f} s, llvm-objdump {theirs:.3f} s, "
          f"ratio {ours / theirs:.2f}")


if __name__ == "__main__":
    main(*sys.argv[1:])
