"""The command line on the mock NVIDIA machine: usergpu demo --dev MOCK+NV (make demo DEMO_DEV=MOCK+NV), usergpu run
FILE.cu --dev MOCK+NV, usergpu devices --mock nv."""

from __future__ import annotations

import json

import numpy as np
import nv_corpus  # tests/kernels, on the path by tests/conftest.py
import nv_stock
import pytest

import usergpu
from usergpu.drivers.hal import HAL
from usergpu.tools import cli, showcase

pytestmark = pytest.mark.skipif(not nv_corpus.has_toolchain(), reason=nv_corpus.TOOLCHAIN)

SAXPY = 'extern "C" __global__ void saxpy(float *y, const float *x, float a) {\n' \
        "  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n  y[i] = a * x[i] + y[i];\n}\n"


@pytest.mark.parametrize("arch", ["sm_90", "sm_86"])
def test_demo_runs_the_showcase_on_mock_nv(arch, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MOCKGPU_NV_ARCH", arch)
    path = tmp_path / "t.json"
    assert cli.main(["demo", "--dev", "MOCK+NV", "--trace", str(path)], HAL(tmp_path)) == 0
    out = capsys.readouterr().out
    assert f"showcase on MOCK+NV:0 ({arch})" in out
    rows = {r[0]: r for r in map(str.split, out.splitlines()) if len(r) == 6}
    for case in showcase.CASES:
        assert rows[case.kernel][-1] == "OK" and float(rows[case.kernel][3]) > 0
    assert "sm_120" in out and "SASS" in out and "EXIT" in out  # the archs' table, then nvdisasm's listing
    names = [e["name"] for e in json.loads(path.read_text())["traceEvents"] if e["ph"] == "X"]
    assert names == [c.kernel for c in showcase.CASES]


def test_run_compiles_a_cu_file_and_runs_it_on_mock_nv(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MOCKGPU_NV_ARCH", "sm_89")
    src = tmp_path / "saxpy.cu"
    src.write_text(SAXPY)
    argv = ["run", str(src), "--grid", "4", "--block", "256", "--arg", "f32[1024]:ones", "--arg", "f32[1024]:iota",
            "--arg", "f32=2", "--dev", "MOCK+NV", "--save", str(tmp_path / "out")]
    assert cli.main(argv) == 0
    assert "saxpy on MOCK+NV (sm_89)" in capsys.readouterr().out
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "out0.npy"), 2 * np.arange(1024, dtype=np.float32) + 1)


def test_run_refuses_an_nvidia_kernel_on_an_amd_device(tmp_path, capsys):
    src = tmp_path / "saxpy.cu"
    src.write_text(SAXPY)
    assert cli.main(["run", str(src), "--arg", "f32[64]:ones", "--arg", "f32[64]:ones", "--arg", "f32=1",
                     "--dev", "MOCKKFD+AMD"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "MOCK+NV" in err[0]


@pytest.mark.parametrize("dev", ["MOCK+NV", "emu"])
def test_run_of_a_stock_cubin_on_the_mock_or_the_emulator_is_one_error_line(dev, tmp_path, capsys, monkeypatch):
    """Its kernels are read from the cubin itself (NVK+NV would load it); the mock GPU and the emulator need the PTX
    usergpu's cubins carry, and say so."""
    monkeypatch.setenv("MOCKGPU_NV_ARCH", "sm_90")
    stock = tmp_path / "saxpy.cubin"
    stock.write_bytes(nv_stock.cubin(usergpu.compile_cuda(SAXPY, "sm_90"), "sm_90"))
    assert cli.main(["run", str(stock), "--kernel", "saxpy", "--arg", "f32[64]:ones", "--arg", "f32[64]:ones",
                     "--arg", "f32=1", "--dev", dev]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "this cubin has none" in err[0]


def test_devices_lists_the_mock_nvidia_gpus_with_chip_arch_memory_and_release(capsys, monkeypatch):
    monkeypatch.setenv("MOCKGPU_NV_ARCH", "sm_90")
    assert cli.main(["devices", "--mock", "nv", "--json"]) == 0
    gpu = json.loads(capsys.readouterr().out)["devices"][0]
    assert (gpu["vendor"], gpu["driver"], gpu["arch"], gpu["release"]) == ("NV", "nvidia", "sm_90", "595.45.04")
    assert gpu["bindings"] == "bindings nv_rm_595 + nv_uvm_595"
    assert gpu["model"] == "NVIDIA H200" and gpu["memory"] > 100 << 30
    assert cli.main(["devices", "--mock", "nv"]) == 0
    assert "NVIDIA H200" in (out := capsys.readouterr().out) and "595.45.04 (bindings nv_rm_595 + nv_uvm_595)" in out
