"""The one dispatch path: COMPUTE_* registers worked out from a kernel descriptor (kernel_registers, user_sgpr_values),
a dispatch run from registers and GPU memory alone, and the Memory calls a command processor needs (map_at, unmap,
read_bytes, write_bytes)."""

from __future__ import annotations

import numpy as np
import pytest

import usergpu
from usergpu.autogen.amdhsa import BITFIELDS, kernel_descriptor_t
from usergpu.emu import native
from usergpu.emu.amd.exec.dispatch import dispatch
from usergpu.emu.memory import BASE, GUARD, MappingError, Memory, MemoryFault
from usergpu.errors import Error, GPUFault, LaunchError
from usergpu.isa import amd as isa
from usergpu.isa.amd.codeobj import parse
from usergpu.isa.amd.dispatch import REGS, kernel_registers, user_sgpr_values

LDS_KERNEL = """
__kernel void tile(__global int *a) {
  __local int t[300];  // 1200 bytes: three 512-byte LDS_SIZE granules
  uint x = __builtin_amdgcn_workitem_id_x(), y = __builtin_amdgcn_workitem_id_y();
  t[x + y] = a[x] + (int)__builtin_amdgcn_workgroup_id_y();
  __builtin_amdgcn_s_barrier();
  a[x] = t[299 - x];
}
"""


def field(arch: str, reg: str, value: int) -> dict[str, int]:
    return REGS[int(arch[3:5])][reg].decode(value)


# ---- kernel_registers and user_sgpr_values -------------------------------------------------------------------------
@pytest.mark.parametrize(("arch", "wave"), [("gfx1100", 32), ("gfx1100", 64), ("gfx1200", 32)])
def test_kernel_registers_of_a_compiled_kernel(arch, wave):
    k = parse(usergpu.compile_opencl(LDS_KERNEL, arch, ["-mwavefrontsize64"] if wave == 64 else [])).kernels["tile"]
    kd, kd_address = bytes(k.descriptor), 0x0000_8000_1230_0000 + k.descriptor_addr
    code = kd_address + k.descriptor.kernel_code_entry_byte_offset
    user = user_sgpr_values(kd, arch, {"kernarg_segment_ptr": 0x1_2345_6780})
    regs = kernel_registers(kd, kd_address, arch, (64, 2, 1), user, scratch_per_lane=260)

    assert regs["COMPUTE_PGM_LO"] == (code >> 8) & 0xFFFFFFFF and regs["COMPUTE_PGM_HI"] == 0x80
    assert regs["COMPUTE_PGM_RSRC1"] == k.descriptor.compute_pgm_rsrc1
    assert regs["COMPUTE_PGM_RSRC3"] == k.descriptor.compute_pgm_rsrc3
    rsrc1 = field(arch, "COMPUTE_PGM_RSRC1", regs["COMPUTE_PGM_RSRC1"])
    assert rsrc1["FLOAT_MODE"] == 0xF0  # round to nearest, denormals kept (FP_DENORM_32 = FP_DENORM_16_64 = 3)
    assert (rsrc1["VGPRS"] + 1) * (8 if wave == 32 else 4) >= k.vgpr_count
    rsrc2 = field(arch, "COMPUTE_PGM_RSRC2", regs["COMPUTE_PGM_RSRC2"])
    n_user = k.user_sgpr_count  # wave32 on gfx11: LLVM pads the user SGPRs so the two workgroup IDs end at s15
    assert n_user == (14 if (arch, wave) == ("gfx1100", 32) else 2)
    assert len(user) == n_user and user[:2] == [0x2345_6780, 0x1] and not any(user[2:])
    assert rsrc2["USER_SGPR"] == n_user and rsrc2["LDS_SIZE"] == 3
    assert (rsrc2["TGID_X_EN"], rsrc2["TGID_Y_EN"], rsrc2["TGID_Z_EN"], rsrc2["TG_SIZE_EN"]) == (1, 1, 0, 0)
    assert rsrc2["TIDIG_COMP_CNT"] == 1  # X and Y work-item IDs
    assert [regs[f"COMPUTE_NUM_THREAD_{a}"] for a in "XYZ"] == [64, 2, 1]
    assert regs["COMPUTE_DISPATCH_INITIATOR"] == (0x8005 if wave == 32 else 0x5)  # CS_W32_EN, FORCE_START, SHADER_EN
    # 260 bytes a lane: a wave32 needs 8320 bytes, 33 steps of 256; a wave64 16640, 65 steps
    assert regs["COMPUTE_TMPRING_SIZE"] == (33 if wave == 32 else 65) << 12
    assert [regs[f"COMPUTE_USER_DATA_{i}"] for i in range(n_user)] == user
    assert f"COMPUTE_USER_DATA_{n_user}" not in regs


def test_kernel_registers_defaults_and_overrides():
    k = parse(usergpu.compile_opencl(LDS_KERNEL, "gfx1100")).kernels["tile"]
    kd = bytes(k.descriptor)
    regs = kernel_registers(kd, 0x10000 + k.descriptor_addr, "gfx1100", (1, 1, 1), [7])
    assert field("gfx1100", "COMPUTE_PGM_RSRC2", regs["COMPUTE_PGM_RSRC2"])["USER_SGPR"] == 1
    assert regs["COMPUTE_TMPRING_SIZE"] == 0 and regs["COMPUTE_USER_DATA_0"] == 7
    more = kernel_registers(kd, 0x10000 + k.descriptor_addr, "gfx1100", (1, 1, 1), [], lds_bytes=4097)
    assert field("gfx1100", "COMPUTE_PGM_RSRC2", more["COMPUTE_PGM_RSRC2"])["LDS_SIZE"] == 9


def test_kernel_registers_refuses_what_the_registers_cannot_hold():
    k = parse(usergpu.compile_opencl(LDS_KERNEL, "gfx1100")).kernels["tile"]
    kd = bytes(k.descriptor)
    with pytest.raises(LaunchError, match="not 256-byte aligned"):
        kernel_registers(kd, 0x10004 + k.descriptor_addr, "gfx1100", (1, 1, 1), [])
    with pytest.raises(LaunchError, match="17 user SGPRs"):
        kernel_registers(kd, 0x10000 + k.descriptor_addr, "gfx1100", (1, 1, 1), [0] * 17)
    with pytest.raises(Error, match="NUM_THREAD_FULL"):
        kernel_registers(kd, 0x10000 + k.descriptor_addr, "gfx1200", (8192, 1, 1), [])  # 13 bits on gfx12
    with pytest.raises(LaunchError, match="gfx942, gfx950, gfx11 and gfx12 kernels only"):
        kernel_registers(kd, 0x10000 + k.descriptor_addr, "gfx90a", (1, 1, 1), [])
    with pytest.raises(LaunchError, match="wave32 kernel: gfx942 runs wave64 kernels only"):
        kernel_registers(kd, 0x10000 + k.descriptor_addr, "gfx942", (1, 1, 1), [])


def descriptor(rsrc2: dict[str, int], properties: dict[str, int], preload: dict[str, int] | None = None) -> bytes:
    def bits(reg: str, fields: dict[str, int]) -> int:
        return sum(v << BITFIELDS[reg][name][0] for name, v in fields.items())

    kd = kernel_descriptor_t()
    kd.compute_pgm_rsrc2 = bits("COMPUTE_PGM_RSRC2", rsrc2)
    kd.kernel_code_properties = bits("KERNEL_CODE_PROPERTY", properties)
    kd.kernarg_preload = bits("KERNARG_PRELOAD_SPEC", preload or {})
    return bytes(kd)


USER_SGPRS = {"PRIVATE_SEGMENT_BUFFER": 4, "DISPATCH_PTR": 2, "QUEUE_PTR": 2, "KERNARG_SEGMENT_PTR": 2,
              "DISPATCH_ID": 2, "FLAT_SCRATCH_INIT": 2, "PRIVATE_SEGMENT_SIZE": 1}


def test_user_sgpr_values_come_in_the_order_the_descriptor_enables_them():
    kd = descriptor({"GFX6_GFX120_USER_SGPR_COUNT": 15}, {f"ENABLE_SGPR_{n}": 1 for n in USER_SGPRS})
    values = {"private_segment_buffer": 0x4444_4444_3333_3333_2222_2222_1111_1111, "dispatch_ptr": 0xA_0000_0010,
              "queue_ptr": 0xB_0000_0020, "kernarg_segment_ptr": 0xC_0000_0030, "dispatch_id": 0xD_0000_0040,
              "flat_scratch_init": 0xE_0000_0050, "private_segment_size": 0x60}
    assert user_sgpr_values(kd, "gfx1100", values) == [
        0x1111_1111, 0x2222_2222, 0x3333_3333, 0x4444_4444, 0x10, 0xA, 0x20, 0xB, 0x30, 0xC, 0x40, 0xD, 0x50, 0xE,
        0x60]
    # a gap leaves no hole; a value not given is 0
    kd = descriptor({"GFX6_GFX120_USER_SGPR_COUNT": 5}, {f"ENABLE_SGPR_{n}": 1 for n in
                                                         ("DISPATCH_PTR", "DISPATCH_ID", "PRIVATE_SEGMENT_SIZE")})
    assert user_sgpr_values(kd, "gfx1200", {"dispatch_id": 0x5_0000_0006, "private_segment_size": 9}) == [
        0, 0, 6, 5, 9]


def test_user_sgpr_values_preload_kernargs_after_the_pointers_and_pad_to_the_count():
    kd = descriptor({"GFX6_GFX120_USER_SGPR_COUNT": 8}, {"ENABLE_SGPR_KERNARG_SEGMENT_PTR": 1},
                    {"LENGTH": 3, "OFFSET": 1})
    kernarg = np.arange(10, 20, dtype=np.uint32).tobytes()
    got = user_sgpr_values(kd, "gfx1100", {"kernarg_segment_ptr": 0x7_0000_1000, "kernarg_preload": kernarg})
    assert got == [0x1000, 0x7, 11, 12, 13, 0, 0, 0]


# ---- a dispatch from registers and memory alone ----------------------------------------------------------------------
CODE, KERNARG, OUT = 0x0000_8000_1234_5600, 0x2_0000_0000, 0x3_0000_0000
SYNTAX = {"gfx1100": {"offset": "null", "wait": "s_waitcnt lgkmcnt(0)"},
          "gfx1200": {"offset": "0x0", "wait": "s_wait_kmcnt 0x0"}}
# out[wg * 64 + y * 32 + x] = wg << 16 | y << 8 | x, with the kernarg pointer in s[0:1] and workgroup ID X in s2
PROGRAM = """
s_load_b64 s[4:5], s[0:1], {offset}
v_and_b32 v1, 0x3ff, v0
v_bfe_u32 v5, v0, 10, 10
v_lshl_add_u32 v2, v5, 5, v1
s_lshl_b32 s6, s2, 6
v_add_nc_u32 v2, s6, v2
v_lshlrev_b32 v3, 2, v2
s_lshl_b32 s7, s2, 16
v_lshl_or_b32 v4, v5, 8, v1
v_or_b32 v4, s7, v4
{wait}
global_store_b32 v3, v4, s[4:5]
s_endpgm
"""


def registers(arch: str, wave: int, **rsrc2: int) -> dict[str, int]:
    regs = REGS[int(arch[3:5])]
    return {
        "COMPUTE_PGM_LO": (CODE >> 8) & 0xFFFFFFFF, "COMPUTE_PGM_HI": CODE >> 40,
        "COMPUTE_PGM_RSRC1": regs["COMPUTE_PGM_RSRC1"].encode(VGPRS=1, FLOAT_MODE=0xF0),
        "COMPUTE_PGM_RSRC2": regs["COMPUTE_PGM_RSRC2"].encode(USER_SGPR=2, TGID_X_EN=1, TIDIG_COMP_CNT=1, **rsrc2),
        "COMPUTE_NUM_THREAD_X": 32, "COMPUTE_NUM_THREAD_Y": 2, "COMPUTE_NUM_THREAD_Z": 1,
        "COMPUTE_DISPATCH_INITIATOR": regs["COMPUTE_DISPATCH_INITIATOR"].encode(
            COMPUTE_SHADER_EN=1, FORCE_START_AT_000=1, CS_W32_EN=int(wave == 32)),
        "COMPUTE_USER_DATA_0": KERNARG & 0xFFFFFFFF, "COMPUTE_USER_DATA_1": KERNARG >> 32,
    }


@pytest.mark.parametrize(("arch", "wave"), [("gfx1100", 32), ("gfx1100", 64), ("gfx1200", 32), ("gfx1200", 64)])
def test_a_dispatch_runs_from_registers_and_memory_alone(arch, wave):
    mem, out = Memory(), np.zeros(3 * 64, np.uint32)
    mem.map_at(CODE, np.frombuffer(isa.asm(PROGRAM.format(**SYNTAX[arch]), arch), np.uint8).copy())
    mem.map_at(KERNARG, np.array([OUT], np.uint64))
    mem.map_at(OUT, out)
    stats: dict = {}
    dispatch(mem, registers(arch, wave), (3, 1, 1), arch, stats=stats)
    wg, y, x = np.meshgrid(np.arange(3), np.arange(2), np.arange(32), indexing="ij")
    np.testing.assert_array_equal(out, (wg << 16 | y << 8 | x).reshape(-1))
    assert stats["instructions"] == 13 * 3 * (64 // wave)


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_a_dispatch_takes_lds_from_rsrc2(backend, monkeypatch, capsys):
    """LDS_SIZE 2 is 1024 bytes: the last dword is the workgroup's; past it (the LDS checks each address against the
    allocation) a store writes nothing and a load reads 0, no fault, as on the hardware, and the emulator says so."""
    monkeypatch.setenv("USERGPU_EMU", backend)
    monkeypatch.setattr(native, "_SAID", set())  # said once a process: afresh for each backend
    mem, out = Memory(), np.full(2, 7, np.uint32)
    mem.map_at(OUT, out)
    mem.map_at(KERNARG, np.array([OUT], np.uint64))
    program = ("s_load_b64 s[0:1], s[0:1], null\nv_mov_b32 v2, 0\nv_mov_b32 v0, 5\nv_mov_b32 v1, {at}\n"
               "ds_store_b32 v1, v0\nds_load_b32 v3, v1\ns_waitcnt lgkmcnt(0)\nglobal_store_b32 v2, v3, s[0:1]\n"
               "s_endpgm")
    for at, want in (("0x3fc", 5), ("0x400", 0)):
        mem.map_at(CODE, np.frombuffer(isa.asm(program.format(at=at), "gfx1100"), np.uint8).copy())
        dispatch(mem, registers("gfx1100", 32, LDS_SIZE=2), (1, 1, 1), "gfx1100")
        mem.unmap(CODE)
        assert out[0] == want
    assert "outside the workgroup's 1024 bytes of LDS read 0 and write nothing" in capsys.readouterr().err


def test_code_at_an_unmapped_address_is_a_fault_on_execute():
    with pytest.raises(GPUFault) as e:
        dispatch(Memory(), registers("gfx1100", 32), (1, 1, 1), "gfx1100", kernel="nowhere")
    assert e.value.address == CODE and e.value.access == "execute" and e.value.kernel == "nowhere"


# ---- Memory ---------------------------------------------------------------------------------------------------------
def test_map_at_shares_the_array_and_bytes_move_both_ways():
    mem, a = Memory(), np.arange(16, dtype=np.uint8)
    assert mem.map_at(0x1000, a) == 0x1000
    assert mem.read_bytes(0x1004, 3) == bytes([4, 5, 6])
    mem.write_bytes(0x100E, b"\xaa\xbb")
    assert list(a[14:]) == [0xAA, 0xBB]
    a[0] = 99
    assert mem.read_bytes(0x1000, 1) == b"\x63"
    base, buf = mem.mapping(0x100F)
    assert base == 0x1000 and buf is not None and buf.base is not None  # a view of a, not a copy


@pytest.mark.parametrize("at", [0x0FF8, 0x1000, 0x10FF, 0x0FF1])
def test_map_at_refuses_an_overlap_and_names_both_ranges(at):
    mem = Memory()
    mem.map_at(0x1000, 256)
    with pytest.raises(MappingError, match=rf"\[{at:#x}, {at + 16:#x}\).*\[0x1000, 0x1100\)") as e:
        mem.map_at(at, 16)
    assert isinstance(e.value, ValueError) and isinstance(e.value, Error)
    mem.map_at(0x1100, 16)  # touching is not overlapping
    mem.map_at(0x0FF0, 16)


def test_unmap_removes_a_mapping_and_only_at_its_start():
    mem = Memory()
    mem.map_at(0x1000, 256)
    with pytest.raises(MappingError, match="no mapping starts at 0x1004"):
        mem.unmap(0x1004)
    mem.unmap(0x1000)
    with pytest.raises(MemoryFault, match="not mapped"):
        mem.read_bytes(0x1000, 4)
    mem.map_at(0x1000, 512)  # the range is free again
    assert mem.read_bytes(0x11FC, 4) == bytes(4)


def test_byte_access_is_bounds_checked_like_the_rest():
    mem = Memory()
    mem.map_at(0x1000, 16)
    mem.map_at(0x1010, 16)
    with pytest.raises(MemoryFault, match="runs past the end") as e:
        mem.read_bytes(0x100C, 8)  # into the next mapping: an access lies in one
    assert e.value.address == 0x100C and e.value.access == "read"
    with pytest.raises(MemoryFault, match="write of 0x2000: not mapped"):
        mem.write_bytes(0x2000, b"x")
    with pytest.raises(MemoryFault, match="not mapped"):
        mem.read_bytes(0x0FFF, 1)


def test_map_keeps_clear_of_map_at_ranges():
    mem = Memory()
    mem.map_at(BASE + 0x100, 0x1000)  # where the allocator would go next
    addr = mem.map(np.zeros(64, np.uint8))
    assert addr >= BASE + 0x1100 + GUARD
    below = mem.map_at(BASE - 0x100, 0x100)  # ends where the allocator begins
    nxt = mem.map(32)
    assert nxt >= addr + 64 + GUARD and below == BASE - 0x100
    mem.map_at(nxt + 32 + GUARD, 16)  # right after the next one's guard gap
    far = mem.map(16)
    assert far >= nxt + 32 + GUARD + 16 + GUARD
    addrs = [addr, nxt, far, BASE + 0x100, BASE - 0x100]
    assert len(set(addrs)) == 5 and all(mem.mapping(a)[0] == a for a in addrs)
