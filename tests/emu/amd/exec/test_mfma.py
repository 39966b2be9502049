"""Every v_mfma_* and v_smfmac_* of gfx942 and gfx950 against a reference written here from the layouts' own
descriptions (AMD's Matrix Instruction Calculator equations for gfx9, the CDNA3/CDNA4 ISA guides, AMD's CDNA4
matrix-core article for the f8f6f4 operands): random matrices placed in lanes, D read back, compared with the
exact A @ B + C per block.

Tolerances: the guides leave the hardware's intermediate rounding open, so an f32 result may be off the exactly
rounded value by one ulp of it plus the error of a double sum of the K products (K * 2^-52 * sum |a*b|); an f64
result (fused multiply-adds in K order) by K roundings (K * 2^-53 * (sum |a*b| + |c|)); i32 is exact.
"""

from __future__ import annotations

import math
import re
import zlib
from fractions import Fraction

import numpy as np
import pytest
from exec_harness import execute

from usergpu.autogen import isa_gfx942, isa_gfx950
from usergpu.emu.amd.exec import mfma
from usergpu.emu.amd.exec.operands import Operand
from usergpu.emu.amd.exec.waves import Waves

TABLES = {"gfx942": isa_gfx942, "gfx950": isa_gfx950}
SHAPE = re.compile(r"v_(mfma|smfmac)_(scale_)?(f32|i32|f64)_(\d+)x(\d+)x(\d+)(?:_(\d+)b)?_(\w+)$")
WAVES = 2


def mnemonics(arch: str) -> list[str]:
    return sorted({e[0] for fam in TABLES[arch].OPS.values() for e in fam.values()
                   if re.match(r"v_s?mfmac?_", e[0]) and e[0] != "v_mfma_ld_scale_b32"})


# ---- element formats: (bits, exponent bits, mantissa bits, bias, specials) for the small floats ---------------------
MINI = {"fp8_942": (8, 4, 3, 8, "nuz"), "bf8_942": (8, 5, 2, 16, "nuz"),  # FNUZ: 0x80 is the only NaN
        "fp8": (8, 4, 3, 7, "fn"), "bf8": (8, 5, 2, 15, "ieee"),          # OCP E4M3 / E5M2
        "fp6": (6, 2, 3, 1, ""), "bf6": (6, 3, 2, 3, ""), "fp4": (4, 2, 1, 1, "")}
BITS = {"f16": 16, "bf16": 16, "f32": 32, "xf32": 32, "f64": 64, "i8": 8, **{k: v[0] for k, v in MINI.items()}}


def mini_value(code: int, fmt: str) -> float | None:
    """A small float's value from its fields; None for NaN and infinity codes."""
    _, e_bits, m_bits, bias, special = MINI[fmt]
    sign, e, m = code >> (e_bits + m_bits), (code >> m_bits) & ((1 << e_bits) - 1), code & ((1 << m_bits) - 1)
    if special == "nuz" and code == 1 << (e_bits + m_bits):
        return None
    if (special == "ieee" and e == (1 << e_bits) - 1) or (special == "fn" and code & 0x7F == 0x7F):
        return None
    mag = math.ldexp(m, 1 - bias - m_bits) if e == 0 else math.ldexp((1 << m_bits) + m, e - bias - m_bits)
    return -mag if sign else mag


def random_codes(rng, fmt: str, count: int) -> tuple[list[int], list[float]]:
    """count random finite elements of fmt: their codes and values."""
    if fmt in MINI:
        finite = [c for c in range(1 << MINI[fmt][0]) if mini_value(c, fmt) is not None]
        codes = [int(c) for c in rng.choice(finite, count)]
        return codes, [mini_value(c, fmt) for c in codes]
    if fmt == "i8":
        vals = [int(x) for x in rng.integers(-128, 128, count)]
        return [v & 0xFF for v in vals], vals
    x = rng.standard_normal(count)
    if fmt == "f16":
        h = x.astype(np.float16)
        return [int(c) for c in h.view(np.uint16)], [float(v) for v in h]
    if fmt == "f64":
        return [int(c) for c in x.view(np.uint64)], [float(v) for v in x]
    bits = x.astype(np.float32).view(np.uint32)
    keep = {"bf16": 0xFFFF0000, "xf32": 0xFFFFE000, "f32": 0xFFFFFFFF}[fmt]  # values exact in the format
    f = (bits & np.uint32(keep)).view(np.float32)
    codes = bits >> 16 if fmt == "bf16" else bits & np.uint32(keep)
    return [int(c) for c in codes], [float(v) for v in f]


# ---- layouts, from the calculator's gfx9 equations ----------------------------------------------------------------
def in_place(fmt_run: int | None, m: int, k_dim: int, blocks: int, b: int, i: int, k: int) -> tuple[int, int]:
    """(lane, element) of A[b][i][k] (B[b][k][j] with i = j): lane M*block + M*blocks*floor(k/P) + i, element
    k % P with P = M*K*blocks/64. fmt_run: gfx950 f8f6f4's 8-bit formats, where element e of lane group g holds
    k = (e // 16) * K/2 + 16 g + e % 16."""
    per = m * k_dim * blocks // 64
    if fmt_run:
        return m * (k % (k_dim // 2) // 16) + i, 16 * (k // (k_dim // 2)) + k % 16
    return m * b + m * blocks * (k // per) + i, k % per


def out_place(m: int, blocks: int, wide: bool, b: int, i: int, j: int) -> tuple[int, int]:
    """(lane, value index) of D[b][i][j], the calculator's equations per shape (values are register pairs for f64)."""
    if wide:
        return (j + 16 * (i % 4), i // 4) if m == 16 else (j + 4 * b + 16 * i, 0)
    if m == 32:
        return j + 32 * ((i // 4) % 2), 16 * b + 4 * (i // 8) + i % 4
    if m == 16:
        return j + 16 * (i // 4), 4 * b + i % 4
    return j + 4 * b, i


def lanes_to_dwords(items: dict[tuple[int, int], int], bits: int, dwords: int) -> np.ndarray:
    """{(lane, element): code} -> (64, dwords) uint32, elements packed low bits first."""
    words = [0] * 64
    for (lane, e), code in items.items():
        words[lane] |= code << (bits * e)
    return np.array([[(x >> (32 * d)) & 0xFFFFFFFF for d in range(dwords)] for x in words], np.uint64).astype(np.uint32)


def blgp_source(blgp: int, lane: int) -> int:
    """The lane whose B a lane reads: 1 broadcasts lanes 0-31, 2 lanes 32-63, 3 rotates down by 16, 4-7 broadcast
    lanes 0-15, 16-31, 32-47, 48-63."""
    if blgp >= 4:
        return 16 * (blgp - 4) + lane % 16
    return [lane, lane % 32, 32 + lane % 32, (lane + 16) % 64][blgp]


class Spec:
    """One instruction's shape and formats, parsed here."""

    def __init__(self, name: str, arch: str, a_fmt: int = 0, b_fmt: int = 0):
        op, scale, acc, m, n, k, blocks, src = SHAPE.match(name).groups()
        self.name, self.sparse, self.scaled, self.acc = name, op == "smfmac", bool(scale), acc
        self.m, self.n, self.k, self.blocks = int(m), int(n), int(k), int(blocks or 1)
        f8f6f4 = ("fp8", "bf8", "fp6", "bf6", "fp4")
        if src == "f8f6f4":
            self.fmts = (f8f6f4[a_fmt], f8f6f4[b_fmt])
        else:
            parts = src.split("_") if "_" in src else [src, src]
            self.fmts = tuple(f"{p}_942" if arch == "gfx942" and p in ("fp8", "bf8") else p for p in parts)
        self.runs = tuple(src == "f8f6f4" and BITS[f] == 8 for f in self.fmts)

    def regs(self, which: int) -> int:
        per = self.m * self.k * self.blocks // 64 // (2 if self.sparse and which == 0 else 1)
        return -(-per * BITS[self.fmts[which]] // 32)

    def out_regs(self) -> int:
        return self.m * self.n * self.blocks // 64 * (2 if self.acc == "f64" else 1)


def fake_executor(arch: str) -> object:
    class Ex:
        pass
    ex = Ex()
    ex.arch, ex.w = arch, Waves(WAVES, 64, 256)
    ex.w.s[126] = ex.w.s[127] = 0xFFFFFFFF
    return ex


def v(index: int, count: int) -> Operand:
    return Operand("v", index, count)


# register ranges of the operands: in the executor harness's file, C is a0.. and D a64.. (AccVGPRs after v0..v63)
A0, B0, S0, C0, D0 = 0, 32, 60, 64, 128


def run_case(arch: str, spec: Spec, mods: dict, rng, c_const: tuple[Operand, float] | None = None,
             text: str | None = None):
    """Random A, B, C in the registers (C: or an inline constant and its value), the instruction run (or the
    program text, assembled and run by the executor harness on the same registers); per wave: D as read back and
    the exact reference ({(b, i, j): (value, sum |a*b| + |c|)})."""
    ex = fake_executor(arch)
    m, kk, blocks = spec.m, spec.k, spec.blocks
    cbsz, abid, blgp = (int(mods.get(x, 0)) for x in ("cbsz", "abid", "blgp"))
    neg = [int(x) for x in mods.get("neg", "[0,0,0]").strip("[]").split(",")]
    group = 1 if "f8f6f4" in spec.name or spec.sparse else min(1 << cbsz, blocks)
    wide = spec.acc == "f64"
    results = []
    for wave in range(WAVES):
        a, b = {}, {}
        a_items, b_items = {}, {}
        for bl in range(blocks):
            for i in range(m):
                codes, vals = random_codes(rng, spec.fmts[0], kk)
                for k in range(kk):
                    a[bl, i, k] = vals[k]
                    a_items[in_place(spec.runs[0], m, kk, blocks, bl, i, k)] = codes[k]
            for j in range(m):
                codes, vals = random_codes(rng, spec.fmts[1], kk)
                for k in range(kk):
                    b[bl, k, j] = vals[k]
                    b_items[in_place(spec.runs[1], m, kk, blocks, bl, j, k)] = codes[k]
        if spec.sparse:
            a, a_items, index = sparse_pick(rng, a, a_items, m, kk)
            ex.w.v[S0, wave] = index_register(rng, index, m * kk // 64, 0 if cbsz else abid)
        ex.w.v[A0:A0 + spec.regs(0), wave] = lanes_to_dwords(a_items, BITS[spec.fmts[0]], spec.regs(0)).T
        ex.w.v[B0:B0 + spec.regs(1), wave] = lanes_to_dwords(b_items, BITS[spec.fmts[1]], spec.regs(1)).T
        # the B each lane sees under blgp: lane l's elements come from lane BLGP(l)
        seen = {(lane, e): b_items[blgp_source(blgp, lane), e] for lane, e in b_items} if blgp and not (
            wide or "f8f6f4" in spec.name) else b_items
        where = {place: key for key, place in ((key, in_place(spec.runs[1], m, kk, blocks, key[0], key[2], key[1]))
                                               for key in b)}
        b_seen = {where[p]: mini_or_float(code, spec.fmts[1]) for p, code in seen.items()}
        scale_a, scale_b = scales(ex, spec, mods, rng, wave)
        c_vals = c_matrix(ex, spec, rng, wave)
        if c_const:
            c_vals = dict.fromkeys(c_vals, c_const[1])
        ref = {}
        for bl in range(blocks):
            src = bl // group * group + abid % group if group > 1 else bl
            for i in range(m):
                for j in range(m):
                    terms = [a[src, i, k] * (-1 if neg[0] else 1) * scale_a(i, k) * b_seen[bl, k, j] *
                             (-1 if neg[1] else 1) * scale_b(j, k) for k in range(kk)]
                    c = c_vals[bl, i, j] * (-1 if neg[2] else 1)
                    ref[bl, i, j] = exact_sum(terms, c, spec.acc), sum(abs(t) for t in terms) + abs(c)
        results.append(ref)
    d_count = spec.out_regs()
    ops = [v(D0, d_count), v(A0, spec.regs(0)), v(B0, spec.regs(1)),
           v(S0, 1) if spec.sparse else c_const[0] if c_const else v(C0, d_count), v(S0 + 1, 1), v(S0 + 2, 1)]
    if spec.sparse:
        ex.w.v[D0:D0 + d_count] = ex.w.v[C0:C0 + d_count]
    if text is not None:
        w = execute(text, arch, v={r: ex.w.v[r] for r in range(ex.w.v.shape[0])}, lanes=64, waves=WAVES)
    else:
        step = mfma.step(ex, spec.name[2:], ops[:6 if spec.scaled else 4], mods)
        assert step is not None, spec.name
        step(ex, slice(None))
        w = ex.w
    return [read_d(w, spec, wave) for wave in range(WAVES)], results


def mini_or_float(code: int, fmt: str) -> float:
    if fmt in MINI:
        return mini_value(code, fmt)
    if fmt == "i8":
        return code - 256 if code & 0x80 else code
    if fmt == "f16":
        return float(np.array(code, np.uint16).view(np.float16))
    if fmt == "bf16":
        return float(np.array(code << 16, np.uint32).view(np.float32))
    if fmt == "f64":
        return float(np.array(code, np.uint64).view(np.float64))
    return float(np.array(code, np.uint32).view(np.float32))


def scales(ex, spec: Spec, mods: dict, rng, wave: int):
    """Random E8M0 scales in bytes op_sel + 2 op_sel_hi of the scale registers (others random too), and the
    factor for A[i][k] and B[k][j]: A's row i, K block kb (32 values) is lane i + M*kb."""
    if not spec.scaled:
        return (lambda i, k: 1), (lambda j, k: 1)
    sel = [int(x) for x in mods.get("op_sel", "[0,0,0]").strip("[]").split(",")]
    hi = [int(x) for x in mods.get("op_sel_hi", "[0,0,0]").strip("[]").split(",")]
    out = []
    for which in range(2):
        words = rng.integers(0, 1 << 32, 64, dtype=np.uint64).astype(np.uint32)
        byte = sel[which] + 2 * hi[which]
        exps = rng.integers(117, 138, 64)  # 2^-10 .. 2^10
        words = (words & ~np.uint32(0xFF << 8 * byte)) | (exps.astype(np.uint32) << np.uint32(8 * byte))
        ex.w.v[S0 + 1 + which, wave] = words
        out.append(lambda r, k, e=exps: 2.0 ** (int(e[r + spec.m * (k // 32)]) - 127))
    return out


def c_matrix(ex, spec: Spec, rng, wave: int) -> dict:
    vals = {}
    wide = spec.acc == "f64"
    items = np.zeros((64, spec.out_regs() // (2 if wide else 1)), np.uint64)
    for bl in range(spec.blocks):
        for i in range(spec.m):
            for j in range(spec.m):
                lane, slot = out_place(spec.m, spec.blocks, wide, bl, i, j)
                if spec.acc == "i32":
                    x = int(rng.integers(-(1 << 31), 1 << 31))
                    vals[bl, i, j], items[lane, slot] = x, x & 0xFFFFFFFF
                elif wide:
                    x = rng.standard_normal()
                    vals[bl, i, j], items[lane, slot] = x, np.float64(x).view(np.uint64)
                else:
                    x = np.float32(4 * rng.standard_normal())
                    vals[bl, i, j], items[lane, slot] = float(x), x.view(np.uint32)
    dwords = np.stack([items & np.uint64(0xFFFFFFFF), items >> np.uint64(32)], -1).reshape(64, -1) if wide else items
    ex.w.v[C0:C0 + spec.out_regs(), wave] = dwords.astype(np.uint32).T
    return vals


def exact_sum(terms: list, c, acc: str):
    if acc == "i32":
        return (sum(terms) + c + (1 << 31)) % (1 << 32) - (1 << 31)
    if acc == "f64":
        return float(sum((Fraction(t) for t in terms), Fraction(c))) if all(map(math.isfinite, terms)) else math.nan
    return math.fsum([*terms, c])  # products of <= 24-bit significands are exact doubles


def read_d(w: Waves, spec: Spec, wave: int) -> dict:
    wide = spec.acc == "f64"
    regs = w.v[D0:D0 + spec.out_regs(), wave].T.astype(np.uint64)  # (64, regs)
    out = {}
    for bl in range(spec.blocks):
        for i in range(spec.m):
            for j in range(spec.m):
                lane, slot = out_place(spec.m, spec.blocks, wide, bl, i, j)
                if wide:
                    out[bl, i, j] = float((regs[lane, 2 * slot] | regs[lane, 2 * slot + 1] << np.uint64(32)).view(
                        np.float64))
                elif spec.acc == "i32":
                    out[bl, i, j] = int(np.uint32(regs[lane, slot]).view(np.int32))
                else:
                    out[bl, i, j] = float(np.uint32(regs[lane, slot]).view(np.float32))
    return out


def check(spec: Spec, got: list, want: list) -> None:
    for g, w in zip(got, want, strict=True):
        for key, (value, size) in w.items():
            if spec.acc == "i32":
                assert g[key] == value, (spec.name, key, g[key], value)
                continue
            if spec.acc == "f64":
                tol = spec.k * 2.0**-53 * size
            else:
                tol = float(np.spacing(np.float32(abs(value)))) + spec.k * 2.0**-52 * size
            assert abs(g[key] - value) <= tol, (spec.name, key, g[key], value, tol)


def sparse_pick(rng, a: dict, items: dict, m: int, kk: int):
    """4:2 sparsity: in each group of 4 K values of a lane keep 2 (random distinct positions, in random order);
    the rest of A is 0. Returns the dense A, the kept values as lane elements and each lane's index bits (2 per
    kept value, the position in its group)."""
    per = m * kk // 64
    dense, kept, index = {}, {}, [0] * 64
    for lane in range(64):
        i, g = lane % m, lane // m
        bits = 0
        for q in range(per // 4):
            picks = [int(x) for x in rng.permutation(4)[:2]]
            for slot, pos in enumerate(picks):
                e = 2 * q + slot
                bits |= pos << (2 * e)
                kept[lane, e] = items[lane, 4 * q + pos]
            for pos in range(4):
                k = g * per + 4 * q + pos
                dense[0, i, k] = a[0, i, k] if pos in picks else 0.0
        index[lane] = bits
    return dense, kept, index


def index_register(rng, index: list[int], per: int, chosen: int) -> np.ndarray:
    """The index VGPR: 32 / per sets of per bits (per = a lane's K values); the lanes' indices in set chosen,
    random bits in the others."""
    words = rng.integers(0, 1 << 32, 64, dtype=np.uint64)
    mask = ((1 << per) - 1) << (per * chosen)
    return np.array([(int(w) & ~mask) | (x << (per * chosen)) for w, x in zip(words, index, strict=True)],
                    np.uint64).astype(np.uint32)


# ---- the instruction lists ---------------------------------------------------------------------------------------
F8F6F4 = ("v_mfma_f32_16x16x128_f8f6f4", "v_mfma_f32_32x32x64_f8f6f4")
SCALED = ("v_mfma_scale_f32_16x16x128_f8f6f4", "v_mfma_scale_f32_32x32x64_f8f6f4")


def _dense(arch: str) -> list[str]:
    return [n for n in mnemonics(arch) if "smfmac" not in n and "f8f6f4" not in n]


def test_every_table_instruction_has_its_tests():
    """Each arch's MFMA/SMFMAC mnemonics parse as a shape here and fall in one of the tests below (dense, f8f6f4,
    scaled, sparse), so a table that grows fails this file."""
    for arch in TABLES:
        names = mnemonics(arch)
        assert all(SHAPE.match(n) for n in names), arch
        tested = {*_dense(arch), *(n for n in names if "smfmac" in n), *(F8F6F4 + SCALED if arch == "gfx950" else ())}
        assert set(names) == tested, (arch, set(names) ^ tested)
    assert len(mnemonics("gfx942")) == 46 and len(mnemonics("gfx950")) == 68


@pytest.mark.parametrize(("arch", "name"), [(a, n) for a in TABLES for n in _dense(a)])
def test_mfma_matches_a_at_b_plus_c(arch, name):
    spec = Spec(name, arch)
    check(spec, *run_case(arch, spec, {}, np.random.default_rng(zlib.crc32(name.encode()))))


def _seed(*parts) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(parts).encode()))


@pytest.mark.parametrize(("name", "a_fmt", "b_fmt"), [(n, x, y) for n in F8F6F4 for x in range(5) for y in range(5)])
def test_f8f6f4_every_format_pair(name, a_fmt, b_fmt):
    """cbsz and blgp pick A's and B's formats (fp8, bf8, fp6, bf6, fp4): mixed pairs show each operand's own
    lane layout (8-bit: two runs of 16 along K; 6- and 4-bit: one run of 32)."""
    spec = Spec(name, "gfx950", a_fmt, b_fmt)
    check(spec, *run_case("gfx950", spec, {"cbsz": str(a_fmt), "blgp": str(b_fmt)}, _seed(name, a_fmt, b_fmt)))


@pytest.mark.parametrize(("name", "fmts", "sel"), [(n, f, s) for n in SCALED
                                                   for f in ((0, 0), (4, 4), (0, 4), (4, 1), (2, 3), (3, 2))
                                                   for s in ((0, 0), (1, 2), (3, 1))])
def test_scaled_mfma_applies_each_blocks_e8m0_scale(name, fmts, sel):
    """One E8M0 scale per 32 K values of each row of A and column of B, from byte op_sel + 2 op_sel_hi."""
    mods = {"cbsz": str(fmts[0]), "blgp": str(fmts[1]), "op_sel": f"[{sel[0] & 1},{sel[1] & 1},0]",
            "op_sel_hi": f"[{sel[0] >> 1},{sel[1] >> 1},0]"}
    spec = Spec(name, "gfx950", *fmts)
    check(spec, *run_case("gfx950", spec, mods, _seed(name, fmts, sel)))


def _sparse(arch: str) -> list[tuple[str, str, int, int]]:
    out = []
    for n in (x for x in mnemonics(arch) if "smfmac" in x):
        s = Spec(n, arch)
        sets = 32 // (s.m * s.k // 64)
        out += [(arch, n, 0, a) for a in range(sets)] + [(arch, n, 1, sets - 1)]
    return out


@pytest.mark.parametrize(("arch", "name", "cbsz", "abid"), [c for a in TABLES for c in _sparse(a)])
def test_smfmac_reads_the_index_set_abid_picks(arch, name, cbsz, abid):
    """4:2 sparse A: the kept values and their 2-bit positions; abid picks the index set (the first when cbsz
    is set), the other sets hold noise."""
    spec = Spec(name, arch)
    check(spec, *run_case(arch, spec, {"cbsz": str(cbsz), "abid": str(abid)}, _seed(name, cbsz, abid)))


def _broadcasts() -> list[tuple[str, str, dict]]:
    out = []
    for arch in TABLES:
        for n in _dense(arch):
            blocks = Spec(n, arch).blocks
            if blocks > 1 and "f64" not in n:
                out += [(arch, n, {"cbsz": "1", "abid": "1", "blgp": "3"}),
                        (arch, n, {"cbsz": str(blocks.bit_length() - 1), "abid": str(blocks - 2), "blgp": "6"})]
    return out + [("gfx942", "v_mfma_f32_16x16x4_4b_f16", {"blgp": str(q)}) for q in range(1, 8)] + [
        ("gfx950", "v_mfma_f32_32x32x8_f16", {"blgp": str(q)}) for q in range(1, 8)] + [
        ("gfx942", "v_mfma_f64_4x4x4_4b_f64", {"cbsz": "2", "abid": "1", "neg": "[0,1,0]"})]


@pytest.mark.parametrize(("arch", "name", "mods"), _broadcasts(), ids=str)
def test_cbsz_abid_broadcast_a_and_blgp_swizzles_b(arch, name, mods):
    spec = Spec(name, arch)
    check(spec, *run_case(arch, spec, mods, _seed(name, mods)))


@pytest.mark.parametrize(("name", "neg"), [(n, (x, y, z)) for n in ("v_mfma_f64_16x16x4_f64",
                                                                    "v_mfma_f64_4x4x4_4b_f64")
                                           for x in (0, 1) for y in (0, 1) for z in (0, 1)])
def test_f64_neg_negates_a_b_c(name, neg):
    spec = Spec(name, "gfx942")
    check(spec, *run_case("gfx942", spec, {"neg": "[{},{},{}]".format(*neg)}, _seed(name, neg)))


@pytest.mark.parametrize(("arch", "name", "const", "value"), [
    ("gfx942", "v_mfma_f32_32x32x2_f32", Operand("int", value=0), 0.0),
    ("gfx950", "v_mfma_f32_16x16x32_bf16", Operand("float", value=1.0), 1.0),
    ("gfx942", "v_mfma_i32_16x16x32_i8", Operand("int", value=-2), -2),
    ("gfx942", "v_mfma_f64_16x16x4_f64", Operand("float", value=-4.0), -4.0),
    ("gfx950", "v_mfma_f32_16x16x128_f8f6f4", Operand("float", value=0.5), 0.5)])
def test_an_inline_constant_c_is_every_element(arch, name, const, value):
    spec = Spec(name, arch)
    check(spec, *run_case(arch, spec, {}, _seed(name), (const, value)))


def test_exec_masks_the_write_and_a_group_leaves_other_waves_alone():
    ex = fake_executor("gfx942")
    rng = np.random.default_rng(1)
    ex.w.v[:40] = rng.integers(0, 1 << 32, (40, WAVES, 64), dtype=np.uint64).astype(np.uint32) & np.uint32(
        0x3BFF3BFF)  # f16 pairs below 1
    ex.w.s[126, 1], ex.w.s[127, 1] = 0x0000FFFF, 0x80000000
    before = ex.w.v[D0:D0 + 4].copy()
    step = mfma.step(ex, "mfma_f32_16x16x16_f16", [v(D0, 4), v(A0, 2), v(B0, 2), Operand("int", value=0)], {})
    step(ex, np.array([1]))
    lanes = np.r_[0:16, 63]
    changed = ex.w.v[D0:D0 + 4, 1] != before[:, 1]
    assert changed[:, lanes].any(axis=0).all() and not changed[:, 16:63].any()
    assert (ex.w.v[D0:D0 + 4, 0] == before[:, 0]).all(), "wave 0 is not in the group"


def test_nan_and_infinity_propagate_to_their_row():
    """gfx942's FNUZ 0x80 is NaN; gfx950's bf8 (E5M2) 0x7C is +infinity, times 0 a NaN, times x an infinity."""
    for arch, name, code, b_word in (("gfx942", "mfma_f32_16x16x32_fp8_fp8", 0x80, 0x38383838),
                                     ("gfx950", "mfma_f32_16x16x32_bf8_bf8", 0x7C, 0x3C3C3C3C)):
        ex = fake_executor(arch)
        ex.w.v[A0:A0 + 2] = 0
        ex.w.v[A0, :, 3] = code  # A[3][0] (lane 3, first value)
        ex.w.v[B0:B0 + 2] = b_word  # every B value 0.5 (FNUZ fp8) or 1.0 (bf8)
        mfma.step(ex, name, [v(D0, 4), v(A0, 2), v(B0, 2), Operand("int", value=0)], {})(ex, slice(None))
        d = ex.w.v[D0:D0 + 4, 0].view(np.float32)  # D[i][j]: register i % 4, lane j + 16 (i // 4)
        row3 = d[3, 0:16]
        assert (np.isnan(row3) if code == 0x80 else np.isposinf(row3)).all(), (arch, row3)
        assert (d[:3] == 0).all() and (d[3, 16:] == 0).all()


def test_xf32_rounds_each_input_to_ten_mantissa_bits_ties_to_even():
    """The model: f32 inputs rounded to nearest even at 10 mantissa bits, then multiplied exactly."""
    ex = fake_executor("gfx942")
    ones = np.float32(1.0).view(np.uint32)
    cases = {0x3F801000: 1.0, 0x3F803000: 1.0 + 2.0**-9, 0x3F801001: 1.0 + 2.0**-10, 0x3F800FFF: 1.0}
    for word, want in cases.items():
        ex.w.v[A0:A0 + 2] = 0
        ex.w.v[A0, :, 0] = word  # A[0][0]
        ex.w.v[B0:B0 + 2] = 0
        ex.w.v[B0, :, 0] = ones  # B[0][0]
        mfma.step(ex, "mfma_f32_16x16x8_xf32", [v(D0, 4), v(A0, 2), v(B0, 2), Operand("int", value=0)], {})(
            ex, slice(None))
        assert float(ex.w.v[D0, 0, 0].view(np.float32)) == want, hex(word)


def test_names_that_are_no_mfma_and_formats_past_fp4_are_refused():
    ex = fake_executor("gfx950")
    ops = [v(D0, 4), v(A0, 8), v(B0, 8), v(C0, 4)]
    for core in ("mfma_f32_16x16x16_f17", "mfma_f32_16x16_f16", "smfmac_f32_16x16x32"):
        assert mfma.step(ex, core, ops, {}) is None, core
    assert mfma.step(ex, "mfma_f32_16x16x128_f8f6f4", ops, {"cbsz": "5"}) is None


def test_ld_scale_alone_changes_no_register():
    ex = fake_executor("gfx950")
    ex.w.v[:] = np.random.default_rng(2).integers(0, 1 << 32, ex.w.v.shape, dtype=np.uint64).astype(np.uint32)
    before = ex.w.v.copy()
    mfma.step(ex, "mfma_ld_scale_b32", [v(0, 1), v(1, 1)], {"op_sel": "[1,0]"})(ex, slice(None))
    assert (ex.w.v == before).all()


@pytest.mark.parametrize(("arch", "text", "mods"), [
    ("gfx942", "v_mfma_f32_32x32x8_f16 a[64:79], v[0:1], v[32:33], a[0:15]", {}),
    ("gfx942", "v_mfma_f32_32x32x1_2b_f32 a[64:95], v0, v32, a[0:31] cbsz:1 abid:1 blgp:2",
     {"cbsz": "1", "abid": "1", "blgp": "2"}),
    ("gfx942", "v_mfma_f32_4x4x4_16b_bf16 a[64:67], v[0:1], v[32:33], a[0:3] cbsz:3 abid:5 blgp:7",
     {"cbsz": "3", "abid": "5", "blgp": "7"}),
    ("gfx942", "v_mfma_f64_16x16x4_f64 a[64:71], v[0:1], v[32:33], a[0:7] neg:[1,0,1]", {"neg": "[1,0,1]"}),
    ("gfx942", "v_mfma_f32_16x16x32_bf8_fp8 a[64:67], v[0:1], v[32:33], a[0:3]", {}),
    ("gfx942", "v_smfmac_f32_16x16x32_f16 a[64:67], v[0:1], v[32:35], v60 abid:2", {"abid": "2"}),
    ("gfx950", "v_mfma_i32_32x32x32_i8 a[64:79], v[0:3], v[32:35], a[0:15]", {}),
    ("gfx950", "v_mfma_f32_16x16x128_f8f6f4 a[64:67], v[0:5], v[32:35], a[0:3] cbsz:2 blgp:4",
     {"cbsz": "2", "blgp": "4"}),
    ("gfx950", "v_mfma_scale_f32_32x32x64_f8f6f4 a[64:79], v[0:7], v[32:37], a[0:15], v61, v62 op_sel:[0,1,0] "
     "op_sel_hi:[1,1,0] blgp:3", {"op_sel": "[0,1,0]", "op_sel_hi": "[1,1,0]", "blgp": "3"}),
    ("gfx950", "v_smfmac_f32_32x32x64_fp8_bf8 a[64:79], v[0:3], v[32:39], v60 cbsz:1 abid:1", {"cbsz": "1"})],
    ids=lambda x: x if isinstance(x, str) and " " not in x else None)
def test_through_the_executor(arch, text, mods):
    """Assembled from LLVM's syntax (AccVGPRs included) and run by the executor harness, both backends."""
    name = text.split()[0]
    spec = Spec(name, arch, int(mods.get("cbsz", 0)), int(mods.get("blgp", 0))) if "f8f6f4" in name else Spec(
        name, arch)
    check(spec, *run_case(arch, spec, mods, _seed(text), text=text))


def test_scalar_and_constant_sources_give_every_lane_the_same_value():
    """LLVM decodes SGPR and inline-constant A/B/C (its assembler refuses them): an SGPR gives each lane its
    value, an inline constant each register its value, so every A[i][k] is s5's float and every B[k][j] 2.0."""
    ex = fake_executor("gfx942")
    ex.w.s[5] = np.float32(1.5).view(np.uint32)
    ex.w.v[C0:C0 + 16] = np.float32(0.25).view(np.uint32)
    step = mfma.step(ex, "mfma_f32_32x32x2_f32", [v(D0, 16), Operand("s", 5), Operand("float", value=2.0),
                                                  v(C0, 16)], {})
    step(ex, slice(None))
    assert (ex.w.v[D0:D0 + 16].view(np.float32) == 2 * 1.5 * 2.0 + 0.25).all()
    bits = int(np.float64(-3.0).view(np.uint64))
    ex.w.s[6], ex.w.s[7] = bits & 0xFFFFFFFF, bits >> 32
    step = mfma.step(ex, "mfma_f64_16x16x4_f64", [v(D0, 8), Operand("s", 6, 2), Operand("float", value=0.5),
                                                  Operand("int", value=1)], {})
    step(ex, slice(None))
    d = (ex.w.v[D0:D0 + 8:2].astype(np.uint64) | ex.w.v[D0 + 1:D0 + 8:2].astype(np.uint64) << np.uint64(32))
    assert (d.view(np.float64) == 4 * -3.0 * 0.5 + np.array(1, np.uint64).view(np.float64)).all()
