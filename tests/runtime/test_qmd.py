"""The QMD the NVIDIA runtime builds, read back through the generated layouts of each version: the launch, the
fields each generation sets beside it, and a field its layout lacks as an error."""

from __future__ import annotations

import functools

import pytest

from usergpu.autogen import nv_classes as nvc
from usergpu.errors import FieldError
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
    assert get("CONSTANT_BUFFER_INVALIDATE", 0) == 1 and get("CONSTANT_BUFFER_INVALIDATE", 4) == 0


# what each version sets beside the launch (named values by the version's own header)
SET = {3: {"SM_GLOBAL_CACHING_ENABLE": 1},
       4: {"QMD_TYPE": nvc.NVCBC0_QMDV04_00_QMD_TYPE_GRID_CTA},
       5: {"QMD_TYPE": nvc.NVCDC0_QMDV05_00_QMD_TYPE_GRID_CTA}}


@pytest.mark.parametrize(("arch", "sass"), [("sm_86", 0x86), ("sm_89", 0x89), ("sm_90", 0x90), ("sm_120", 0xC0)])
def test_each_generation_sets_its_fields(arch, sass):
    version = qmd.version(arch)
    prefix = qmd.LAYOUTS[version]
    data = qmd.build(arch, PROGRAM, (1, 1, 1), (32, 1, 1), 0x1480, 16, {0: (BANK0, 0x300)})
    got = nvc.QMD[prefix].decode(data)
    want = {"SASS_VERSION": sass, "QMD_GROUP_ID": 0x3F, "BARRIER_COUNT": 1,
            "API_VISIBLE_CALL_LIMIT": getattr(nvc, f"{prefix}_API_VISIBLE_CALL_LIMIT_NO_CHECK"),
            "SAMPLER_INDEX": getattr(nvc, f"{prefix}_SAMPLER_INDEX_VIA_HEADER_INDEX"),
            "CWD_MEMBAR_TYPE": getattr(nvc, f"{prefix}_CWD_MEMBAR_TYPE_L1_SYSMEMBAR"),
            **{f"INVALIDATE_{c}_CACHE": 1 for c in ("TEXTURE_HEADER", "TEXTURE_SAMPLER", "TEXTURE_DATA",
                                                    "SHADER_DATA", "INSTRUCTION", "SHADER_CONSTANT")},
            # 0x1480 bytes: the 8 KiB carveout (8 / 4 + 1); the most the arch's SM can give
            "MIN_SM_CONFIG_SHARED_MEM_SIZE": 3, "TARGET_SM_CONFIG_SHARED_MEM_SIZE": 3,
            "MAX_SM_CONFIG_SHARED_MEM_SIZE": qmd.sm_config(0, arch)[1], **SET[version]}
    assert {k: got[k] for k in want} == want
    assert ("QMD_TYPE" in got) == (version > 3)  # V03 has IS_QUEUE instead, 0 a grid


@pytest.mark.parametrize(("shared", "arch", "config"), [
    (0, "sm_86", (3, 26)), (8 * 1024 + 1, "sm_86", (5, 26)), (70 * 1024, "sm_89", (26, 26)),
    (101 * 1024, "sm_80", (34, 42)), (190 * 1024, "sm_90", (50, 58)), (99 * 1024, "sm_120", (26, 26))])
def test_the_shared_memory_configuration_is_a_carveout(shared, arch, config):
    """KiB / 4 + 1 of the smallest carveout holding the shared memory, and of the SM's whole one (100 KiB on
    sm_86/89/120, 164 on sm_80, 228 on sm_90)."""
    assert qmd.sm_config(shared, arch) == config


@pytest.mark.parametrize("version", qmd.VERSIONS)
def test_every_field_named_is_in_its_layout(version, monkeypatch):
    """No entry of the table is skipped: each names a field of its version's layout (and of every layout of that
    version the generated tables hold), and a misspelt one is a FieldError, not a field left out."""
    layouts = [k for k in nvc.QMD if k.endswith(qmd.LAYOUTS[version][6:])]
    names = [n[version] for n in qmd.FIELDS.values() if version in n] + list(qmd.BANK[version])
    assert len(layouts) >= 1 and all(n in nvc.QMD[k].fields for k in layouts for n in names)
    monkeypatch.setitem(qmd.FIELDS, "barriers", {**qmd.FIELDS["barriers"], version: "BARRIER_COUNTS"})
    arch = {3: "sm_86", 4: "sm_90", 5: "sm_120"}[version]
    with pytest.raises(FieldError, match="no field BARRIER_COUNTS"):
        qmd.build(arch, PROGRAM, (1, 1, 1), (32, 1, 1), 0, 16, {0: (BANK0, 0x300)})


@pytest.mark.parametrize(("arch", "version"), [("sm_80", 3), ("sm_90a", 4), ("sm_100", 5)])
def test_the_version_follows_the_arch(arch, version):
    assert qmd.version(arch) == version
