"""usergpu disasm on NVIDIA code: a cubin's kernels, attributes and SASS (agreeing with the cubin reader and
nvdisasm), a PTX module's kernels (agreeing with the PTX parser), the one line said when nvdisasm is missing, and
bad input as one `error:` line."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import nv_corpus  # tests/kernels, on the path by tests/conftest.py
import pytest
from cli_errors import Case, check

from usergpu.isa.nv import assemble_ptx, compile_cuda
from usergpu.isa.nv.cubin import parse
from usergpu.tools import cli

pytestmark = pytest.mark.skipif(not nv_corpus.has_toolchain(),
                                reason="needs clang-22 (Debian) and ptxas (PyPI nvidia-cuda-nvcc, the nv extra)")
needs_nvdisasm = pytest.mark.skipif(not nv_corpus.tool("bin/nvdisasm"),
                                    reason="needs nvdisasm (PyPI nvidia-cuda-nvdisasm)")

SRC = r"""
extern "C" __global__ void __attribute__((launch_bounds(256))) scale(float* y, const float* x, float a, int n) {
  __shared__ float t[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  t[threadIdx.x] = x[i];
  __syncthreads();
  if (i < n) y[i] = a * t[threadIdx.x ^ 1];
}
extern "C" __global__ void fill(int* out, char c) { out[threadIdx.x] = c; }
"""


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("disasm-nv")
    ptx = compile_cuda(SRC, "sm_90")
    (root / "k.ptx").write_bytes(ptx)
    (root / "k_ptx.txt").write_bytes(ptx)  # PTX known by its text, not its name
    cubin = assemble_ptx(ptx, "sm_90")
    (root / "k.cubin").write_bytes(cubin)
    (root / "short.cubin").write_bytes(cubin[:200])
    (root / "bad.ptx").write_text(".version 8.7\n.target sm_90\n.entry broken( {\n")
    (root / "nv.elf").write_bytes(b"\x7fELF\x02\x01\x01\x41\x08" + bytes(9) + b"\xbe\x00" + bytes(44))
    return root


def test_cubin_listing(files, capsys):
    assert cli.main(["disasm", str(files / "k.cubin")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("cubin for sm_90 (CUDA ELF ABI 8, e_flags 0x6005a04, with its PTX)")
    assert "kernel scale" in out and "kernel fill" in out and "EIATTR_REGCOUNT" in out
    assert "at c[0x0][0x210]" in out and "EIATTR_KPARAM_INFO" in out


def test_cubin_json_matches_the_reader(files, capsys):
    assert cli.main(["disasm", str(files / "k.cubin"), "--kernel", "scale", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    k = parse((files / "k.cubin").read_bytes()).kernels["scale"]
    (listed,) = doc["kernels"]
    assert doc["arch"] == "sm_90" and listed["name"] == "scale"
    assert (listed["registers"], listed["shared_size"], listed["param_offset"], listed["param_size"]) == (
        k.regcount, k.shared_size, k.param_cbank.offset, k.param_cbank.size)
    assert listed["max_threads"] == [256, 1, 1]
    assert [(p["offset"], p["size"]) for p in listed["params"]] == [(p.offset, p.size) for p in k.params]
    assert [(a["section"], a["code"]) for a in listed["attributes"]] == [(a.section, a.code) for a in k.attributes]


@needs_nvdisasm
def test_cubin_sass_is_nvdisasms(files, capsys):
    assert cli.main(["disasm", str(files / "k.cubin"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    res = subprocess.run([str(nv_corpus.tool("bin/nvdisasm")), "-c", str(files / "k.cubin")], capture_output=True,
                         text=True, check=True)
    for k in doc["kernels"]:
        body = res.stdout.split(f"//--------------------- .text.{k['name']} ")[1].split("//-----")[0]
        instructions = [line.strip() for line in body.splitlines() if re.search(r"/\*[0-9a-f]{4}\*/", line)]
        assert instructions and [line.strip() for line in k["sass"] if "/*" in line] == instructions
        assert any("EXIT ;" in line for line in instructions)
    assert doc["sass_note"] is None


def test_without_nvdisasm_says_so_in_one_line(files, tmp_path):
    """A regular package named nvidia, first on the path, hides the installed NVIDIA tools from the lookup."""
    (tmp_path / "nvidia").mkdir()
    (tmp_path / "nvidia" / "__init__.py").write_text("")
    env = os.environ | {"PYTHONPATH": str(tmp_path)}
    res = subprocess.run([sys.executable, "-m", "usergpu.tools.cli", "disasm", str(files / "k.cubin")], env=env,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "Traceback" not in res.stderr
    notes = [line for line in res.stdout.splitlines() if "nvdisasm" in line]
    assert notes == ["no SASS: nvdisasm not found: install the PyPI package nvidia-cuda-nvdisasm "
                     "(pip install 'usergpu[nv]'; make test does)"]
    assert "kernel scale" in res.stdout and "EIATTR_REGCOUNT" in res.stdout


@pytest.mark.parametrize("name", ["k.ptx", "k_ptx.txt"])
def test_ptx_module(files, capsys, name):
    from usergpu.isa.nv.ptx import parse as parse_ptx

    assert cli.main(["disasm", str(files / name), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    module = parse_ptx((files / "k.ptx").read_text())
    assert doc["kind"] == "ptx" and doc["arch"] == "sm_90" and doc["version"] == "8.7"
    assert [k["name"] for k in doc["kernels"]] == list(module.kernels) == ["scale", "fill"]
    scale = doc["kernels"][0]
    assert [(p["offset"], p["size"], p["align"]) for p in scale["params"]] == [(0, 8, 8), (8, 8, 8), (16, 4, 4),
                                                                               (20, 4, 4)]
    assert [(p["offset"], p["size"]) for p in doc["kernels"][1]["params"]] == [(0, 8), (8, 1)]
    assert scale["maxntid"][0] == 256 and scale["reqntid"] is None
    assert [v["size"] for v in scale["shared"]] == [256 * 4]


def test_ptx_listing(files, capsys):
    assert cli.main(["disasm", str(files / "k.ptx"), "--kernel", "scale"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("PTX 8.7 module for sm_90 (64-bit addresses)")
    assert "kernel scale: 24 bytes of parameters, maxntid 256" in out and "kernel fill" not in out
    assert re.search(r"\.shared \w+: 1024 bytes, align 4", out)


CASES = [
    Case(["usergpu", "disasm", "short.cubin"], "short.cubin: not a cubin: section header table at offset"),
    Case(["usergpu", "disasm", "nv.elf"], "nv.elf: not a cubin: the file has no section headers"),
    Case(["usergpu", "disasm", "bad.ptx"], "bad.ptx: not a PTX module: ptx: line"),
    Case(["usergpu", "disasm", "k.cubin", "--kernel", "nope"], "no kernel 'nope' in k.cubin (kernels: fill, scale)"),
    Case(["usergpu", "disasm", "k.ptx", "--kernel", "nope", "--json"], "no kernel 'nope' in k.ptx"),
    Case(["usergpu", "disasm", "k.cubin", "--arch", "sm_80"], "k.cubin is sm_90 code, not --arch sm_80"),
    Case(["usergpu", "disasm", "k.ptx", "--arch", "gfx1100"], "k.ptx is sm_90 code, not --arch gfx1100"),
    Case(["usergpu", "disasm", "--arch", "sm_90", "--hex", "00"], "--hex disassembles AMD instruction bytes"),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_bad_input(case, files):
    check(case, cwd=files)
