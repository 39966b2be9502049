"""LDS atomics, ds_swizzle's FFT and rotate modes, hwregs, M0-relative moves, the wrexec ops, permlane*_var and
the 16-bit and fp8 WMMA forms, each against a reference worked out here from the ISA's definition."""

from __future__ import annotations

import numpy as np
import pytest
from exec_harness import execute

from usergpu.emu.amd.exec.executor import Executor
from usergpu.emu.amd.exec.waves import Waves
from usergpu.emu.memory import Memory
from usergpu.isa import amd as isa

RNG = np.random.default_rng(7)


def run(program: str, arch: str, v: dict | None = None, s: dict | None = None, lds: bytes = b"", lanes: int = 32,
        waves: int = 1) -> tuple[Waves, Executor]:
    """Run program on waves of one workgroup (all lanes active), with 64 VGPRs and the given LDS contents."""
    w = Waves(waves, lanes, 64)
    w.s[126] = w.s[127] = 0xFFFFFFFF
    for reg, values in (v or {}).items():
        w.v[reg] = np.asarray(values, np.uint64) & np.uint64(0xFFFFFFFF)
    for reg, value in (s or {}).items():
        w.s[reg] = value
    ex = Executor(arch, isa.asm(f"{program}\ns_endpgm", arch), 0, Memory(), w, np.zeros(waves, np.int64),
                  max(len(lds), 4), 4, "test", 100)
    ex.lds[0, : len(lds)] = np.frombuffer(lds, np.uint8)
    ex.run()
    return w, ex


def words(ex: Executor, n: int, dtype=np.uint32) -> np.ndarray:
    return ex.lds[0, : n * np.dtype(dtype).itemsize].view(dtype)


def u32s(n: int) -> np.ndarray:
    return RNG.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)


# ---- DS read-modify-write ------------------------------------------------------------------------------------
@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200"])
@pytest.mark.parametrize("rtn", [False, True])
def test_ds_cmpstore_b32_stores_where_memory_equals_the_compare_value(arch, rtn):
    mem, data = u32s(32), u32s(32)
    cmp = np.where(np.arange(32) % 2, mem, u32s(32))  # odd lanes match
    text = "ds_cmpstore_rtn_b32 v5, v0, v1, v2" if rtn else "ds_cmpstore_b32 v0, v1, v2"
    w, ex = run(text, arch, v={0: np.arange(32) * 4, 1: data, 2: cmp}, lds=mem.tobytes())
    want = [d if m == c else m for m, d, c in zip(mem.tolist(), data.tolist(), cmp.tolist(), strict=True)]
    assert words(ex, 32).tolist() == want
    if rtn:
        assert w.v[5, 0].tolist() == mem.tolist()


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200"])
def test_ds_cmpstore_rtn_b64(arch):
    mem = RNG.integers(0, 1 << 63, 32, dtype=np.uint64)
    data = RNG.integers(0, 1 << 63, 32, dtype=np.uint64)
    cmp = np.where(np.arange(32) % 3 == 0, mem, data)
    lo, hi = (lambda x: (x & np.uint64(0xFFFFFFFF), x >> np.uint64(32)))(data)
    clo, chi = cmp & np.uint64(0xFFFFFFFF), cmp >> np.uint64(32)
    w, ex = run("ds_cmpstore_rtn_b64 v[6:7], v0, v[2:3], v[4:5]", arch,
                v={0: np.arange(32) * 8, 2: lo, 3: hi, 4: clo, 5: chi}, lds=mem.tobytes())
    want = [int(d) if int(m) == int(c) else int(m) for m, d, c in zip(mem, data, cmp, strict=True)]
    assert words(ex, 32, np.uint64).tolist() == want
    old = w.v[6, 0].astype(np.uint64) | w.v[7, 0].astype(np.uint64) << np.uint64(32)
    assert old.tolist() == mem.tolist()


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200"])
def test_ds_mskor_b32_clears_the_mask_then_ors(arch):
    mem, mask, bits = u32s(32), u32s(32), u32s(32)
    w, ex = run("ds_mskor_rtn_b32 v5, v0, v1, v2", arch, v={0: np.arange(32) * 4, 1: mask, 2: bits},
                lds=mem.tobytes())
    assert words(ex, 32).tolist() == [(m & ~k & 0xFFFFFFFF) | b for m, k, b in zip(mem.tolist(), mask.tolist(),
                                                                                   bits.tolist(), strict=True)]
    assert w.v[5, 0].tolist() == mem.tolist()


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200"])
def test_ds_mskor_b64(arch):
    mem = RNG.integers(0, 1 << 63, 32, dtype=np.uint64)
    mask = RNG.integers(0, 1 << 63, 32, dtype=np.uint64)
    bits = RNG.integers(0, 1 << 63, 32, dtype=np.uint64)
    split = {1: mask & np.uint64(0xFFFFFFFF), 2: mask >> np.uint64(32), 3: bits & np.uint64(0xFFFFFFFF),
             4: bits >> np.uint64(32)}
    _, ex = run("ds_mskor_b64 v0, v[1:2], v[3:4]", arch, v={0: np.arange(32) * 8, **split}, lds=mem.tobytes())
    assert words(ex, 32, np.uint64).tolist() == [(int(m) & ~int(k)) | int(b) for m, k, b in zip(mem, mask, bits,
                                                                                               strict=True)]


@pytest.mark.parametrize("arch", ["gfx1100"])
def test_ds_wrap_rtn_b32_subtracts_or_adds(arch):
    mem = RNG.integers(0, 100, 32).astype(np.uint32)
    sub, add = RNG.integers(0, 100, 32).astype(np.uint32), RNG.integers(0, 100, 32).astype(np.uint32)
    w, ex = run("ds_wrap_rtn_b32 v5, v0, v1, v2", arch, v={0: np.arange(32) * 4, 1: sub, 2: add}, lds=mem.tobytes())
    assert words(ex, 32).tolist() == [m - s if m >= s else m + a for m, s, a in zip(mem.tolist(), sub.tolist(),
                                                                                    add.tolist(), strict=True)]
    assert w.v[5, 0].tolist() == mem.tolist()


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200"])
def test_ds_condxchg32_rtn_b64_writes_each_dword_whose_top_bit_is_set(arch):
    mem, lo, hi = u32s(64), u32s(32), u32s(32)
    w, ex = run("ds_condxchg32_rtn_b64 v[6:7], v0, v[2:3]", arch, v={0: np.arange(32) * 8, 2: lo, 3: hi},
                lds=mem.tobytes())
    want = mem.copy()
    for lane in range(32):
        for k, d in enumerate((int(lo[lane]), int(hi[lane]))):
            if d >> 31:
                want[2 * lane + k] = d & 0x7FFFFFFF
    assert words(ex, 64).tolist() == want.tolist()
    assert w.v[6, 0].tolist() == mem[0::2].tolist() and w.v[7, 0].tolist() == mem[1::2].tolist()


# ---- ds_swizzle ----------------------------------------------------------------------------------------------
def swizzle_reference(offset: int, lane: int) -> int:
    """The DS_SWIZZLE_B32 pseudocode of the RDNA3 ISA guide for one lane: the lane it reads."""
    if offset >= 0xE000:
        mask = offset & 0x1F
        j = int(f"{lane & 0x1F:05b}"[::-1], 2) >> bin(mask).count("1")
        return j | (lane & mask) | (lane & 0x20)
    rotate = offset >> 5 & 0x1F
    if offset >> 10 & 1:
        rotate = -rotate
    mask = offset & 0x1F
    return (lane & mask) | ((lane + rotate) & ~mask & 0x1F) | (lane & 0x20)


@pytest.mark.parametrize("arch,lanes", [("gfx1100", 32), ("gfx1100", 64), ("gfx1200", 32)])
@pytest.mark.parametrize("pattern,offset", [("swizzle(FFT,5)", 0xE005), ("swizzle(FFT,0)", 0xE000),
                                            ("swizzle(FFT,31)", 0xE01F), ("swizzle(ROTATE,0,5)", 0xC0A0),
                                            ("swizzle(ROTATE,1,3)", 0xC460), ("swizzle(ROTATE,1,31)", 0xC7E0)])
def test_ds_swizzle_fft_and_rotate_modes(arch, lanes, pattern, offset):
    data = u32s(lanes)
    w, _ = run(f"ds_swizzle_b32 v1, v0 offset:{pattern}", arch, v={0: data}, lanes=lanes)
    assert w.v[1, 0].tolist() == [int(data[swizzle_reference(offset, lane)]) for lane in range(lanes)]


# ---- hwregs --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("arch,mode", [("gfx1100", "HW_REG_MODE"), ("gfx1200", "HW_REG_WAVE_MODE")])
def test_setreg_mode_sets_the_denormal_modes_and_getreg_reads_them_back(arch, mode):
    w, ex = run(f"s_setreg_imm32_b32 hwreg({mode}, 4, 4), 6\n"  # FP_DENORM: single 2, double/half 1
                f"s_getreg_b32 s2, hwreg({mode})\n"
                f"s_getreg_b32 s3, hwreg({mode}, 6, 2)\n"
                f"s_mov_b32 s4, 0xf3\n"
                f"s_setreg_b32 hwreg({mode}, 0, 4), s4\n"  # FP_ROUND = 3; the other bits of s4 not written
                f"s_getreg_b32 s5, hwreg({mode}, 0, 8)", arch)
    assert int(w.s[2, 0]) & 0xFF == 0x60 and int(w.s[3, 0]) == 1
    assert ex.denorm == {32: 2, 16: 1, 64: 1}
    assert int(w.s[5, 0]) == 0x63


@pytest.mark.parametrize("arch,reg", [("gfx1100", "HW_REG_HW_ID1"), ("gfx1200", "HW_REG_WAVE_HW_ID1")])
def test_getreg_hw_id1_gives_the_wave_within_its_workgroup(arch, reg):
    w, _ = run(f"s_getreg_b32 s2, hwreg({reg}, 0, 5)\ns_getreg_b32 s3, hwreg(HW_REG_IB_STS)", arch, waves=3)
    assert w.s[2].tolist() == [0, 1, 2] and w.s[3].tolist() == [0, 0, 0]


# ---- M0-relative moves ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200"])
def test_scalar_movrel(arch):
    sgprs = {i: 0x100 + i for i in range(20)}
    w, _ = run("s_mov_b32 m0, 3\ns_movrels_b32 s30, s4\ns_movrels_b64 s[32:33], s[6:7]\n"
               "s_movreld_b32 s40, s1\ns_movreld_b64 s[44:45], s[2:3]\n"
               "s_mov_b32 m0, 0x50002\ns_movrelsd_2_b32 s50, s10", arch, s=sgprs)
    assert int(w.s[30, 0]) == 0x107 and w.s[32:34, 0].tolist() == [0x109, 0x10A]
    assert int(w.s[43, 0]) == 0x101 and w.s[47:49, 0].tolist() == [0x102, 0x103]
    assert int(w.s[55, 0]) == 0x10C  # s[50 + M0[25:16]] = s[10 + M0[9:0]]


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200"])
def test_vector_movrelsd_and_movrelsd_2(arch):
    regs = {i: u32s(32) for i in range(12)}
    w, _ = run("s_mov_b32 m0, 2\nv_movrelsd_b32 v20, v3\ns_mov_b32 m0, 0x40001\nv_movrelsd_2_b32 v30, v5", arch,
               v=regs)
    assert w.v[22, 0].tolist() == regs[5].tolist()  # v[20 + M0] = v[3 + M0]
    assert w.v[34, 0].tolist() == regs[6].tolist()  # v[30 + M0[25:16]] = v[5 + M0[9:0]]


# ---- the wrexec ops -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200"])
@pytest.mark.parametrize("op", ["and_not0", "and_not1"])
@pytest.mark.parametrize("bits", [32, 64])
def test_and_not_wrexec_writes_the_new_exec_to_both(arch, op, bits):
    exec_bits, src = int(RNG.integers(0, 1 << bits, dtype=np.uint64)), int(RNG.integers(0, 1 << bits, dtype=np.uint64))
    full = (1 << bits) - 1
    new = (~src & exec_bits) & full if op == "and_not0" else (src & ~exec_bits) & full
    regs = "s[2:3]" if bits == 64 else "s2"
    srcs = "s[4:5]" if bits == 64 else "s4"
    w, _ = run(f"s_{op}_wrexec_b{bits} {regs}, {srcs}", arch, lanes=bits,
               s={4: src & 0xFFFFFFFF, 5: src >> 32, 126: exec_bits & 0xFFFFFFFF, 127: exec_bits >> 32})
    got_exec = int(w.s[126, 0]) | (int(w.s[127, 0]) << 32 if bits == 64 else 0)
    got_dst = int(w.s[2, 0]) | (int(w.s[3, 0]) << 32 if bits == 64 else 0)
    assert got_exec == got_dst == new and int(w.scc[0]) == (new != 0)


# ---- permlane*_var ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cross", [False, True])
def test_permlane16_var_reads_the_lane_each_lane_selects(cross):
    data, sel = u32s(32), RNG.integers(0, 1 << 32, 32, dtype=np.uint64)
    name = "v_permlanex16_var_b32" if cross else "v_permlane16_var_b32"
    w, _ = run(f"{name} v2, v0, v1", "gfx1200", v={0: data, 1: sel, 2: 0})
    want = [int(data[((lane // 16) ^ cross) * 16 + (int(sel[lane]) & 15)]) for lane in range(32)]
    assert w.v[2, 0].tolist() == want


# ---- WMMA -------------------------------------------------------------------------------------------------
def gfx11_sources(a: np.ndarray, b: np.ndarray, per_dword: int, lanes: int) -> list[np.ndarray]:
    """A (16 x 16) and B's VGPR values on gfx11: lane l holds row l % 16 of A and column l % 16 of B, packed."""
    out = []
    for m in (a, b.T):
        bits = m.reshape(16, -1, per_dword)
        width = 32 // per_dword
        dwords = sum(bits[..., i].astype(np.uint64) << np.uint64(width * i) for i in range(per_dword))
        out += [np.tile(dwords[:, r], lanes // 16) for r in range(dwords.shape[1])]
    return out


def f16_bits(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float16).view(np.uint16)


def bf16_bits(x: np.ndarray) -> np.ndarray:
    """Round to nearest even, as bf16 bits (the values here are finite)."""
    b = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((b + 0x7FFF + ((b >> np.uint64(16)) & np.uint64(1))) >> np.uint64(16)).astype(np.uint16)


@pytest.mark.parametrize("lanes", [32, 64])
@pytest.mark.parametrize("high", [0, 1])
@pytest.mark.parametrize("kind", ["f16", "bf16"])
def test_gfx11_wmma_with_16_bit_accumulator_in_the_op_sel_half(kind, high, lanes):
    a, b = RNG.integers(-4, 5, (16, 16)) / 4, RNG.integers(-4, 5, (16, 16)) / 4
    c = RNG.integers(-8, 9, (16, 16)) / 2
    to_bits = f16_bits if kind == "f16" else bf16_bits
    srcs = gfx11_sources(to_bits(a), to_bits(b), 2, lanes)
    nregs = 256 // lanes
    lane = np.arange(lanes)
    rows = [(lanes // 16) * j + lane // 16 for j in range(nregs)]
    filler = u32s(lanes)
    keep = filler & (0xFFFF << 16 * (1 - high))
    cregs = [(to_bits(c[r, lane % 16]).astype(np.uint64) << np.uint64(16 * high)) | keep for r in rows]
    vgprs = {i: r for i, r in enumerate(srcs)} | {16 + j: r for j, r in enumerate(cregs)}
    # in place (D = C): the destination's other half is kept; LLVM names 8 registers whatever the wave size
    w, _ = run(f"v_wmma_{kind}_16x16x16_{kind} v[16:23], v[0:7], v[8:15], v[16:23]{' op_sel:[0,0,1]' * high}",
               "gfx1100", v=vgprs, lanes=lanes)
    d = a @ b + c  # exact in float64: every value is a small multiple of 1/16
    for j, r in enumerate(rows):
        got = w.v[16 + j, 0]
        assert ((got >> (16 * high)) & 0xFFFF).tolist() == to_bits(d[r, lane % 16]).tolist()
        assert ((got >> (16 * (1 - high))) & 0xFFFF).tolist() == ((filler >> (16 * (1 - high))) & 0xFFFF).tolist()


def gfx12_sources(a: np.ndarray, b: np.ndarray, per_dword: int) -> list[np.ndarray]:
    """A (16 x K) and B's VGPR values on gfx12 (wave32): lanes 0-15 hold the first half of K of their row of A
    (column of B), lanes 16-31 the second half, packed low first."""
    out = []
    for m in (a, b.T):
        half = m.shape[1] // 2
        per_lane = np.concatenate([m[:, :half], m[:, half:]])  # (32, half): lane l's values
        bits = per_lane.reshape(32, -1, per_dword)
        width = 32 // per_dword
        dwords = sum(bits[..., i].astype(np.uint64) << np.uint64(width * i) for i in range(per_dword))
        out += [dwords[:, r] for r in range(dwords.shape[1])]
    return out


@pytest.mark.parametrize("kind", ["f16", "bf16"])
def test_gfx12_wmma_with_16_bit_accumulator_packs_two_rows_per_vgpr(kind):
    a, b = RNG.integers(-4, 5, (16, 16)) / 4, RNG.integers(-4, 5, (16, 16)) / 4
    c = RNG.integers(-8, 9, (16, 16)) / 2
    to_bits = f16_bits if kind == "f16" else bf16_bits
    srcs = gfx12_sources(to_bits(a), to_bits(b), 2)
    lane = np.arange(32)

    def packed(m: np.ndarray, j: int) -> np.ndarray:  # VGPR j: rows 2j, 2j + 1 (lanes 16-31: 8 rows further on)
        lo, hi = (to_bits(m[2 * j + k + 8 * (lane // 16), lane % 16]).astype(np.uint64) for k in (0, 1))
        return lo | hi << np.uint64(16)

    vgprs = {i: r for i, r in enumerate(srcs)} | {8 + j: packed(c, j) for j in range(4)}
    w, _ = run(f"v_wmma_{kind}_16x16x16_{kind} v[16:19], v[0:3], v[4:7], v[8:11]", "gfx1200", v=vgprs)
    d = a @ b + c
    for j in range(4):
        assert w.v[16 + j, 0].tolist() == packed(d, j).tolist()


FP8_VALUES = {"fp8": [0x38, 0xB8, 0x40, 0x30, 0x00, 0x44, 0xC0, 0x3C], "bf8": [0x3C, 0xBC, 0x40, 0x38, 0x00, 0x42,
                                                                              0xC0, 0x3E]}
FP8_MEANING = {"fp8": [1, -1, 2, 0.5, 0, 3, -2, 1.5], "bf8": [1, -1, 2, 0.5, 0, 3, -2, 1.5]}


@pytest.mark.parametrize("a_kind", ["fp8", "bf8"])
@pytest.mark.parametrize("b_kind", ["fp8", "bf8"])
def test_gfx12_wmma_fp8(a_kind, b_kind):
    ia, ib = RNG.integers(0, 8, (16, 16)), RNG.integers(0, 8, (16, 16))
    a, b = np.asarray(FP8_MEANING[a_kind])[ia], np.asarray(FP8_MEANING[b_kind])[ib]
    srcs = gfx12_sources(np.asarray(FP8_VALUES[a_kind])[ia], np.asarray(FP8_VALUES[b_kind])[ib], 4)
    c = RNG.integers(-8, 9, (16, 16)) / 4
    lane = np.arange(32)
    rows = [j + 8 * (lane // 16) for j in range(8)]
    vgprs = {i: r for i, r in enumerate(srcs)} | {
        8 + j: c[r, lane % 16].astype(np.float32).view(np.uint32) for j, r in enumerate(rows)}
    w, _ = run(f"v_wmma_f32_16x16x16_{a_kind}_{b_kind} v[16:23], v[0:1], v[2:3], v[8:15]", "gfx1200", v=vgprs)
    d = a @ b + c
    for j, r in enumerate(rows):
        assert w.v[16 + j, 0].view(np.float32).tolist() == d[r, lane % 16].astype(np.float32).tolist()


def test_gfx12_wmma_i32_16x16x32_iu4():
    a, b = RNG.integers(-8, 8, (16, 32)), RNG.integers(-8, 8, (32, 16))
    srcs = gfx12_sources(a & 15, b & 15, 8)
    c = RNG.integers(-1000, 1000, (16, 16))
    lane = np.arange(32)
    rows = [j + 8 * (lane // 16) for j in range(8)]
    vgprs = {i: r for i, r in enumerate(srcs)} | {8 + j: c[r, lane % 16] & 0xFFFFFFFF for j, r in enumerate(rows)}
    w, _ = run("v_wmma_i32_16x16x32_iu4 v[16:23], v[0:1], v[2:3], v[8:15] neg_lo:[1,1,0]", "gfx1200", v=vgprs)
    d = a @ b + c
    for j, r in enumerate(rows):
        assert w.v[16 + j, 0].view(np.int32).tolist() == d[r, lane % 16].tolist()


@pytest.mark.parametrize(("arch", "lanes"), [("gfx942", 64), ("gfx1100", 32)])
def test_writelane_of_several_waves_with_a_constant_lane_or_value(arch, lanes):
    """Each wave writes its own SGPR's value into the lane a constant names, or a constant into the lane its SGPR
    names (the reference read a constant as one value for all waves, a register as one per wave)."""
    zeros = np.zeros((3, lanes))
    w = execute("v_writelane_b32 v1, s0, 3\nv_writelane_b32 v2, 7, s1", arch, lanes=lanes, waves=3,
                s={0: [5, 6, 7], 1: [1, 2, 0]}, v={1: zeros, 2: zeros})
    assert [int(w.v[1, k, 3]) for k in range(3)] == [5, 6, 7]
    assert [int(w.v[2, k, j]) for k, j in ((0, 1), (1, 2), (2, 0))] == [7, 7, 7] and int(w.v[2].sum()) == 21


@pytest.mark.parametrize(("arch", "lanes"), [("gfx942", 64), ("gfx1100", 32)])
def test_readlane_of_several_waves_with_a_constant_lane(arch, lanes):
    """Each wave reads the lane a constant names of its own VGPR (an SGPR spill's reload: the reference gave every
    wave the first wave's value, and tinygrad's conv_transpose3d stored all its results at one address)."""
    v1 = np.arange(3 * lanes).reshape(3, lanes)
    w = execute("v_readlane_b32 s2, v1, 3\nv_readlane_b32 s3, v1, s0", arch, lanes=lanes, waves=3,
                s={0: [0, 1, 2]}, v={1: v1})
    assert [int(w.s[2, k]) for k in range(3)] == [3, lanes + 3, 2 * lanes + 3]
    assert [int(w.s[3, k]) for k in range(3)] == [0, lanes + 1, 2 * lanes + 2]
