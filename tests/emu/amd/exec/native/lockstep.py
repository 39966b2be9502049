"""Each instruction of a kernel alone on both backends: the same random registers in, the same registers out.
Finds the instruction where the native backend departs from the reference (and the tests use it on the corpus).

    python tests/emu/amd/exec/native/lockstep.py FILE KERNEL [arch] [wave]
"""

from __future__ import annotations

import sys

import numpy as np

from usergpu.emu.amd.exec.executor import Executor
from usergpu.emu.amd.exec.native.codegen import discover
from usergpu.emu.amd.exec.native.executor import NativeExecutor
from usergpu.emu.amd.exec.waves import Waves
from usergpu.emu.memory import Memory
from usergpu.isa import amd as isa

SKIP = ("s_load", "s_buffer", "global_", "flat_", "scratch_", "buffer_", "ds_", "s_branch", "s_cbranch", "s_setpc",
        "s_swappc", "s_getpc", "s_endpgm", "s_barrier", "s_trap", "s_code_end", "s_sendmsg", "s_call")
# register values that break implementations: floats of every class, integer extremes, random bits
EDGES = np.asarray([0, 0x80000000, 0x3F800000, 0xBF800000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 1,
                    0x807FFFFF, 0x7F7FFFFF, 0xFFFFFFFF, 0x7FFFFFFF, 0x00800000, 0x3C003C00, 0x40490FDB], np.uint32)


def state(lanes: int, seed: int) -> Waves:
    rng = np.random.default_rng(seed)
    w = Waves(1, lanes, 256)
    pool = np.concatenate([EDGES, rng.integers(0, 1 << 32, 48, dtype=np.uint64).astype(np.uint32),
                           rng.standard_normal(64).astype(np.float32).view(np.uint32)])
    w.v[:] = rng.choice(pool, w.v.shape)
    w.s[:106] = rng.choice(pool, (106, 1))
    w.s[106:108] = rng.integers(0, 1 << 32, (2, 1), dtype=np.uint64).astype(np.uint32)
    w.s[126] = w.s[127] = rng.choice([0xFFFFFFFF, 0x5A5AF00F, 0x0000FFFF])
    w.scc[:] = seed & 1
    return w


def run_alone(code: bytes, arch: str, lanes: int, seed: int, backend) -> Waves:
    w = state(lanes, seed)
    backend(arch, code + isa.asm("s_endpgm", arch), 0, Memory(), w, np.zeros(1, np.int64), 1 << 16, 4, "lockstep",
            100).run()
    return w


def differences(code: bytes, arch: str, lanes: int, seeds: range = range(4)) -> list[str]:
    """Where running the instruction(s) in code alone differs between the backends."""
    out = []
    for seed in seeds:
        ref, nat = run_alone(code, arch, lanes, seed, Executor), run_alone(code, arch, lanes, seed, NativeExecutor)
        for what, a, b in (("s", ref.s, nat.s), ("v", ref.v, nat.v), ("scc", ref.scc, nat.scc)):
            bad = np.argwhere(a != b)
            if len(bad):
                at = tuple(bad[0])
                out.append(f"seed {seed}: {what}{list(at)} reference {int(a[at]):#x} native {int(b[at]):#x}")
                break
    return out


def instructions(co: bytes, kernel: str, arch: str) -> list:
    from usergpu.isa.amd.codeobj import parse
    from usergpu.isa.amd.dispatch import image

    obj = parse(co)
    k = obj.kernels[kernel]
    img = image(obj)
    start = k.descriptor_addr + int.from_bytes(img[k.descriptor_addr + 16 : k.descriptor_addr + 24], "little",
                                               signed=True)
    kern = discover(img, start, arch, 32)
    return [(inst, img[start + off : start + off + inst.size]) for off, inst in sorted(kern.insts.items()) if inst]


def main(path: str, kernel: str, arch: str = "gfx1100", wave: str = "32") -> None:
    sys.path.insert(0, "tests/kernels")
    import corpus

    co = corpus.code_object(path, arch, int(wave))
    for inst, raw in instructions(co, kernel, arch):
        if inst.mnemonic.startswith(SKIP):
            continue
        for line in differences(raw, arch, int(wave)):
            print(f"{inst.text}: {line}")


if __name__ == "__main__":
    main(*sys.argv[1:])
