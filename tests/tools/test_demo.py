"""usergpu demo: the showcase runs on the mock GPU through the runtime, is checked and traced (on a mock MI300X or
MI350X with an MFMA matmul on its matrix cores too); then the GPUs found and the disassembly for each ISA."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from usergpu.drivers.hal import HAL
from usergpu.isa import amd as isa
from usergpu.tools import cli, showcase


@pytest.mark.parametrize(("device", "arch"), [("MOCKKFD+AMD", "gfx1100"), ("MOCKPCI+AMD", "gfx1100"),
                                            ("MOCKKFD+AMD", "gfx942")])
def test_demo_runs_checks_and_traces_the_showcase(device, arch, tmp_path, capsys, monkeypatch):
    """make demo (make demo DEMO_DEV=MOCKPCI+AMD: on AM and the register-level mock GPU; make demo
    MOCKGPU_ARCH=gfx942: on a mock MI300X, the MFMA matmul after the others)."""
    monkeypatch.setenv("MOCKGPU_ARCH", arch)
    path = tmp_path / "t.json"
    assert cli.main(["demo", "--dev", device, "--trace", str(path)], HAL(tmp_path)) == 0
    out = capsys.readouterr().out
    cases = showcase.CASES + showcase.MATRIX.get(arch[:5], ("", []))[1]
    kernels = {c.kernel for c in cases}
    rows = {r[0]: r for r in map(str.split, out.splitlines()) if len(r) == 6 and r[0] in kernels}  # the table
    assert sorted(rows) == sorted(kernels) and (arch != "gfx942" or "mfma_matmul" in rows)
    for c in cases:
        row = rows[c.kernel]
        assert row[1] == "x".join(map(str, c.grid)) and row[-1] == "OK"
        assert float(row[3]) > 0 and int(row[4].replace(",", "")) > 0  # GPU time (µs), lane-instructions
    assert "no AMD or NVIDIA GPU found" in out  # the GPUs found (none on this HAL), after the showcase
    assert all(arch in out for arch in isa.ARCHS) and out.count("s_endpgm") >= 1

    events = json.loads(path.read_text())["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    assert [e["name"] for e in complete] == [c.kernel for c in cases]
    assert all(e["dur"] > 0 and e["ts"] >= 0 for e in complete)
    assert all(a["ts"] + a["dur"] <= b["ts"] for a, b in zip(complete, complete[1:], strict=False))  # one queue
    assert len({(e["pid"], e["tid"]) for e in complete}) == 1
    names = {e["name"]: e["args"]["name"] for e in events if e["ph"] == "M"}
    assert names["process_name"].startswith(f"{device}:0") and "compute" in names["thread_name"]


SMALL = dataclasses.replace(showcase.CASES[0], grid=(1, 1, 1), block=(64, 1, 1),
                            args=lambda r: [np.ones(64, np.float32), np.ones(64, np.float32),
                                            np.zeros(64, np.float32), np.uint32(64)])


def test_a_wrong_result_is_a_fail_row_and_exit_status_1(tmp_path, capsys, monkeypatch):
    wrong = dataclasses.replace(SMALL, reference=lambda a: a[0] + a[1] + 1)
    monkeypatch.setattr(showcase, "CASES", [SMALL, wrong])
    assert cli.main(["demo", "--trace", str(tmp_path / "t.json")], HAL(tmp_path)) == 1
    out = capsys.readouterr().out
    assert "OK" in out and "FAIL: max error 1" in out
    # both launches ran (the second computed a result the reference rejects): both are in the trace
    assert [e["name"] for e in json.loads((tmp_path / "t.json").read_text())["traceEvents"] if e["ph"] == "X"] == [
        "vadd", "vadd"]


def test_a_faulting_kernel_is_a_fail_row(tmp_path, capsys, monkeypatch):
    oob = dataclasses.replace(SMALL, grid=(1 << 16, 1, 1), args=lambda r: [np.ones(64, np.float32)] * 3 + [
        np.uint32(1 << 24)])
    monkeypatch.setattr(showcase, "CASES", [oob, SMALL])
    assert cli.main(["demo", "--trace", str(tmp_path / "t.json")], HAL(tmp_path)) == 1
    out = capsys.readouterr().out
    assert "FAIL: GPU fault" in out and out.count(" OK") == 1  # the device keeps working after the fault


def test_an_unwritable_trace_path_is_an_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(showcase, "CASES", [SMALL])
    assert cli.main(["demo", "--trace", str(tmp_path / "no" / "t.json")], HAL(tmp_path)) == 1
    assert "error: cannot write the trace to" in capsys.readouterr().err
