"""Hostile programs for the PTX emulator: 2,000 mutated PTX modules and 2,000 mutated cubins, made from the CUDA
corpus by a seeded mutator (lines dropped, repeated, swapped or cut off, tokens replaced by others of the module,
bytes changed), each launched as its corpus case launches it. Whatever the damage, the answer is a result, a
usergpu error (a refusal, a fault, GPUHang) — never a Python exception from inside the emulator."""

from __future__ import annotations

import random
import re
import traceback

import numpy as np
import nv_corpus  # tests/kernels, on the path by tests/conftest.py
import pytest

from usergpu.emu.nv import launch
from usergpu.errors import Error

ARCH = "sm_90"
CHUNKS, PER_CHUNK = 20, 100  # 2,000 of each kind, in chunks pytest-xdist spreads over its workers
BUDGET = 200_000  # instruction steps: a mutant that loops for ever ends as GPUHang, soon
TOKEN = re.compile(rb"[%\w.$]+|\S")
CASES = [c for c in nv_corpus.cases.CASES if ARCH in c.archs]

pytestmark = pytest.mark.skipif(not (nv_corpus.has_toolchain() and nv_corpus.tool("nvvm/libdevice/libdevice.10.bc")),
                                reason=nv_corpus.TOOLCHAIN)


def mutate_ptx(rng: random.Random, text: bytes) -> bytes:
    lines = text.split(b"\n")
    for _ in range(rng.randint(1, 3)):
        i, how = rng.randrange(len(lines)), rng.randrange(6)
        if how == 0:
            del lines[i]
        elif how == 1:
            lines.insert(rng.randrange(len(lines)), lines[i])
        elif how == 2:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif how == 3:  # a token replaced by one from nearby: a wrong register, type, label or opcode
            near, own = TOKEN.findall(b"\n".join(lines[max(0, i - 30):i + 30])), TOKEN.findall(lines[i])
            if own:
                lines[i] = lines[i].replace(rng.choice(own), rng.choice(near), 1)
        elif how == 4 and lines[i]:  # any byte, UTF-8 or not
            k = rng.randrange(len(lines[i]))
            lines[i] = lines[i][:k] + bytes([rng.randrange(256)]) + lines[i][k + 1:]
        elif how == 5:
            lines = lines[:i] or [b""]
    return b"\n".join(lines)


def mutate_cubin(rng: random.Random, data: bytes) -> bytes:
    data = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        if not data:
            break
        if rng.random() < 0.8:  # a byte anywhere, or in the ELF header
            data[rng.randrange(min(64, len(data)) if rng.random() < 0.3 else len(data))] = rng.randrange(256)
        else:
            del data[rng.randrange(len(data)):]
    return bytes(data)


def run_mutants(kind: str, chunk: int) -> dict[str, int]:
    """Launch chunk's mutants; the count of each outcome. A Python exception fails with its mutant's story."""
    rng, outcomes = random.Random(f"{kind}-{chunk}"), {}
    for i in range(PER_CHUNK):
        case = rng.choice(CASES)
        text = nv_corpus.ptx(case.file, ARCH, case.options)
        code = mutate_ptx(rng, text) if kind == "ptx" else mutate_cubin(rng, nv_corpus.cubin(case.file, ARCH,
                                                                                           case.options))
        try:
            launch(code, case.kernel, case.grid, case.block, case.args(np.random.default_rng(i)), shared=case.shared,
                   arch=ARCH, budget=BUDGET)
            outcome = "result"
        except Error as e:
            outcome = type(e).__name__
        except Exception as e:  # noqa: BLE001 - what the test is there to catch
            where = traceback.extract_tb(e.__traceback__)[-1]
            pytest.fail(f"{kind} mutant {chunk}.{i} of {case.name}: {type(e).__name__} at {where.filename}:"
                        f"{where.lineno}: {e}")
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    return outcomes


@pytest.mark.parametrize("chunk", range(CHUNKS))
@pytest.mark.parametrize("kind", ["ptx", "cubin"])
def test_a_mutated_program_runs_or_is_refused_with_a_usergpu_error(kind, chunk):
    outcomes = run_mutants(kind, chunk)
    assert outcomes.get("result"), f"no mutant ran to the end, so the chunk tested only the readers: {outcomes}"
