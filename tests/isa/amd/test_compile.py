"""compile_opencl: the kernel corpus builds for every arch, OpenCL C's built-in functions link from libclc when a
kernel calls them (and only then), and failures are typed and carry the tools' words."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from functools import cache
from pathlib import Path

import pytest

from usergpu.errors import ToolchainError
from usergpu.isa.amd.codeobj import CompileError, compile_opencl, libclc, parse
from usergpu.isa.amd.codeobj.compile import undefined_symbols

KERNELS = Path(__file__).resolve().parents[2] / "kernels"
CORPUS = sorted(p.name for p in KERNELS.glob("*.cl"))
ARCHS = ("gfx1100", "gfx1200", "gfx942", "gfx950")

pytestmark = pytest.mark.skipif(not (shutil.which("clang-22") and shutil.which("ld.lld-22")),
                                reason="needs the Debian packages clang-22 and lld-22")

# Instructions the corpus must make clang emit on each arch: one per topic the corpus covers
# (prefixes where archs spell them apart: gfx12 splits s_barrier into s_barrier_signal/_wait).
EXPECTED = {
    "gfx1100": {"v_wmma_f32_16x16x16_f16", "v_wmma_i32_16x16x16_iu8", "v_dot2acc_f32_f16"},
    "gfx1200": {"v_wmma_f32_16x16x16_f16", "v_wmma_i32_16x16x16_iu8"},
    "gfx942": {"v_mfma_f32_32x32x8_f16", "v_mfma_f32_16x16x16_f16", "v_accvgpr_write_b32", "v_dot4c_i32_i8_e32"},
    "gfx950": {"v_mfma_f32_32x32x8_f16", "v_mfma_f32_16x16x32_f16", "v_accvgpr_read_b32"},
}
EXPECTED_ALL = {"ds_bpermute_b32", "ds_swizzle_b32", "v_mov_b32_dpp", "v_readfirstlane_b32", "v_readlane_b32",
                "ds_add_f32", "global_atomic_add_f32", "v_div_scale_f64", "v_fma_f64", "v_sin_f32_e32",
                "v_exp_f32_e32", "v_rsq_f32_e32", "v_cvt_f16_f32_e32", "v_cvt_f64_f32_e32", "v_cvt_f32_i32_e32",
                "v_mul_hi_u32", "v_bfe_u32", "v_pk_add_f16", "v_fma_f16", "s_swappc_b64", "v_mbcnt_lo_u32_b32"}
EXPECTED_PREFIXES = ("scratch_store", "scratch_load", "global_atomic_cmpswap", "global_load", "global_store",
                     "s_barrier", "ds_load", "ds_read", "s_cbranch_execz")


@cache
def build(name: str, arch: str) -> bytes:
    return compile_opencl((KERNELS / name).read_text(), arch, ["-I", str(KERNELS)])


def kernel_names(src: str) -> set[str]:
    return set(re.findall(r"__kernel\s+void\s+(\w+)", src))


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", CORPUS)
def test_corpus_compiles(name, arch):
    data = build(name, arch)
    assert data[:4] == b"\x7fELF"
    co = parse(data)
    assert co.arch == arch and co.version == 6  # clang-22's default code object version
    assert set(co.kernels) == kernel_names((KERNELS / name).read_text())


def mnemonics(data: bytes, tmp_path: Path) -> set[str]:
    path = tmp_path / "k.hsaco"
    path.write_bytes(data)
    out = subprocess.run(["llvm-objdump-22", "-d", str(path)], capture_output=True, text=True, check=True).stdout
    return set(re.findall(r"^\s+([a-z]\w+)", out, re.M))


@pytest.mark.skipif(not shutil.which("llvm-objdump-22"), reason="needs the Debian package llvm-22")
@pytest.mark.parametrize("arch", ARCHS)
def test_corpus_instruction_range(arch, tmp_path):
    seen = set().union(*(mnemonics(build(name, arch), tmp_path) for name in CORPUS))
    assert len(seen) >= 200, sorted(seen)
    assert EXPECTED[arch] | EXPECTED_ALL <= seen, sorted((EXPECTED[arch] | EXPECTED_ALL) - seen)
    missing = [p for p in EXPECTED_PREFIXES if not any(m.startswith(p) for m in seen)]
    # ds_load (gfx11+) and ds_read (gfx9) name the same thing: one of each pair is enough
    assert set(missing) <= {"ds_load", "ds_read"} and len(missing) <= 1, missing


def test_syntax_error_carries_clang_diagnostics():
    with pytest.raises(CompileError) as e:
        compile_opencl("__kernel void k(__global int *a) { a[0] = 1 }\n", "gfx1100")
    msg = str(e.value)
    assert "clang-22 failed for gfx1100" in msg and "error: expected ';'" in msg
    assert "kernel.cl:1:" in msg and "usergpu-cl-" not in msg  # the temporary folder is not shown
    assert e.value.arch == "gfx1100" and e.value.tool == "clang-22" and "expected ';'" in e.value.diagnostics


STD_SRC = """
__kernel void k(__global float *a, __local float *t) {
  t[get_local_id(0)] = sqrt(a[get_global_id(0)]);
  barrier(CLK_LOCAL_MEM_FENCE);
  a[get_global_id(0)] = exp(t[get_local_size(0) - 1 - get_local_id(0)]);
}
"""
needs_libclc = pytest.mark.skipif(not libclc.LIBCLC.is_file(), reason=f"needs the Debian package {libclc.PACKAGE}")


@needs_libclc
@pytest.mark.parametrize("arch", ARCHS)
def test_opencl_builtins_link_from_libclc_and_leave_nothing_behind(arch):
    co = parse(compile_opencl(STD_SRC, arch))
    assert set(co.kernels) == {"k"}
    functions = {s.name for s in co.symbols if s.type == "FUNC"}
    assert functions == {"k", "__clang_ocl_kern_imp_k"}, functions  # libclc's functions were inlined, internal


def test_missing_libclc_is_a_toolchain_error_naming_the_package(monkeypatch, tmp_path):
    monkeypatch.setattr(libclc, "LIBCLC", tmp_path / "amdgcn-amd-amdhsa.bc")
    with pytest.raises(ToolchainError) as e:
        compile_opencl(STD_SRC, "gfx1100")
    msg = str(e.value)
    assert "install the Debian package libclc-22" in msg and "amdgcn-amd-amdhsa.bc is missing" in msg
    assert msg.startswith("the kernel calls ") and {"get_global_id", "get_local_id", "barrier", "exp"} <= set(
        re.findall(r"\w+", msg.split(":")[0])), msg


def test_builtin_only_kernels_need_no_libclc_and_compile_as_before(monkeypatch, tmp_path):
    with_libclc = build("memory.cl", "gfx1100")
    monkeypatch.setattr(libclc, "LIBCLC", tmp_path / "amdgcn-amd-amdhsa.bc")
    assert compile_opencl((KERNELS / "memory.cl").read_text(), "gfx1100", ["-I", str(KERNELS)]) == with_libclc


@needs_libclc
def test_a_function_libclc_does_not_define_stays_undefined():
    src = "void nope(void);\n__kernel void k(__global int *a) { nope(); a[get_global_id(0)] = 1; }"
    with pytest.raises(CompileError) as e:
        compile_opencl(src, "gfx942")
    assert e.value.tool == "ld.lld-22" and "undefined hidden symbol: nope" in str(e.value)
    assert "not OpenCL C built-ins it defines" in str(e.value) and "get_global_id" not in e.value.diagnostics


def test_undefined_symbols_are_named_as_the_source_does():
    obj_src = "void helper(int);\n__kernel void k(__global int *a) { helper(get_global_id(0)); barrier(1); }"
    with tempfile.TemporaryDirectory() as tmp:
        obj = Path(tmp, "k.o")
        subprocess.run(["clang-22", "-x", "cl", "-target", "amdgcn-amd-amdhsa", "-mcpu=gfx1100", "-nogpulib", "-O2",
                        "-c", "-", "-o", str(obj)], input=obj_src, text=True, check=True)
        assert sorted(undefined_symbols(obj.read_bytes())) == ["barrier", "get_global_id", "helper"]


@pytest.mark.parametrize(("options", "version"), [([], 6), (["-mcode-object-version=4"], 4),
                                                  (["-mcode-object-version=4", "-mcode-object-version=5"], 5)])
def test_code_object_version_of_the_options(options, version):
    assert libclc.code_object_version(options) == version


def test_unknown_arch():
    with pytest.raises(CompileError, match="gfx9999"):
        compile_opencl("__kernel void k(void) {}", "gfx9999")


def test_missing_toolchain(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolchainError, match="clang-22 not found.*clang-22 and lld-22"):
        compile_opencl("__kernel void k(void) {}", "gfx1100")


def test_options_reach_clang():
    src = "__kernel void k(__global int *a) { a[0] = X; }"
    co = parse(compile_opencl(src, "gfx1200", ["-DX=7", "-mcode-object-version=5", "-cl-kernel-arg-info"]))
    assert co.version == 5 and co.kernels["k"].args[0].name == "a"
