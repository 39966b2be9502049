"""am_smi (and `usergpu smi`) with bad input: each row one `error:` line and exit 1 (2 for a usage error), no
traceback. Rows run in a folder with two mock machine folders: `nothing` (no machine was ever made there) and
`idle` (a gfx1200 machine whose board no process drives)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_errors import Case, check

NONE = {"MOCKPCI_DIR": "nothing"}
IDLE = {"MOCKPCI_DIR": "idle"}
NO_BOARD = "no mock board under MOCKPCI_DIR (nothing): a process makes one when it opens Device('MOCKPCI+AMD')"
NOT_HELD = "no GPU is driven by AM (no lock held in idle/gfx1200/tmp)"

CASES = [
    Case(["am_smi", "--watch", "-1"], "argument -w/--watch: '-1': a time must be more than 0 seconds", 2),
    Case(["am_smi", "--watch", "0"], "'0': a time must be more than 0 seconds", 2),
    Case(["am_smi", "--watch", "abc"], "'abc' is not a number of seconds", 2),
    Case(["am_smi", "--watch", "--iterations", "0"], "'0': a positive integer must be >= 1", 2),
    Case(["am_smi", "-w", "1", "-i", "abc"], "argument -i/--iterations: 'abc' is not a positive integer", 2),
    Case(["am_smi", "--watch", "--watch_time", "-3"], "'-3': a time must be more than 0 seconds", 2),
    Case(["am_smi", "--iterations", "3"], "am_smi: --iterations needs --watch", 2),
    Case(["am_smi", "--watch_time", "2"], "am_smi: --watch_time needs --watch", 2),
    Case(["am_smi", "--kill"], "am_smi: --kill needs --pids", 2),
    Case(["am_smi", "--list", "--pids"], "argument --pids: not allowed with argument --list", 2),
    Case(["am_smi", "--dev", "nope"], "argument --dev: 'nope' is not a PCI address", 2),
    Case(["am_smi", "--dev", "0000:03:20.0"], "'0000:03:20.0' is not a PCI address", 2),
    Case(["am_smi", "--mock"], NO_BOARD, env=NONE),
    Case(["am_smi", "--list"], NO_BOARD, env=NONE | {"DEV": "MOCKPCI+AMD"}),
    Case(["am_smi", "--mock", "--pids", "--json"], NO_BOARD, env=NONE),
    Case(["am_smi", "--mock", "--watch", "--json"], NO_BOARD, env=NONE),
    Case(["am_smi", "--mock", "--json"], NOT_HELD, env=IDLE),
    Case(["am_smi", "--mock", "--watch", "0.1", "-i", "2"], NOT_HELD, env=IDLE),
    Case(["am_smi", "--mock", "--dev", "03:00.1"], "no PCI function 0000:03:00.1 in idle/gfx1200/sys/bus/pci/devices",
         env=IDLE),
    Case(["usergpu", "smi", "--kill"], "usergpu smi: --kill needs --pids", 2),
    Case(["usergpu", "smi", "--watch", "-1"], "'-1': a time must be more than 0 seconds", 2),
    Case(["usergpu", "smi", "--mock", "--json"], NO_BOARD, env=NONE),
]


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("am-smi-errors")
    (root / "idle" / "gfx1200" / "boards").mkdir(parents=True)  # a machine folder, its boards gone or never booted
    return root


@pytest.mark.parametrize("case", CASES, ids=str)
def test_bad_input(case, folder):
    check(case, cwd=folder)
