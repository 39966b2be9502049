"""Every PTX instruction clang-22 emits for the CUDA corpus (tests/kernels/nv and the matrix kernels of
tests/kernels/nv_mma) is implemented: each kernel is linked with its device functions and every instruction built
from the semantics table (an instruction the table cannot build raises UnsupportedPTX naming it)."""

from __future__ import annotations

from pathlib import Path

import nv_corpus
import pytest

import usergpu
from usergpu.emu.nv.ptx.executor import Compiled
from usergpu.emu.nv.ptx.program import link
from usergpu.isa.nv import ptx

MMA = Path(__file__).parents[2] / "kernels" / "nv_mma" / "wmma.cu"


def _modules(arch: str) -> list[tuple[str, bytes]]:
    out = [(f"{f} {' '.join(o)}", nv_corpus.ptx(f, arch, o)) for f, o in nv_corpus.builds(arch)]
    return out + [("nv_mma/wmma.cu", usergpu.compile_cuda(MMA.read_text(), arch))]


@pytest.mark.parametrize("arch", nv_corpus.cases.ARCHS)
def test_every_instruction_clang_emits_for_the_corpus_is_implemented(arch):
    built, failures = 0, []
    for name, text in _modules(arch):
        module = ptx.parse(text)
        for kernel in module.kernels:
            c = Compiled(link(module, kernel))
            for p in range(len(c.prog.code)):
                try:
                    c.op(p)
                    built += 1
                except usergpu.CodeObjectError as e:
                    failures.append(f"{name}: {e}")
    assert not failures, "\n".join(failures)
    assert built > 5000  # the corpus is that big: a parse that lost instructions would show here
