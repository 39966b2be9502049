"""usergpu devices on an NVIDIA driver usergpu cannot drive: the GPU is listed with the release the driver reports
and why usergpu cannot speak to it, in the table and in --json, and listing still succeeds. The mock NVIDIA
driver (MOCK+NV) answers NV_ESC_CHECK_VERSION_STR's QUERY with its machine's release, so a test sets that to a
release of no bound branch, as a newer nvidia.ko would report."""

from __future__ import annotations

import errno
import json

import pytest

from usergpu.emu.nv.mock.machine import mock_nv_hal
from usergpu.isa.nv.releases import BRANCHES
from usergpu.tools import cli

BOUND = ", ".join(f"{branch} ({release})" for branch, release in BRANCHES.items())


@pytest.fixture
def hal(monkeypatch):
    """The mock machine of the newest bound release, its driver reporting what a test sets as hal.nv.release."""
    hal = mock_nv_hal("sm_90", 1, "595.45.04")
    monkeypatch.setattr(hal.nv, "release", hal.nv.release)  # put back after the test: machines are kept
    return hal


def _listed(hal, capsys) -> tuple[str, dict]:
    assert cli.main(["devices"], hal) == 0
    table = capsys.readouterr().out
    assert cli.main(["devices", "--json"], hal) == 0
    (gpu,) = json.loads(capsys.readouterr().out)["devices"]
    return " ".join(table.split()), gpu  # the table's wrapped cells joined again


@pytest.mark.parametrize("release", ["999.1", "610.43.02", "540.3.2"])  # newer; a later branch; a skipped one
def test_a_release_of_no_bound_branch_is_named_with_the_branches_bound(hal, capsys, release):
    hal.nv.release = release
    table, gpu = _listed(hal, capsys)
    why = f"none: the NVIDIA driver is release {release}, of a branch usergpu has no bindings for; it binds " \
          f"branches {BOUND}"
    assert (gpu["release"], gpu["bindings"]) == (release, why)
    assert (gpu["vendor"], gpu["driver"], gpu["device_id"], gpu["arch"], gpu["model"]) == (
        "NV", "nvidia", 0x2335, None, None)  # the driver was not asked what it cannot be asked in its ABI
    assert f"{release} ({why})" in table


def test_a_release_string_that_is_no_number(hal, capsys):
    hal.nv.release = "rc-build"
    _, gpu = _listed(hal, capsys)
    assert gpu["release"] == "rc-build"
    assert gpu["bindings"] == "none: the NVIDIA driver reports release 'rc-build', which is no release number"


def test_an_older_release_of_a_bound_branch_is_driven(hal, capsys):
    hal.nv.release = "595.28.03"  # the mock speaks branch 595's ABI, as that driver does
    table, gpu = _listed(hal, capsys)
    assert (gpu["arch"], gpu["model"], gpu["release"]) == ("sm_90", "NVIDIA H200", "595.28.03")
    assert gpu["bindings"].startswith("bindings nv_rm_595 + nv_uvm_595; 595.28.03 is older than 595.45.04")
    assert "none:" not in table


def test_a_control_device_the_user_may_not_open(hal, capsys, monkeypatch):
    def refuse():
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setitem(hal._devices, "/dev/nvidiactl", refuse)
    _, gpu = _listed(hal, capsys)
    assert gpu["release"] is None and gpu["bindings"] == (
        "none: open /dev/nvidiactl failed: Permission denied (errno 13): is the nvidia kernel module loaded, and may "
        "you open its device files?")


def test_a_driver_that_refuses_a_later_request(hal, capsys):
    """A release of a bound branch whose driver then refuses a control (here the mock of 595 sent 550's layouts):
    the RM's status, by name, is the reason."""
    hal.nv.release = "550.1"
    _, gpu = _listed(hal, capsys)
    assert gpu["release"] == "550.1" and gpu["arch"] is None
    assert gpu["bindings"].startswith("none: NV_ESC_RM_CONTROL NV2080_CTRL_CMD_GPU_GET_NAME_STRING on 0x")
    assert gpu["bindings"].endswith("failed: NV_ERR_INVALID_ARGUMENT (0x1f): Invalid argument to call")
