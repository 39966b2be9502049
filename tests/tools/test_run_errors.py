"""usergpu run's bad input: each row one `error:` line (exit 1, or 2 for a usage error), never a traceback."""

from __future__ import annotations

import pytest
from cli_errors import Case, check

SAXPY = """__kernel void saxpy(__global float *y, __global const float *x, float a) {
  uint i = __builtin_amdgcn_workitem_id_x();
  y[i] = a * x[i] + y[i];
}
"""
ARGS = ["--arg", "f32[64]:ones", "--arg", "f32[64]:iota"]
CASES = [
    Case(["usergpu", "run", "missing.cl"], "missing.cl: no such file", 2),
    Case(["usergpu", "run", "folder"], "folder: is a directory", 2),
    Case(["usergpu", "run", "saxpy.cl", *ARGS, "--arg", "f32=abc"], "'abc' is not a number", 2),
    Case(["usergpu", "run", "saxpy.cl", *ARGS, "--arg", "u32=-1"], "-1 is outside uint32's 0..4294967295", 2),
    Case(["usergpu", "run", "saxpy.cl", *ARGS, "--arg", "i8=300"], "300 is outside int8's -128..127", 2),
    Case(["usergpu", "run", "saxpy.cl", "--arg", "f32[1000000000000]:ones"],
         "out of memory: Unable to allocate 3.64 TiB"),
    Case(["usergpu", "run", "saxpy.cl", "--arg", "f33[4]:ones"], "expected TYPE[N]:random", 2),
    Case(["usergpu", "run", "saxpy.cl", "--arg", "missing.npy"], "missing.npy: no such file", 2),
    Case(["usergpu", "run", "saxpy.cl", *ARGS, "--arg", "bad.npy"], "bad.npy: not a .npy array file"),
    Case(["usergpu", "run", "saxpy.cl", "--grid", "99999999999"], "positive integers below 2^32", 2),
    Case(["usergpu", "run", "saxpy.cl", "--grid", "0"], "positive integers", 2),
    Case(["usergpu", "run", "saxpy.cl", "--block", "a,b"], "positive integers", 2),
    Case(["usergpu", "run", "saxpy.cl", "--block", "1,1,1,1"], "X[,Y[,Z]]", 2),
    Case(["usergpu", "run", "saxpy.cl", *ARGS, "--arg", "f32=2", "--block", "2048"], "saxpy allows 1..256"),
    Case(["usergpu", "run", "saxpy.cl", *ARGS, "--arg", "f32=2", "--dev", "MOCKKFD+AMD:abc"], "index after ':'", 2),
    Case(["usergpu", "run", "saxpy.cl", *ARGS, "--arg", "f32=2", "--dev", "NOPE+AMD"], "this build offers", 2),
    Case(["usergpu", "run", "saxpy.cl", *ARGS, "--arg", "f32=2", "--dev", "MOCKKFD+AMD"], "MOCKGPU_COUNT 'abc'",
         env={"MOCKGPU_COUNT": "abc"}),
    Case(["usergpu", "run", "saxpy.cl", *ARGS, "--arg", "f32=2", "--dev", "MOCKKFD+AMD"], "MOCKGPU_ARCH 'gfx9999'",
         env={"MOCKGPU_ARCH": "gfx9999"}),
    Case(["usergpu", "run", "saxpy.cl", "--arch", "gfx9999"], "the archs are gfx1100", 2),
    Case(["usergpu", "run", "saxpy.co", *ARGS, "--arg", "f32=2", "--arch", "gfx1200"],
         "built for gfx1100; it cannot run as gfx1200"),
    Case(["usergpu", "run", "saxpy.cl", *ARGS], "takes 3 arguments"),
    Case(["usergpu", "run", "saxpy.cl", "--kernel", "nope"], "--kernel nope: saxpy.cl has saxpy"),
    Case(["usergpu", "run", "saxpy.cl", *ARGS, "--arg", "f64=2"], "expected float32, got a float64 scalar"),
    Case(["usergpu", "run", "saxpy.cl", "--arg", "i32[64]:ones", "--arg", "f32[64]:iota", "--arg", "f32=2"],
         "expected an array of float32, got int32"),
    Case(["usergpu", "run", "broken.cl"], "broken.cl: clang-22 failed for gfx1100"),
    Case(["usergpu", "run", "notelf.co"], "notelf.co: too short for an ELF64 header"),
    Case(["usergpu", "run", "noise.ptx", "--dev", "MOCK+NV"], "noise.ptx: ptx: byte 0 (0xff) is not UTF-8 text"),
    Case(["usergpu", "run", "noise.ptx"], "noise.ptx: ptx: byte 0 (0xff) is not UTF-8 text"),
    Case(["usergpu", "run", "latin1.cu"], "latin1.cu: CUDA C: byte 28 (0xe9) is not UTF-8 text"),
    Case(["usergpu", "run", "latin1.cl"], "latin1.cl: OpenCL C: byte 28 (0xe9) is not UTF-8 text"),
    Case(["usergpu", "run", "saxpy.cl", *ARGS, "--arg", "f32=2", "--save", "file.txt"], "file.txt: is a file", 2),
    Case(["usergpu", "run", "saxpy.cl", *ARGS, "--arg", "f32=2", "--save", "file.txt/out"], "does not exist", 2),
    Case(["usergpu", "run", "saxpy.cl", "--seed", "-3"], "an integer >= 0", 2),
]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    import usergpu

    d = tmp_path_factory.mktemp("run")
    (d / "saxpy.cl").write_text(SAXPY)
    (d / "saxpy.co").write_bytes(usergpu.compile_opencl(SAXPY, "gfx1100", ["-cl-kernel-arg-info"]))
    (d / "broken.cl").write_text("__kernel void k( {")
    (d / "notelf.co").write_bytes(b"not an ELF file")
    (d / "noise.ptx").write_bytes(bytes(range(255, -1, -1)) * 16)  # no text: 0xff is never UTF-8
    for name in ("latin1.cu", "latin1.cl"):  # one Latin-1 byte (e acute) in a comment
        (d / name).write_bytes(b"// a kernel written in a caf\xe9, byte 51 is the e\n" + b"int x;\n")
    (d / "bad.npy").write_bytes(b"\x93NUMPY garbage")
    (d / "file.txt").write_text("x")
    (d / "folder").mkdir()
    return d


@pytest.mark.parametrize("case", CASES, ids=str)
def test_bad_input_is_one_error_line(case, workdir):
    check(case, cwd=workdir)
