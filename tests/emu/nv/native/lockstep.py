"""Finds the instruction whose C makes the native backend part from the reference: the kernel built with only the
instructions [0, k) translated (the rest run on the reference, executor.library's `only`), bisected for the least
k whose launch leaves different buffers (or a different error) than the reference's; instruction k-1 is the one.

    python tests/emu/nv/native/lockstep.py FILE.cu|FILE.ptx KERNEL [arch]

A kernel of the CUDA corpus (tests/kernels/nv) runs its case's launch; any other runs one block of 128 threads
with a buffer of random words for each pointer parameter, 64 (1.0 for a float) for each scalar one and
zeros for an aggregate.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from usergpu.emu.nv import launch
from usergpu.emu.nv.ptx.launch import compiled, find_kernel, module_of
from usergpu.emu.nv.ptx.native.executor import library

HERE = Path(__file__).resolve().parent
if __name__ == "__main__":  # as a tool: the harness and the corpus beside it (conftest.py puts them for the tests)
    sys.path[:0] = [str(HERE.parent), str(HERE.parents[2] / "kernels")]
from ptx_harness import backend, first_difference  # noqa: E402


@dataclass(frozen=True)
class Parting:
    index: int  # the instruction's index in the linked program
    line: int  # its line in the PTX text
    text: str
    difference: str  # the first differing buffer element (or the two errors)

    def __str__(self) -> str:
        return f"instruction {self.index} (line {self.line}: {self.text}) parts the backends: {self.difference}"


def _outcome(code: str | bytes, kernel: str, grid, block, args: list, shared: int) -> list[np.ndarray] | Exception:
    try:
        return launch(code, kernel, grid, block, args, shared=shared)
    except Exception as e:  # noqa: BLE001 (an error is an outcome the backends must share)
        return e


def _differs(ref: list[np.ndarray] | Exception, got: list[np.ndarray] | Exception) -> str | None:
    if isinstance(ref, Exception) or isinstance(got, Exception):
        same = type(ref) is type(got) and str(ref) == str(got)
        return None if same else f"reference {ref!r}, native {got!r}"
    return first_difference(ref, got)


def parting(code: str | bytes, kernel: str, grid, block, args: list, shared: int = 0) -> Parting | None:
    """The first instruction (by index) whose C makes the launch's buffers differ from the reference's, None when
    the whole kernel in C agrees."""
    module = module_of(code)
    c = compiled(module, find_kernel(module, kernel))
    with backend("numpy"):
        ref = _outcome(code, kernel, grid, block, args, shared)

    def native(k: int) -> str | None:
        library(c, only=frozenset(range(k)))
        try:
            with backend("native"):
                return _differs(ref, _outcome(code, kernel, grid, block, args, shared))
        finally:
            c.native = None

    n = len(c.prog.code)
    last = native(n)
    if last is None:
        return None
    lo, hi, why = 0, n, last  # native(lo) agrees (no instruction in C), native(hi) parts
    while hi - lo > 1:
        mid = (lo + hi) // 2
        got = native(mid)
        if got is None:
            lo = mid
        else:
            hi, why = mid, got
    ins = c.prog.code[hi - 1]
    return Parting(hi - 1, ins.line, ins.text, why)


def _corpus_launch(path: Path, kernel: str):
    import nv_corpus

    for case in nv_corpus.cases.CASES:
        if nv_corpus.NV / case.file == path.resolve() and case.kernel == kernel:
            return case.grid, case.block, case.args(np.random.default_rng(0)), case.shared, case.options
    return None


def _generic_args(code: str | bytes, kernel: str) -> list:
    module = module_of(code)
    fn = module.kernels[find_kernel(module, kernel)]
    rng = np.random.default_rng(0)
    args: list = []
    for p in fn.params:
        if p.pointer is not None or p.type in ("u64", "b64", "s64") and p.size == 8:
            args.append(rng.integers(0, 1 << 32, 1 << 16, dtype=np.uint64).astype(np.uint32))
        elif p.count == 1 and p.size in (2, 4, 8) and p.type[0] == "f":
            args.append(np.asarray(1.0, f"f{p.size}").tobytes())
        elif p.count == 1 and p.size in (1, 2, 4, 8):
            args.append(np.asarray(64, f"u{p.size}").tobytes())
        else:  # an aggregate: zeros
            args.append(bytes(p.size))
    return args


def main(path: str, kernel: str, arch: str = "sm_90") -> int:
    import usergpu

    file = Path(path)
    found = _corpus_launch(file, kernel) if file.suffix == ".cu" else None
    options = ["-I", str(file.resolve().parent), *(found[4] if found else ())]
    code = usergpu.compile_cuda(file.read_text(), arch, options) if file.suffix == ".cu" else file.read_bytes()
    grid, block, args, shared = found[:4] if found else ((1, 1, 1), (128, 1, 1), _generic_args(code, kernel), 0)
    where = parting(code, kernel, grid, block, args, shared)
    print(where or f"{kernel}: the backends agree")
    return 0 if where is None else 1


if __name__ == "__main__":
    from usergpu.errors import Error

    if not 3 <= len(sys.argv) <= 4:
        sys.exit(__doc__)
    try:
        sys.exit(main(*sys.argv[1:]))
    except (Error, OSError) as e:  # a kernel that does not build or launch, a file not there: said, not a traceback
        sys.exit(f"lockstep: {e}")
