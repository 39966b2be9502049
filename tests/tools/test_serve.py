"""`usergpu serve` as a command: it listens on loopback by default and says where, stops cleanly on SIGTERM, and
bad options are one error line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from cli_errors import Case, check

USERGPU = Path(sys.executable).parent / "usergpu"


def test_serves_the_mock_boards_on_loopback_and_stops_on_sigterm(tmp_path):
    env = {**os.environ, "MOCKPCI_DIR": str(tmp_path), "MOCKGPU_ARCH": "gfx1100"}
    proc = subprocess.Popen([str(USERGPU), "serve", "--dev", "MOCKPCI+AMD", "--listen", "127.0.0.1:0", "--json"],
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        started = json.loads(proc.stderr.readline())
        assert started["event"] == "listening" and started["address"].startswith("127.0.0.1:")
        assert started["boards"] == ["0000:03:00.0"] and started["allow"] == ["127.0.0.0/8", "::1/128"]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert json.loads(proc.stderr.readline()) == {"event": "stopped"}
    finally:
        proc.kill()


CASES = [
    Case(["usergpu", "serve", "--listen", "0.0.0.0:6667", "--dev", "MOCKPCI+AMD"],
         "serve: listening on 0.0.0.0 needs --allow with the networks clients may come from"),
    Case(["usergpu", "serve", "--listen", "localhost"], "'localhost': --listen takes ADDRESS:PORT (127.0.0.1:6667)", 2),
    Case(["usergpu", "serve", "--allow", "10.0.0.300/8"], "'10.0.0.300/8': --allow takes a network (10.0.0.0/8) or an "
         "address", 2),
    Case(["usergpu", "serve", "--dev", "MOCKKFD+AMD"], "'MOCKKFD+AMD': serve exports PCI+AMD or MOCKPCI+AMD", 2),
]


def test_bad_input_is_one_error_line():
    for case in CASES:
        check(case)
