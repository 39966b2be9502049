"""The QMD the NVIDIA runtime builds, read back through the generated layouts of each version."""

from __future__ import annotations

import functools

import pytest

from usergpu.autogen import nv_classes as nvc
from usergpu.runtime.nv import qmd

PROGRAM, BANK0, BANK4 = 0x12_3456_7800, 0x10_0000_2000, 0x10_0040_0100


@pytest.mark.parametrize(("arch", "version", "layout"), [("sm_86", 3, "NVC6C0_QMDV03_00"),
                                                         ("sm_89", 3, "NVC6C0_QMDV03_00"),
                                                         ("sm_90", 4, "NVCBC0_QMDV04_00"),
                                                         ("sm_120", 5, "NVCDC0_QMDV05_00")])
def test_the_qmd_of_each_version_holds_the_launch(arch, version, layout):
    data = qmd.build(arch, PROGRAM, (7, 5, 3), (64, 4, 2), 0x1480, 40, {0: (BANK0, 0x300), 4: (BANK4, 0x18)}, 64)
    q = nvc.QMD[layout]
    assert len(data) == q.size and qmd.version(arch) == version
    get = functools.partial(q.get, data)
    shift = {3: 0, 4: 0, 5: 4}[version]
    names = {3: ("PROGRAM_ADDRESS_LOWER", "PROGRAM_ADDRESS_UPPER", "CTA_RASTER_WIDTH", "CTA_RASTER_HEIGHT",
                 "CTA_RASTER_DEPTH", "REGISTER_COUNT_V"),
             4: ("PROGRAM_ADDRESS_LOWER", "PROGRAM_ADDRESS_UPPER", "GRID_WIDTH", "GRID_HEIGHT", "GRID_DEPTH",
                 "REGISTER_COUNT"),
             5: ("PROGRAM_ADDRESS_LOWER_SHIFTED4", "PROGRAM_ADDRESS_UPPER_SHIFTED4", "GRID_WIDTH", "GRID_HEIGHT",
                 "GRID_DEPTH", "REGISTER_COUNT")}[version]
    assert (get(names[1]) << 32 | get(names[0])) << shift == PROGRAM
    assert [get(n) for n in names[2:5]] == [7, 5, 3] and get(names[5]) == 40
    assert [get(f"CTA_THREAD_DIMENSION{i}") for i in range(3)] == [64, 4, 2]
    assert get("QMD_MAJOR_VERSION") == version
    lo, hi = qmd.BANK[version]
    bank_shift = 0 if version == 3 else 6
    for i, (address, size) in ((0, (BANK0, 0x300)), (4, (BANK4, 0x18))):
        assert (get(hi, i) << 32 | get(lo, i)) << bank_shift == address
        assert get("CONSTANT_BUFFER_SIZE_SHIFTED4", i) == -(-size // 16) and get("CONSTANT_BUFFER_VALID", i) == 1
    assert get("CONSTANT_BUFFER_VALID", 1) == 0
    shared = "SHARED_MEMORY_SIZE_SHIFTED7" if version == 5 else "SHARED_MEMORY_SIZE"
    assert get(shared) << (7 if version == 5 else 0) == 0x1480


@pytest.mark.parametrize(("arch", "version"), [("sm_80", 3), ("sm_90a", 4), ("sm_100", 5)])
def test_the_version_follows_the_arch(arch, version):
    assert qmd.version(arch) == version
