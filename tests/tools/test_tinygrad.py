"""An unmodified tinygrad (PyPI, the `tinygrad` extra) on usergpu's mock GPUs: the program suite
(tinygrad_programs/test_programs.py, each program checked against numpy) run through `usergpu mock` for each arch,
queue kind and renderer. tinygrad's AMD renderers: HIP (the default where ROCm's comgr >= 6 loads; Debian 12's 5.2
does not know gfx11) and LLVM (DEV=...:LLVM); the default run takes whichever tinygrad picks. On MOCK+NV tinygrad
loads PTX (its renderer's, for a mock interface) and speaks its 570 layouts below release 580, its 580 ones from
580 on: Ada on 570.211.01, Blackwell on the newest release."""

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

pytest.importorskip("tinygrad")

SUITE = Path(__file__).parent / "tinygrad_programs" / "test_programs.py"
USERGPU = Path(sys.executable).parent / "usergpu"
CONFIGS = {  # name -> (usergpu mock options, environment)
    "gfx1100-pm4-llvm": (["--arch", "gfx1100"], {"DEV": "MOCKKFD+AMD:LLVM"}),
    "gfx1100-aql-llvm": (["--arch", "gfx1100"], {"DEV": "MOCKKFD+AMD:LLVM", "AMD_AQL": "1"}),
    "gfx1200-pm4-llvm": (["--arch", "gfx1200"], {"DEV": "MOCKKFD+AMD:LLVM"}),
    "gfx1200-aql-llvm": (["--arch", "gfx1200"], {"DEV": "MOCKKFD+AMD:LLVM", "AMD_AQL": "1"}),
    "gfx1100-pm4-default-2gpus": (["--arch", "gfx1100", "--count", "2"], {"DEV": "MOCKKFD+AMD"}),
    "gfx942-aql-llvm": (["--arch", "gfx942"], {"DEV": "MOCKKFD+AMD:LLVM"}),  # MI300X: tinygrad's default is AQL
    "gfx950-pm4-llvm": (["--arch", "gfx950"], {"DEV": "MOCKKFD+AMD:LLVM", "AMD_AQL": "0"}),
    # MI300X through tinygrad's own AM driver (over REMOTE against usergpu serve's mock board)
    "gfx942-am-llvm": (["--arch", "gfx942"], {"DEV": "MOCKPCI+AMD:LLVM"}),
    "sm_89-570-nv": (["--dev", "MOCK+NV", "--arch", "sm_89", "--release", "570.211.01"], {}),
    "sm_120-595-nv": (["--dev", "MOCK+NV", "--arch", "sm_120"], {}),
}


@pytest.mark.parametrize("config", CONFIGS)
def test_program_suite(config, tmp_path):
    options, env = CONFIGS[config]
    env = {**os.environ, **env, "CACHEDB": str(tmp_path / "cache.db"), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTEST_XDIST_WORKER", None)
    run = subprocess.run([str(USERGPU), "mock", *options, "--", sys.executable, "-m", "pytest", "-q", "-x",
                          "-p", "no:cacheprovider", "-p", "no:xdist", str(SUITE)],
                         env=env, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    assert " passed" in run.stdout and " failed" not in run.stdout


@pytest.fixture(scope="session")
def tinygrad_sdist(tmp_path_factory) -> Path:
    """tinygrad's source distribution of the installed version (it holds tinygrad's own test/test_tiny.py), from
    the package registry, unpacked; the test skips where the registry cannot be reached."""
    from importlib.metadata import version

    where = tmp_path_factory.mktemp("sdist")
    got = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                          f"tinygrad=={version('tinygrad')}", "-d", str(where)], capture_output=True, text=True,
                         timeout=300)
    archives = list(where.glob("tinygrad-*.tar.gz"))
    if got.returncode or not archives:
        pytest.skip(f"tinygrad's sdist could not be fetched: {got.stderr.strip()[-300:]}")
    with tarfile.open(archives[0]) as tar:
        tar.extractall(where, filter="data")
    return next(where.glob("tinygrad-*/test")).parent


@pytest.mark.parametrize(("dev", "options"), [("MOCKKFD+AMD:LLVM", []), ("MOCK+NV", ["--arch", "sm_89"]),
                                              ("MOCKPCI+AMD:LLVM", ["--arch", "gfx942"])])
def test_tinygrads_own_test_file(tinygrad_sdist, dev, options):
    """tinygrad's test/test_tiny.py, run in tinygrad's source tree (its own `test` package next to it) as its CI
    runs it, on the mock (its CPU-device parts compile with clang-22); on MOCKPCI+AMD through tinygrad's own AM
    driver, which boots the mock MI300X first."""
    env = {**os.environ, "DEV": dev, "CC": "clang-22", "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTEST_XDIST_WORKER", None)
    run = subprocess.run([str(USERGPU), "mock", *options, "--", sys.executable, "-m", "pytest", "-q", "-p",
                          "no:cacheprovider", "-p", "no:xdist", "test/test_tiny.py"], env=env, cwd=tinygrad_sdist,
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0 and " passed" in run.stdout, run.stdout[-6000:] + run.stderr[-3000:]
