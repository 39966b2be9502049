"""The CUDA kernel corpus (tests/kernels/nv): every case's kernel compiles with clang-22 for sm_80, sm_89 and sm_90,
the PTX assembles with ptxas for sm_80 and sm_90 (proof that it is valid PTX), the PTX holds the instructions the
corpus is there to exercise, and every case matches its numpy reference on the PTX emulator."""

from __future__ import annotations

import copy
import re

import numpy as np
import nv_corpus  # tests/kernels, on the path by tests/conftest.py
import pytest

cases = nv_corpus.cases


# ptxas, and libdevice for math.cu, come from PyPI's nvidia-cuda-nvcc
pytestmark = pytest.mark.skipif(not (nv_corpus.has_toolchain() and nv_corpus.tool("nvvm/libdevice/libdevice.10.bc")),
                                reason="needs clang-22 (Debian), ptxas and libdevice (PyPI nvidia-cuda-nvcc)")

RUNS = [pytest.param(c, a, id=f"{c.name}-{a}") for c in cases.CASES for a in c.archs]


@pytest.mark.parametrize(("case", "arch"), RUNS)
def test_corpus_kernel_compiles_to_ptx(case, arch):
    text = nv_corpus.ptx(case.file, arch, case.options).decode()
    assert re.search(rf"^\.target {arch}$", text, re.M)
    assert re.search(rf"^\.visible \.entry {case.kernel}\(", text, re.M)


@pytest.mark.parametrize(("file", "options", "arch"),
                         [pytest.param(f, o, a, id="-".join((f, *o, a))) for f, o in nv_corpus.builds()
                          for a in cases.PTXAS_ARCHS])
def test_corpus_ptx_assembles_with_ptxas(file, options, arch):
    kernels = re.findall(r"^\.visible \.entry (\w+)\(", nv_corpus.ptx(file, arch, options).decode(), re.M)
    elf = nv_corpus.cubin(file, arch, options)
    assert elf[:4] == b"\x7fELF" and kernels
    for kernel in kernels:
        assert f".text.{kernel}\0".encode() in elf


def test_every_kernel_of_the_corpus_has_a_case_and_names_are_unique():
    entries = set()
    for file, options in nv_corpus.builds():
        entries |= {(file, k) for k in re.findall(r"^\.visible \.entry (\w+)\(",
                                                   nv_corpus.ptx(file, "sm_90", options).decode(), re.M)}
    assert entries == {(c.file, c.kernel) for c in cases.CASES}
    assert len({c.name for c in cases.CASES}) == len(cases.CASES)


# what issue 19 asks the corpus to cover, as the PTX clang-22 makes of it (every arch)
EXERCISED = [
    r"ld\.global\.b8", r"st\.global\.b16", r"mul\.lo\.s16", r"div\.s64", r"div\.u32", r"rem\.u64", r"mul\.hi\.u64",
    r"popc\.b64", r"clz\.b32", r"brev\.b64", r"bfe\.[us]32", r"bfi\.b32", r"prmt\.b32", r"shf\.[lr]\.wrap\.b32",
    r"fma\.rn\.f16", r"fma\.rn\.f64", r"div\.rn\.f32", r"sqrt\.rn\.f64", r"min\.f32", r"copysign\.f32",
    r"cvt\.rzi\.s32\.f32", r"cvt\.rni\.s32\.f32", r"cvt\.rzi\.u64\.f64", r"cvt\.rn\.f32\.u64", r"cvt\.rn\.f16\.f64",
    r"cvt\.rn\.bf16\.f32", r"cvt\.f32\.bf16", r"cvt\.rzi\.s32\.f16", r"setp\.nan\.f32", r"bar\.sync",
    r"ld\.shared\.b64", r"atom\.shared\.add\.f32", r"atom\.shared\.add\.u64", r"atom\.global\.add\.f64",
    r"atom\.global\.(inc|dec)\.u32", r"atom\.global\.exch\.b32", r"atom\.global\.min\.s32", r"atom\.global\.max\.u64",
    r"atom\.global\.xor\.b64", r"atom(\.\w+)*\.global\.cas\.b32", r"atom(\.\w+)*\.shared\.cas\.b64",
    r"shfl\.sync\.(idx|up|down|bfly)\.b32", r"vote\.sync\.ballot\.b32", r"vote\.sync\.(any|all|uni)\.pred",
    r"activemask\.b32", r"match\.any\.sync\.b(32|64)", r"brx\.idx", r"call\.uni", r"ld\.local\.b32", r"st\.local\.b64",
    r"cvta\.local\.u64", r"ld\.param\.s8", r"ld\.param\.b16", r"ex2\.approx(\.ftz)?\.f32", r"sin\.approx\.f32",
    r"lg2\.approx\.f32", r"div\.approx\.f32", r"sqrt\.approx\.f32", r"ld\.global\.nc\.\w+",
]


@pytest.mark.parametrize("arch", cases.ARCHS)
def test_the_corpus_exercises_what_issue_19_lists(arch):
    ops = nv_corpus.corpus_instructions()[arch]
    missing = [p for p in EXERCISED if not any(re.fullmatch(p, op) for op in ops)]
    assert not missing, missing


def test_ptx_opcodes_skip_directives_labels_braces_comments_and_guards():
    text = """
.version 8.7
.global .align 4 .b8 table[8] = {1, 2, 3, 4, 5, 6, 7, 8};
.visible .entry k(
\t.param .u64 .ptr .align 1 k_param_0
)
{
\t.reg .pred \t%p<2>;
\tld.param.b64 \t%rd1, [k_param_0]; // a comment; with a semicolon
$L__BB0_1:
\t@%p1 bra \t$L__BB0_1;
\t@!%p1 ld.global.nc.v4.f32 \t{%r1, %r2, %r3, %r4}, [%rd1];
\t{ // callseq 0, 0
\t.param .b32 \tparam0;
\tcall.uni (retval0),
\tf,
\t(param0);
\t}
/* block */ ret;
}"""
    assert nv_corpus.opcodes(text) == {"ld.param.b64", "bra", "ld.global.nc.v4.f32", "call.uni", "ret"}


def _case(name: str):
    return next(c for c in cases.CASES if c.name == name)


def test_check_holds_floats_to_the_ulp_bound_and_nans_to_nans():
    case = _case("math.expf")  # 2 ulp
    x = np.float32([0.5, -3.0, 80.0, np.nan])
    exact = np.exp(x.astype(np.float64))
    right = exact.astype(np.float32)
    nv_corpus.check([right], [exact], case)
    nv_corpus.check([np.nextafter(right, np.float32(np.inf))], [exact], case)
    off = right.copy()
    off[2] = right[2] + 3 * np.spacing(right[2])
    with pytest.raises(AssertionError, match="1 results more than 2 ulp off"):
        nv_corpus.check([off], [exact], case)
    with pytest.raises(AssertionError, match="NaN"):
        nv_corpus.check([np.where(np.isnan(right), np.float32(1), right)], [exact], case)


def test_check_wants_exact_floats_with_their_signed_zeros_and_multisets_in_any_order():
    case = _case("elementwise.float_ops_f32")
    nv_corpus.check([np.float32([1.5, -0.0, np.nan])], [np.float32([1.5, -0.0, np.nan])], case)
    with pytest.raises(AssertionError, match="signs differ"):
        nv_corpus.check([np.float32([1.5, 0.0])], [np.float32([1.5, -0.0])], case)
    table = np.array([0, 3, 1, 0, 2], np.uint32)
    nv_corpus.check([table], [cases.AnyOrder(np.array([1, 2, 3, 0, 0], np.uint32))], case)
    with pytest.raises(AssertionError):
        nv_corpus.check([table], [cases.AnyOrder(np.array([1, 2, 4, 0, 0], np.uint32))], case)


@pytest.mark.parametrize(("case", "arch"), RUNS)
def test_corpus_runs_on_the_ptx_emulator(case, arch):
    from usergpu.emu.nv import launch

    args = case.args(np.random.default_rng(0))
    want = case.reference(copy.deepcopy(args))
    got = launch(nv_corpus.ptx(case.file, arch, case.options), case.kernel, case.grid, case.block, args,
                 shared=case.shared)
    nv_corpus.check(got, want, case)
