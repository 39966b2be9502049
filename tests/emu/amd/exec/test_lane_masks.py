"""Lane masks and SGPR pairs of a batch of waves: EXEC's bits as lanes and back, for wave32 and wave64."""

import copy

import numpy as np
import pytest

from usergpu.emu.amd.exec.operands import Operand
from usergpu.emu.amd.exec.waves import EXEC, VCC, Waves

BITS = {32: [0x0, 0xFFFFFFFF, 0x80000001, 0x12345678], 64: [0x0, 0xFFFFFFFFFFFFFFFF, 0x8000000000000001,
                                                             0x0123456789ABCDEF]}


def _waves(lanes: int) -> Waves:
    w = Waves(len(BITS[lanes]), lanes, vgprs=4)
    for i, bits in enumerate(BITS[lanes]):
        w.s[EXEC, i], w.s[EXEC + 1, i] = bits & 0xFFFFFFFF, bits >> 32
    return w


@pytest.mark.parametrize("lanes", [32, 64])
def test_exec_reads_as_each_lanes_bit(lanes):
    w = _waves(lanes)
    want = np.array([[bits >> lane & 1 for lane in range(lanes)] for bits in BITS[lanes]], bool)
    assert np.array_equal(w.exec_mask(slice(None)), want)
    assert np.array_equal(w.exec_mask(np.array([3, 1])), want[[3, 1]])
    assert w.exec_bits(slice(None)).tolist() == BITS[lanes]
    assert w.pack(want).tolist() == BITS[lanes]


@pytest.mark.parametrize("lanes", [32, 64])
def test_a_lane_mask_written_to_vcc_reads_back(lanes):
    w = _waves(lanes)
    lanes_in = w.exec_mask(slice(None))[::-1].copy()
    w.set_lanes(VCC, slice(None), lanes_in)
    assert np.array_equal(w.lanes_of(VCC, slice(None)), lanes_in)
    assert w.sget(VCC, lanes // 32, slice(None)).tolist() == BITS[lanes][::-1]


def test_exec_read_is_a_value_not_a_view_of_the_registers():
    w = _waves(64)
    before = w.exec_bits(slice(None))
    pair = w.sget(EXEC, 2, slice(None))
    w.sset(EXEC, 2, slice(None), np.zeros(w.n, np.uint64))
    assert before.tolist() == pair.tolist() == BITS[64]
    assert w.exec_bits(slice(None)).tolist() == [0] * w.n


def test_a_vgpr_written_under_a_mask_keeps_the_other_lanes():
    w = _waves(64)
    w.v[2] = 7
    dst = Operand("v", 2, 1)
    for g in (slice(None), np.array([1, 3])):
        w.write(dst, "u32", g, np.full((1, 1), 9, np.uint32), w.exec_mask(g))
    want = np.where(w.exec_mask(slice(None)), 9, 7)
    assert np.array_equal(w.v[2], want)


def test_a_copy_reads_its_own_exec():
    w = _waves(64)
    twin = copy.deepcopy(w)
    twin.sset(EXEC, 2, slice(None), np.full(w.n, 0xFF, np.uint64))
    assert twin.exec_bits(slice(None)).tolist() == [0xFF] * w.n
    assert w.exec_bits(slice(None)).tolist() == BITS[64]
