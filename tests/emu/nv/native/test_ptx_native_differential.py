"""The native backend against the reference, bit for bit: the CUDA corpus (every output byte and the
lane-instructions run) and random PTX programs (hypothesis: straight-line, and branchy with guards, forward
branches and bounded loops) on both, through the harness's `both`; lockstep.py names the instruction a broken
emitter breaks. The per-instruction edge tests (tests/emu/nv/test_ptx_opcodes.py) are differential already."""

from __future__ import annotations

import copy
import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import nv_corpus
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ptx_harness import HEADER, both, float_edges, int_edges, native_only

from usergpu.emu.native import build
from usergpu.emu.nv import launch
from usergpu.emu.nv.ptx.launch import compiled, module_of
from usergpu.emu.nv.ptx.native import emit_alu

# lockstep.py, loaded under a name of its own: the AMD backend's tests have a lockstep module too
_SPEC = importlib.util.spec_from_file_location("ptx_lockstep", Path(__file__).with_name("lockstep.py"))
lockstep = sys.modules["ptx_lockstep"] = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(lockstep)
parting = lockstep.parting

needs_toolchain = pytest.mark.skipif(not nv_corpus.has_toolchain(), reason=nv_corpus.TOOLCHAIN)


# compare-and-swap loops under contention (`both`): each backend's results are checked against the case's reference
CONTENDED = {"atomics.cas_loops", "atomics.shared_ops"}


@needs_toolchain
@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in nv_corpus.cases.CASES])
def test_corpus_kernel_is_the_same_on_both_backends(case):
    # sm_90's PTX: the other archs' differ only in a few instructions their own corpus tests (test_nv_corpus) run
    arch = "sm_90" if "sm_90" in case.archs else case.archs[-1]
    code = nv_corpus.ptx(case.file, arch, case.options)
    args = case.args(np.random.default_rng(0))
    runs = both(case.name, lambda stats: launch(code, case.kernel, case.grid, case.block, copy.deepcopy(args),
                                                shared=case.shared, stats=stats), case.name not in CONTENDED)
    for got in runs:
        nv_corpus.check(got, case.reference(copy.deepcopy(args)), case)


# ---- random programs ---------------------------------------------------------------------------------------------
# registers: %r0-%r7 (.b32), %f0-%f3 (.f32), %rd0-%rd1 (.b64) from each lane's 16 input words; %p0-%p2 from compares
# of them; every one stored after the program. %c and %q are a loop's counter and condition, which no drawn
# instruction touches.
R, F, RD, P = ([f"%{k}{i}" for i in range(n)] for k, n in (("r", 8), ("f", 4), ("rd", 2), ("p", 3)))
CMP = ("eq", "ne", "lt", "le", "gt", "ge")
FCMP = (*CMP, "equ", "neu", "ltu", "leu", "gtu", "geu", "nan", "num")
# (opcode, destination registers, the registers or immediates of each source operand): the forms the emulator's
# tables cover, some with modifiers whose C the native backend may not have (those run on the reference for the
# warp: the fallback).
FORMS = [
    *((op, R, (R, R)) for op in ("add.u32", "sub.s32", "mul.lo.u32", "mul.hi.u32", "mul.hi.s32", "min.s32",
                                 "max.u32", "and.b32", "or.b32", "xor.b32", "shl.b32", "shr.u32", "shr.s32",
                                 "div.u32", "div.s32", "rem.u32", "rem.s32", "add.sat.s32", "min.u32",
                                 "mul24.lo.s32")),
    *((op, R, (R,)) for op in ("not.b32", "popc.b32", "clz.b32", "brev.b32", "abs.s32", "neg.s32", "cnot.b32",
                               "mov.b32")),
    *((op, R, (R, R, R)) for op in ("mad.lo.u32", "mad.hi.s32", "bfe.u32", "bfe.s32", "prmt.b32",
                                    "shf.l.wrap.b32", "shf.r.clamp.b32", "sad.u32")),
    ("bfi.b32", R, (R, R, R, R)), ("lop3.b32", R, (R, R, R, ("0x96", "0xe8", "0x1f", "0x80", "0xfe"))),
    *((op, F, (F, F)) for op in ("add.rn.f32", "sub.f32", "mul.rz.f32", "div.rn.f32",
                                 "copysign.f32", "div.approx.f32", "add.ftz.f32", "mul.sat.f32", "div.full.f32",
                                 "min.NaN.f32", "sub.rm.f32", "min.f32", "max.ftz.f32")),
    *((op, F, (F,)) for op in ("abs.f32", "neg.f32", "sqrt.rn.f32", "rcp.rn.f32", "cvt.rni.f32.f32",
                               "cvt.rzi.ftz.f32.f32", "mov.f32", "sqrt.approx.f32", "ex2.approx.f32")),
    *((op, F, (F, F, F)) for op in ("fma.rn.f32", "fma.rz.ftz.f32", "mad.rn.f32")),
    *((op, R, (F,)) for op in ("cvt.rzi.s32.f32", "cvt.rni.u32.f32", "cvt.rmi.s32.f32", "mov.b32")),
    *((op, F, (R,)) for op in ("cvt.rn.f32.s32", "cvt.rn.f32.u32", "cvt.rz.f32.s32", "mov.b32")),
    *((op, RD, (R, R)) for op in ("mul.wide.u32", "mul.wide.s32")),
    *((op, RD, (RD, RD)) for op in ("add.u64", "sub.s64", "mul.lo.u64", "xor.b64", "min.s64", "mul.hi.u64",
                                    "div.s64", "rem.u64")),
    *((op, RD, (RD, R)) for op in ("shl.b64", "shr.s64", "shr.u64")),
    ("cvt.u64.u32", RD, (R,)), ("cvt.s64.s32", RD, (R,)), ("cvt.u32.u64", R, (RD,)), ("popc.b64", R, (RD,)),
    ("cvt.rn.f32.s64", F, (RD,)), ("cvt.rzi.u64.f32", RD, (F,)),
    *((f"setp.{c}.{t}", P, (R, R)) for c in CMP for t in ("u32", "s32")),
    *((f"setp.{c}.f32", P, (F, F)) for c in FCMP),
    *((f"setp.{c}.s64", P, (RD, RD)) for c in ("lt", "ge")),
    ("selp.b32", R, (R, R, P)), ("selp.f32", F, (F, F, P)), ("selp.b64", RD, (RD, RD, P)),
    *((op, P, (P, P)) for op in ("and.pred", "or.pred", "xor.pred")), ("not.pred", P, (P,)),
]
IMMEDIATE = {"shl.b32": (0, 1, 5, 31, 32, 40), "shr.u32": (1, 31, 33), "shr.s32": (3, 31, 255), "and.b32": (0xFF,),
             "add.u32": (1, 0xFFFFFFFF), "mul.lo.u32": (3, 0x10001), "div.s32": (-1, 0, 7), "rem.u32": (0, 10),
             "shr.u64": (0, 63, 64), "prmt.b32": (0x3210, 0x8880, 0x7654)}


@st.composite
def instruction(draw) -> str:
    op, dsts, srcs = draw(st.sampled_from(FORMS))
    operands = [draw(st.sampled_from(dsts))] + [draw(st.sampled_from(regs)) for regs in srcs]
    if op in IMMEDIATE and draw(st.booleans()):
        operands[-1] = str(draw(st.sampled_from(IMMEDIATE[op])))
    guard = draw(st.sampled_from(["", "", "", *(f"@{n}{p} " for p in P for n in ("", "!"))]))
    return f"{guard}{op} {', '.join(operands)};"


_labels = iter(range(1 << 30))


@st.composite
def segment(draw, branchy: bool) -> list[str]:
    """Straight-line instructions; branchy: forward branches (guarded, or not) among them, and the whole maybe a
    loop of 1 to 4 trips counted down from a register's low bits (so lanes of a warp loop different times)."""
    lines = draw(st.lists(instruction(), min_size=1, max_size=8))
    if not branchy:
        return lines
    for _ in range(draw(st.integers(0, 2))):
        at, to = sorted(draw(st.lists(st.integers(0, len(lines)), min_size=2, max_size=2)))
        label = f"L{next(_labels)}"
        guard = draw(st.sampled_from(["", *(f"@{n}{p} " for p in P for n in ("", "!"))]))
        lines[to:to] = [f"{label}:"]
        lines[at:at] = [f"{guard}bra {label};"]
    if draw(st.booleans()):
        label = f"L{next(_labels)}"
        lines = [f"and.b32 %c, {draw(st.sampled_from(R))}, 3;", "add.u32 %c, %c, 1;", f"{label}:", *lines,
                 "sub.u32 %c, %c, 1;", "setp.ne.u32 %q, %c, 0;", f"@%q bra {label};"]
    return lines


def program(body: list[str]) -> str:
    """The kernel around body: each lane's 16 words in (8 b32, 4 f32, 2 b64), its 32 words out."""
    lines = [".visible .entry k(.param .u64 gin, .param .u64 gout)", "{", ".reg .b32 %r<8>, %t, %c;",
             ".reg .f32 %f<4>;", ".reg .b64 %rd<2>, %a<4>;", ".reg .pred %p<3>, %q;",
             "mov.u32 %t, %ctaid.x;", "mov.u32 %c, %ntid.x;", "mov.u32 %r0, %tid.x;", "mad.lo.u32 %t, %t, %c, %r0;",
             "ld.param.u64 %a0, [gin];", "cvta.to.global.u64 %a0, %a0;", "mad.wide.u32 %a0, %t, 64, %a0;",
             "ld.param.u64 %a1, [gout];", "cvta.to.global.u64 %a1, %a1;", "mad.wide.u32 %a1, %t, 128, %a1;"]
    lines += [f"ld.global.b32 {r}, [%a0+{4 * i}];" for i, r in enumerate(R + F)]
    lines += [f"ld.global.b64 {r}, [%a0+{48 + 8 * i}];" for i, r in enumerate(RD)]
    lines += ["setp.lt.s32 %p0, %r0, %r1;", "setp.ne.u32 %p1, %r2, 0;", "setp.gtu.f32 %p2, %f0, %f1;", *body]
    lines += [f"st.global.b32 [%a1+{4 * i}], {r};" for i, r in enumerate(R + F)]
    lines += [f"st.global.b64 [%a1+{48 + 8 * i}], {r};" for i, r in enumerate(RD)]
    for i, p in enumerate(P):
        lines += [f"selp.u32 %t, 1, 0, {p};", f"st.global.b32 [%a1+{64 + 4 * i}], %t;"]
    return HEADER.format(arch="sm_90") + "\n".join([*lines, "ret;", "}"]) + "\n"


# each lane's input words: integer and f32 edges (zeros, extremes, NaNs, infinities, subnormals) and random bits
POOL = np.asarray(int_edges(32) + float_edges("f32"), np.uint32)
GRID, BLOCK = (2, 1, 1), (48, 1, 1)  # a whole warp and a part of one per block


def inputs(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    lanes = GRID[0] * BLOCK[0]
    words = rng.choice(POOL, (lanes, 16))
    fresh = rng.random((lanes, 16)) < 0.25
    words[fresh] = rng.integers(0, 1 << 32, int(fresh.sum()), dtype=np.uint64).astype(np.uint32)
    return words.reshape(-1)


RANDOM = settings(max_examples=20, deadline=None, derandomize=True,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _same(body: list[str], seed: int) -> None:
    text = program(body)
    words = inputs(seed)
    both(text, lambda stats: launch(text, "k", GRID, BLOCK, [words, np.zeros(GRID[0] * BLOCK[0] * 32, np.uint32)],
                                    stats=stats))


# derandomized: the same programs every run, so a disagreement is reproducible, never a flake of the draw
@native_only  # without clang-22 both runs are the reference's
@RANDOM
@given(body=st.lists(instruction(), min_size=1, max_size=24), seed=st.integers(0, 1 << 16))
def test_random_straight_line_programs_are_the_same_on_both_backends(body, seed):
    _same(body, seed)


@native_only  # without clang-22 both runs are the reference's
@RANDOM
@given(body=st.lists(segment(branchy=True), min_size=1, max_size=4), seed=st.integers(0, 1 << 16))
def test_random_branchy_programs_are_the_same_on_both_backends(body, seed):
    _same([line for part in body for line in part], seed)


def per_thread(decls: str, body: str, t: str, value: str, tid: str) -> str:
    """A kernel of one .u64 parameter that runs body (after decls) and stores value (.t) to out[tid]."""
    return HEADER.format(arch="sm_90") + f""".visible .entry k(.param .u64 out)
{{
{decls}
.reg .b64 %a<2>;
{body}
ld.param.u64 %a0, [out];
cvta.to.global.u64 %a0, %a0;
mul.wide.u32 %a1, {tid}, 4;
add.s64 %a0, %a0, %a1;
st.global.{t} [%a0], {value};
ret;
}}
"""


SNAN_MIN = per_thread(".reg .b32 %r1;\n.reg .f32 %f<2>;", "mov.b32 %f0, 0xFAB6A788;\nmov.b32 %f1, 0x7F800001;\n"
                      "mov.u32 %r1, %tid.x;\nmin.f32 %f0, %f0, %f1;", "f32", "%f0", "%r1")


def test_min_of_a_signalling_nan_is_the_other_operand_on_both_backends():
    out, _ = both("min.f32 of an sNaN", lambda stats: launch(SNAN_MIN, "k", (1, 1, 1), (8, 1, 1),
                                                             [np.zeros(8, np.float32)], stats=stats))
    assert (out[0].view(np.uint32) == 0xFAB6A788).all()


TWO_BUFFERS = HEADER.format(arch="sm_90") + """.visible .entry k(.param .u64 a, .param .u64 b)
{
.reg .b32 %r<2>;
.reg .b64 %d<4>;
.reg .pred %p;
ld.param.u64 %d0, [a];
ld.param.u64 %d1, [b];
mov.u32 %r0, %tid.x;
and.b32 %r1, %r0, 1;
setp.ne.u32 %p, %r1, 0;
selp.b64 %d2, %d1, %d0, %p;
mul.wide.u32 %d3, %r0, 4;
add.s64 %d2, %d2, %d3;
st.global.u32 [%d2], %r0;
ret;
}
"""


@native_only
def test_a_warp_storing_to_two_buffers_is_the_same_on_both_backends():
    a, b = both("even lanes to a, odd lanes to b", lambda stats: launch(
        TWO_BUFFERS, "k", (1, 1, 1), (32, 1, 1), [np.zeros(32, np.uint32), np.zeros(32, np.uint32)], stats=stats))[0]
    lanes = np.arange(32, dtype=np.uint32)
    assert (a == np.where(lanes % 2 == 0, lanes, 0)).all() and (b == np.where(lanes % 2 == 1, lanes, 0)).all()


# ---- lockstep.py -----------------------------------------------------------------------------------------------------
MUL_ADD = per_thread(".reg .b32 %r<4>;", "mov.u32 %r0, %tid.x;\nmul.lo.u32 %r1, %r0, 3;\nadd.u32 %r2, %r1, 7;\n"
                     "xor.b32 %r3, %r2, %r0;", "b32", "%r3", "%r0")


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """Kernels built anew into an empty cache: a patched emitter's C is not the one its sources name."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(build, "_LOADED", {})


@pytest.fixture
def broken_add(fresh_cache, monkeypatch):
    """The native backend's add.u32 adds one more."""
    right = emit_alu.TABLE["add"]

    def wrong(ins, o):
        code = right(ins, o)
        return code.replace(" + ", " + 1 + ", 1) if ins.t == "u32" else code

    monkeypatch.setitem(emit_alu.TABLE, "add", wrong)
    monkeypatch.setattr(compiled(module_of(MUL_ADD), "k"), "native", None, raising=False)  # none built before


@native_only
def test_both_fails_where_the_backends_part(broken_add):
    with pytest.raises(AssertionError, match="element 0: reference 07000000 native 08000000"):
        both("a broken add", lambda stats: launch(MUL_ADD, "k", (1, 1, 1), (64, 1, 1), [np.zeros(64, np.uint32)],
                                                  stats=stats))


@native_only
def test_lockstep_finds_no_parting_in_a_kernel_the_backends_agree_on(fresh_cache):
    assert parting(MUL_ADD, "k", (1, 1, 1), (64, 1, 1), [np.zeros(64, np.uint32)]) is None


@native_only
def test_lockstep_names_the_instruction_of_a_broken_emitter(broken_add):
    found = parting(MUL_ADD, "k", (1, 1, 1), (64, 1, 1), [np.zeros(64, np.uint32)])
    assert found is not None and found.index == 2 and found.text.replace(" ,", ",") == "add.u32 %r2, %r1, 7"
    assert found.line == MUL_ADD.splitlines().index("add.u32 %r2, %r1, 7;") + 1
    assert found.difference.startswith("buffer 0 (uint32) element 0: reference 07000000 native 08000000"), found
    assert "add.u32" in str(found)


@native_only
@needs_toolchain
def test_lockstep_tool_runs_a_corpus_kernel():
    tool = Path(__file__).with_name("lockstep.py")
    done = subprocess.run([sys.executable, str(tool), str(nv_corpus.NV / "bits.cu"), "intrinsics"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "intrinsics: the backends agree" in done.stdout, done.stdout + done.stderr
