"""Random raw calls on every mock device file (ioctl_fuzz.py), each file in a process of its own: no signal kills
it, and every answer is a success or an errno. The errno each file must have given says the fuzz reached the
paths that check pointers and sizes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

FUZZ = Path(__file__).with_name("ioctl_fuzz.py")
COUNT = 2000
# file -> errno its fuzz must see among the answers (bad pointers, bad sizes, what the file lacks)
EXPECTED = {"kfd": {"EFAULT", "EINVAL", "ENOMEM", "EBUSY", "ENOTTY", "EPERM"}, "render": {"EINVAL", "ENOTTY"},
            "vfio-container": {"EFAULT", "EINVAL", "ENOTTY"}, "vfio-group": {"EFAULT", "EINVAL", "EBADF"},
            "vfio-device": {"EFAULT", "EINVAL", "ENOTTY"}, "pci-config": {"EFBIG", "EINVAL", "ENOTTY"},
            "pci-resource": {"EIO", "EINVAL", "ENOMEM"}, "usb": {"EPIPE", "ETIMEDOUT"}}


@pytest.mark.parametrize("name", EXPECTED)
def test_random_calls_get_only_errno_answers(name):
    p = subprocess.run([sys.executable, str(FUZZ), "--file", name, "--count", str(COUNT), "--json"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"the fuzz of {name} ended with {p.returncode}:\n{p.stderr[-3000:]}"
    got = json.loads(p.stdout.splitlines()[-1])
    assert got["other"] == {}, got["examples"]
    assert got["calls"] >= COUNT and got["ok"] > 0
    assert EXPECTED[name] <= set(got["errno"]), got["errno"]
