"""What a launch is checked against (isa/nv/launch_check.py), for the PTX emulator and the runtime alike: a kernel
found by its own name or its C++ one, and grids, blocks and shared memory past the limits refused, saying which."""

from __future__ import annotations

import pytest

from usergpu.errors import LaunchError
from usergpu.isa.nv.launch_check import check_launch, find_kernel

KERNELS = ["_Z4vaddPfS_S_", "_Z4fillPj", "_Z4fillPf", "plain"]


@pytest.mark.parametrize(("name", "found"), [("vadd", "_Z4vaddPfS_S_"), ("plain", "plain"),
                                             ("_Z4fillPf", "_Z4fillPf")])
def test_a_kernel_is_found_by_its_own_name_or_its_unique_cpp_name(name, found):
    assert find_kernel(KERNELS, name, "the cubin") == found


@pytest.mark.parametrize("name", ["fill", "vad", "nope"])  # fill: two overloads
def test_an_unknown_or_ambiguous_name_is_refused_naming_the_kernels(name):
    with pytest.raises(LaunchError, match=rf"no kernel '{name}' in the cubin \(kernels: _Z4vaddPfS_S_, .*plain\)"):
        find_kernel(KERNELS, name, "the cubin")


def test_dimensions_are_three_ints():
    assert check_launch("k", 4, [32, 2], 0, "sm_90") == ((4, 1, 1), (32, 2, 1))


@pytest.mark.parametrize(("grid", "block", "shared", "kw", "says"), [
    ((1,), (0,), 0, {}, "block must be 1 to 3 positive integers"),
    ((1,), (1, 1, 1, 1), 0, {}, "block must be 1 to 3"),
    ((1,), (1025,), 0, {}, r"block \(1025, 1, 1\) has 1025 threads"),
    ((1,), (1, 1, 65), 0, {}, "at most 1024, and at most"),
    ((1, 65536), (1,), 0, {}, "is past the largest"),
    ((1,), (64,), 0, {"reqntid": (64, 2, 1)}, r"kernel k requires blocks of \(64, 2, 1\) threads \(.reqntid\)"),
    ((1,), (256,), 0, {"maxntid": (128, 1, 1)}, r"kernel k takes at most 128 threads a block \(.maxntid"),
    ((1,), (1,), -1, {}, "dynamic shared memory of -1 bytes"),
    ((1,), (1,), 99 * 1024, {"static_shared": 4}, r"101392 bytes of shared memory a block \(4 static, 101376 "
                                                  r"dynamic\): sm_86 has 101376"),
])
def test_a_launch_past_the_limits_is_refused_saying_which(grid, block, shared, kw, says):
    with pytest.raises(LaunchError, match=says):
        check_launch("k", grid, block, shared, "sm_86", **kw)


def test_static_shared_memory_alone_counts_without_dynamic():
    assert check_launch("k", 1, 1, 0, "sm_86", static_shared=99 * 1024) == ((1, 1, 1), (1, 1, 1))
