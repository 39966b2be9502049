"""The PTX executor run in slices (a step quota or a deadline, resumed exactly), the bare launch's time bound, and
the PC checked against the program: a path that runs off a function's end is an error naming its line."""

from __future__ import annotations

import time

import numpy as np
import pytest

from usergpu.emu.memory import Memory
from usergpu.emu.nv import launch
from usergpu.emu.nv.ptx.executor import execute
from usergpu.emu.nv.ptx.launch import compiled, map_globals, module_of, pack_params, slices
from usergpu.emu.nv.ptx.state import State
from usergpu.errors import CodeObjectError, GPUHang

HEAD = ".version 8.7\n.target sm_90\n.address_size 64\n"
# each thread sums 0..tid*7 in a loop whose trip count differs per lane (the lanes diverge and reconverge), then a
# barrier, then writes its sum and its neighbour's (read through shared memory)
DIVERGE = HEAD + """
.visible .entry k(.param .u64 out)
{
  .reg .pred %p<3>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<6>;
  .shared .align 4 .b32 sh[64];
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mul.lo.u32 %r2, %r1, 7;
  mov.u32 %r3, 0;
  mov.u32 %r4, 0;
L:
  setp.gt.u32 %p1, %r4, %r2;
  @%p1 bra D;
  add.u32 %r3, %r3, %r4;
  add.u32 %r4, %r4, 1;
  bra L;
D:
  mov.u32 %r5, sh;
  shl.b32 %r6, %r1, 2;
  add.u32 %r7, %r5, %r6;
  st.shared.u32 [%r7], %r3;
  bar.sync 0;
  add.u32 %r8, %r1, 1;
  and.b32 %r8, %r8, 63;
  shl.b32 %r9, %r8, 2;
  add.u32 %r9, %r5, %r9;
  ld.shared.u32 %r10, [%r9];
  mul.wide.u32 %rd2, %r1, 8;
  add.u64 %rd3, %rd1, %rd2;
  st.global.v2.u32 [%rd3], {%r3, %r10};
  ret;
}
"""
SPIN = HEAD + """
.visible .entry spin(.param .u64 x)
{
  .reg .pred %p<2>;
  .reg .b32 %r<3>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [x];
L:
  ld.volatile.global.u32 %r1, [%rd1];
  setp.eq.u32 %p1, %r1, 0;
  @%p1 bra L;
  ret;
}
"""
EXPECT = np.array([[t * 7 * (t * 7 + 1) // 2, (t + 1) % 64 * 7 * ((t + 1) % 64 * 7 + 1) // 2] for t in range(64)],
                  np.uint32)


def _state(text: str, name: str, block: tuple, buffer: np.ndarray) -> tuple:
    c = compiled(module_of(text), name)
    mem = Memory()
    params = pack_params(c.prog, [buffer], mem.map)
    st = State(c.prog, mem, 0, 1, block, (1, 1, 1), params, 0, 132)
    st.globals = map_globals(c.prog, mem)
    return c, st


def test_a_run_stopped_after_every_step_ends_as_a_whole_run_does():
    out = np.zeros((64, 2), np.uint32)
    c, st = _state(DIVERGE, "k", (64, 1, 1), out)
    stops = 0
    while not execute(c, st, quota=st.steps + 1):
        stops += 1
    whole = launch(DIVERGE, "k", (1, 1, 1), (64, 1, 1), [np.zeros((64, 2), np.uint32)])[0]
    assert np.array_equal(whole, EXPECT)
    assert np.array_equal(out, EXPECT)
    assert stops == st.steps - 1  # one stop before each step but the first


def test_a_deadline_stops_a_never_ending_kernel_and_it_goes_on_from_there():
    x = np.zeros(4, np.uint32)
    c, st = _state(SPIN, "spin", (32, 1, 1), x)
    start = time.monotonic()
    assert not execute(c, st, deadline=start + 0.05)
    assert time.monotonic() - start < 1
    ran = st.steps
    x[0] = 1  # the host releases it: the resumed run reads the flag and ends
    assert execute(c, st, deadline=time.monotonic() + 5)
    assert st.steps > ran


def test_slices_yield_the_running_state_until_the_kernel_ends():
    x = np.zeros(4, np.uint32)
    c = compiled(module_of(SPIN), "spin")
    mem = Memory()
    params = pack_params(c.prog, [x], mem.map)
    seen = 0
    for st in slices(c, mem, (2, 1, 1), (32, 1, 1), params, slice_s=0.01):
        assert isinstance(st, State) and c.prog.code[st.p].line > 0
        seen += 1
        if seen == 3:
            x[0] = 1
    assert seen >= 3


def test_the_bare_launch_ends_a_runaway_kernel_at_its_timeout_and_says_how_to_raise_it():
    start = time.monotonic()
    with pytest.raises(GPUHang) as e:
        launch(SPIN, "spin", (1, 1, 1), (32, 1, 1), [np.zeros(4, np.uint32)], timeout=0.2)
    assert 0.2 <= time.monotonic() - start < 2
    assert e.value.kernel == "spin" and "ran 0.2 s without ending" in str(e.value)
    assert "timeout= of usergpu.emu.nv.launch" in str(e.value)


def test_the_step_budget_still_bounds_a_batch():
    with pytest.raises(GPUHang, match="ran 1000 instruction steps"):
        launch(SPIN, "spin", (1, 1, 1), (32, 1, 1), [np.zeros(4, np.uint32)], budget=1000)


FALLS = HEAD + """
.visible .entry k(.param .u64 x)
{
  .reg .b32 %r<3>;
  mov.u32 %r1, 1;
  add.u32 %r2, %r1, 1;
}
"""
HALF = HEAD + """
.visible .entry k(.param .u64 x)
{
  .reg .pred %p<2>;
  .reg .b32 %r<3>;
  mov.u32 %r1, %tid.x;
  setp.lt.u32 %p1, %r1, 16;
  @%p1 bra OUT;
  add.u32 %r2, %r1, 1;
OUT:
  @%p1 ret;
}
"""
DEVICE = HEAD + """
.func f(.param .b32 a)
{
  .reg .b32 %q<2>;
  ld.param.b32 %q1, [a];
}
.visible .entry k(.param .u64 x)
{
  .reg .b32 %r<2>;
  mov.u32 %r1, 3;
  { .param .b32 p0;
    st.param.b32 [p0], %r1;
    call f, (p0);
  }
  ret;
}
"""
EMPTY = HEAD + """
.visible .entry k(.param .u64 x)
{
}
"""


@pytest.mark.parametrize("text, lanes, says", [
    (FALLS, 1, "function k after line 9: add.u32"),
    (HALF, 32, "thread (16, 0, 0) runs off the end of function k after line 14: @ %p1 ret"),
    (DEVICE, 1, "function f after line 8: ld.param.b32"),
    (EMPTY, 1, "function k after line 5: its body has no instructions"),
])
def test_a_path_without_ret_is_an_error_naming_the_line(text, lanes, says):
    with pytest.raises(CodeObjectError, match="ends in ret or exit") as e:
        launch(text, "k", (1, 1, 1), (lanes, 1, 1), [np.zeros(4, np.uint32)])
    assert says in str(e.value)
