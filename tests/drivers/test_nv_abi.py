"""The NVIDIA driver's choice of bindings by release, and the escape numbers it makes."""

from __future__ import annotations

import ctypes

import pytest

from usergpu.drivers.nv import abi
from usergpu.drivers.nv.gpu import sm_arch
from usergpu.errors import DriverError


@pytest.mark.parametrize(("release", "size"), [("535.261.03", 120), ("535.54.03", 120), ("555.58.02", 128),
                                               ("580.65.06", 128)])
def test_a_release_picks_the_bindings_of_its_branch(release, size):
    got = abi.for_release(release)
    assert got.name == release.split(".")[0]
    assert ctypes.sizeof(got.rm.NV_MEMORY_ALLOCATION_PARAMS) == size  # NV.md: 120 bytes in 535, 128 from 550


def test_a_release_of_no_bound_branch_is_refused_naming_it_and_the_bound_ones():
    with pytest.raises(DriverError, match=r"610\.43\.02, of a branch.*535 \(535\.261\.03\), 550 \(550\.163\.01\)"):
        abi.for_release("610.43.02")
    with pytest.raises(DriverError, match="'580.x', which is no release number"):
        abi.for_release("580.x")


def test_escape_numbers_are_iowr_of_type_f_with_the_struct_size():
    query = abi.version_query()
    assert ctypes.sizeof(query) == 72  # NV_ESC_CHECK_VERSION_STR's struct, the same in every release
    assert abi.request(0xD2, 72) == 0xC04846D2
    assert query.cmd == ord("2")  # NV_RM_API_VERSION_CMD_QUERY


@pytest.mark.parametrize(("version", "arch"), [(0x800, "sm_80"), (0x806, "sm_86"), (0x809, "sm_89"), (0x900, "sm_90"),
                                               (0xC00, "sm_120")])
def test_the_gr_sm_version_names_the_arch(version, arch):
    assert sm_arch(version) == arch
