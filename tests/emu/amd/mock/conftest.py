"""Fixtures of the mock GPU tests: a GPU of each family the engines model (RDNA3's gfx1100; CDNA3's gfx942 and
CDNA4's gfx950 as one XCC, what a CPX partition is), its interrupts, a kernel compiled for it, a mock KFD machine of
two GPUs."""

from __future__ import annotations

import pytest
from mockrig import VADD, compiled

from usergpu.emu.amd.mock import GPU
from usergpu.emu.amd.mock.kfd.kfd import MockKFD
from usergpu.emu.mock.hal import MockHAL

ARCHS = ("gfx1100", "gfx942", "gfx950")


@pytest.fixture(params=ARCHS)
def gpu(request) -> GPU:
    return GPU(request.param)


@pytest.fixture
def interrupts(gpu) -> list:
    seen: list = []
    gpu.interrupt_handlers.append(lambda source, ctx: seen.append((source, ctx)))
    return seen


@pytest.fixture
def vadd_co(gpu):
    return compiled(VADD, gpu.arch)


@pytest.fixture
def hal(tmp_path) -> MockHAL:
    """A MockHAL whose /dev/kfd is a mock amdkfd of two gfx1100 GPUs."""
    h = MockHAL(tmp_path)
    h.kfd = MockKFD(h, "gfx1100", 2)
    return h
