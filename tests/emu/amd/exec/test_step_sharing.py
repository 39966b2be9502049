"""The reference compiles an instruction once for its bytes: the same kernel loaded at another address reuses its
steps, except those that hold their own address (s_getpc, branches, calls), and an unimplemented instruction still
names the pc it sits at."""

from __future__ import annotations

import numpy as np
import pytest

from usergpu.emu.amd.exec import executor
from usergpu.emu.amd.exec.executor import Executor
from usergpu.emu.amd.exec.waves import Waves
from usergpu.emu.memory import Memory
from usergpu.errors import UnsupportedInstruction
from usergpu.isa import amd as isa

PROGRAM = "v_add_nc_u32 v1, v0, v0\ns_getpc_b64 s[2:3]\ns_branch 0\nv_mov_b32 v2, 7\ns_endpgm"


def run(code: bytes, base: int) -> Waves:
    w = Waves(1, 32, 8)
    w.s[126] = w.s[127] = 0xFFFFFFFF
    w.v[0] = np.arange(32)
    w.pc[:] = base
    Executor("gfx1100", code, base, Memory(), w, np.zeros(1, np.int64), 4, 4, "k", 100).run()
    return w


@pytest.fixture
def compiles(monkeypatch):
    monkeypatch.setattr(executor, "_STEPS", {})
    monkeypatch.setattr(executor, "_BY_BYTES", {})
    made = []
    real = Executor._compile
    monkeypatch.setattr(Executor, "_compile", lambda ex, inst: made.append(inst.mnemonic.strip()) or real(ex, inst))
    return made


def test_a_kernel_at_another_address_reuses_all_but_its_address_bound_steps(compiles):
    code = isa.asm(PROGRAM, "gfx1100")
    for base in (0x1000, 0x8000):
        w = run(code, base)
        assert w.v[1, 0, :4].tolist() == [0, 2, 4, 6] and w.v[2, 0, 0] == 7
        assert int(w.s[2, 0]) | int(w.s[3, 0]) << 32 == base + 8  # s_getpc: the next instruction's address
    assert compiles == ["v_add_nc_u32_e32", "s_getpc_b64", "s_branch", "v_mov_b32_e32", "s_endpgm", "s_getpc_b64",
                        "s_branch"]


def test_an_unimplemented_instruction_names_its_own_pc_wherever_it_sits(compiles):
    code = isa.asm("s_nop 0\nv_cubeid_f32 v0, v1, v2, v3\ns_endpgm", "gfx1100")
    for base in (0x1000, 0x8000):
        with pytest.raises(UnsupportedInstruction) as e:
            run(code, base)
        assert e.value.pc == base + 4 and e.value.text.startswith("v_cubeid_f32")
    assert compiles.count("v_cubeid_f32") == 1
