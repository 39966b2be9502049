"""The native backend against the reference, bit for bit: the whole kernel corpus (every output byte) on both, and
random straight-line VALU/SALU programs (hypothesis) through the differential harness. Every test of the executor
harness (test_exec_opcodes.py's edge values of each opcode, test_exec_more_ops.py) is differential already."""

from __future__ import annotations

import re

import corpus
import numpy as np
import pytest
from exec_coverage import implemented
from exec_harness import execute
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lockstep import EDGES

from usergpu.emu.amd import launch
from usergpu.isa import amd as isa
from usergpu.isa.amd.assembler import AsmError

CONFIGS = [(c, arch, wave) for c in corpus.cases.CASES for arch, wave in corpus.cases.runs(c)]
# compare-and-swap loops: how often a wave retries depends on which waves run between its read and its swap (the
# reference runs a batch's waves in lockstep, the native backend one wave at a time), so only the results agree
CONTENDED = {"atomics.cas_fmax", "atomics.add_f32"}


@pytest.mark.parametrize(("case", "arch", "wave"),
                         [pytest.param(c, a, w, id=f"{c.name}-{a}-w{w}") for c, a, w in CONFIGS])
def test_corpus_kernel_is_the_same_on_both_backends(case, arch, wave, monkeypatch):
    co = corpus.code_object(case.file, arch, wave)
    outs = {}
    for backend in ("numpy", "native"):
        monkeypatch.setenv("USERGPU_EMU", backend)
        stats: dict = {}
        arrays = launch(co, case.kernel, case.grid, case.block, case.args(np.random.default_rng(0)), arch=arch,
                        stats=stats)
        outs[backend] = (arrays, stats)
    (ref, ref_stats), (got, got_stats) = outs["numpy"], outs["native"]
    assert case.name in CONTENDED or ref_stats == got_stats  # the same instructions ran
    for i, (a, b) in enumerate(zip(ref, got, strict=True)):
        bad = np.flatnonzero(a.reshape(-1).view(np.uint8) != b.reshape(-1).view(np.uint8))
        assert not len(bad), f"output {i}: byte {bad[0]} differs (element {bad[0] // a.itemsize})"


# straight-line programs: ALU mnemonics of the arch's tables whose operands are registers (VGPRs v0-v15, SGPRs
# s0-s15, inline constants), in any order; the harness runs each on both backends from random registers
ALU_FAMILIES = ("VOP1", "VOP2", "VOP3", "SOP1", "SOP2", "SOPC", "VOPC")
SKIP = re.compile(r"(readlane|writelane|readfirstlane|permlane|movrel|swap|_dpp|sdwa|wmma|swmmac|nop|pipeflush|"
                  r"setpc|getpc|swappc|rfe|call|sendmsg|getreg|setreg|cbranch|branch|barrier|waitcnt|trap|endpgm|"
                  r"sleep|wait|saveexec|wrexec|cvt_.*(fp8|bf8)|ctz_i32_b64|interp|ldexp|frexp)")


def mnemonics(arch: str) -> list[str]:
    from usergpu.isa.amd.decoder import tables

    _, ops, _ = tables(arch)
    return sorted({row[0] for fam in ALU_FAMILIES for row in ops.get(fam, {}).values() if not SKIP.search(row[0])})


def operand(draw, kind: str) -> str:
    if kind == "s":
        return draw(st.sampled_from([f"s{i}" for i in range(16)] + ["-1", "0.5", "64"]))
    return draw(st.sampled_from([f"v{i}" for i in range(16)] + [f"s{i}" for i in range(4)] + ["1.0", "-4", "7"]))


@st.composite
def programs(draw, arch: str):
    names = mnemonics(arch)
    lines = []
    for _ in range(draw(st.integers(1, 8))):
        name = draw(st.sampled_from(names))
        scalar = name.startswith("s_")
        dst = draw(st.sampled_from([f"s{i}" for i in range(16, 24)])) if scalar else f"v{draw(st.integers(0, 15))}"
        for count in (2, 1, 3, 0):  # the first operand count the assembler takes
            srcs = [operand(draw, "s" if scalar else "v") for _ in range(count)]
            for text in (f"{name} {', '.join([dst, *srcs])}", f"{name} {', '.join(srcs)}",
                         f"{name} vcc_lo, {', '.join(srcs)}", f"{name} vcc, {', '.join(srcs)}"):
                try:
                    code = isa.asm(text, arch)
                except AsmError:
                    continue
                if not implemented(arch, isa.decode(code, arch)):  # the reference's own opcodes only
                    continue
                lines.append(text)
                break
            else:
                continue
            break
    return "\n".join(lines)


LANES = {"gfx1100": 32, "gfx1200": 32, "gfx942": 64}  # gfx9: wave64 only


@pytest.mark.parametrize("arch", sorted(LANES))
# derandomized: the same 80 programs every run, so a disagreement is reproducible, never a flake of the draw
@settings(max_examples=80, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])
@given(data=st.data())
def test_random_programs_are_the_same_on_both_backends(arch, data):
    program = data.draw(programs(arch))
    if not program:
        return
    lanes = LANES[arch]
    registers = st.lists(st.sampled_from([int(x) for x in EDGES]), min_size=lanes, max_size=lanes)
    v = {i: data.draw(registers) for i in range(16)}
    s = {i: data.draw(registers)[0] for i in range(16)}
    execute(program, arch, v=v, s=s, scc=data.draw(st.integers(0, 1)), lanes=lanes)


DPP = ["v_mov_b32_dpp v1, v2 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf",
       "v_mov_b32_dpp v1, v2 row_shr:1 row_mask:0xf bank_mask:0xf bound_ctrl:1",
       "v_mov_b32_dpp v1, v2 row_shl:3 row_mask:0x5 bank_mask:0xa",
       "v_add_f32_dpp v1, v2, v3 row_ror:7 row_mask:0xf bank_mask:0xf fi:1",
       "v_add_nc_u32_dpp v2, v2, v3 row_mirror row_mask:0xf bank_mask:0xf",
       "v_mov_b32_dpp v1, v2 row_share:5 row_mask:0xf bank_mask:0xf",
       "v_max_i32_dpp v4, v2, v3 row_xmask:3 row_mask:0xf bank_mask:0xf",
       "v_mov_b32_dpp v1, v2 dpp8:[7,6,5,4,3,2,1,0]"]


# gfx9's: whole-wave shifts and rotates, row broadcasts, bound_ctrl, and SDWA's sub-dword operands
GFX9 = ["v_mov_b32_dpp v1, v2 wave_shl:1 row_mask:0xf bank_mask:0xf",
        "v_mov_b32_dpp v1, v2 wave_shr:1 row_mask:0xf bank_mask:0xf bound_ctrl:1",
        "v_add_f32_dpp v1, v2, v3 wave_rol:1 row_mask:0xf bank_mask:0xf",
        "v_mov_b32_dpp v1, v2 wave_ror:1 row_mask:0x7 bank_mask:0xf",
        "v_add_u32_dpp v1, v2, v3 row_bcast:15 row_mask:0xa bank_mask:0xf",
        "v_max_i32_dpp v4, v2, v3 row_bcast:31 row_mask:0xc bank_mask:0xf",
        "v_or_b32_sdwa v1, v2, v3 dst_sel:BYTE_1 dst_unused:UNUSED_PRESERVE src0_sel:BYTE_2 src1_sel:WORD_0",
        "v_sub_u32_sdwa v1, sext(v2), v3 dst_sel:WORD_1 dst_unused:UNUSED_SEXT src0_sel:BYTE_0 src1_sel:DWORD",
        "v_mul_f16_sdwa v1, -v2, |v3| dst_sel:WORD_0 dst_unused:UNUSED_PAD src0_sel:WORD_1 src1_sel:WORD_0"]


@pytest.mark.parametrize(("arch", "text"), [(a, t) for a in ("gfx1100", "gfx1200") for t in DPP]
                         + [("gfx942", t) for t in GFX9])
@pytest.mark.parametrize("exec_mask", [0xFFFFFFFF, 0x0F0F33F1])
def test_dpp_reads_the_same_lanes_on_both_backends(text, arch, exec_mask):
    lanes = LANES[arch]
    rng = np.random.default_rng(len(text))
    v = {i: rng.integers(0, 1 << 32, lanes, dtype=np.uint64) for i in range(1, 5)}
    execute(text, arch, v=v, s={126: exec_mask, 127: exec_mask}, lanes=lanes)
