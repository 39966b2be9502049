"""usergpu run: a kernel from OpenCL source on the emulator, its argument specs, --save, errors, and the trace."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from usergpu.tools import cli

SAXPY = """
__kernel void saxpy(__global float *y, __global const float *x, float a) {
  uint i = __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() + __builtin_amdgcn_workitem_id_x();
  y[i] = a * x[i] + y[i];
}
"""


def test_run_prints_each_output_and_saves_them(tmp_path, capsys):
    src = tmp_path / "saxpy.cl"
    src.write_text(SAXPY)
    argv = ["run", str(src), "--grid", "4", "--block", "256", "--arg", "f32[1024]:ones", "--arg", "f32[1024]:iota",
            "--arg", "f32=2", "--save", str(tmp_path / "out")]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "saxpy on emu (gfx1100)" in out and "float32[1024]" in out and "1, 3, 5, 7, ..." in out
    y = np.load(tmp_path / "out" / "out0.npy")
    np.testing.assert_array_equal(y, 2 * np.arange(1024, dtype=np.float32) + 1)


def test_run_rejects_a_bad_spec_with_the_forms_it_takes(tmp_path, capsys):
    src = tmp_path / "saxpy.cl"
    src.write_text(SAXPY)
    with pytest.raises(SystemExit) as e:  # a usage error, found while the arguments are read
        cli.main(["run", str(src), "--arg", "f33[4]:ones"])
    assert e.value.code == 2 and "expected TYPE[N]:random|zeros|ones|iota" in capsys.readouterr().err
    assert cli.main(["run", str(src), "--arg", "f32[4]:ones"]) == 1  # too few arguments for the kernel
    assert "takes 3 arguments" in capsys.readouterr().err


def test_usergpu_trace_prints_each_instruction_with_its_register_changes(tmp_path):
    src = tmp_path / "saxpy.cl"
    src.write_text(SAXPY)
    env = {**os.environ, "USERGPU_TRACE": "1"}
    out = subprocess.run([sys.executable, "-m", "usergpu.tools.cli", "run", str(src), "--block", "32", "--arg",
                          "f32[32]:ones", "--arg", "f32[32]:ones", "--arg", "f32=3"], capture_output=True, text=True,
                         env=env)
    assert out.returncode == 0, out.stderr
    assert "global_store_b32" in out.stderr and "s_endpgm" in out.stderr and "v" in out.stderr
    assert any(line.startswith("0x") and "=[0x" in line for line in out.stderr.splitlines())


def test_run_on_the_mock_gpu_through_the_runtime(tmp_path, capsys):
    src = tmp_path / "saxpy.cl"
    src.write_text(SAXPY)
    argv = ["run", str(src), "--grid", "4", "--block", "256", "--arg", "f32[1024]:ones", "--arg", "f32[1024]:iota",
            "--arg", "f32=2", "--dev", "MOCKKFD+AMD", "--save", str(tmp_path / "out")]
    assert cli.main(argv) == 0
    assert "saxpy on MOCKKFD+AMD (gfx1100)" in capsys.readouterr().out
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "out0.npy"), 2 * np.arange(1024, dtype=np.float32) + 1)
    with pytest.raises(SystemExit) as e:  # refused while the arguments are read
        cli.main(["run", str(src), "--dev", "NOPE+AMD"])
    assert e.value.code == 2 and "NOPE+AMD" in capsys.readouterr().err


def test_devices_mock_lists_the_mock_gpus_as_discovery_finds_them(capsys):
    assert cli.main(["devices", "--mock", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["devices"][0]["arch"] == "gfx1100" and found["devices"][0]["driver"] == "amdgpu"
    assert "MOCKKFD+AMD" in found["mock_interfaces"]
