"""gfx9's (CDNA3, CDNA4) own ways of doing things, each against the ISA guides' definitions written out here: SDWA's
sub-dword operands, DPP's whole-wave shifts and row broadcasts, VGPR indexing mode, v_cmpx writing EXEC and SGPRs,
wave64 lane reads, AccVGPRs, packed f32 moves, the scalar stores, atomics and scratch, s_call, and LDS's half-register
loads and packed 16-bit atomics."""

from __future__ import annotations

import numpy as np
import pytest
from exec_harness import execute

from usergpu.emu.memory import Memory

L = 64
LANE = np.arange(L)
DATA = ((LANE * 0x9E3779B1) & 0xFFFFFFFF).astype(np.uint64)
ARCHS = ("gfx942", "gfx950")


def run(program: str, arch: str = "gfx942", **kw):
    return execute(program, arch, lanes=L, **kw)


def sext(x: np.ndarray, bits: int) -> np.ndarray:
    x = x.astype(np.int64) & ((1 << bits) - 1)
    return np.where(x >> (bits - 1), x - (1 << bits), x)


# ---- SDWA -------------------------------------------------------------------------------------------------------
FIELDS = {"BYTE_0": (0, 8), "BYTE_1": (8, 8), "BYTE_2": (16, 8), "BYTE_3": (24, 8), "WORD_0": (0, 16),
          "WORD_1": (16, 16), "DWORD": (0, 32)}


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("src0", ["BYTE_1", "WORD_1", "DWORD"])
@pytest.mark.parametrize("signed", [False, True])
@pytest.mark.parametrize(("dst", "unused"), [("DWORD", "UNUSED_PAD"), ("BYTE_2", "UNUSED_PAD"),
                                             ("WORD_1", "UNUSED_SEXT"), ("BYTE_1", "UNUSED_PRESERVE")])
def test_sdwa_selects_sources_and_places_the_result(arch, src0, signed, dst, unused):
    """v_add_u32_sdwa: src0's field (zero- or, sext, sign-extended), plus src1's word 0; the sum's low bits into
    dst_sel's field, the rest of the dword zero, the sum's sign or the old value."""
    a, b, old = DATA, DATA[::-1], (DATA ^ 0x5A5A5A5A)
    text = (f"v_add_u32_sdwa v1, {'sext(v2)' if signed else 'v2'}, v3 dst_sel:{dst} dst_unused:{unused} "
            f"src0_sel:{src0} src1_sel:WORD_0")
    w = run(text, arch, v={1: old, 2: a, 3: b})
    shift, bits = FIELDS[src0]
    x = (a.astype(np.int64) >> shift) & ((1 << bits) - 1)
    x = sext(x, bits) if signed and bits < 32 else x
    total = (x + (b.astype(np.int64) & 0xFFFF)) & 0xFFFFFFFF
    at, size = FIELDS[dst]
    field = total & ((1 << size) - 1)
    want = field << at
    if unused == "UNUSED_SEXT" and at + size < 32:
        want = np.where(field >> (size - 1), want | (0xFFFFFFFF ^ ((1 << (at + size)) - 1)), want)
    if unused == "UNUSED_PRESERVE":
        want = want | (old.astype(np.int64) & (0xFFFFFFFF ^ (((1 << size) - 1) << at)))
    np.testing.assert_array_equal(w.v[1, 0], want.astype(np.uint32))


def test_sdwa_half_float_and_compare_read_the_selected_word():
    """v_add_f16_sdwa reads each source's high half; v_cmp_gt_u32_sdwa compares byte 3 with byte 0 per lane."""
    halves = np.float16(np.linspace(-4, 4, L))
    hi = halves.view(np.uint16).astype(np.uint64) << np.uint64(16)
    w = run("v_add_f16_sdwa v1, v2, v3 dst_sel:WORD_0 dst_unused:UNUSED_PAD src0_sel:WORD_1 src1_sel:WORD_1\n"
            "v_cmp_gt_u32_sdwa s[20:21], v4, v4 src0_sel:BYTE_3 src1_sel:BYTE_0", v={2: hi, 3: hi, 4: DATA})
    np.testing.assert_array_equal(w.v[1, 0].astype(np.uint16).view(np.float16), halves + halves)
    gt = (DATA >> np.uint64(24)) > (DATA & np.uint64(0xFF))
    mask = int(w.s[20, 0]) | int(w.s[21, 0]) << 32
    assert [mask >> i & 1 for i in range(L)] == gt.astype(int).tolist()


def test_sdwa_carry_reads_bytes_and_writes_its_carry():
    """v_add_co_u32_sdwa: byte 0 of each source added, the carry out of the 32-bit sum into VCC."""
    w = run("v_add_co_u32_sdwa v1, vcc, v2, v3 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_0 src1_sel:DWORD",
            v={2: DATA, 3: np.full(L, 0xFFFFFF80, np.uint64)})
    total = (DATA & np.uint64(0xFF)) + np.uint64(0xFFFFFF80)
    np.testing.assert_array_equal(w.v[1, 0], (total & np.uint64(0xFFFFFFFF)).astype(np.uint32))
    vcc = int(w.s[106, 0]) | int(w.s[107, 0]) << 32
    assert [vcc >> i & 1 for i in range(L)] == (total >> np.uint64(32)).astype(int).tolist()


# ---- DPP ---------------------------------------------------------------------------------------------------------
# control -> the lane each lane reads (-1: none, the lane keeps its old value)
WAVE_DPP = {"wave_shl:1": np.where(LANE < L - 1, LANE + 1, -1), "wave_shr:1": np.where(LANE > 0, LANE - 1, -1),
            "wave_rol:1": (LANE + 1) % L, "wave_ror:1": (LANE - 1) % L,
            "row_bcast:15": np.where(LANE >= 16, LANE - LANE % 16 - 1, -1),
            "row_bcast:31": np.where(LANE >= 32, 31, -1)}


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("control", sorted(WAVE_DPP))
@pytest.mark.parametrize("row_mask", [0xF, 0xA])
def test_dpp_wave_shifts_and_row_broadcasts(arch, control, row_mask):
    old = np.full(L, 7, np.uint64)
    w = run(f"v_mov_b32_dpp v1, v2 {control} row_mask:{row_mask:#x} bank_mask:0xf", arch, v={1: old, 2: DATA})
    src = WAVE_DPP[control]
    on = (row_mask >> (LANE // 16)) & 1 == 1
    want = np.where(on & (src >= 0), DATA[np.clip(src, 0, L - 1)], old)
    np.testing.assert_array_equal(w.v[1, 0], want.astype(np.uint32))



# ---- 16-bit results --------------------------------------------------------------------------------------------
OLD = np.full(L, 0xABCD0000, np.uint64)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize(("program", "want"), [
    ("v_mul_lo_u16_e32 v0, 12, v2", 12 * (DATA & 0xFFFF) & 0xFFFF),  # LLVM's zeroesHigh16BitsOfDest: cleared
    ("v_add_u16_e64 v0, v2, v2", 2 * (DATA & 0xFFFF) & 0xFFFF),
    ("v_add_u16_dpp v0, v2, v2 quad_perm:[0,1,2,3] row_mask:0xf bank_mask:0xf", 2 * (DATA & 0xFFFF) & 0xFFFF),
    ("v_cvt_f16_f32_e32 v0, 1.0", np.full(L, 0x3C00)),
    ("v_mad_legacy_u16 v0, v2, 3, 64", (3 * (DATA & 0xFFFF) + 64) & 0xFFFF),  # gfx8's v_mad_u16, as tinygrad's
    ("v_fma_legacy_f16 v0, 1.0, 2.0, 0.5", np.full(L, 0x4100)),                #  LLVM code for gfx950 uses it
    ("v_mad_u16 v0, v2, 1, 0", 0xABCD0000 | DATA & 0xFFFF),  # gfx9's op_sel form keeps the high half
    ("v_mul_lo_u16_sdwa v0, v2, 1 dst_sel:WORD_0 dst_unused:UNUSED_PRESERVE src0_sel:WORD_0 src1_sel:DWORD",
     0xABCD0000 | DATA & 0xFFFF)])
def test_16_bit_results_clear_the_high_half_but_where_gfx9_keeps_it(arch, program, want):
    """gfx9's 16-bit VALU operations write their result zero-extended to the whole VGPR (tinygrad's LLVM code for
    gfx950 adds v_mul_lo_u16's result to a 32-bit index unmasked); gfx9's op_sel form of v_mad_u16 and SDWA's
    PRESERVE keep the other half."""
    w = run(program, arch, v={0: OLD, 2: DATA})
    np.testing.assert_array_equal(w.v[0, 0], np.asarray(want, np.uint64).astype(np.uint32))

LO, HI = DATA & 0xFFFF, DATA >> 16
B = (DATA[::-1] * 3) & 0xFFFFFFFF  # a second source, its halves other than DATA's
BLO, BHI = B & 0xFFFF, B >> 16


def f16(bits: np.ndarray) -> np.ndarray:
    return bits.astype(np.uint16).view(np.float16).astype(np.float64)


SMALL = (DATA & 0x03FF03FF) | 0x3C003C00  # f16 halves in [1, 2): finite, exact in a sum
SMALL_B = SMALL[::-1]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize(("program", "want"), [
    ("v_mad_u16 v0, v2, 1, 0 op_sel:[0,0,0,1]", LO << 16 | 0),  # the result to the high half, the low kept
    ("v_mad_u16 v0, v2, v3, v2 op_sel:[1,0,1,0]", 0xABCD0000 | (HI * BLO + HI) & 0xFFFF),
    ("v_mad_u16 v0, v2, v3, 0 op_sel:[0,1,0,1]", ((LO * BHI) & 0xFFFF) << 16),
    ("v_add_i16 v0, v2, v3 op_sel:[1,1,1]", ((HI + BHI) & 0xFFFF) << 16),
    ("v_mad_u32_u16 v0, v2, v3, 7 op_sel:[1,0,0,0]", (HI * BLO + 7) & 0xFFFFFFFF),
    ("v_pack_b32_f16 v0, v2, v3 op_sel:[1,0,0]", BLO << 16 | HI),
    ("v_max3_u16 v0, v2, v3, 0 op_sel:[1,1,0,1]", np.maximum(HI, BHI) << 16)])
def test_vop3_op_sel_picks_the_vgprs_halves(arch, program, want):
    """gfx9's VOP3 op_sel (bits 0-2 the sources', bit 3 the destination's) picks VGPR halves as it does SGPR ones:
    a 16-bit source reads the half its bit names, a 16-bit result goes to the half bit 3 names, the other half
    kept (v0's low half is 0 here)."""
    w = run(program, arch, v={0: OLD, 2: DATA, 3: B})
    np.testing.assert_array_equal(w.v[0, 0], np.asarray(want, np.uint64).astype(np.uint32))


def test_vop3_op_sel_picks_f16_halves():
    """The float forms: v_fma_f16's sources and destination by op_sel."""
    w = run("v_fma_f16 v0, v2, v3, v2 op_sel:[1,1,0,1]", v={0: OLD, 2: SMALL, 3: SMALL_B})
    got = f16(w.v[0, 0] >> 16)
    want = (f16(SMALL >> 16) * f16(SMALL_B >> 16) + f16(SMALL & 0xFFFF)).astype(np.float16).astype(np.float64)
    np.testing.assert_array_equal(got, want)
    assert (w.v[0, 0] & 0xFFFF == 0).all()


# ---- VGPR indexing mode ---------------------------------------------------------------------------------------------
def test_gpr_index_mode_moves_the_operands_it_names_for_each_wave():
    """Between s_set_gpr_idx_on and _off, the operands the mode bits name read and write VGPR + M0[7:0]; each wave
    its own index; s_set_gpr_idx_idx changes it; after _off, the registers are the named ones again."""
    v = {r: np.full((2, L), 100 + r, np.uint64) for r in range(1, 12)}
    program = ("s_set_gpr_idx_on s2, gpr_idx(SRC0)\nv_mov_b32 v20, v1\n"
               "s_set_gpr_idx_idx s3\nv_mov_b32 v21, v1\ns_set_gpr_idx_off\nv_mov_b32 v22, v1\n"
               "s_set_gpr_idx_on s2, gpr_idx(DST)\nv_mov_b32 v1, 55\ns_set_gpr_idx_off")
    w = run(program, v=v, s={2: [3, 5], 3: [1, 2]}, waves=2)
    for wave, (first, second) in enumerate(((3, 1), (5, 2))):
        assert (w.v[20, wave] == 101 + first).all() and (w.v[21, wave] == 101 + second).all()
        assert (w.v[22, wave] == 101).all() and (w.v[1 + first, wave] == 55).all()
        assert int(w.s[125, wave]) & 0xF0FF == 8 << 12 | first  # M0: the index and the mode bits (DST)


# ---- v_cmpx, lanes, AccVGPRs, packed moves -----------------------------------------------------------------------
def test_cmpx_writes_exec_and_the_named_sgprs():
    w = run("v_cmpx_gt_u32_e64 s[20:21], v2, v3\nv_mov_b32 v1, 1", v={2: DATA, 3: DATA[::-1]})
    want = sum(1 << i for i in range(L) if DATA[i] > DATA[::-1][i])
    assert int(w.s[20, 0]) | int(w.s[21, 0]) << 32 == want == int(w.s[126, 0]) | int(w.s[127, 0]) << 32
    assert [int(x) for x in w.v[1, 0]] == [want >> i & 1 for i in range(L)]


def test_lane_reads_and_writes_span_the_wave64():
    w = run("v_readlane_b32 s4, v2, 47\nv_writelane_b32 v3, s5, 50\ns_mov_b64 exec, s[6:7]\n"
            "v_readfirstlane_b32 s8, v2", v={2: DATA}, s={5: 0xABCD, 6: 0, 7: 1 << 9})
    assert int(w.s[4, 0]) == DATA[47] and int(w.s[8, 0]) == DATA[41]
    assert int(w.v[3, 0, 50]) == 0xABCD and (np.delete(w.v[3, 0], 50) == 0).all()


def test_accvgprs_are_the_unified_files_registers_from_accum_offset():
    """The harness's unified file has 64 ArchVGPRs, so a0 is its VGPR 64: a write, a move and a read between
    the two files."""
    w = run("v_accvgpr_write_b32 a3, v2\nv_accvgpr_mov_b32 a200, a3\nv_accvgpr_read_b32 v9, a200", v={2: DATA})
    np.testing.assert_array_equal(w.v[64 + 3, 0], DATA.astype(np.uint32))
    np.testing.assert_array_equal(w.v[9, 0], DATA.astype(np.uint32))


@pytest.mark.parametrize("sel", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_pk_mov_b32_takes_the_register_op_sel_picks_from_each_source(sel):
    """The low result is src0's register op_sel[0] picks, the high one src1's register op_sel[1] picks."""
    regs = {r: DATA + np.uint64(r) for r in (2, 3, 4, 5)}
    mods = f" op_sel:[{sel[0]},{sel[1]}]" if any(sel) else ""  # LLVM leaves the default out
    w = run(f"v_pk_mov_b32 v[0:1], v[2:3], v[4:5]{mods}", v=regs)
    np.testing.assert_array_equal(w.v[0, 0], regs[2 + sel[0]].astype(np.uint32))
    np.testing.assert_array_equal(w.v[1, 0], regs[4 + sel[1]].astype(np.uint32))


# ---- scalar memory and calls -------------------------------------------------------------------------------------
def _buffer(words: int) -> tuple[Memory, int, dict]:
    mem = Memory()
    base = mem.map(np.arange(words, dtype=np.uint32))
    return mem, base, {2: base & 0xFFFFFFFF, 3: base >> 32}


def test_scalar_stores_and_atomics_read_modify_write_in_wave_order():
    """s_store_dwordx2 writes two dwords; s_atomic_add from two waves on one address adds both and returns (glc)
    the value before each; s_atomic_cmpswap swaps only where the compare matches; s_atomic_umax_x2 on a qword."""
    mem, base, s = _buffer(16)
    program = ("s_store_dwordx2 s[10:11], s[2:3], 0x20\ns_atomic_add s12, s[2:3], 0x0 glc\n"
               "s_atomic_cmpswap s[14:15], s[2:3], 0x4 glc\ns_atomic_umax_x2 s[16:17], s[2:3], 0x8\n"
               "s_waitcnt lgkmcnt(0)")
    w = run(program, memory=mem, waves=2, s={**s, 10: 0xAAAA, 11: 0xBBBB, 12: [5, 7], 14: 99, 15: [1, 0],
                                             16: 0xFFFF, 17: [0, 4]})
    words = mem.read(np.asarray([base], np.uint64), 64).view(np.uint32)[0]
    assert words[8] == 0xAAAA and words[9] == 0xBBBB
    assert words[0] == 12 and [int(w.s[12, i]) for i in (0, 1)] == [0, 5]
    assert words[1] == 99 and [int(w.s[14, i]) for i in (0, 1)] == [1, 99]  # wave 0 compares with 1: it matches
    assert words[2] == 0xFFFF and words[3] == 4  # the largest of 2 | 3 << 32, 0xFFFF and 0xFFFF | 4 << 32
    assert int(w.s[16, 0]) == 0xFFFF  # no glc: the data registers keep their values


def test_scalar_buffer_store_past_num_records_is_dropped():
    mem, base, _ = _buffer(8)
    desc = {4: base & 0xFFFFFFFF, 5: base >> 32, 6: 16, 7: 0}  # 16 bytes of records
    run("s_buffer_store_dword s10, s[4:7], 0xc\ns_buffer_store_dword s11, s[4:7], 0x10", memory=mem,
        s={**desc, 10: 0x1234, 11: 0x5678})
    words = mem.read(np.asarray([base], np.uint64), 32).view(np.uint32)[0]
    assert words[3] == 0x1234 and words[4] == 4


def test_scalar_scratch_sees_the_lanes_dwords_swizzled():
    """s_scratch_store's dword d of the wave is lane d % 64's dword d // 64; a vector scratch load reads it back."""
    w = run("s_scratch_store_dword s10, s[2:3], 0x4\ns_waitcnt lgkmcnt(0)\nscratch_load_dword v1, off, off\n"
            "s_scratch_load_dword s11, s[2:3], 0x4\ns_waitcnt vmcnt(0) lgkmcnt(0)", s={2: 0, 10: 0xC0FFEE})
    assert int(w.v[1, 0, 1]) == 0xC0FFEE and (np.delete(w.v[1, 0], 1) == 0).all()
    assert int(w.s[11, 0]) == 0xC0FFEE


def test_memtime_moves_forward_and_call_links_and_branches():
    w = run("s_memtime s[4:5]\ns_nop 0\ns_memtime s[6:7]\ns_call_b64 s[8:9], 1\ns_mov_b32 s10, 1\n"
            "s_mov_b32 s11, 2")
    assert int(w.s[6, 0]) > int(w.s[4, 0])
    assert int(w.s[10, 0]) == 0 and int(w.s[11, 0]) == 2  # the call skipped the next instruction
    assert int(w.s[8, 0]) == 0x18 and int(w.s[9, 0]) == 0  # the return address: after s_call (code at 0)


# ---- LDS -----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "hi", "signed", "bits"), [("ds_read_u16_d16", 0, False, 16),
                                                            ("ds_read_u16_d16_hi", 1, False, 16),
                                                            ("ds_read_i8_d16", 0, True, 8),
                                                            ("ds_read_u8_d16_hi", 1, False, 8)])
def test_lds_half_register_loads_keep_the_other_half(name, hi, signed, bits):
    old = np.full(L, 0x11112222, np.uint64)
    w = run(f"ds_write_b32 v0, v2\ns_waitcnt lgkmcnt(0)\n{name} v1, v0\ns_waitcnt lgkmcnt(0)",
            v={0: LANE * 4, 1: old, 2: DATA})
    x = DATA.astype(np.int64) & ((1 << bits) - 1)
    x = (sext(x, bits) if signed else x) & 0xFFFF
    want = (old.astype(np.int64) & 0xFFFF) | x << 16 if hi else (old.astype(np.int64) & 0xFFFF0000) | x
    np.testing.assert_array_equal(w.v[1, 0], want.astype(np.uint32))


@pytest.mark.parametrize("kind", ["f16", "bf16"])
def test_packed_16_bit_atomic_add_adds_each_half(kind):
    mem = Memory()
    a = (np.arange(2 * L, dtype=np.float32).reshape(L, 2) - 64) / 8  # eighths: exact in f16 and bf16, and so are
    b = (np.float32(40) - np.arange(2 * L, dtype=np.float32).reshape(L, 2)) / 4  # the sums

    def bits(x):
        if kind == "f16":
            return x.astype(np.float16).view(np.uint16).astype(np.uint32)
        return x.view(np.uint32) >> 16  # these values are exact in bf16

    def words(x):
        h = bits(x)
        return (h[:, 0] | h[:, 1] << 16).astype(np.uint32)
    base = mem.map(words(a).copy())
    addr = base + LANE.astype(np.uint64) * 4
    run(f"global_atomic_pk_add_{kind} v[2:3], v4, off", memory=mem,
        v={2: addr & 0xFFFFFFFF, 3: addr >> np.uint64(32), 4: words(b)})
    got = mem.read(np.asarray([base], np.uint64), 4 * L).view(np.uint32)[0]
    np.testing.assert_array_equal(got, words(a + b))


@pytest.mark.parametrize("arch", ARCHS)
def test_nine_tenths_of_the_compute_opcodes_run(arch):
    """The issue's floor: at least 90% of the arch's distinct mnemonics (exec_coverage.py's sample of its table)
    compile to a step; the MFMAs are checked one by one in test_mfma.py."""
    from exec_coverage import table_coverage

    done, total, missing = table_coverage(arch)
    assert done >= 0.9 * total, f"{arch}: {done}/{total}; missing {missing}"
