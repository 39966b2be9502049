"""CDNA3 / CDNA4 instructions RDNA has not (emu/amd/exec/cdna.py, cdna_lds.py, lowp.py), each against a reference
written here from the format definitions (AMD's FNUZ tables, the OCP OFP8 and MX specs) and the CDNA4 guide's
pseudocode: rounding by search over every value of the format (ties to the even code), stochastic rounding by
the two neighbours, packing lane by lane in Python integers."""

from __future__ import annotations

import math
import struct
import zlib
from functools import cache

import numpy as np
import pytest
from exec_harness import execute

from usergpu.emu.amd.exec import lowp
from usergpu.emu.memory import Memory
from usergpu.isa import amd as isa

LANES = np.arange(64)
# name: (exponent bits, mantissa bits, bias, specials, saturates)
SPEC = {"fp8_fnuz": (4, 3, 8, "fnuz", False), "bf8_fnuz": (5, 2, 16, "fnuz", False),
        "fp8": (4, 3, 7, "fn", False), "bf8": (5, 2, 15, "ieee", False), "fp6": (2, 3, 1, "none", True),
        "bf6": (3, 2, 3, "none", True), "fp4": (2, 1, 1, "none", True), "f16": (5, 10, 15, "ieee", False),
        "bf16": (8, 7, 127, "ieee", False)}
ARCH8 = {"gfx942": {"fp8": "fp8_fnuz", "bf8": "bf8_fnuz"}, "gfx950": {"fp8": "fp8", "bf8": "bf8"}}


# ---- the reference formats -------------------------------------------------------------------------------
def value(code: int, name: str) -> float:
    e_bits, m_bits, bias, special, _ = SPEC[name]
    sign, e, m = code >> (e_bits + m_bits) & 1, code >> m_bits & ((1 << e_bits) - 1), code & ((1 << m_bits) - 1)
    if special == "fnuz" and code == 1 << (e_bits + m_bits):
        return math.nan
    nan = -math.nan if sign else math.nan  # an OCP NaN keeps its sign (AMD's host model of gfx950)
    if special == "ieee" and e == (1 << e_bits) - 1:
        return nan if m else (-math.inf if sign else math.inf)
    if special == "fn" and e == (1 << e_bits) - 1 and m == (1 << m_bits) - 1:
        return nan
    mag = m / 2**m_bits * 2.0 ** (1 - bias) if e == 0 else (1 + m / 2**m_bits) * 2.0 ** (e - bias)
    return -mag if sign else mag


@cache
def positives(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Every finite non-negative value of the format, ascending, with its code; then one more: the value the
    next code would have (past the largest), marked -1."""
    e_bits, m_bits = SPEC[name][:2]
    pairs = sorted((value(c, name), c) for c in range(1 << (e_bits + m_bits)) if math.isfinite(value(c, name))
                   and not math.copysign(1, value(c, name)) < 0)
    step = pairs[-1][0] - pairs[-2][0]
    vals, codes = zip(*pairs, (pairs[-1][0] + step, -1), strict=False)
    return np.asarray(vals), np.asarray(codes)


def specials(name: str) -> tuple[int, int, int]:
    """(largest finite code, the code of an overflow or infinity, the code of NaN), without sign."""
    e_bits, m_bits, _, special, sat = SPEC[name]
    top = int(positives(name)[1][-2])
    nan = {"fnuz": 0x80, "fn": 0x7F, "none": top, "ieee": ((1 << e_bits) - 1) << m_bits | 1 << (m_bits - 1)}[special]
    over = top if sat or special == "none" else (((1 << e_bits) - 1) << m_bits if special == "ieee" else nan)
    return top, over, nan


def rounded(x: float, name: str, seed: int | None = None, source_man: int = 23) -> int:
    """x to the format: nearest (ties to the even code), or with seed: up to the next value when the k random
    bits (k = source_man - mantissa bits) added to x's position between its neighbours, in k bits, carry."""
    e_bits, m_bits, _, special, _ = SPEC[name]
    sign = (1 << (e_bits + m_bits)) if math.copysign(1, x) < 0 else 0
    top, over, nan = specials(name)
    vals, codes = positives(name)
    if math.isnan(x):
        code = nan
    elif math.isinf(x):
        code = over
    else:
        i = int(np.searchsorted(vals, abs(x), "right")) - 1
        if i == len(vals) - 1:  # at or past the value after the largest
            pick = i
        elif vals[i] == abs(x):
            pick = i
        elif seed is None:
            lo, hi = abs(x) - vals[i], vals[i + 1] - abs(x)
            pick = i if lo < hi or (lo == hi and codes[i] % 2 == 0) else i + 1
        else:
            k = source_man - m_bits
            position = math.floor((abs(x) - vals[i]) / (vals[i + 1] - vals[i]) * 2**k)
            pick = i + 1 if position + (seed >> (32 - k)) >= 2**k else i
        code = over if codes[pick] == -1 else int(codes[pick])
    if special == "fnuz" and code in (0, 0x80):
        return code
    return code | sign


def f32(x) -> np.ndarray:
    return np.asarray(x, np.float32).view(np.uint32)


def f32_of(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]


def bits_f32(x: float) -> int:
    return int(np.float32(x).view(np.uint32))


def f16_value(bits: int) -> float:
    return float(np.uint16(bits).view(np.float16))


def bf16_value(bits: int) -> float:
    return f32_of(bits << 16)


def same(got: float, want: float) -> bool:
    return (math.isnan(got) and math.isnan(want)) or (got == want and math.copysign(1, got) == math.copysign(1, want))


# ---- the formats themselves --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(set(SPEC) - {"f16", "bf16"}))
def test_every_code_decodes_as_its_definition(name):
    bits = 1 + sum(SPEC[name][:2])
    got = lowp.decode(np.arange(1 << bits), lowp.FORMATS[name])
    assert all(same(float(g), value(c, name)) for c, g in enumerate(got))


@pytest.mark.parametrize(("name", "code", "want"), [
    ("fp8_fnuz", 0x7F, 240.0), ("fp8_fnuz", 0xFF, -240.0), ("fp8_fnuz", 0x80, math.nan), ("fp8_fnuz", 0x08, 2**-7),
    ("fp8_fnuz", 0x01, 2**-10), ("fp8_fnuz", 0x40, 1.0), ("bf8_fnuz", 0x7F, 57344.0), ("bf8_fnuz", 0x01, 2**-17),
    ("bf8_fnuz", 0x40, 1.0), ("fp8", 0x7E, 448.0), ("fp8", 0x7F, math.nan), ("fp8", 0xFF, math.nan),
    ("fp8", 0x80, -0.0), ("fp8", 0x01, 2**-9), ("fp8", 0x38, 1.0), ("bf8", 0x7B, 57344.0), ("bf8", 0x7C, math.inf),
    ("bf8", 0xFC, -math.inf), ("bf8", 0x7D, math.nan), ("bf8", 0x01, 2**-16), ("bf8", 0x3C, 1.0),
    ("fp6", 0x1F, 7.5), ("fp6", 0x01, 0.125), ("fp6", 0x08, 1.0), ("fp6", 0x20, -0.0), ("bf6", 0x1F, 28.0),
    ("bf6", 0x01, 0.0625), ("bf6", 0x0C, 1.0), ("fp4", 0x7, 6.0), ("fp4", 0xF, -6.0), ("fp4", 0x1, 0.5)])
def test_known_values(name, code, want):
    assert same(float(lowp.decode(np.asarray([code]), lowp.FORMATS[name])[0]), want)


def test_fp4_is_the_mx_table():
    got = lowp.decode(np.arange(8), lowp.FORMATS["fp4"])
    assert list(got) == [0, 0.5, 1, 1.5, 2, 3, 4, 6]


def test_e8m0_scales():
    got = lowp.e8m0(np.asarray([0, 1, 126, 127, 128, 254, 255]))
    assert list(got[:6]) == [2.0**-127, 2.0**-126, 0.5, 1.0, 2.0, 2.0**127] and math.isnan(got[6])


def sample(name: str, rng: np.random.Generator, n: int = 4000) -> np.ndarray:
    """f32 values across and past a format's range: its values, the midpoints between them (ties), random
    values of every magnitude, zeros, infinities, NaN."""
    vals = positives(name)[0]
    if len(vals) > 512:  # f16, bf16: a sample of their values and the next ones
        pick = np.sort(rng.choice(len(vals) - 1, 512, replace=False))
        vals = np.concatenate([vals[pick], vals[pick + 1]])
    mids = (vals[:-1] + vals[1:]) / 2
    spread = np.exp2(rng.uniform(np.log2(vals[1]) - 3, np.log2(vals[-1]) + 2, n))
    x = np.concatenate([vals, mids, spread, [0.0, np.inf, np.nan, 1e30, 1e-30]])
    with np.errstate(over="ignore"):  # bf16's values past f32's range: infinities, as meant
        return np.concatenate([x, -x]).astype(np.float32)


@pytest.mark.parametrize("name", sorted(SPEC))
def test_rounding_to_nearest_even_matches_the_search(name):
    x = sample(name, np.random.default_rng(1))
    got = lowp.encode(x, lowp.FORMATS[name])
    want = [rounded(float(v), name) for v in x]
    bad = [(float(v), hex(g), hex(r)) for v, g, r in zip(x, got, want, strict=True) if g != r]
    assert not bad, bad[:5]


@pytest.mark.parametrize(("name", "source_man"), [("fp8_fnuz", 23), ("bf8_fnuz", 23), ("fp8", 23), ("bf8", 10),
                                                  ("fp4", 23), ("fp4", 7), ("fp6", 10), ("bf6", 23),
                                                  ("f16", 23), ("bf16", 23)])
def test_stochastic_rounding_matches_the_neighbours(name, source_man):
    rng = np.random.default_rng(2)
    x = sample(name, rng, 1000)
    if source_man < 23:  # a value of the narrower source format
        with np.errstate(over="ignore"):
            x = (x.astype(np.float16) if source_man == 10 else (x.view(np.uint32) & 0xFFFF0000).view(np.float32))
        x = x.astype(np.float32)
    seeds = rng.integers(0, 1 << 32, len(x), dtype=np.uint64).astype(np.uint32)
    got = lowp.encode(x, lowp.FORMATS[name], seeds, source_man)
    want = [rounded(float(v), name, int(s), source_man) for v, s in zip(x, seeds, strict=True)]
    bad = [(float(v), hex(g), hex(r)) for v, g, r in zip(x, got, want, strict=True) if g != r]
    assert not bad, bad[:5]


@pytest.mark.parametrize(("name", "x", "code"), [
    ("fp8_fnuz", 247.99, 0x7F), ("fp8_fnuz", 248.0, 0x80), ("fp8_fnuz", -1e9, 0x80), ("fp8_fnuz", np.inf, 0x80),
    ("fp8_fnuz", -0.0, 0x00), ("fp8_fnuz", -2.0**-12, 0x00), ("fp8_fnuz", 2.0**-11, 0x00),
    ("fp8_fnuz", 3 * 2.0**-11, 0x02), ("bf8_fnuz", 61440.0, 0x80), ("bf8_fnuz", 61439.0, 0x7F),
    ("fp8", 464.0, 0x7E), ("fp8", 465.0, 0x7F), ("fp8", 1e9, 0x7F), ("fp8", -np.inf, 0xFF), ("fp8", np.nan, 0x7F),
    ("fp8", -0.0, 0x80), ("fp8", 2.0**-10, 0x00), ("bf8", 61439.0, 0x7B), ("bf8", 61440.0, 0x7C), ("bf8", np.inf, 0x7C),
    ("bf8", -np.inf, 0xFC),
    ("bf8", np.nan, 0x7E), ("fp4", 5.0, 0x6), ("fp4", 2.5, 0x4), ("fp4", 0.25, 0x0), ("fp4", 0.75, 0x2),
    ("fp4", -100.0, 0xF), ("fp4", np.nan, 0x7), ("fp6", 7.75, 0x1F), ("bf6", 30.0, 0x1F), ("bf6", 0.03125, 0x0)])
def test_overflow_nan_zero_and_ties(name, x, code):
    """No 8-bit conversion saturates: past the largest value after rounding is e5m2's infinity or e4m3's NaN
    (tinygrad's gfx950 hardware test of V_CVT_PK_BF8_F32: 61440 and infinity give 0x7C); the MX formats, which
    have neither, give their largest."""
    assert int(lowp.encode(np.asarray([x]), lowp.FORMATS[name])[0]) == code


# ---- fp8 / bf8 conversions of both archs -------------------------------------------------------------------
def all_bytes() -> np.ndarray:
    """Per lane a dword whose four bytes together cover all 256 codes."""
    return LANES * 4 | (LANES * 4 + 1) << 8 | (LANES * 4 + 2) << 16 | (LANES * 4 + 3) << 24


@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
@pytest.mark.parametrize("kind", ["fp8", "bf8"])
@pytest.mark.parametrize("form", ["e32", "sdwa 0", "sdwa 1", "sdwa 2", "sdwa 3", "e64 mul:2", "e64 clamp", "dpp"])
def test_cvt_f32_fp8_decodes_a_byte(arch, kind, form):
    name = ARCH8[arch][kind]
    program = {"e32": f"v_cvt_f32_{kind} v1, v2", "dpp": f"v_cvt_f32_{kind}_dpp v1, v2 quad_perm:[1,0,3,2] "
               "row_mask:0xf bank_mask:0xf", "e64 mul:2": f"v_cvt_f32_{kind}_e64 v1, v2 mul:2",
               "e64 clamp": f"v_cvt_f32_{kind}_e64 v1, v2 clamp"}.get(form)
    byte = int(form[-1]) if form.startswith("sdwa") else 0
    program = program or f"v_cvt_f32_{kind}_sdwa v1, v2 src0_sel:BYTE_{byte}"
    src = all_bytes()
    w = execute(program, arch, v={2: src}, lanes=64)
    source_lane = LANES ^ 1 if form == "dpp" else LANES
    for lane in range(64):
        want = value(int(src[source_lane[lane]]) >> 8 * byte & 0xFF, name)
        want = want * 2 if form == "e64 mul:2" else want
        want = (0.0 if math.isnan(want) else min(max(want, 0.0), 1.0)) if form == "e64 clamp" else want
        assert same(f32_of(int(w.v[1, 0, lane])), float(np.float32(want))), (lane, hex(int(src[lane])))


@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
@pytest.mark.parametrize("kind", ["fp8", "bf8"])
@pytest.mark.parametrize("word", [0, 1])
def test_cvt_pk_f32_fp8_decodes_two_bytes_of_a_word(arch, kind, word):
    name = ARCH8[arch][kind]
    program = f"v_cvt_pk_f32_{kind}_sdwa v[2:3], v1 src0_sel:WORD_1" if word else f"v_cvt_pk_f32_{kind} v[2:3], v1"
    src = all_bytes()
    w = execute(program, arch, v={1: src}, lanes=64)
    for lane in range(64):
        for i in (0, 1):
            want = value(int(src[lane]) >> (16 * word + 8 * i) & 0xFF, name)
            assert same(f32_of(int(w.v[2 + i, 0, lane])), want)


def eight_bit_inputs(name: str, rng: np.random.Generator) -> np.ndarray:
    """64 f32 values around the format's range, ties and specials included."""
    x = sample(name, rng, 64)
    return np.concatenate([x[:8], rng.choice(x, 56)]).astype(np.float32)


@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
@pytest.mark.parametrize("kind", ["fp8", "bf8"])
@pytest.mark.parametrize("word", [0, 1])
def test_cvt_pk_fp8_f32_rounds_two_values_into_a_word(arch, kind, word):
    name, rng = ARCH8[arch][kind], np.random.default_rng(3)
    a, b = eight_bit_inputs(name, rng), eight_bit_inputs(name, rng)
    old = rng.integers(0, 1 << 32, 64, dtype=np.uint64)
    sel = " op_sel:[0,0,1]" if word else ""
    w = execute(f"v_cvt_pk_{kind}_f32 v1, -v2, |v3|{sel}", arch, v={1: old, 2: f32(a), 3: f32(b)}, lanes=64)
    for lane in range(64):
        pair = rounded(-float(a[lane]), name) | rounded(abs(float(b[lane])), name) << 8
        want = int(old[lane]) & ~(0xFFFF << 16 * word) | pair << 16 * word
        assert int(w.v[1, 0, lane]) == want, (lane, a[lane], b[lane])


@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
@pytest.mark.parametrize("kind", ["fp8", "bf8"])
@pytest.mark.parametrize("byte", [0, 1, 2, 3])
def test_cvt_sr_fp8_f32_rounds_by_src1s_bits_into_a_byte(arch, kind, byte):
    name, rng = ARCH8[arch][kind], np.random.default_rng(4)
    x = eight_bit_inputs(name, rng)
    seeds = rng.integers(0, 1 << 32, 64, dtype=np.uint64)
    old = rng.integers(0, 1 << 32, 64, dtype=np.uint64)
    sel = ["", " op_sel:[0,0,1,0]", " op_sel:[0,0,0,1]", " op_sel:[0,0,1,1]"][byte]
    w = execute(f"v_cvt_sr_{kind}_f32 v1, v2, v3{sel}", arch, v={1: old, 2: f32(x), 3: seeds}, lanes=64)
    for lane in range(64):
        code = rounded(float(x[lane]), name, int(seeds[lane]))
        assert int(w.v[1, 0, lane]) == int(old[lane]) & ~(0xFF << 8 * byte) | code << 8 * byte, (lane, x[lane])


def test_sr_rounds_up_as_often_as_the_fraction_says():
    """1.1 (as f32) lies 0.4000000095 of the way from bf8's 1.0 to 1.25: of 64 evenly spread seeds lane << 26,
    those of lanes 39 .. 63 (at least 0.6 of 2**32) carry."""
    w = execute("v_cvt_sr_bf8_f32 v1, v2, v3", "gfx942", v={2: f32(np.full(64, 1.1)), 3: LANES << 26}, lanes=64)
    assert w.v[1, 0].tolist() == [0x41 if lane >= 39 else 0x40 for lane in range(64)]


# ---- gfx950's scaled conversions -----------------------------------------------------------------------------
FLOATS = ("f32", "f16", "bf16")
SCALED_NAMES = (
    [f"pk_{t}_{f}" for t in FLOATS for f in ("fp8", "bf8", "fp4")] + [f"{t}_{f}" for t in ("f32", "f16")
                                                                       for f in ("fp8", "bf8")]
    + [f"pk_{t}_{f}" for t in ("fp8", "bf8", "fp4") for f in FLOATS] + [f"sr_{t}_{f}" for t in ("fp8", "bf8")
                                                                        for f in FLOATS]
    + [f"sr_pk_fp4_{f}" for f in FLOATS] + [f"pk32_{t}_{f}" for t in FLOATS for f in ("fp6", "bf6")]
    + [f"pk32_{t}_{f}" for t in ("fp6", "bf6") for f in ("f16", "bf16")] + [f"2xpk16_{t}_f32" for t in ("fp6", "bf6")]
    + [f"sr_pk32_{t}_{f}" for t in ("fp6", "bf6") for f in ("f16", "bf16")])
WIDTH = {"fp8": 8, "bf8": 8, "fp4": 4, "fp6": 6, "bf6": 6, "f32": 32, "f16": 16, "bf16": 16}


def prng_ref(x: int) -> int:
    return (x << 1 & 0xFFFFFFFF) ^ (197 if x >> 31 else 0)


def unpack(words: list[int], bits: int, count: int, start: int = 0) -> list[int]:
    whole = sum(w << 32 * i for i, w in enumerate(words)) >> start
    return [whole >> bits * i & ((1 << bits) - 1) for i in range(count)]


def pack(fields: list[int], bits: int) -> int:
    return sum(f << bits * i for i, f in enumerate(fields))


def float_bits(x: float, kind: str) -> int:
    """An exactly representable value's bits (nan: quiet NaN of its sign, the formats' conversions give)."""
    if math.isnan(x):
        sign = math.copysign(1, x) < 0
        return {"f32": 0x7FC00000 | sign << 31, "f16": 0x7E00 | sign << 15, "bf16": 0x7FC0 | sign << 15}[kind]
    if kind == "f32":
        return bits_f32(x)
    with np.errstate(over="ignore"):  # past f16's range: infinity
        return int(np.float16(x).view(np.uint16)) if kind == "f16" else rounded(x, "bf16")


def with_opsel(text: str, bits: list[int]) -> tuple[str, list[int]]:
    """A VOP3 instruction with its OPSEL field set to bits, as LLVM prints it (each conversion names the bits it
    uses its own way), and the bits that text encodes."""
    code = bytearray(isa.asm(text, "gfx950"))
    word = int.from_bytes(code[:4], "little") | sum(b << 11 + i for i, b in enumerate(bits))
    code[:4] = word.to_bytes(4, "little")
    text = isa.decode(bytes(code), "gfx950", 0).text
    fields = isa.decode(isa.asm(text, "gfx950"), "gfx950", 0).fields
    return text, [fields[f"opsel{i}"] for i in range(4)]


def scaled_layout(name: str) -> tuple[str, str, int, bool]:
    """(to, from, count, sr) of a v_cvt_scalef32_ name's tail."""
    parts = name.split("_")
    sr = parts[0] == "sr"
    parts = parts[1:] if sr else parts
    count = {"pk": 2, "pk32": 32, "2xpk16": 32}.get(parts[0], 1)
    return parts[-2], parts[-1], count, sr


def registers(first: int, n: int) -> str:
    return f"v{first}" if n == 1 else f"v[{first}:{first + n - 1}]"


def scaled_case(name: str, rng: np.random.Generator):
    """The program, the VGPRs it starts from, and the reference: lane -> {VGPR: dword} it must leave. Sources:
    S0 from v32 (2xpk16: v16 and v32; the pk_*_f32 forms: v32 and v33), the random bits in v3, the scale in v50;
    the result from v0."""
    to, frm, count, sr = scaled_layout(name)
    widen = to in FLOATS
    in_bits, out_bits = count * WIDTH[frm], count * WIDTH[to]
    s0_words, dst_words = max(in_bits // 32, 1), max(out_bits // 32, 1)
    two = name.startswith("pk_") and frm == "f32"  # two f32 sources
    if name.startswith("2xpk16"):
        sources = [registers(16, 16), registers(32, 16)]
    else:
        sources = ["v32", "v33"] if two else [registers(32, s0_words)]
    text = f"v_cvt_scalef32_{name} {registers(0, dst_words)}, {', '.join(sources + ['v3'] * sr + ['v50'])}"
    program, opsel = with_opsel(text, [int(b) for b in rng.integers(0, 2, 4)])
    in_sel = 0 if in_bits >= 32 else (opsel[0] if in_bits == 16 else opsel[0] | opsel[1] << 1)
    out_sel = 0 if out_bits >= 32 else (opsel[3] if out_bits == 16 else opsel[2] | opsel[3] << 1)
    high_half = 16 * opsel[0] if count == 1 and WIDTH[frm] == 16 else 0  # a lone 16-bit source's half
    scale_exp = rng.integers(124, 131, 64)
    regs = {0: rng.integers(0, 1 << 32, 64, dtype=np.uint64), 3: rng.integers(0, 1 << 32, 64, dtype=np.uint64),
            50: (scale_exp << 23).astype(np.uint64)}
    if widen:
        regs.update({32 + i: rng.integers(0, 1 << 32, 64, dtype=np.uint64) for i in range(s0_words)})
    else:  # values around the format's, scaled; NaN, infinity and a huge value in lanes 0-2
        vals = positives(to)[0][:-1]
        x = (rng.choice(vals, (64, count)) * rng.choice([-1, 1], (64, count)) * rng.uniform(0.8, 1.25, (64, count))
             * np.exp2(scale_exp - 127.0)[:, None])
        x[:3, 0] = [np.nan, np.inf, -1e30]
        with np.errstate(over="ignore"):
            bits = {"f32": lambda v: f32(v), "f16": lambda v: v.astype(np.float16).view(np.uint16),
                    "bf16": lambda v: f32(v) >> 16}[frm](x.astype(np.float32)).astype(np.uint64)
        if name.startswith("2xpk16"):
            regs.update({16 + i: bits[:, 2 * i] for i in range(16)} | {32 + i: bits[:, 2 * i + 1] for i in range(16)})
        elif two:
            regs[32], regs[33] = bits[:, 0], bits[:, 1]
        else:
            words = np.zeros((64, s0_words), np.uint64)
            for j in range(count):
                pos = high_half + j * WIDTH[frm]
                words[:, pos // 32] |= bits[:, j] << np.uint64(pos % 32)
            regs.update({32 + i: words[:, i] for i in range(s0_words)})

    def reference(lane: int) -> dict[int, int]:
        scale = 2.0 ** (int(scale_exp[lane]) - 127)
        if widen:
            codes = unpack([int(regs[32 + i][lane]) for i in range(s0_words)], WIDTH[frm], count, in_bits * in_sel)
            outs = [float_bits(value(c, frm) * scale, to) for c in codes]
        else:
            if name.startswith("2xpk16"):
                fields = [int(regs[16 + i // 2 if i % 2 == 0 else 32 + i // 2][lane]) for i in range(32)]
            elif two:
                fields = [int(regs[32][lane]), int(regs[33][lane])]
            else:
                words = [int(regs[32 + i][lane]) for i in range(s0_words)]
                fields = unpack(words, WIDTH[frm], count, high_half)
            xs = [{"f32": f32_of, "f16": f16_value, "bf16": bf16_value}[frm](f) for f in fields]
            seed, outs = int(regs[3][lane]), []
            for x in xs:
                source_man = {"f32": 23, "f16": 10, "bf16": 7}[frm]
                outs.append(rounded(x / scale, to, seed if sr else None, source_man))
                seed = prng_ref(seed)
        packed = pack(outs, WIDTH[to])
        if out_bits < 32:
            keep = int(regs[0][lane]) & ~(((1 << out_bits) - 1) << out_bits * out_sel)
            return {0: keep | packed << out_bits * out_sel}
        return {i: packed >> 32 * i & 0xFFFFFFFF for i in range(dst_words)}

    return program, regs, reference


@pytest.mark.parametrize("name", SCALED_NAMES)
def test_cvt_scalef32(name):
    program, regs, reference = scaled_case(name, np.random.default_rng(zlib.crc32(name.encode())))
    w = execute(program, "gfx950", v=regs, lanes=64)
    for lane in range(64):
        for reg, want in reference(lane).items():
            assert int(w.v[reg, 0, lane]) == want, (program, lane, reg, hex(int(w.v[reg, 0, lane])), hex(want))


def test_scalef32_nan_scale_gives_nan_and_the_mx_formats_their_largest():
    scale = np.full(64, 0xFF << 23)
    w = execute("v_cvt_scalef32_pk_f32_fp8 v[2:3], v1, v4\nv_cvt_scalef32_pk_fp4_f32 v5, v6, v6, v4\n"
                "v_cvt_scalef32_pk_fp8_f32 v7, v6, v6, v4", "gfx950",
                v={1: np.full(64, 0x3838), 4: scale, 6: f32(np.full(64, -1.0)), 5: np.zeros(64), 7: np.zeros(64)},
                lanes=64)
    assert math.isnan(f32_of(int(w.v[2, 0, 0]))) and math.isnan(f32_of(int(w.v[3, 0, 0])))
    assert int(w.v[5, 0, 0]) == 0xFF and int(w.v[7, 0, 0]) == 0xFFFF  # fp4: -6.0 twice; fp8: -NaN twice


def test_scalef32_widening_overflows_to_infinity():
    """448 * 2**127 is past f32's range, 6 * 2**16 past f16's: infinity (gfx950's behaviour by AMD's host
    model)."""
    w = execute("v_cvt_scalef32_f32_fp8 v2, v1, v4\nv_cvt_scalef32_pk_f16_fp4 v3, v5, v6", "gfx950",
                v={1: np.full(64, 0x7E), 4: np.full(64, 254 << 23), 5: np.full(64, 0xF7), 6: np.full(64, 143 << 23)},
                lanes=64)
    assert int(w.v[2, 0, 0]) == 0x7F800000 and int(w.v[3, 0, 0]) == 0xFC007C00


# ---- the other new VALU ops ------------------------------------------------------------------------------
def test_cvt_pk_f16_and_bf16_f32_round_to_nearest_even():
    rng = np.random.default_rng(5)
    a, b = (rng.standard_normal(64) * 10.0 ** rng.integers(-6, 6, 64)).astype(np.float32), sample("f16", rng, 64)[:64]
    a[:4] = [65520.0, 65519.0, np.nan, -0.0]
    w = execute("v_cvt_pk_f16_f32 v1, v2, v3\nv_cvt_pk_bf16_f32 v4, v2, v3", "gfx950", v={2: f32(a), 3: f32(b)},
                lanes=64)
    for lane in range(64):
        x, y = float(a[lane]), float(b[lane])
        assert int(w.v[1, 0, lane]) == rounded(x, "f16") | rounded(y, "f16") << 16, lane
        assert int(w.v[4, 0, lane]) == rounded(x, "bf16") | rounded(y, "bf16") << 16, lane


@pytest.mark.parametrize("kind", ["f16", "bf16"])
@pytest.mark.parametrize("half", [0, 1])
def test_cvt_sr_f16_and_bf16_f32_into_a_half(kind, half):
    rng = np.random.default_rng(6)
    x = sample(kind, rng, 64)[rng.integers(0, 200, 64)]
    seeds, old = (rng.integers(0, 1 << 32, 64, dtype=np.uint64) for _ in range(2))
    sel = " op_sel:[0,0,1]" if half else ""
    w = execute(f"v_cvt_sr_{kind}_f32 v1, v2, v3{sel}", "gfx950", v={1: old, 2: f32(x), 3: seeds}, lanes=64)
    for lane in range(64):
        code = rounded(float(x[lane]), kind, int(seeds[lane]))
        assert int(w.v[1, 0, lane]) == int(old[lane]) & ~(0xFFFF << 16 * half) | code << 16 * half, lane


def test_cvt_f32_bf16_widens_the_low_half():
    src = np.random.default_rng(7).integers(0, 1 << 32, 64, dtype=np.uint64)
    w = execute("v_cvt_f32_bf16 v1, v2\nv_cvt_f32_bf16_e64 v3, -v2\nv_cvt_f32_bf16 v4, 1.0", "gfx950", v={2: src},
                lanes=64)
    assert (w.v[1, 0] == (src & 0xFFFF) << 16).all()
    assert (w.v[3, 0] == ((src & 0xFFFF) << 16) ^ 0x80000000).all() and (w.v[4, 0] == 0x3F800000).all()


def test_prng_b32_is_the_guides_lfsr():
    src = np.random.default_rng(8).integers(0, 1 << 32, 64, dtype=np.uint64)
    w = execute("v_prng_b32 v1, v2\nv_prng_b32_e64 v3, v1\nv_prng_b32_dpp v4, v2 row_shr:1 row_mask:0xf "
                "bank_mask:0xf bound_ctrl:1", "gfx950", v={2: src}, lanes=64)
    for lane in range(64):
        once = prng_ref(int(src[lane]))
        assert int(w.v[1, 0, lane]) == once and int(w.v[3, 0, lane]) == prng_ref(once)
        assert int(w.v[4, 0, lane]) == (prng_ref(int(src[lane - 1])) if lane % 16 else prng_ref(0))


@pytest.mark.parametrize("table", [0x96, 0xE8, 0x80, 0xFE, 0x00, 0xFF, 0x5C])
def test_bitop3_b32_evaluates_the_truth_table_bitwise(table):
    rng = np.random.default_rng(table)
    a, b, c = (rng.integers(0, 1 << 32, 64, dtype=np.uint64) for _ in range(3))
    table_text = f" bitop3:{table:#x}" if table else ""  # LLVM leaves out a zero table
    w = execute(f"v_bitop3_b32 v1, v2, v3, v4{table_text}", "gfx950", v={2: a, 3: b, 4: c}, lanes=64)
    for lane in range(64):
        x, y, z = int(a[lane]), int(b[lane]), int(c[lane])
        want = sum(1 << bit for bit in range(32)
                   if table >> ((x >> bit & 1) << 2 | (y >> bit & 1) << 1 | (z >> bit & 1)) & 1)
        assert int(w.v[1, 0, lane]) == want


def test_bitop3_b16_takes_op_sel_halves_and_keeps_the_other_half():
    rng = np.random.default_rng(9)
    a, b, c, old = (rng.integers(0, 1 << 32, 64, dtype=np.uint64) for _ in range(4))
    w = execute("v_bitop3_b16 v1, v2, v3, v4 bitop3:0xe8 op_sel:[0,1,1,1]", "gfx950",
                v={1: old, 2: a, 3: b, 4: c}, lanes=64)
    for lane in range(64):
        x, y, z = int(a[lane]) & 0xFFFF, int(b[lane]) >> 16, int(c[lane]) >> 16
        majority = (x & y) | (x & z) | (y & z)
        assert int(w.v[1, 0, lane]) == (int(old[lane]) & 0xFFFF) | majority << 16


@pytest.mark.parametrize(("kind", "low", "high"), [("i8", -128, 127), ("u8", 0, 255)])
@pytest.mark.parametrize("half", [0, 1])
def test_ashr_pk_shifts_and_saturates_to_bytes(kind, low, high, half):
    rng = np.random.default_rng(10)
    a, b = (rng.integers(-(1 << 31), 1 << 31, 64) for _ in range(2))
    shift, old = rng.integers(0, 64, 64), rng.integers(0, 1 << 32, 64, dtype=np.uint64)
    sel = " op_sel:[0,0,0,1]" if half else ""
    w = execute(f"v_ashr_pk_{kind}_i32 v1, v2, v3, v4{sel}", "gfx950", v={1: old, 2: a, 3: b, 4: shift}, lanes=64)
    for lane in range(64):
        s = int(shift[lane]) & 31
        pair = [min(max(int(v[lane]) >> s, low), high) & 0xFF for v in (a, b)]
        packed = pair[0] | pair[1] << 8
        assert int(w.v[1, 0, lane]) == int(old[lane]) & ~(0xFFFF << 16 * half) | packed << 16 * half


def swap_reference(width: int, d: list[int], s: list[int], active: list[bool], fi: bool, bound: bool):
    """v_permlane{16,32}_swap as the guide's loops: VDST's lanes in odd blocks of width lanes trade with SRC0's
    lanes width below; a write needs its lane active and its partner active (or fi), bound_ctrl writes 0."""
    new_d, new_s = list(d), list(s)
    for lane in range(64):
        partner = lane ^ width
        readable = active[partner] or fi
        if not active[lane] or not (readable or bound):
            continue
        if (lane // width) % 2:
            new_d[lane] = s[partner] if readable else 0
        else:
            new_s[lane] = d[partner] if readable else 0
    return new_d, new_s


@pytest.mark.parametrize("width", [16, 32])
@pytest.mark.parametrize("mods", ["", " fi:1", " bound_ctrl:1", " bound_ctrl:1 fi:1"])
def test_permlane_swap_writes_both_registers(width, mods):
    rng = np.random.default_rng(width)
    d, s = (rng.integers(0, 1 << 32, 64, dtype=np.uint64) for _ in range(2))
    exec_mask = 0xF0FF_FFFF_FFFF_FF0F
    form = f"_e64 v1, v2{mods}" if mods else " v1, v2"
    w = execute(f"s_mov_b32 exec_lo, {exec_mask & 0xFFFFFFFF:#x}\ns_mov_b32 exec_hi, {exec_mask >> 32:#x}\n"
                f"v_permlane{width}_swap_b32{form}", "gfx950", v={1: d, 2: s}, lanes=64)
    active = [bool(exec_mask >> lane & 1) for lane in range(64)]
    want_d, want_s = swap_reference(width, d.tolist(), s.tolist(), active, "fi" in mods, "bound_ctrl" in mods)
    assert w.v[1, 0].tolist() == want_d and w.v[2, 0].tolist() == want_s


def test_permlane32_swap_of_a_register_with_itself_swaps_its_halves():
    src = LANES * 3 + 1
    w = execute("v_permlane32_swap_b32 v1, v1", "gfx950", v={1: src}, lanes=64)
    assert w.v[1, 0].tolist() == np.roll(src, 32).tolist()


@pytest.mark.parametrize(("arch", "program", "kind"), [
    ("gfx942", "v_dot2c_f32_f16 v1, v2, v3", "f16"), ("gfx950", "v_dot2c_f32_bf16 v1, v2, v3", "bf16"),
    ("gfx942", "v_dot2c_i32_i16 v1, v2, v3", "i16"), ("gfx942", "v_dot2c_i32_i16_e64 v1, v2, v3 clamp", "i16"),
    ("gfx950", "v_dot2c_f32_bf16_dpp v1, v2, v3 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf", "bf16"),
    ("gfx942", "v_dot2_i32_i16 v1, v2, v3, v4", "i16"), ("gfx942", "v_dot2_u32_u16 v1, v2, v3, v4 clamp", "u16")])
def test_dot2(arch, program, kind):
    rng = np.random.default_rng(11)
    a, b, c = (rng.integers(0, 1 << 32, 64, dtype=np.uint64) for _ in range(3))
    if kind in ("f16", "bf16"):  # finite values: each half's top exponent bit clear
        a, b = (x & ~np.uint64(0x40004000) for x in (a, b))
        c = f32(rng.standard_normal(64)).astype(np.uint64)
    w = execute(program, arch, v={1: c, 2: a, 3: b, 4: c}, lanes=64)  # the accumulator: v1 (dot2c) or v4
    source = LANES ^ 1 if "quad_perm" in program else LANES
    for lane in range(64):
        x, y = int(a[source[lane]]), int(b[lane])
        halves = [(x >> 16 * i & 0xFFFF, y >> 16 * i & 0xFFFF) for i in (0, 1)]
        acc = int(c[lane])
        if kind in ("f16", "bf16"):
            conv = f16_value if kind == "f16" else bf16_value
            want = bits_f32(sum(conv(p) * conv(q) for p, q in halves) + f32_of(acc))
        else:
            def signed(v: int) -> int:
                return v - (1 << 16) if kind == "i16" and v >> 15 else v
            total = sum(signed(p) * signed(q) for p, q in halves)
            total += acc - (1 << 32) if kind == "i16" and acc >> 31 else acc
            if "clamp" in program:
                total = min(max(total, -(1 << 31)), (1 << 31) - 1) if kind == "i16" else min(total, (1 << 32) - 1)
            want = total & 0xFFFFFFFF
        assert int(w.v[1, 0, lane]) == want, lane


# ---- LDS: transpose loads and loads to LDS --------------------------------------------------------------
@pytest.mark.parametrize(("bits", "name"), [(16, "ds_read_b64_tr_b16"), (8, "ds_read_b64_tr_b8"),
                                            (4, "ds_read_b64_tr_b4"), (6, "ds_read_b96_tr_b6")])
def test_transpose_load_transposes_each_16_lane_block(bits, name):
    """Lane c + (16 / E) * k of each 16 reads E consecutive elements of row k of a 16-wide block (columns
    c * E ..); afterwards lane j holds column j of every row."""
    size = 12 if bits == 6 else 8
    per_lane = 16 if bits == 6 else 64 // bits
    rng = np.random.default_rng(bits)
    data = rng.integers(0, 1 << 32, (64, 4), dtype=np.uint64)
    # each lane stores its 16 bytes at lane * 16, then reads size bytes from there (offset 4: the rest)
    w = execute(f"ds_write_b128 v10, v[4:7]\n{name} v[0:{size // 4 - 1}], v10 offset:4", "gfx950",
                v={10: LANES * 16, **{4 + i: data[:, i] for i in range(4)}}, lanes=64)
    read = [unpack([int(x) for x in data[lane]], 8, 16)[4:4 + size] for lane in range(64)]
    elements = [unpack([int.from_bytes(bytes(r[i:i + 4]), "little") for i in range(0, size, 4)], bits, per_lane)
                for r in read]
    for lane in range(64):
        unit, column = lane // 16 * 16, lane % 16
        rows = 16 // per_lane  # lanes per row of the block
        want = [elements[unit + column // per_lane + rows * k][column % per_lane] for k in range(per_lane)]
        words = [int(w.v[i, 0, lane]) for i in range(size // 4)]
        assert unpack(words, bits, per_lane) == want, lane


@pytest.mark.parametrize(("arch", "what", "size"), [
    ("gfx942", "dword", 4), ("gfx942", "ubyte", 1), ("gfx942", "sbyte", 1), ("gfx942", "ushort", 2),
    ("gfx942", "sshort", 2), ("gfx950", "dwordx3", 12), ("gfx950", "dwordx4", 16), ("gfx950", "sbyte", 1)])
@pytest.mark.parametrize("form", ["global", "buffer"])
def test_loads_to_lds_land_at_m0_plus_the_offset_plus_the_lane(arch, what, size, form):
    mem = Memory()
    data = np.random.default_rng(size).integers(0, 256, 64 * 16 + 64, dtype=np.uint64).astype(np.uint8)
    base = mem.map(data)
    stride, offset, m0 = (4 if size <= 4 else 16), 8, 0x200
    lane_addr = LANES * size
    if form == "global":
        addr = base + lane_addr
        load = f"global_load_lds_{what} v[2:3], off offset:{offset}"
    else:
        load = f"buffer_load_{what} v2, s[8:11], 0 offen offset:{offset} lds"
        addr = lane_addr
    reads = "\n".join(f"ds_read_b32 v{20 + i}, v6 offset:{m0 + offset + 4 * i}" for i in range(max(size // 4, 1)))
    w = execute(f"s_mov_b32 m0, {m0:#x}\n{load}\ns_waitcnt vmcnt(0)\n{reads}", arch, memory=mem, lanes=64,
                v={2: addr & 0xFFFFFFFF, 3: addr >> 32, 6: LANES * stride},
                s={8: base & 0xFFFFFFFF, 9: base >> 32, 10: len(data), 11: 0})
    for lane in range(64):
        raw = bytes(data[lane * size + offset:lane * size + offset + size])
        value = int.from_bytes(raw, "little", signed=what.startswith("s"))
        want = value & 0xFFFFFFFF if size < 4 else value
        got = sum(int(w.v[20 + i, 0, lane]) << 32 * i for i in range(max(size // 4, 1)))
        assert got == want, lane


def test_scratch_load_lds_and_inactive_lanes():
    """scratch_load_lds_dword reads each lane's own private dword; lanes outside EXEC leave LDS alone."""
    w = execute("scratch_store_dword v1, v2, off\ns_mov_b32 m0, 0\ns_mov_b64 exec, 0xffff\n"
                "scratch_load_lds_dword v1, off\ns_mov_b64 exec, -1\ns_waitcnt vmcnt(0)\nds_read_b32 v3, v4",
                "gfx942", v={1: np.zeros(64), 2: LANES + 1000, 4: LANES * 4}, lanes=64)
    assert w.v[3, 0].tolist() == [lane + 1000 if lane < 16 else 0 for lane in range(64)]


def test_load_to_lds_past_the_lds_writes_nothing_there():
    """m0 0xfffc: lane 0's dword is the last of the workgroup's 64 KiB of LDS, the other lanes' lie past it, where the
    hardware writes nothing (no fault); a DS read there reads 0."""
    mem = Memory()
    base = mem.map(np.arange(256, dtype=np.uint8))
    w = execute("s_mov_b32 m0, 0xfffc\nglobal_load_lds_dword v[2:3], off\ns_waitcnt vmcnt(0)\nds_read_b32 v4, v5\n"
                "ds_read_b32 v6, v7", "gfx942", memory=mem, lanes=64,
                v={2: np.full(64, base & 0xFFFFFFFF), 3: np.full(64, base >> 32), 5: np.full(64, 0xFFFC),
                   7: np.full(64, 0x10000)})
    assert set(w.v[4, 0].tolist()) == {0x03020100} and set(w.v[6, 0].tolist()) == {0}
