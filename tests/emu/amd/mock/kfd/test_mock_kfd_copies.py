"""SDMA copies on the mock KFD machine: the bytes (between memory objects the kernel copies file to file; within one
object, overlapping, through the views) and the time the clock says they took (VRAM to VRAM at the board's copy rate,
to system memory at its bus's)."""

from __future__ import annotations

import numpy as np
import pytest
from kfdrig import Ring

from usergpu.drivers.amd.kfd import KFD
from usergpu.emu.amd.mock.gpu import BUS_RATE, COPY_RATE
from usergpu.isa.amd.hw.soc import TIMESTAMP_HZ
from usergpu.runtime.amd.sdma import SDMAPackets

SIZE = 8 << 20


@pytest.fixture
def dev(hal):
    return KFD(hal)


def copied(dev: KFD, dst: int, src: int, n: int) -> float:
    """Seconds the GPU clock says an SDMA copy of n bytes took (timestamps before and after it)."""
    stamps = dev.alloc(4096, "gtt")
    sdma = Ring(dev, "sdma")
    sdma.submit(SDMAPackets().timestamp(stamps.va).copy(dst, src, n).timestamp(stamps.va + 8))
    assert sdma.done
    before, after = np.frombuffer(stamps.view(), np.uint64)[:2]
    return int(after - before) / TIMESTAMP_HZ


@pytest.mark.parametrize("kind", ["vram", "gtt"])
def test_a_copy_between_objects_moves_the_bytes_in_the_time_the_board_takes(dev, kind):
    src, dst = dev.alloc(SIZE, "vram"), dev.alloc(SIZE, kind)
    data = np.random.default_rng(7).integers(0, 256, SIZE - 4096, dtype=np.uint8)
    np.frombuffer(src.view(), np.uint8)[4096:] = data
    n = SIZE - 4096 - 100
    seconds = copied(dev, dst.va + 100, src.va + 4096, n)
    assert np.array_equal(np.frombuffer(dst.view(), np.uint8)[100:100 + n], data[:n])
    rate = (COPY_RATE if kind == "vram" else BUS_RATE)[dev.arch]
    assert n / rate <= seconds <= n / rate + 1e-6


def test_an_overlapping_copy_within_an_object_is_a_memmove(dev):
    buf = dev.alloc(SIZE, "vram")
    view = np.frombuffer(buf.view(), np.uint8)
    view[:] = np.arange(SIZE, dtype=np.uint64).astype(np.uint8)
    want = view.copy()
    want[1000:1000 + SIZE // 2] = view[:SIZE // 2]
    copied(dev, buf.va + 1000, buf.va, SIZE // 2)
    assert np.array_equal(view, want)
