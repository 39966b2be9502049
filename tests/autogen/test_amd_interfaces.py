"""The bindings of amdgpu's in-kernel interfaces the AM driver reads and writes (IP discovery, firmware headers,
PSP GFX commands, SMU 13.0.0/14.0.2 messages and tables): known values and sizes, and the generator pieces they
need (packed records, untagged records named by their typedef, bit fields), on a small header written here.
Every layout and constant is also checked against gcc in test_abi_structs."""

from __future__ import annotations

import ctypes
import struct

import pytest
from generated import module

from usergpu.autogen.generator import amdkernel, cstructs, toolchain
from usergpu.errors import ToolchainError


def test_discovery_table_layout_and_ids():
    d = module("amd_discovery")
    assert d.BINARY_SIGNATURE == 0x28211407 and d.DISCOVERY_TABLE_SIGNATURE == 0x53445049
    assert d.HARVEST_TABLE_SIGNATURE == 0x56524148 and d.GC_TABLE_ID == 0x4347
    assert (d.IP_DISCOVERY, d.GC, d.HARVEST_INFO, d.VCN_INFO, d.MALL_INFO, d.NPS_INFO) == (0, 1, 2, 3, 4, 5)
    assert d.table.TOTAL_TABLES == 6
    assert (d.GC_HWID, d.MP1_HWID, d.MP0_HWID, d.MMHUB_HWID, d.OSSSYS_HWID, d.HDP_HWID) == (11, 1, 255, 34, 40, 41)
    assert d.DISCOVERY_TMR_OFFSET == 64 << 10 and d.DISCOVERY_TMR_SIZE == 10 << 10
    # packed (#pragma pack(1)): the sizes the table has on disk
    assert ctypes.sizeof(d.struct_binary_header) == 60 and ctypes.sizeof(d.struct_table_info) == 8
    assert ctypes.sizeof(d.struct_ip_discovery_header) == 80 and ctypes.sizeof(d.struct_die_header) == 4
    for ip in (d.struct_ip, d.struct_ip_v3, d.struct_ip_v4):  # 8 bytes, then num_base_address addresses
        assert ctypes.sizeof(ip) == 8 and ip.base_address.offset == 8
    assert d.struct_ip_v4.base_address_64.offset == 8
    assert d.ip_discovery_header is d.struct_ip_discovery_header  # the header's typedefs


def test_discovery_blob_reads_through_the_structs():
    d = module("amd_discovery")
    tables = b"".join(struct.pack("<4H", off, 0, size, 0) for off, size in ((0x40, 0x58), (0x200, 0x88), (0, 0)) * 2)
    blob = struct.pack("<I4H", d.BINARY_SIGNATURE, 2, 0, 0x1234, 0x3000) + tables
    hdr = d.struct_binary_header.from_buffer_copy(blob)
    assert hdr.binary_signature == d.BINARY_SIGNATURE and hdr.binary_size == 0x3000
    assert hdr.table_list[d.GC].offset == 0x200 and hdr.table_list[d.IP_DISCOVERY].size == 0x58
    # an ip_v4 entry: GC 11.0.0, sub_revision 3 and variant 1 in the low and high nibble of byte 7
    ip = d.struct_ip_v4.from_buffer_copy(struct.pack("<H6B", d.GC_HWID, 0, 2, 11, 0, 0, 0x13) + bytes(8))
    assert (ip.hw_id, ip.num_base_address, ip.major, ip.sub_revision, ip.variant) == (11, 2, 11, 3, 1)
    gc = d.struct_ip_discovery_header.from_buffer_copy(bytes(78) + b"\x01\x00")
    assert gc.base_addr_64_bit == 1  # version 4's flag, in the anonymous union after die_info


def test_firmware_headers():
    u = module("amdgpu_ucode")
    assert ctypes.sizeof(u.struct_common_firmware_header) == 32
    assert u.struct_common_firmware_header.ucode_array_offset_bytes.offset == 24
    assert ctypes.sizeof(u.union_amdgpu_firmware_header) == 256 and u.UCODE_MAX_PSP_PACKAGING == 26
    assert ctypes.sizeof(u.struct_psp_fw_bin_desc) == 16 and u.struct_psp_firmware_header_v2_0.psp_fw_bin.offset == 36
    assert u.struct_psp_firmware_header_v2_1.psp_fw_bin.offset == 40
    assert ctypes.sizeof(u.struct_gfx_firmware_header_v2_0) == 60
    assert u.psp_fw_type.PSP_FW_TYPE_PSP_SOS == 1 and u.AMDGPU_UCODE_ID.AMDGPU_UCODE_ID_SMC > 0
    for left_out in ("struct_amdgpu_firmware", "struct_amdgpu_firmware_info", "struct_kicker_device", "struct_mutex"):
        assert not hasattr(u, left_out)


def test_psp_gfx_interface():
    p = module("psp_gfx_if")
    assert ctypes.sizeof(p.struct_psp_gfx_cmd_resp) == 1024 and p.struct_psp_gfx_cmd_resp.resp.offset == 864
    assert p.struct_psp_gfx_cmd_resp.cmd.offset == 28
    assert ctypes.sizeof(p.struct_psp_gfx_rb_frame) == 64 and ctypes.sizeof(p.struct_psp_gfx_resp) == 96
    assert p.GFX_CTRL_CMD_ID_INIT_GPCOM_RING == 0x20000 and p.GFX_CMD_ID_LOAD_IP_FW == 6
    assert p.GFX_CMD_ID_LOAD_TOC == 0x20
    assert p.psp_gfx_fw_type.GFX_FW_TYPE_RS64_MES == 76 and p.GFX_FLAG_RESPONSE == 0x80000000
    tmr = p.struct_psp_gfx_cmd_setup_tmr()
    tmr.bitfield.virt_phy_addr = 1
    assert tmr.tmr_flags == 2  # the bit field and the flags word share the anonymous union


def test_smu_13_0_0_and_14_0_2():
    s13, s14 = module("smu_v13_0_0"), module("smu_v14_0_2")
    for s in (s13, s14):
        assert s.PPSMC_MSG_GetSmuVersion == 0x2 and s.PPSMC_Result_OK == 0x1 and s.PPSMC_MSG_TransferTableSmu2Dram
        assert s.TABLE_SMU_METRICS == 5 and s.TABLE_PPTABLE == 0
        assert s.SmuMetrics_t._cname_ == "SmuMetrics_t"  # the untagged firmware struct, by its typedef
        assert s.SmuMetricsExternal_t.SmuMetrics.offset == 0
    assert s13.SMU13_0_0_DRIVER_IF_VERSION == 0x3D and s13.THROTTLER_COUNT == 22
    assert s13.PPTable_t._pack_ == 1 and s13.PPTable_t.BoardTable.offset == ctypes.sizeof(s13.SkuTable_t)
    assert ctypes.sizeof(s13.SmuMetrics_t) == 244 and ctypes.sizeof(s13.SmuMetricsExternal_t) == 392
    assert s13.struct_smu_13_0_0_powerplay_table.header.offset == 0
    assert s13.struct_atom_common_table_header._cname_ == "struct atom_common_table_header"


TOY = r"""
#include <stdint.h>
#pragma pack(push, 1)
typedef struct { uint8_t a; uint32_t b; } packed_t;
#pragma pack(pop)
struct tagged { uint16_t lo : 4, hi : 12; uint64_t x; } __attribute__((packed));
typedef struct { packed_t p; struct tagged t; uint32_t flex[]; } outer_t;
"""


def test_packed_typedef_named_and_bit_field_records(tmp_path):
    h = tmp_path / "toy.h"
    h.write_text(TOY)
    ns: dict = {}
    exec(cstructs.render("toy", [h], ["test: toy.h"]), ns)
    assert ns["packed_t"]._cname_ == "packed_t" and ns["packed_t"]._pack_ == 1 and ctypes.sizeof(ns["packed_t"]) == 5
    tagged = ns["struct_tagged"]
    assert tagged._cname_ == "struct tagged" and ctypes.sizeof(tagged) == 10 and tagged.x.offset == 2
    t = tagged(hi=0xABC, lo=5)
    assert bytes(t)[:2] == (0xABC << 4 | 5).to_bytes(2, "little")
    outer = ns["outer_t"]
    assert outer._cname_ == "outer_t" and outer.t.offset == 5 and outer.flex.offset == 16 and ctypes.sizeof(outer) == 16
    assert "struct_c__SA" not in repr(ns)  # no made-up names


@pytest.mark.parametrize("row", amdkernel.MODULES, ids=lambda m: m.name)
def test_generator_raises_toolchain_error_without_linux_source(row, tmp_path, monkeypatch):
    monkeypatch.setattr(toolchain, "CACHE", tmp_path)
    monkeypatch.setattr(toolchain, "LINUX_TARBALL", tmp_path / "absent.tar.xz")
    with pytest.raises(ToolchainError, match="linux-source-6.12"):
        row.render()


def test_the_kernel_prelude_is_the_kernel_x86_view():
    text = amdkernel.kernel_header().read_text()
    assert "#define LITTLEENDIAN_CPU" in text and "#undef __BIG_ENDIAN" in text and "typedef uint8_t u8;" in text
