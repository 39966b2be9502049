"""The PC samples a launch yields and the PMA stream they are written in: the count per instruction (one sample per
SAMPLE_PERIOD cycles of each SM the launch ran on) and the packets, read back by tinygrad's own reader of the stream
(extra/nv_pma/decode.py, which tinygrad checks against CUPTI's PC sampling on real GPUs)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from usergpu.emu.nv.mock import chips, pc_sampler
from usergpu.tools import tinygrad_ci

PROGRAM = 0x20_0A01_2000


def test_samples_fall_on_instructions_as_their_warps_issued():
    per = pc_sampler.SAMPLE_PERIOD * chips.SCHEDULERS_PER_SM
    assert list(pc_sampler.sample_counts(np.array([2048, 0, 6144]), per)) == [16, 0, 48]
    # 2 samples for 256 warp-instructions: the largest shares first, the earlier instruction on a tie
    assert list(pc_sampler.sample_counts(np.array([100, 100, 56]), per)) == [1, 1, 0]
    assert list(pc_sampler.sample_counts(np.array([100]), per)) == [0]  # under one sample period


def test_one_warp_issues_from_one_scheduler_so_it_is_sampled_four_times_as_often():
    """An SM with one warp resident issues a warp-instruction a cycle at most: SAMPLE_PERIOD of them a sample."""
    chip = chips.CHIPS["sm_89"]
    one = pc_sampler.packets(chip, PROGRAM, np.array([3200]), blocks=1, warps_per_block=1)
    full = pc_sampler.packets(chip, PROGRAM, np.array([3200]), blocks=1, warps_per_block=8)
    record = pc_sampler.AMPERE.size
    assert len(one) == -(-3200 // 32 * record // 28) * 32 and len(full) == -(-3200 // 128 * record // 28) * 32


def _decode(tree, data: bytes, sm_version: int) -> list:
    """tinygrad's reading of a PMA stream: (PC offset, stall reason, warp, active, gpc, tpc, sm) per sample."""
    code = ("import sys, json; from extra.nv_pma.decode import decode, decode_tpc_id\n"
            "data = sys.stdin.buffer.read()\n"
            f"print(json.dumps([(s.pc_offset, s.stall_reason.name, s.wave_id, s.active, *decode_tpc_id(t))"
            f" for s, t in decode(data, {sm_version})]))")
    run = subprocess.run([sys.executable, "-c", code], input=data, capture_output=True, cwd=tree,
                         env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert run.returncode == 0, run.stderr.decode()[-3000:]
    return json.loads(run.stdout)


@pytest.mark.parametrize("arch", ["sm_89", "sm_120"])  # 8-byte records (Ada), 9-byte ones (Blackwell)
def test_tinygrads_reader_finds_each_sample_where_the_warps_issued(arch):
    if not tinygrad_ci.TREE.is_file():
        pytest.skip(f"tinygrad's tree is not at {tinygrad_ci.TREE}")
    chip = chips.CHIPS[arch]
    issued = np.array([640, 0, 12800, 1280, 64000])  # a launch of 20 blocks of 4 warps
    samples = _decode(tinygrad_ci.tree(), pc_sampler.packets(chip, PROGRAM, issued, 20, 4), chip.sm_version)
    per = pc_sampler.SAMPLE_PERIOD * chips.SCHEDULERS_PER_SM
    by_pc = {PROGRAM + 16 * i: int(n) for i, n in enumerate(pc_sampler.sample_counts(issued, per)) if n}
    assert {pc: sum(s[0] == pc for s in samples) for pc in by_pc} == by_pc and len(samples) == sum(by_pc.values())
    assert {(s[1], s[3]) for s in samples} == {("NONE", 1)}  # every sampled warp was issuing
    sms = {tuple(s[4:]) for s in samples}
    assert len(sms) == 20 and all(gpc < chip.gpcs and tpc < chip.tpc_per_gpc and sm < chip.sm_per_tpc
                                  for gpc, tpc, sm in sms)
    assert {s[2] for s in samples} == set(range(4))  # the four warps resident on each SM
