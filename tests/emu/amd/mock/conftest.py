"""Fixtures of the mock GPU tests: a GPU, its interrupts, a compiled kernel, a mock KFD machine of two GPUs."""

from __future__ import annotations

import pytest
from mockrig import VADD

import usergpu
from usergpu.drivers.hal import MockHAL
from usergpu.emu.amd.codeobj import parse
from usergpu.emu.amd.mock import GPU
from usergpu.emu.amd.mock.kfd.kfd import MockKFD


@pytest.fixture
def gpu() -> GPU:
    return GPU("gfx1100")


@pytest.fixture
def interrupts(gpu) -> list:
    seen: list = []
    gpu.interrupt_handlers.append(lambda source, ctx: seen.append((source, ctx)))
    return seen


@pytest.fixture(scope="session")
def vadd_co():
    return parse(usergpu.compile_opencl(VADD, "gfx1100"))


@pytest.fixture
def hal(tmp_path) -> MockHAL:
    """A MockHAL whose /dev/kfd is a mock amdkfd of two gfx1100 GPUs."""
    h = MockHAL(tmp_path)
    h.kfd = MockKFD(h, "gfx1100", 2)
    return h
