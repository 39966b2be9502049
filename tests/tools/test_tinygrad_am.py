"""tinygrad's own AM driver, unmodified, on usergpu's mock boards: `usergpu mock --dev MOCKPCI+AMD` gives tinygrad's
process the board (in it, or served over REMOTE with --remote) and seeds tinygrad's download cache with Debian's
firmware blobs identical to the ones tinygrad pins.
tinygrad probes the board, reads its config space, BARs and IP discovery through the mock, loads every pinned blob
Debian carries from the cache, and stops at the first one no reachable package carries: its fetch fails (no network:
a proxy that refuses), and the test names that blob. Each blob seeded into the cache has the sha256 tinygrad pins."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("tinygrad")

from usergpu.drivers.amd.am import firmware  # noqa: E402

USERGPU = Path(sys.executable).parent / "usergpu"
# what the script tinygrad runs under prints: the URL of the fetch that failed (read from tinygrad's fetch frame)
SCRIPT = """
import sys, urllib.error
from tinygrad import Device
try:
    Device["AMD"]
except urllib.error.URLError as e:
    tb, url = e.__traceback__, None
    while tb is not None:
        url = tb.tb_frame.f_locals.get("url", url) if tb.tb_frame.f_code.co_name == "fetch" else url
        tb = tb.tb_next
    print("FETCH", url)
    sys.exit(3)
print("UP")
"""
# board -> (the blobs tinygrad loads from the cache before, the first blob Debian's package does not carry as pinned)
STOPS = {"gfx1100": (["psp_13_0_0_sos.bin"], "smu_13_0_0.bin"),
         "gfx1200": (["psp_14_0_2_sos.bin", "smu_14_0_2.bin", "sdma_7_0_0.bin"], "gc_12_0_0_pfp.bin")}


def cache_home(tmp_path: Path) -> Path:
    """An XDG_CACHE_HOME of the test's own (tinygrad's cache in it, empty), where usergpu's cache (the firmware
    `make firmware` unpacked) is the real one."""
    home = tmp_path / "cache"
    home.mkdir()
    (home / "usergpu").symlink_to(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "usergpu")
    return home


@pytest.fixture
def pinned_firmware():
    if firmware.find("gc_11_0_0_pfp") is None or firmware.find("gc_12_0_0_pfp") is None:
        pytest.skip("no gfx11 and gfx12 firmware: `make firmware` fetches Debian's firmware-amd-graphics")


@pytest.mark.parametrize("route", [[], ["--remote"]], ids=["in-process", "remote"])
@pytest.mark.parametrize("arch", STOPS)
def test_tinygrads_am_runs_on_the_mock_board_up_to_the_missing_blob(arch, route, tmp_path, pinned_firmware):
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home(tmp_path)), "AM_DEBUG": "1", "DEBUG": "1",
           "https_proxy": "http://127.0.0.1:9", "PYTHONDONTWRITEBYTECODE": "1"}
    run = subprocess.run([str(USERGPU), "mock", "--dev", "MOCKPCI+AMD", "--arch", arch, *route, "--", sys.executable,
                          "-c", SCRIPT], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    loaded, missing = STOPS[arch]
    assert run.returncode == 3, run.stdout[-3000:] + run.stderr[-3000:]
    (fetch,) = [line.split()[1] for line in run.stdout.splitlines() if line.startswith("FETCH ")]
    assert fetch.endswith(f"/amdgpu/{missing}")
    assert [line.split()[4].rstrip(":") for line in run.stdout.splitlines() if "loading firmware" in line] == loaded
    assert ("remote: sent" in run.stdout) == bool(route)  # its requests went to the server (tinygrad's count)


def test_the_cache_holds_only_blobs_with_tinygrads_sha256(tmp_path, pinned_firmware):
    home = cache_home(tmp_path)
    code = ("import json, dataclasses; from usergpu.tools.tinygrad_cache import seed, cache_file, pins; s = seed(); "
            "print(json.dumps({**dataclasses.asdict(s), 'files': {n: str(cache_file(n, h)) for n, h in "
            "pins().items()}, 'pins': pins()}))")
    got = json.loads(subprocess.run([sys.executable, "-c", code], env={**os.environ, "XDG_CACHE_HOME": str(home)},
                                    capture_output=True, text=True, check=True, timeout=120).stdout)
    assert got["placed"] and "smu_13_0_0.bin" in got["differ"] and "psp_13_0_0_sos.bin" in got["placed"]
    for name, path in got["files"].items():
        path = Path(path)
        assert path.is_relative_to(home / "tinygrad" / "downloads")
        if name in got["placed"]:
            assert hashlib.sha256(path.read_bytes()).hexdigest() == got["pins"][name]
            assert path.read_bytes() == firmware.find(name.removesuffix(".bin")).read_bytes()
        else:
            assert not path.exists()  # a blob that differs from the pin is never placed
    assert sorted(got["placed"] + got["differ"] + got["missing"]) == sorted(got["pins"])
