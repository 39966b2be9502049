"""usergpu's AM over REMOTE (drivers/remote/client.py): it boots the mock gfx1100 and gfx1200 boards another
process's server exports and runs the showcase kernels with numpy's results; the VRAM mirror pushes only what the
CPU changed (and a newly shared part whole) and pulls after pushing; `usergpu devices` and am_smi list remote
boards; a server that is not there, or a board another client holds, is a clear error."""

from __future__ import annotations

import json

import numpy as np
import pytest

from usergpu.drivers import devices
from usergpu.drivers.hal import HAL
from usergpu.drivers.remote import client
from usergpu.drivers.remote.client import Link, remote_board, remote_functions
from usergpu.drivers.remote.mirror import GAP, Mirror
from usergpu.errors import DeviceNotFound, DriverError


@pytest.fixture
def remote(served, monkeypatch):
    """REMOTE naming the served board's server, for this process; its connection dropped afterwards."""
    address = f"{served[0]}:{served[1]}"
    monkeypatch.setenv("REMOTE", address)
    for name in ("MOCKPCI_DIR", "MOCKGPU_ARCH", "MOCKPCI_VFIO"):
        monkeypatch.delenv(name, raising=False)
    yield address
    if address in client._links:
        client._links.pop(address).close()


@pytest.mark.parametrize(("served", "arch"), [("gfx1100", "gfx1100"), ("gfx1200", "gfx1200")], indirect=["served"])
def test_am_boots_a_remote_board_and_runs_the_showcase(remote, arch):
    from usergpu.tools import showcase

    dev, results = showcase.run("PCI+AMD")
    try:
        assert dev.arch == arch
        assert [(r.case.kernel, r.check) for r in results] == [("vadd", "OK"), ("matmul", "OK"),
                                                                ("reduce_sum", "OK")]
        buf = dev.alloc(3 << 20)  # past one page of every kind of copy: SDMA through staging, both ways
        data = np.random.default_rng(1).integers(0, 2**32, 3 << 18, dtype=np.uint32)
        buf.copyin(data)
        assert np.array_equal(buf.copyout(np.uint32), data)
    finally:
        dev.close()


def test_devices_lists_the_remote_boards(remote):
    found = [g for g in devices.find(HAL()) if g.pci.startswith("remote:")]
    assert [(g.pci, g.vendor, g.device_id) for g in found] == [(f"remote:{remote}:0", "AMD", 0x744C)]
    assert found[0].memory == 24 << 30


def test_a_board_another_client_holds_is_refused_naming_the_holder(remote):
    mine = remote_functions([remote], 0x1002)[0]
    assert mine.bar(0).prefetchable
    other = remote_board(mine.name)
    try:
        with pytest.raises(DriverError, match=r"MAP_BAR.*is held by 127\.0\.0\.1:"):
            other.bar(5)
    finally:
        other.link.close()


def test_a_server_that_is_not_there_is_device_not_found():
    with pytest.raises(DeviceNotFound, match=r"REMOTE 127\.0\.0\.1:1: cannot connect"):
        Link("127.0.0.1:1")
    with pytest.raises(DeviceNotFound, match="is not a remote board's address"):
        remote_board("0000:03:00.0")


class Board:
    """A BAR behind fake requests: what the mirror wrote and read."""

    def __init__(self, size: int):
        self.bytes, self.writes = bytearray(size), []

    def write(self, at: int, data: bytes) -> None:
        self.writes.append((at, len(data)))
        self.bytes[at : at + len(data)] = data

    def read(self, parts):
        return [bytes(self.bytes[at : at + n]) for at, n in parts]


def test_the_mirror_pushes_a_new_part_whole_then_only_the_changed_runs():
    board = Board(1 << 20)
    board.bytes[0x2000:0x3000] = b"\xff" * 0x1000  # an earlier owner's data: a new part must clear it
    mirror = Mirror(1 << 20, board.write, board.read)
    mirror.share(0x2000, 0x2000)
    mirror.push()
    assert board.writes == [(0x2000, 0x2000)] and board.bytes[0x2000:0x4000] == bytes(0x2000)
    board.writes.clear()
    mirror.local[0x2000 // 4 + 1] = 7
    mirror.local[0x2000 // 4 + 3] = 8  # close to the first: one write
    mirror.local[0x2000 // 4 + 10 + GAP] = 9  # past GAP unchanged dwords: a write of its own
    mirror.push()
    assert board.writes == [(0x2004, 12), (0x2000 + 4 * (10 + GAP), 4)]
    board.writes.clear()
    mirror.push()
    assert board.writes == []  # nothing changed since


def test_the_mirror_pulls_what_the_board_wrote_after_pushing_the_cpus_writes():
    board = Board(1 << 16)
    mirror = Mirror(1 << 16, board.write, board.read)
    mirror.share(0, 0x1000)
    mirror.push()
    mirror.local[0] = 0x1234  # the CPU's, not pushed yet
    board.bytes[8:12] = (0x5678).to_bytes(4, "little")  # the GPU's
    mirror.pull()
    assert mirror.local[0] == 0x1234 and mirror.local[2] == 0x5678
    assert board.bytes[0:4] == (0x1234).to_bytes(4, "little")
    mirror.unshare(0)
    board.writes.clear()
    mirror.local[0] = 1
    mirror.push()
    assert board.writes == []  # a part no longer shared is not the mirror's
    mirror.close()


def test_am_smi_reads_a_free_remote_board_and_names_the_holder_of_a_held_one(remote, capsys, monkeypatch, tmp_path):
    from usergpu.drivers.amd.am import lock
    from usergpu.tools import am_smi

    # this host's AM locks are not this test's: another test process may hold one of them meanwhile
    monkeypatch.setattr(lock, "LOCK_DIR", str(tmp_path))
    assert am_smi.main(["--json"]) == 0
    (board,) = json.loads(capsys.readouterr().out)["boards"]
    assert board["bus"] == f"remote:{remote}:0" and board["name"] == "Radeon RX 7900 XTX"
    assert board["vram_total"] == 24 << 30 and board["smu_version"].count(".") == 2
    held = remote_functions([remote], 0x1002)[0]
    held.bar(5)  # this process's connection holds the board now; am_smi's own is another client
    assert am_smi.main(["--json", "--dev", held.name]) == 0
    (board,) = json.loads(capsys.readouterr().out)["boards"]
    assert board["power_state"].startswith("remote; device 0") and "is held by 127.0.0.1:" in board["power_state"]
