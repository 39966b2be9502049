"""s_load reads its dwords as the hardware does: all of them at once where they lie in one mapping, and each on
its own where they cross into the next, faulting at the first dword that is not mapped."""

from __future__ import annotations

import numpy as np
import pytest

from usergpu.emu.amd.exec.executor import Executor
from usergpu.emu.amd.exec.waves import Waves
from usergpu.emu.memory import Memory
from usergpu.errors import GPUFault
from usergpu.isa import amd as isa

BASE = 0x10_0000


def load(mem: Memory, address: int) -> np.ndarray:
    w = Waves(1, 32, 4)
    w.s[0], w.s[1] = address & 0xFFFFFFFF, address >> 32
    code = isa.asm("s_load_b128 s[4:7], s[0:1], null\ns_waitcnt lgkmcnt(0)\ns_endpgm", "gfx1100")
    Executor("gfx1100", code, 0, mem, w, np.zeros(1, np.int64), 4, 4, "k", 100).run()
    return w.s[4:8, 0]


def test_the_dwords_of_one_mapping_load_together():
    mem = Memory()
    mem.map_at(BASE, np.arange(8, dtype=np.uint32))
    assert load(mem, BASE + 8).tolist() == [2, 3, 4, 5]


def test_dwords_that_cross_into_the_next_mapping_load_from_both():
    mem = Memory()
    mem.map_at(BASE, np.arange(2, dtype=np.uint32))
    mem.map_at(BASE + 8, np.arange(10, 12, dtype=np.uint32))
    assert load(mem, BASE).tolist() == [0, 1, 10, 11]


def test_a_dword_past_the_mapping_faults_at_its_own_address():
    mem = Memory()
    mem.map_at(BASE, np.arange(3, dtype=np.uint32))
    with pytest.raises(GPUFault) as e:
        load(mem, BASE)
    assert e.value.address == BASE + 12 and e.value.access == "read"
