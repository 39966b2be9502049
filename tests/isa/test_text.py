"""isa/text.py, the one place bytes become source or PTX text: UTF-8 passes, anything else is a CodeObjectError
naming the first byte that is not, through every compiler and reader that takes bytes."""

from __future__ import annotations

import shutil

import pytest

import usergpu
from usergpu.errors import CodeObjectError
from usergpu.isa.nv import ptx
from usergpu.isa.text import text_of

LATIN1 = b"// caf\xe9\n"  # one Latin-1 byte (e acute) at offset 6, in a comment


def test_utf8_is_text_and_anything_else_names_its_byte():
    assert text_of("caf\u00e9".encode(), "x") == "caf\u00e9"
    assert text_of("already text", "x") == "already text"
    with pytest.raises(CodeObjectError, match=r"^CUDA C: byte 6 \(0xe9\) is not UTF-8 text$"):
        text_of(LATIN1, "CUDA C")


@pytest.mark.parametrize(("read", "what"), [
    (lambda: ptx.parse(LATIN1 + b".version 8.7\n"), "ptx"),
    (lambda: usergpu.compile_cuda(LATIN1 + b'extern "C" __global__ void k() {}', "sm_90"), "CUDA C"),
    (lambda: usergpu.compile_opencl(LATIN1 + b"kernel void k() {}", "sm_90"), "OpenCL C"),
    (lambda: usergpu.compile_opencl(LATIN1 + b"kernel void k() {}", "gfx1100"), "OpenCL C"),
], ids=["ptx.parse", "compile_cuda", "compile_opencl-nv", "compile_opencl-amd"])
def test_sources_that_are_not_utf8_are_refused_before_any_tool_runs(read, what):
    with pytest.raises(CodeObjectError, match=rf"^{what}: byte 6 \(0xe9\) is not UTF-8 text$"):
        read()


@pytest.mark.skipif(not shutil.which("clang-22"), reason="needs clang-22")
def test_compilers_take_utf8_bytes():
    assert b".entry k" in usergpu.compile_cuda(b'extern "C" __global__ void k() {} // caf\xc3\xa9', "sm_90")
