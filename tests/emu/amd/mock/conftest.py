"""Fixtures of the mock GPU tests: a GPU, its interrupts, a compiled kernel."""

from __future__ import annotations

import pytest
from mockrig import VADD

import usergpu
from usergpu.emu.amd.codeobj import parse
from usergpu.emu.amd.mock import GPU


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
