"""AM's firmware: Debian's Navi31 files (fetched by make setup) parse and check; a corrupt file is refused with the
field, what was expected and what was found."""

from __future__ import annotations

import struct

import pytest

from usergpu.drivers.amd.am.firmware import FirmwareError, load, parse, sos_binaries

NAVI31 = ("gc_11_0_0_mec", "gc_11_0_0_me", "gc_11_0_0_pfp", "gc_11_0_0_rlc", "gc_11_0_0_mes", "gc_11_0_0_imu",
          "psp_13_0_0_sos", "psp_13_0_0_ta", "sdma_6_0_0", "smu_13_0_0")


@pytest.mark.parametrize("name", NAVI31)
def test_navi31_firmware_parses(name):
    fw = load(name)
    assert fw.ip_version[0] in (6, 11, 13) and len(fw.ucode) == fw.header.ucode_size_bytes > 0


def test_the_sos_file_bundles_the_psp_stages():
    parts = sos_binaries(load("psp_13_0_0_sos"))
    assert len(parts) >= 4 and all(parts.values())


def test_mi300x_sos_file_bundles_two_sets_split_at_the_aux_index():
    """psp_13_0_6_sos.bin is a v2.1 file: sixteen binaries, the first eight for current SMU firmware and the eight
    from psp_aux_fw_bin_index for older (the same stages, other builds)."""
    from usergpu.autogen import amdgpu_ucode as uc
    fw = load("psp_13_0_6_sos")
    main, aux = sos_binaries(fw), sos_binaries(fw, aux=True)
    stages = {uc.PSP_FW_TYPE_PSP_SOS, uc.PSP_FW_TYPE_PSP_SYS_DRV, uc.PSP_FW_TYPE_PSP_KDB, uc.PSP_FW_TYPE_PSP_SOC_DRV,
              uc.PSP_FW_TYPE_PSP_INTF_DRV, uc.PSP_FW_TYPE_PSP_DBG_DRV, uc.PSP_FW_TYPE_PSP_RAS_DRV,
              uc.PSP_FW_TYPE_PSP_RL}
    assert set(main) == set(aux) == stages
    assert main[uc.PSP_FW_TYPE_PSP_SYS_DRV] != aux[uc.PSP_FW_TYPE_PSP_SYS_DRV]
    with pytest.raises(FirmwareError, match="header version"):
        sos_binaries(load("psp_13_0_0_sos"), aux=True)


@pytest.mark.parametrize(("damage", "message"), [
    (lambda d: d[:-1], "size_bytes"),
    (lambda d: d[:24] + struct.pack("<I", len(d)) + d[28:], "ucode array"),
    (lambda d: d[:8] + struct.pack("<HH", 2, 0) + struct.pack("<H", 12) + d[14:], "IP version: expected 13.0"),
    (lambda d: d[:32] + struct.pack("<I", 1000) + d[36:], "psp_fw_bin_count"),
    (lambda d: d[:16], "at least the 32-byte common header"),
])
def test_corrupt_files_are_refused(damage, message):
    data = load("psp_13_0_0_sos").data
    with pytest.raises(FirmwareError, match=message):
        parse("psp_13_0_0_sos", damage(data))


def test_a_missing_file_says_how_to_get_it():
    with pytest.raises(FirmwareError, match="gc_99_0_0_mec.bin not found .*make setup"):
        load("gc_99_0_0_mec")
