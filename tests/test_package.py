"""The package as users get it: the public names (loaded on first use), a wheel that installs the whole tree, the
generated bindings up to date with their headers, and the code ruff-clean."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import usergpu

ROOT = Path(__file__).resolve().parents[1]


def test_public_names_are_only_the_real_ones():
    # DESIGN.md's API names appear as each becomes real, never as stubs
    assert set(usergpu.__all__) == {"Error", "CodeObjectError", "CompileError", "DecodeError", "DeviceNotFound",
                                    "DriverError", "GPUFault", "GPUHang", "ToolchainError", "__version__",
                                    "compile_opencl", "compile_cuda", "assemble_ptx", "Device", "launch"}
    assert issubclass(usergpu.errors.ToolchainError, usergpu.Error)


def test_import_loads_only_the_errors_until_a_name_is_used():
    code = ("import json, sys, usergpu\n"
            "before = sorted(sys.modules)\n"
            "usergpu.Device, usergpu.launch, usergpu.compile_opencl\n"
            "print(json.dumps([before, sorted(sys.modules)]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    before, after = (set(mods) for mods in json.loads(out.stdout))
    heavy = ("usergpu.runtime", "usergpu.emu.amd.mock", "usergpu.autogen.isa_", "usergpu.emu", "usergpu.drivers",
             "numpy")
    assert not {m for m in before if m.startswith(heavy)}, sorted(m for m in before if m.startswith(heavy))
    assert {m for m in before if m.startswith("usergpu")} == {"usergpu", "usergpu.errors"}
    # the names resolve to their modules, and a vendor's runtime loads only with a device of it
    assert {"usergpu.runtime.device", "usergpu.runtime.launch", "usergpu.isa.compile", "numpy"} <= after
    assert not {m for m in after if m.startswith(("usergpu.runtime.amd", "usergpu.runtime.nv", "usergpu.emu"))}


def test_lazy_names_are_the_real_ones():
    from usergpu.isa.compile import compile_opencl
    from usergpu.isa.nv import assemble_ptx, compile_cuda
    from usergpu.runtime.device import Device
    from usergpu.runtime.launch import launch

    assert (usergpu.Device, usergpu.launch, usergpu.compile_opencl) == (Device, launch, compile_opencl)
    assert (usergpu.compile_cuda, usergpu.assemble_ptx) == (compile_cuda, assemble_ptx)
    assert set(usergpu.__all__) <= set(dir(usergpu))
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        usergpu.nothing  # noqa: B018
    namespace: dict = {}
    exec("from usergpu import *", namespace)
    assert namespace["Device"] is Device and namespace["Error"] is usergpu.Error


def test_folders_map_onto_the_import_root():
    import usergpu.autogen.kfd
    import usergpu.drivers.hal
    import usergpu.tools.cli

    assert Path(usergpu.autogen.kfd.__file__) == ROOT / "autogen" / "kfd.py"
    assert Path(usergpu.drivers.hal.__file__) == ROOT / "drivers" / "hal.py"
    assert Path(usergpu.tools.cli.__file__) == ROOT / "tools" / "cli.py"


def test_every_package_folder_is_listed_for_the_wheel():
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    skip = ("tests", ".venv", "build", ".git")
    found = {"usergpu" + "".join(f".{p}" for p in init.parent.relative_to(ROOT).parts)
             for init in ROOT.rglob("__init__.py") if not init.relative_to(ROOT).parts[0].startswith(skip)}
    assert found <= listed, sorted(found - listed)


def test_wheel_holds_the_whole_package_and_runs(tmp_path):
    pip = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
    build = subprocess.run([*pip, "-w", str(tmp_path), str(ROOT)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    (wheel,) = tmp_path.glob("usergpu-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for module in ("usergpu/__init__.py", "usergpu/errors.py", "usergpu/autogen/kfd.py", "usergpu/autogen/amdhsa.py",
                   "usergpu/autogen/generator/cstructs.py", "usergpu/drivers/hal.py", "usergpu/tools/cli.py",
                   *(f"usergpu/autogen/isa_{arch}.msgpack" for arch in ("gfx1100", "gfx1200", "gfx942", "gfx950"))):
        assert module in names
    assert not [n for n in names if n.startswith(("tests/", "usergpu/tests/", "usergpu/.venv"))]
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "usergpu = usergpu.tools.cli:main" in zipfile.ZipFile(wheel).read(entry).decode()
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    env = {**os.environ, "PYTHONPATH": str(site)}
    code = ("import usergpu, usergpu.autogen.kfd as k; from usergpu.isa.amd import disasm; "
            "print(usergpu.__file__); print(k.AMDKFD_IOC_GET_VERSION.request); "
            "print(disasm(bytes.fromhex('7e0082be'), 'gfx950')[0])")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    where, request, text = run.stdout.splitlines()
    assert Path(where).is_relative_to(site) and int(request) == 0x80084B01
    assert text == "s_mov_b32 s2, exec_lo"  # the ISA tables' data files are in the wheel


def test_generated_bindings_are_up_to_date():
    run = subprocess.run([sys.executable, "-m", "usergpu.autogen", "--check"], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "skipped" not in run.stdout, run.stdout  # make test installs every header package


def test_ruff_clean():
    run = subprocess.run([sys.executable, "-m", "ruff", "check", str(ROOT)], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stdout
