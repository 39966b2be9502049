"""The NVIDIA hardware check (tools/hwcheck/nv.py) on MOCK+NV: the script a person runs on a real GPU passes on a
healthy mock, as a command and in-process, for each arch it ships cubins for; a wrong kernel result, a corrupt or
missing cubin, a device that does not open and a defect of a check are FAIL lines (never a traceback) and a
non-zero exit; the shipped cubins are what build.py makes from hwcheck.cu."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from usergpu.errors import ToolchainError
from usergpu.isa.nv import cubin
from usergpu.tools import hwcheck
from usergpu.tools.hwcheck import nv

CHECKS = ("open", "memory", "load", "copy", "copy-d2d", "vadd", "matmul", "reduce", "latency", "fault", "recovery",
          "close")
KERNEL_CHECKS = ("vadd", "matmul", "reduce", "latency", "fault", "recovery")
COPY_MIB = "16"  # the default 256 MiB (the healthy run uses it) takes the mock 6 s and 1 GB; 16 MiB: still DMA
MOCK = ["--dev", "MOCK+NV", "--copy-mib", COPY_MIB, "--launches", "10"]


def _lines(out: str) -> dict[str, str]:
    """Each check's line, by check name: {'vadd': 'PASS vadd ...'}."""
    found = {}
    for line in out.splitlines():
        status, _, rest = line.partition(" ")
        if status in ("PASS", "FAIL", "SKIP"):
            found[rest.split()[0]] = line
    return found


def _statuses(out: str) -> dict[str, str]:
    return {name: line.split()[0] for name, line in _lines(out).items()}


def _run(args: list[str], arch: str = "sm_90") -> subprocess.CompletedProcess:
    env = {**os.environ, "MOCKGPU_NV_ARCH": arch}
    return subprocess.run([sys.executable, "-m", "usergpu.tools.hwcheck.nv", *args], capture_output=True, text=True,
                          env=env, timeout=900)


def _corrupt(tmp_path, edit) -> str:
    """A copy of the shipped cubins with the sm_90 one changed by edit (bytes -> bytes); its folder."""
    folder = tmp_path / "cubins"
    shutil.copytree(nv.DATA, folder)
    path = nv.cubin_path(folder, "sm_90")
    path.write_bytes(edit(path.read_bytes()))
    return str(folder)


def test_passes_on_a_healthy_mock_as_a_command():
    res = _run(["--dev", "MOCK+NV"])  # what a person runs on a GPU, with the mock's HAL
    assert res.returncode == 0, res.stdout + res.stderr
    statuses = _statuses(res.stdout)
    assert statuses == dict.fromkeys(CHECKS, "PASS")
    lines = _lines(res.stdout)
    assert "sm_90" in lines["open"] and "driver" in lines["open"]
    assert "256 MiB host->device" in lines["copy"] and "256 MiB device->device" in lines["copy-d2d"]
    assert "50 empty launches" in lines["latency"]
    assert "GPU fault" in lines["fault"] and "hwcheck_store" in lines["fault"]
    assert res.stdout.splitlines()[-1].startswith("summary: PASS: 12 passed, 0 failed")
    assert "Traceback" not in res.stdout + res.stderr


@pytest.mark.parametrize("arch", ["sm_86", "sm_89", "sm_90", "sm_120"])
def test_passes_in_process_with_json_for_each_shipped_arch(arch, monkeypatch, capsys):
    monkeypatch.setenv("MOCKGPU_NV_ARCH", arch)
    assert nv.main([*MOCK, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is True and doc["counts"] == {"PASS": len(CHECKS), "FAIL": 0, "SKIP": 0}
    checks = {c["name"]: c for c in doc["checks"]}
    assert list(checks) == list(CHECKS)
    assert checks["open"]["figures"]["arch"] == arch
    assert checks["copy"]["figures"]["bytes"] == int(COPY_MIB) << 20
    assert checks["copy"]["figures"]["blake2b"] == checks["copy-d2d"]["figures"]["blake2b"]
    assert checks["fault"]["figures"]["kernel"] == "hwcheck_store"
    assert nv.FAULT_VA <= checks["fault"]["figures"]["address"] < nv.FAULT_VA + 4096
    assert checks["latency"]["figures"]["launches"] == 10


@pytest.mark.parametrize(("release", "bindings"), [("535.261.03", "nv_rm_535 + nv_uvm_535"),
                                                   ("570.211.01", "nv_rm_570 + nv_uvm_570"),
                                                   ("580.142", "nv_rm_580 + nv_uvm_580"),
                                                   ("595.45.04", "nv_rm_595 + nv_uvm_595")])
def test_passes_unchanged_on_each_long_term_release(release, bindings, monkeypatch, capsys):
    """The same script on the drivers people run: it reads the release and speaks that release's ABI."""
    monkeypatch.setenv("MOCKGPU_NV_ARCH", "sm_90")
    monkeypatch.setenv("MOCKGPU_NV_RELEASE", release)
    assert nv.main([*MOCK, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    opened = next(c for c in doc["checks"] if c["name"] == "open")
    assert doc["ok"] is True and opened["figures"]["driver_release"] == release
    assert opened["figures"]["bindings"] == bindings and f"driver {release} (bindings {bindings})" in opened["detail"]


def test_a_wrong_kernel_result_fails_the_check(tmp_path):
    # the mock runs the PTX the cubin carries: vadd made to subtract gives results numpy does not
    folder = _corrupt(tmp_path, lambda b: b.replace(b"add.f32", b"sub.f32"))
    res = _run([*MOCK, "--cubins", folder])
    assert res.returncode == 1
    statuses = _statuses(res.stdout)
    assert statuses["vadd"] == statuses["recovery"] == "FAIL"
    assert statuses["matmul"] == statuses["reduce"] == statuses["fault"] == "PASS"
    assert "Mismatch: vadd of" in _lines(res.stdout)["vadd"] and "differ from numpy" in _lines(res.stdout)["vadd"]
    assert res.stdout.splitlines()[-1].startswith("summary: FAIL: 10 passed, 2 failed")
    assert "Traceback" not in res.stdout + res.stderr


def test_a_corrupt_cubin_fails_the_load_and_skips_the_kernels(tmp_path, monkeypatch, capsys):
    folder = _corrupt(tmp_path, lambda b: b[:200])
    monkeypatch.setenv("MOCKGPU_NV_ARCH", "sm_90")
    assert nv.main([*MOCK, "--cubins", folder]) == 1
    out = capsys.readouterr().out
    statuses = _statuses(out)
    assert statuses["load"] == "FAIL" and "CodeObjectError" in _lines(out)["load"]
    assert all(statuses[c] == "SKIP" for c in KERNEL_CHECKS)
    assert statuses["copy"] == statuses["close"] == "PASS"


def test_a_missing_cubin_names_the_arch(tmp_path, monkeypatch, capsys):
    (tmp_path / "hwcheck-sm_90.cubin").write_bytes(nv.cubin_path(nv.DATA, "sm_90").read_bytes())
    monkeypatch.setenv("MOCKGPU_NV_ARCH", "sm_89")
    assert nv.main([*MOCK, "--cubins", str(tmp_path)]) == 1
    line = _lines(capsys.readouterr().out)["load"]
    assert line.startswith("FAIL") and "no cubin for sm_89" in line and "built: sm_90" in line


@pytest.mark.skipif(os.path.exists("/dev/nvidiactl"), reason="an NVIDIA driver is loaded here: NVK+NV would open")
def test_a_device_that_does_not_open_is_one_fail_line(capsys):
    assert nv.main(["--dev", "NVK+NV", "--copy-mib", "1"]) == 1
    out = capsys.readouterr().out
    statuses = _statuses(out)
    assert statuses["open"] == "FAIL" and "Error" in _lines(out)["open"]
    assert all(s == "SKIP" for name, s in statuses.items() if name != "open") and "close" not in statuses


def test_a_defect_in_a_check_is_a_fail_line_not_a_traceback(capsys):
    report = hwcheck.Report("t")
    report.check("good", lambda: hwcheck.Measured("fine", value=1))
    report.check("broken", lambda v: {}["x"], ("good",))
    report.check("after", lambda v: hwcheck.Measured("still runs"), ("good",))
    assert report.finish() == 1
    out = capsys.readouterr().out
    assert _statuses(out) == {"good": "PASS", "broken": "FAIL", "after": "PASS"}
    assert "unexpected KeyError" in _lines(out)["broken"] and "Traceback" not in out


def test_a_device_string_of_another_vendor_is_a_usage_error():
    res = _run(["--dev", "MOCKKFD+AMD"])
    assert res.returncode == 2 and "NVK+NV" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.parametrize("arch", nv.ARCHS)
def test_shipped_cubins_carry_the_ptx_of_hwcheck_cu(arch):
    import usergpu

    try:
        want = usergpu.compile_cuda((nv.DATA / "hwcheck.cu").read_text(), arch).decode()
    except ToolchainError as e:
        pytest.skip(f"clang-22 is needed to compile hwcheck.cu: {e}")
    co = cubin.parse(nv.cubin_path(nv.DATA, arch).read_bytes())
    assert co.arch.startswith(arch) and co.ptx == want, "stale cubin: run tests/data/nv/hwcheck/build.py"
    assert set(nv.KERNELS) <= set(co.kernels)
