"""Every VALU and SALU opcode the executor implements, generated from the arch's opcode table: each runs alone on
the values that break implementations (NaN, ±inf, denormals, ±0, integer extremes, in all pairs for two sources)
and every lane's result — value, carry or compare bit, SCC — is checked against the host references of
opcode_refs.py. An implemented opcode with neither a reference nor a dedicated test named in ELSEWHERE fails
test_every_implemented_alu_opcode_is_checked.
"""

from __future__ import annotations

import importlib
import math
import random
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from exec_coverage import implemented
from exec_harness import execute
from opcode_refs import ATOMIC, FORMATS, SALU, VALU, OneOf, Type, from_bits, round_float, to_bits

from usergpu.emu.amd.exec import memops
from usergpu.emu.memory import Memory
from usergpu.errors import Error
from usergpu.isa import amd as isa

RDNA, CDNA = ("gfx1100", "gfx1200"), ("gfx942", "gfx950")  # CDNA: wave64 only
ARCHS = [*RDNA, *CDNA]
NOTHING = {"v_nop", "v_clrexcp"}  # no-ops: nothing to check
ACC = 64  # the harness's ArchVGPRs: its AccVGPRs start there
FAMILIES = ("SOP1", "SOP2", "SOPC", "SOPK", "VOP3", "VOP3P", "VOP1", "VOP2")  # the first to hold a mnemonic wins
TYPE = re.compile(r"_(bf16|[fiub]\d+)$")

# mnemonics whose types the name does not give in the usual order: destination then sources ("2xf16": a packed
# pair; "x": no value destination)
SIG = {
    "v_dot2_f32_f16": "f32 2xf16 2xf16 f32", "v_dot2_f16_f16": "f16 2xf16 2xf16 f16",
    "v_dot2_bf16_bf16": "bf16 2xbf16 2xbf16 bf16", "v_dot2_f32_bf16": "f32 2xbf16 2xbf16 f32",
    "v_dot4_i32_iu8": "i32 4xu8 4xu8 i32", "v_dot4_u32_u8": "u32 4xu8 4xu8 u32",
    "v_dot8_i32_iu4": "i32 8xu4 8xu4 i32", "v_dot8_u32_u4": "u32 8xu4 8xu4 u32",
    "v_dot2acc_f32_f16": "f32 2xf16 2xf16",
    "v_mad_u64_u32": "u64 u32 u32 u64", "v_mad_co_u64_u32": "u64 u32 u32 u64",
    "v_mad_i64_i32": "i64 i32 i32 i64", "v_mad_co_i64_i32": "i64 i32 i32 i64",
    "v_mad_u32_u24": "u32 u24 u24 u32", "v_mad_i32_i24": "i32 i24 i24 i32",
    **{f"v_cvt_f32_ubyte{i}": "f32 u32" for i in range(4)},
    "v_cvt_pk_rtz_f16_f32": "b32 f32 f32", "v_pack_b32_f16": "b32 b16 b16",
    "v_ldexp_f32": "f32 f32 i32", "v_ldexp_f64": "f64 f64 i32", "v_ldexp_f16": "f16 f16 i16",
    "v_lshlrev_b64": "u64 u32 u64", "v_lshrrev_b64": "u64 u32 u64", "v_ashrrev_i64": "i64 u32 i64",
    "s_lshl_b64": "u64 u64 u32", "s_lshr_b64": "u64 u64 u32", "s_ashr_i64": "i64 i64 u32",
    "s_bfe_u64": "u64 u64 u32", "s_bfe_i64": "i64 i64 u32", "s_bfm_b64": "u64 u32 u32",
    "s_bitset0_b64": "u64 u32", "s_bitset1_b64": "u64 u32", "s_bitcmp0_b64": "x u64 u32", "s_bitcmp1_b64": "x u64 u32",
    "s_bitcmp0_b32": "x u32 u32", "s_bitcmp1_b32": "x u32 u32",
    "v_mad_i32_i16": "i32 i16 i16 i32", "v_mad_u32_u16": "u32 u16 u16 u32",
    "s_pack_ll_b32_b16": "u32 u32 u32", "s_pack_lh_b32_b16": "u32 u32 u32", "s_pack_hl_b32_b16": "u32 u32 u32",
    "s_pack_hh_b32_b16": "u32 u32 u32", "s_cvt_hi_f32_f16": "f32 u32", "s_cvt_pk_rtz_f16_f32": "b32 f32 f32",
    "v_sat_pk_u8_i16": "u16 u32", "v_lerp_u8": "u32 u32 u32 u32", "v_msad_u8": "u32 u32 u32 u32",
    "v_sad_u8": "u32 u32 u32 u32", "v_sad_hi_u8": "u32 u32 u32 u32", "v_sad_u16": "u32 u32 u32 u32",
    "v_cvt_off_f32_i4": "f32 u32",
    "v_cvt_pk_i16_f32": "i32 f32 f32", "v_cvt_pk_u16_f32": "u32 f32 f32", "v_cvt_pk_i16_i32": "i32 i32 i32",
    "v_cvt_pk_u16_u32": "u32 u32 u32", "v_cvt_pk_norm_i16_f32": "i32 f32 f32", "v_cvt_pk_norm_u16_f32": "u32 f32 f32",
    "v_cvt_pk_norm_i16_f16": "i32 f16 f16", "v_cvt_pk_norm_u16_f16": "u32 f16 f16",
    **{f"v_cvt_f32_{n}": "f32 u32" for n in ("fp8", "bf8")}, **{f"v_cvt_pk_f32_{n}": "u64 u32" for n in ("fp8", "bf8")},
    **{f"v_cvt_pk_{n}_f32": "u16 f32 f32" for n in ("fp8", "bf8")},
    **{f"v_cvt_sr_{n}_f32": f"{n} f32 u32" for n in ("fp8", "bf8")},
    **{f"v_dot4_f32_{a}_{b}": f"f32 4x{a} 4x{b} f32" for a in ("fp8", "bf8") for b in ("fp8", "bf8")},
    "v_cvt_pk_u8_f32": "u32 f32 u32 u32", "v_trig_preop_f64": "f64 f64 u32", "v_fma_mix_f32": "f32 f32 f32 f32",
    "v_fma_mixlo_f16": "f16 f32 f32 f32", "v_fma_mixhi_f16": "f16 f32 f32 f32",
    # gfx9's
    "v_dot2c_f32_f16": "f32 2xf16 2xf16", "v_dot2c_f32_bf16": "f32 2xbf16 2xbf16", "v_dot2c_i32_i16": "i32 2xi16 2xi16",
    "v_dot4c_i32_i8": "i32 4xi8 4xi8", "v_dot8c_i32_i4": "i32 8xi4 8xi4", "v_dot2_i32_i16": "i32 2xi16 2xi16 i32",
    "v_dot2_u32_u16": "u32 2xu16 2xu16 u32", "v_dot4_i32_i8": "i32 4xi8 4xi8 i32", "v_dot8_i32_i4": "i32 8xi4 8xi4 i32",
    "v_ffbh_i32": "i32 i32", "v_lshl_add_u64": "u64 u64 u32 u64",
}
for _t in ("f16", "f32", "f64"):
    SIG[f"v_cmp_class_{_t}"] = SIG[f"v_cmpx_class_{_t}"] = f"x {_t} u32"

MASK_SOURCE = {"cndmask": 2, "add_co_ci": 2, "sub_co_ci": 2, "subrev_co_ci": 2,  # a source that is a lane mask
               "addc_co": 2, "subb_co": 2, "subbrev_co": 2}
# ops that read their destination's old value
TIED = {"fmac", "fmac_dx9_zero", "dot2acc", "cmov", "cmovk", "addk", "addk_co", "mulk", "bitset0", "bitset1",
        "mac", "dot2c", "dot4c", "dot8c"}
ULPS = {"exp": 1, "log": 1, "rcp": 1, "rcp_iflag": 1, "rsq": 1, "sqrt": 1}  # documented precision, in ulps
ABSOLUTE = {"sin": {"f32": 2.0**-20, "f16": 2.0**-9}, "cos": {"f32": 2.0**-20, "f16": 2.0**-9}}

# opcodes checked by a dedicated test instead (they move data between lanes or hold state beyond their sources)
ELSEWHERE = {
    "v_readlane_b32": "test_lane_ops", "v_readfirstlane_b32": "test_lane_ops", "v_writelane_b32": "test_lane_ops",
    "v_permlane16_b32": "test_lane_ops", "v_permlanex16_b32": "test_lane_ops",
    "v_permlane16_var_b32": "test_lane_ops", "v_permlanex16_var_b32": "test_lane_ops",
    "v_movrels_b32": "test_lane_ops", "v_movreld_b32": "test_lane_ops", "v_movrelsd_b32": "test_lane_ops",
    "v_swap_b32": "test_lane_ops", "v_swap_b16": "test_lane_ops",
    "v_permlane64_b32": "test_permlane64_swaps_the_halves_of_a_wave64",
    "v_movrelsd_2_b32": "test_exec_more_ops.py::test_vector_movrelsd_and_movrelsd_2",
    **{f"v_div_{op}_{t}": "test_division_sequence_rounds_correctly" for op in ("scale", "fmas")
       for t in ("f32", "f64")},
    **{f"v_wmma_{t}": "test_exec.py::test_corpus_kernel_matches_numpy" for t in (
        "f32_16x16x16_f16", "f32_16x16x16_bf16", "i32_16x16x16_iu8", "i32_16x16x16_iu4")},
    **{f"v_wmma_{t}_16x16x16_{t}": "test_exec_more_ops.py::test_gfx11_wmma_with_16_bit_accumulator_in_the_op_sel_half"
       for t in ("f16", "bf16")},
    **{f"v_wmma_f32_16x16x16_{a}_{b}": "test_exec_more_ops.py::test_gfx12_wmma_fp8" for a in ("fp8", "bf8")
       for b in ("fp8", "bf8")},
    "v_wmma_i32_16x16x32_iu4": "test_exec_more_ops.py::test_gfx12_wmma_i32_16x16x32_iu4",
    "v_pk_mov_b32": "exec/test_gfx9.py::test_pk_mov_b32_takes_the_register_op_sel_picks_from_each_source",
}
# CDNA's matrix and low-precision instructions, checked by their own tests against independent references
ELSEWHERE_CDNA = {
    r"^v_(mfma|smfmac)_": "exec/test_mfma.py::test_mfma_matches_a_at_b_plus_c",
    r"^v_cvt_scalef32_": "exec/test_cdna.py::test_cvt_scalef32",
    r"^v_cvt_(f32|pk_f32)_(fp8|bf8)$": "exec/test_cdna.py::test_cvt_f32_fp8_decodes_a_byte",
    r"^v_cvt_pk_(fp8|bf8)_f32$": "exec/test_cdna.py::test_cvt_pk_fp8_f32_rounds_two_values_into_a_word",
    r"^v_cvt_sr_(fp8|bf8)_f32$": "exec/test_cdna.py::test_cvt_sr_fp8_f32_rounds_by_src1s_bits_into_a_byte",
    r"^v_cvt_pk_(f16|bf16)_f32$": "exec/test_cdna.py::test_cvt_pk_f16_and_bf16_f32_round_to_nearest_even",
    r"^v_cvt_sr_(f16|bf16)_f32$": "exec/test_cdna.py::test_cvt_sr_f16_and_bf16_f32_into_a_half",
    r"^v_prng_b32$": "exec/test_cdna.py::test_prng_b32_is_the_guides_lfsr",
    r"^v_bitop3_b(16|32)$": "exec/test_cdna.py::test_bitop3_b32_evaluates_the_truth_table_bitwise",
    r"^v_permlane(16|32)_swap_b32$": "exec/test_cdna.py::test_permlane_swap_writes_both_registers",
    r"^v_ashr_pk_[iu]8_i32$": "exec/test_cdna.py::test_ashr_pk_shifts_and_saturates_to_bytes",
}


def elsewhere(name: str, arch: str) -> str | None:
    """The dedicated test that checks an opcode, if one does."""
    if name in ELSEWHERE:
        return ELSEWHERE[name]
    return next((t for p, t in ELSEWHERE_CDNA.items() if re.match(p, name)), None) if arch in CDNA else None


# the assembler cannot write v_dot2_bf16_bf16 for gfx1100: the table learned from llvm-mc-22 lacks its src2 printer
UNWRITABLE = {"v_dot2_bf16_bf16"}
# program flow and machine state: the corpus (test_exec.py), test_exec_more_ops.py and the saveexec test below
CONTROL = re.compile(r"^s_(waitcnt.*|setpc|getpc|swappc|barrier.*|.*saveexec.*|.*wrexec.*|movrel.*|sendmsg.*|"
                     r"getreg|setreg.*|rfe|call|version|subvector_loop.*|set_gpr_idx.*|rfe_restore.*|setvskip|cbranch_[gi]_fork|cbranch_join)")


@dataclass(frozen=True)
class Form:
    mnemonic: str
    family: str
    operands: tuple  # (printer, fields) per operand, from the opcode table


@cache
def forms(arch: str) -> dict[str, Form]:
    """Each mnemonic (without _e32/_e64) of the ALU families, in the first family that has it."""
    table = importlib.import_module(f"usergpu.autogen.isa_{arch}")
    out: dict[str, Form] = {}
    for family in FAMILIES:
        for mnemonic, _, operands, _, _ in getattr(table, family).values():
            out.setdefault(re.sub(r"_e(32|64)$", "", mnemonic), Form(mnemonic, family, operands))
    return out


@cache
def implemented_alu(arch: str) -> dict[str, Form]:
    out = {}
    for name, form in forms(arch).items():
        if elsewhere(name, arch) and name not in ELSEWHERE:
            continue
        try:
            code = isa.asm(text_of(form, "s" if name.startswith(("s_", "v_s_")) else "v"), arch)
        except Error:
            if CONTROL.match(name) or name in UNWRITABLE:
                continue
            raise
        if implemented(arch, isa.decode(code, arch, 0)):
            out[name] = form
    return out


# ---- types -----------------------------------------------------------------------------------------------------
@dataclass
class Kind:
    d: Type
    s: list
    lane: int = 0
    scc: int = 0


def split(name: str) -> tuple[str, str, list[str]]:
    """(prefix, op, types) of a mnemonic: v_cvt_f32_i32 -> ('v', 'cvt', ['f32', 'i32'])."""
    prefix, rest = name.split("_", 1)
    if rest.startswith("pk_"):
        rest = rest[3:]
    types = []
    while (m := TYPE.search(rest)) and m.start() > 0:
        types.insert(0, m.group(1))
        rest = rest[: m.start()]
    return prefix, rest, types


def signature(name: str, n_sources: int) -> tuple[str, list[str]]:
    if name in SIG:
        d, *s = SIG[name].split()
    else:
        _, _, types = split(name)
        d, s = types[0], types[1:] or types[:1]
    return d, [s[min(i, len(s) - 1)] for i in range(n_sources)]


def reference(name: str):
    """The host reference of a mnemonic: by its whole name, else by its op (SALU by op and result kind first)."""
    if name in VALU:
        return VALU[name]
    prefix, op, types = split(name)
    if prefix == "s":
        kind = types[0][0] if types else ""
        return SALU.get(f"{op}:{kind}") or SALU.get(op)
    return VALU.get(op)


# ---- edge values --------------------------------------------------------------------------------------------------
def float_edges(fmt: str) -> list[float]:
    mant, emin, emax = FORMATS[fmt]
    big = (2 - 2.0**-mant) * 2.0**emax
    return [0.0, -0.0, 1.0, -1.0, 2.5, -3.75, math.inf, -math.inf, math.nan, 2.0 ** (emin - mant),
            -(2.0 ** (emin - mant)), 2.0**emin - 2.0 ** (emin - mant), 2.0**emin, big, -big, round_float(0.1, fmt)]


def int_edges(bits: int) -> list[int]:
    top = 1 << (bits - 1)
    return [0, 1, 2, 3, 7, bits - 1, bits, bits + 1, top - 1, top, top + 1, (1 << bits) - 1, (1 << bits) - 2,
            0x12345678 & ((1 << bits) - 1), 0x9ABCDEF0 & ((1 << bits) - 1), 0x55555555 & ((1 << bits) - 1)]


def edges(t: str) -> list[int]:
    """Edge values of a type as register bits."""
    if t.startswith(("2x", "4x", "8x")):
        n, elem = int(t[0]), t[2:]
        size, one = Type(elem).bits, edges(elem)
        return [sum(one[(i * 5 + j * 3) % len(one)] << (size * j) for j in range(n)) for i in range(16)]
    typ = Type(t)
    if typ.is_float:
        return [to_bits(x, typ) for x in float_edges(t)]
    return int_edges(32 if typ.bits == 24 else typ.bits)


def value(raw: int, t: str):
    if t.startswith(("2x", "4x", "8x")):
        n, elem = int(t[0]), t[2:]
        size = Type(elem).bits
        return tuple(value((raw >> (size * j)) & ((1 << size) - 1), elem) for j in range(n))
    return from_bits(raw, Type(t))


def cases(types: list[str], rng: random.Random) -> list[tuple]:
    """Source bit patterns: every value alone, every pair for two sources, edges crossed at random for three."""
    pools = [edges(t) for t in types]
    if len(types) == 1:
        return [(x,) for x in pools[0]] * 2
    if len(types) == 2:
        return [(x, y) for x in pools[0] for y in pools[1]]
    return [tuple(rng.choice(p) for p in pools) for _ in range(256)]


# ---- running ------------------------------------------------------------------------------------------------------
def regs(t: str) -> int:
    return 2 if t.endswith("64") or t == "2xf32" else 1  # gfx940's packed f32: a register pair


def registers_of(printer: str) -> int:
    """How many registers an operand printer of the opcode table names (v2, src2_f64: 2; src16_f16: one 16-bit)."""
    m = re.search(r"\d+", printer)
    return int(m.group()) if m and int(m.group()) <= 8 else 1


def text_of(form: Form, bank: str, lit: str = "0x10") -> str:
    """The instruction with sources in v0, v8, .. (or s0, s8, .. for scalar forms), a value destination in v40
    (s20), a mask destination in s20 and a lane-mask source in s30."""
    out, src = [], 0
    name = re.sub(r"_e(32|64)$", "", form.mnemonic)
    for printer, fields in form.operands:
        if printer == "=":
            continue
        if printer in ("lit", "imm_hex", "imm_dec"):
            out.append(lit)
            src += 1
            continue
        scalar = bank == "s" or printer in ("s1", "s2", "sdst1", "sdst2")  # SGPRs of a vector instruction too
        n = registers_of(printer)
        if is_dst(fields, name):
            base = 20 if scalar else 40
        elif bank == "v" and MASK_SOURCE.get(split(name)[1]) == src:
            base, scalar = 30, True
            src += 1
        else:
            base = 8 * src
            src += 1
        r = "s" if scalar else "a" if printer in ("a1", "asrc1") else "v"  # gfx90a+: AccVGPR operands
        out.append(f"{r}{base}" if n == 1 else f"{r}[{base}:{base + n - 1}]")
    return f"{form.mnemonic} " + ", ".join(out)


def is_dst(fields: tuple, name: str) -> bool:
    return bool(fields) and "dst" in fields[0] and not name.startswith("s_cmpk")  # s_cmpk's sdst is a source


@dataclass
class Plan:
    """One opcode's test: its text, source types (a tied destination last) and a row of source bits per case."""
    text: str
    dst: str
    types: list
    rows: list
    scalar: bool
    lanes: int
    acc: bool = False  # AccVGPR operands (gfx90a+): the harness's a0 is v[ACC]


def plan(arch: str, name: str) -> Plan:
    form = implemented_alu(arch)[name]
    prefix, op, _ = split(name)
    sources = [p for p, f in form.operands if p != "=" and not is_dst(f, name)]
    d, s = signature(name, len(sources))
    lit_at = next((i for i, p in enumerate(sources) if p in ("lit", "imm_hex", "imm_dec")), None)
    if lit_at is not None and form.family == "SOPK":
        s[lit_at] = "i16" if "_i32" in name else "u16"
    if prefix == "v" and op in MASK_SOURCE:
        s[MASK_SOURCE[op]] = "u1"
    if name.startswith("v_pk_"):
        d, s = f"2x{d}", [f"2x{t}" for t in s]
    types = s + ([d] if op in TIED else [])
    rng = random.Random(name)
    lit = edges(s[lit_at])[2 if prefix == "s" else 15] if lit_at is not None else None
    free = [i for i, t in enumerate(types) if i != lit_at and t != "u1"]
    rows = []
    for combo in cases([types[i] for i in free], rng):
        row = [lit if i == lit_at else rng.getrandbits(1) for i in range(len(types))]
        for i, x in zip(free, combo, strict=True):
            row[i] = x
        rows.append(row)
    scalar = prefix == "s" or name.startswith("v_s_")
    text = text_of(form, "s" if scalar else "v", hex(lit) if lit is not None else "0x10")
    return Plan(text, d, types, rows, scalar, 1 if scalar else wave_size(arch), re.search(r"\ba\d", text) is not None)


def registers(p: Plan, name: str, rng: random.Random) -> tuple[dict, dict, int]:
    """The VGPRs and SGPRs that hold each case's sources: v0, v8, .. per lane (s0, s8, .. per wave for scalar
    forms), a tied destination in v40 (s20), lane masks in s30; a 16-bit source's other half holds junk."""
    waves = -(-len(p.rows) // p.lanes)
    rows = p.rows + [p.rows[-1]] * (waves * p.lanes - len(p.rows))
    vregs, sregs = {}, {}
    for i, t in enumerate(p.types):
        col = np.array([r[i] for r in rows], np.uint64)
        if t == "u1":
            mask = (col.reshape(waves, p.lanes) << np.arange(p.lanes, dtype=np.uint64)).sum(axis=1)
            sregs[30], sregs[31] = mask & np.uint64(0xFFFFFFFF), mask >> np.uint64(32)
            continue
        if t in ("f16", "bf16", "i16", "u16", "b16") and not (p.scalar and name.startswith("s_")):
            col |= np.array([rng.getrandbits(16) << 16 for _ in rows], np.uint64)
        base = (20 if p.scalar else 40) if i == len(p.types) - 1 and split(name)[1] in TIED else 8 * i
        target = sregs if p.scalar else vregs
        for at in (base, base + ACC) if p.acc else (base,):  # the AccVGPR of that number too
            target[at] = (col & np.uint64(0xFFFFFFFF)).reshape(waves, -1).squeeze(-1 if p.scalar else ())
            if regs(t) == 2:
                target[at + 1] = (col >> np.uint64(32)).reshape(waves, -1).squeeze(-1 if p.scalar else ())
    return vregs, sregs, waves


def wave_size(arch: str) -> int:
    return 64 if arch in CDNA else 32


def mask_bit(w, reg: int, wave: int, lane: int) -> int:
    """A lane's bit of a lane mask in SGPRs (two of them in wave64)."""
    return (int(w.s[reg, wave]) | int(w.s[reg + 1, wave]) << 32) >> lane & 1


def check(arch: str, name: str) -> None:
    p = plan(arch, name)
    prefix, op, _ = split(name)
    rng = random.Random(name + "junk")
    vregs, sregs, waves = registers(p, name, rng)
    scc = np.array([rng.getrandbits(1) for _ in range(waves)], np.uint32)
    w = execute(p.text, arch, v=vregs, s={**sregs, 106: 0, 107: 0}, waves=waves, scc=scc, lanes=wave_size(arch))
    ref, d = reference(name), p.dst
    elem = d[2:] if d.startswith("2x") else d
    failures = []
    for idx, row in enumerate(p.rows):
        wave, lane = divmod(idx, p.lanes)
        k = Kind(Type(elem) if d != "x" else Type("u32"), [Type(t.split("x")[-1]) for t in p.types], lane,
                 int(scc[wave]))
        args = [value(x, t) if t != "u1" else x for x, t in zip(row, p.types, strict=True)]
        halves = [[a[h] for a in args] for h in range(2)] if d.startswith("2x") else [args]
        half_bits = Type(elem).bits if d.startswith("2x") else 0
        results = [ref(k, *h) for h in halves]
        flag = None
        if len(results) == 1 and isinstance(results[0], tuple):
            results[0], flag = results[0]
        elif prefix == "s" and not op.startswith(("cmp", "bitcmp")):
            flag = "unchanged"
        if op.startswith(("cmp", "bitcmp")):
            got = int(w.scc[wave]) if p.scalar else mask_bit(w, 126 if op.startswith("cmpx") else 20, wave, lane)
            if got != int(bool(results[0])):
                failures.append(f"{args}: got {got}, want {int(bool(results[0]))}")
            continue
        if flag is not None:
            got_flag = int(w.scc[wave]) if p.scalar else mask_bit(w, 20, wave, lane)
            if got_flag != (int(scc[wave]) if flag == "unchanged" else int(bool(flag))):
                failures.append(f"{args}: flag {got_flag}, want {flag}")
        out = 40 + (ACC if p.text.split()[1].startswith("a") else 0)
        raw = int(w.s[20, wave]) | int(w.s[21, wave]) << 32 if p.scalar else (
            int(w.v[out, wave, lane]) | int(w.v[out + 1, wave, lane]) << 32)
        raw >>= 16 if name.endswith("mixhi_f16") else 0
        for h, want in enumerate(results):
            if want is not None and (problem := compare(raw >> (half_bits * h), want, Type(elem), op)):
                failures.append(f"{[hex(x) for x in row]} = {args}: {problem}")
    assert not failures, f"{p.text} on {arch}: {len(failures)} of {len(p.rows)} wrong\n" + "\n".join(failures[:8])


def compare(raw: int, want, t: Type, op: str) -> str | None:
    """None when the result bits match the reference (within the documented precision), else the difference."""
    raw &= (1 << t.bits) - 1
    if isinstance(want, OneOf):
        options = [compare(raw, from_bits(x, t) if t.is_float else x, t, op) for x in want]
        return None if None in options else f"got {raw:#x}, want one of {[hex(x) for x in sorted(want)]}"
    want_bits = to_bits(want, t)
    if not t.is_float:
        return None if raw == want_bits else f"got {raw:#x}, want {want_bits:#x}"
    got_v, want_v = from_bits(raw, t), from_bits(want_bits, t)
    if math.isnan(want_v) or math.isnan(got_v):
        return None if math.isnan(want_v) and math.isnan(got_v) else f"got {got_v!r}, want {want_v!r}"
    if raw == want_bits:
        return None
    op = op.removeprefix("s_")  # v_s_exp_f32 is v_exp_f32 into an SGPR
    if op in ULPS and math.isfinite(want_v) and want_v != 0 and math.isfinite(got_v):
        ulp = 2.0 ** (max(math.frexp(want_v)[1] - 1, FORMATS[t.name][1]) - FORMATS[t.name][0])
        if abs(got_v - want_v) <= ULPS[op] * ulp:
            return None
    if op in ABSOLUTE and abs(got_v - want_v) <= ABSOLUTE[op][t.name]:
        return None
    return f"got {got_v!r} ({raw:#x}), want {want_v!r} ({want_bits:#x})"


def _names(arch: str) -> list[str]:
    return sorted(n for n in implemented_alu(arch) if n not in ELSEWHERE and n not in NOTHING and not CONTROL.match(n))


@pytest.mark.parametrize("arch", ARCHS)
def test_every_implemented_alu_opcode_is_checked(arch):
    missing = [n for n in _names(arch) if reference(n) is None]
    assert not missing, f"{arch}: implemented ALU opcodes with no reference: {missing}"
    assert len(_names(arch)) > 400


@pytest.mark.parametrize(("arch", "name"), [(a, n) for a in ARCHS for n in _names(a) if reference(n) is not None])
def test_opcode_on_edge_values(arch, name):
    check(arch, name)


# ---- opcodes with state beyond their sources -------------------------------------------------------------------
def test_elsewhere_names_real_tests():
    for target in set(ELSEWHERE.values()) | set(ELSEWHERE_CDNA.values()):
        file, _, test = target.rpartition("::")
        text = (Path(__file__).parent / file).read_text() if file else Path(__file__).read_text()
        assert f"def {test}(" in text, target


LANE_VALUES = [(i * 0x9E3779B1) & 0xFFFFFFFF for i in range(64)]


def _lane_case(arch: str, program: str, lanes: int, s: dict, v40=None) -> np.ndarray:
    v = {0: LANE_VALUES[:lanes], 1: LANE_VALUES[64 - lanes:], 8: [x ^ 0xFFFF for x in LANE_VALUES[:lanes]],
         40: v40 or [7] * lanes}
    return execute(program, arch, v=v, s=s, lanes=lanes)


@pytest.mark.parametrize("arch", RDNA)  # gfx9's: exec/test_gfx9.py
def test_lane_ops(arch):
    src = LANE_VALUES[:32]
    # v_readlane: the lane named by an SGPR (its low bits), into an SGPR
    for sel in (0, 5, 31, 37):
        w = _lane_case(arch, "v_readlane_b32 s20, v0, s1", 32, {1: sel})
        assert int(w.s[20, 0]) == src[sel % 32]
    # v_readfirstlane: the lowest active lane
    w = _lane_case(arch, "s_mov_b32 exec_lo, s2\nv_readfirstlane_b32 s20, v0", 32, {2: 0xFFF8})
    assert int(w.s[20, 0]) == src[3]
    # v_writelane: one lane of the destination, the others kept
    w = _lane_case(arch, "v_writelane_b32 v40, s1, s2", 32, {1: 0xABCD, 2: 9})
    assert list(w.v[40, 0]) == [0xABCD if i == 9 else 7 for i in range(32)]
    # v_permlane16: lane i of each row of 16 takes the lane its 4-bit selector names (s1: lanes 0-7, s2: 8-15);
    # v_permlanex16 takes it from the other row
    sel_lo, sel_hi = 0x76543210 ^ 0x11111111, 0xFEDCBA98 ^ 0x33333333
    for op, other in (("v_permlane16_b32", False), ("v_permlanex16_b32", True)):
        w = _lane_case(arch, f"{op} v40, v0, s1, s2", 32, {1: sel_lo, 2: sel_hi})
        for lane in range(32):
            sel = ((sel_lo | sel_hi << 32) >> (4 * (lane % 16))) & 0xF
            row = (lane // 16) ^ other
            assert int(w.v[40, 0, lane]) == src[16 * row + sel], (op, lane)
    # gfx12's v_permlane16_var / v_permlanex16_var: the selector is the low 4 bits of a VGPR, per lane
    if arch == "gfx1200":
        sels = [(lane * 7 + 3) % 16 | 0x30 for lane in range(32)]
        for op, other in (("v_permlane16_var_b32", False), ("v_permlanex16_var_b32", True)):
            w = execute(f"{op} v40, v0, v8", arch, v={0: src, 8: sels, 40: [7] * 32})
            for lane in range(32):
                assert int(w.v[40, 0, lane]) == src[16 * ((lane // 16) ^ other) + (sels[lane] & 15)], (op, lane)
    # v_swap: both registers change
    w = _lane_case(arch, "v_swap_b32 v0, v8", 32, {})
    assert list(w.v[0, 0]) == [x ^ 0xFFFF for x in src] and list(w.v[8, 0]) == src
    if arch == "gfx1100":  # v_swap_b16 (gfx11 only): two 16-bit halves trade places, the other halves stay
        w = _lane_case(arch, "v_swap_b16 v0.l, v8.h", 32, {})
        assert list(w.v[0, 0]) == [x & 0xFFFF0000 | (x ^ 0xFFFF) >> 16 for x in src]
        assert list(w.v[8, 0]) == [(x ^ 0xFFFF) & 0xFFFF | (x & 0xFFFF) << 16 for x in src]
    # v_movrels / v_movreld / v_movrelsd: M0 offsets the source, the destination, or both
    w = _lane_case(arch, "s_mov_b32 m0, 8\nv_movrels_b32 v40, v0", 32, {})
    assert list(w.v[40, 0]) == [x ^ 0xFFFF for x in src]
    w = _lane_case(arch, "s_mov_b32 m0, 32\nv_movreld_b32 v8, v0", 32, {})
    assert list(w.v[40, 0]) == src
    w = _lane_case(arch, "s_mov_b32 m0, 8\nv_movrelsd_b32 v32, v0", 32, {})
    assert list(w.v[40, 0]) == [x ^ 0xFFFF for x in src]


def test_permlane64_swaps_the_halves_of_a_wave64():
    w = _lane_case("gfx1100", "v_permlane64_b32 v40, v1", 64, {})
    assert list(w.v[40, 0]) == LANE_VALUES[32:] + LANE_VALUES[:32]


# LLVM's correctly rounded division (clang -cl-fp32-correctly-rounded-divide-sqrt): v2 = v0 / v1
DIVISION = {
    "f32": """v_div_scale_f32 v4, null, v1, v1, v0
v_div_scale_f32 v7, vcc_lo, v0, v1, v0
v_rcp_f32_e32 v5, v4
v_fma_f32 v6, -v4, v5, 1.0
v_fmac_f32_e32 v5, v6, v5
v_mul_f32_e32 v6, v7, v5
v_fma_f32 v8, -v4, v6, v7
v_fmac_f32_e32 v6, v8, v5
v_fma_f32 v4, -v4, v6, v7
v_div_fmas_f32 v4, v4, v5, v6
v_div_fixup_f32 v40, v4, v1, v0""",
    "f64": """v_div_scale_f64 v[6:7], null, v[8:9], v[8:9], v[0:1]
v_rcp_f64_e32 v[16:17], v[6:7]
v_fma_f64 v[10:11], -v[6:7], v[16:17], 1.0
v_fma_f64 v[16:17], v[16:17], v[10:11], v[16:17]
v_fma_f64 v[10:11], -v[6:7], v[16:17], 1.0
v_fma_f64 v[16:17], v[16:17], v[10:11], v[16:17]
v_div_scale_f64 v[10:11], vcc_lo, v[0:1], v[8:9], v[0:1]
v_mul_f64 v[12:13], v[10:11], v[16:17]
v_fma_f64 v[6:7], -v[6:7], v[12:13], v[10:11]
v_div_fmas_f64 v[6:7], v[6:7], v[16:17], v[12:13]
v_div_fixup_f64 v[40:41], v[6:7], v[8:9], v[0:1]""",
}


def _quotient(a: float, b: float):
    """IEEE division: exact, then rounded by the caller; the special cases as IEEE 754 gives them."""
    if math.isnan(a) or math.isnan(b) or (a == 0 and b == 0) or (math.isinf(a) and math.isinf(b)):
        return math.nan
    sign = -1.0 if (math.copysign(1, a) < 0) != (math.copysign(1, b) < 0) else 1.0
    if b == 0 or math.isinf(a):
        return sign * math.inf
    if a == 0 or math.isinf(b):
        return sign * 0.0
    from fractions import Fraction
    return Fraction(a) / Fraction(b)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("typ", ["f32", "f64"])
def test_division_sequence_rounds_correctly(typ, arch):
    """v_div_scale, v_div_fmas and v_div_fixup in the sequence LLVM emits for a / b: the quotient of every pair of
    edge values (denormal and huge operands included), correctly rounded."""
    pairs = [(x, y) for x in edges(typ) for y in edges(typ)]
    lanes = wave_size(arch)
    waves = len(pairs) // lanes
    a = np.array([p[0] for p in pairs], np.uint64).reshape(waves, lanes)
    b = np.array([p[1] for p in pairs], np.uint64).reshape(waves, lanes)
    if typ == "f32":
        v = {0: a, 1: b}
    else:
        mask = np.uint64(0xFFFFFFFF)
        v = {0: a & mask, 1: a >> np.uint64(32), 8: b & mask, 9: b >> np.uint64(32)}
    program = DIVISION[typ] if arch not in CDNA else DIVISION[typ].replace("vcc_lo", "vcc").replace("null",
                                                                                                   "s[20:21]")
    w = execute(program, arch, v=v, waves=waves, lanes=lanes)
    t = Type(typ)
    wrong = []
    for i, (x, y) in enumerate(pairs):
        wave, lane = divmod(i, lanes)
        raw = int(w.v[40, wave, lane]) | (int(w.v[41, wave, lane]) << 32 if typ == "f64" else 0)
        want = _quotient(from_bits(x, t), from_bits(y, t))
        if problem := compare(raw, want, t, "div"):
            wrong.append(f"{from_bits(x, t)!r} / {from_bits(y, t)!r}: {problem}")
    assert not wrong, f"{len(wrong)} of {len(pairs)}:\n" + "\n".join(wrong[:10])


SAVEEXEC = {"and": lambda s, e: s & e, "or": lambda s, e: s | e, "xor": lambda s, e: s ^ e,
            "nand": lambda s, e: ~(s & e), "nor": lambda s, e: ~(s | e), "xnor": lambda s, e: ~(s ^ e),
            "and_not0": lambda s, e: ~s & e, "and_not1": lambda s, e: s & ~e,
            "or_not0": lambda s, e: ~s | e, "or_not1": lambda s, e: s | ~e}


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("op", sorted(SAVEEXEC))
def test_saveexec_saves_exec_and_sets_it_from_the_source(op, arch):
    """s_<op>_saveexec: the destination gets the old EXEC, EXEC becomes op(source, EXEC), SCC whether any lane is
    left. A v_mov after it shows which lanes are live."""
    for bits, lanes in ((32, 32), (64, 64)):
        name = f"s_{op}_saveexec_b{bits}"
        if name not in implemented_alu(arch):
            continue
        mask = (1 << bits) - 1
        for source, old in ((0x0F0F0F0F0F0F0F0F & mask, 0x00FF00FF00FF00FF & mask), (mask, mask), (0, mask)):
            exec_, dst, src, old_exec = ("exec", "s[20:21]", "s[4:5]", "s[6:7]") if bits == 64 else (
                "exec_lo", "s20", "s4", "s6")
            w = execute(f"s_mov_b{bits} {exec_}, {old_exec}\n{name} {dst}, {src}\nv_mov_b32 v40, 1", arch,
                        s={4: source & 0xFFFFFFFF, 5: source >> 32, 6: old & 0xFFFFFFFF, 7: old >> 32}, lanes=lanes)
            new = SAVEEXEC[op](source, old) & mask
            saved = int(w.s[20, 0]) | (int(w.s[21, 0]) << 32 if bits == 64 else 0)
            assert saved == old and int(w.scc[0]) == (new != 0), (name, hex(source))
            assert [int(x) for x in w.v[40, 0]] == [(new >> i) & 1 for i in range(lanes)], (name, hex(source))


# ---- atomics -----------------------------------------------------------------------------------------------------
ATOMIC_NAME = re.compile(r"^(ds|global_atomic|flat_atomic)_(\w+?)(_rtn)?_([fiub]\d+)$")


ATOMIC_FAMILIES = {"gfx1100": ("DS", "FLAT"), "gfx1200": ("DS", "VGLOBAL"), "gfx942": ("DS", "GLOBAL"),
                   "gfx950": ("DS", "GLOBAL")}
RETURNS = {"gfx1100": "glc", "gfx1200": "th:TH_ATOMIC_RETURN", "gfx942": "sc0", "gfx950": "sc0"}


def _atomic_parts(arch: str, name: str):
    """(segment, op, rtn, type) of an atomic, read from its gfx11 spelling (gfx9's global_atomic_smax_x2 is
    global_atomic_max_i64)."""
    return ATOMIC_NAME.match(memops.canonical(name, 9 if arch in CDNA else 11))


def _moves(arch: str, width: int) -> tuple[str, ...]:
    """The plain store and load of LDS and of global memory, as the arch spells them."""
    if arch in CDNA:
        return (f"ds_write_b{32 * width}", f"ds_read_b{32 * width}", "global_store_dword" + "x2" * (width == 2),
                "global_load_dword" + "x2" * (width == 2))
    return tuple(f"{op}_b{32 * width}" for op in ("ds_store", "ds_load", "global_store", "global_load"))


def _atomic_names(arch: str) -> list[str]:
    table = importlib.import_module(f"usergpu.autogen.isa_{arch}")
    names = {m for f in ATOMIC_FAMILIES[arch] for m, *_ in getattr(table, f).values()}
    return sorted(n for n in names if (m := _atomic_parts(arch, n)) and m.group(2) in ATOMIC
                  and not n.startswith("flat_"))


def _atomic_text(arch: str, name: str, width: int, sources: int) -> str:
    data = ", ".join(f"v{8 + 4 * i}" if width == 1 else f"v[{8 + 4 * i}:{9 + 4 * i}]" for i in range(sources))
    ret = "v40" if width == 1 else "v[40:41]"
    if name.startswith("ds_"):
        return f"{name} {ret + ', ' if '_rtn' in name else ''}v0, {data}"
    both = f"v[8:{8 + 2 * width - 1}]" if sources == 2 else data  # global cmpswap takes [data, compare]
    return f"{name} {ret}, v[2:3], {both}, off {RETURNS[arch]}"


def _lane_value(w, reg: int, wave: int, lane: int, width: int) -> int:
    """One lane's value of a VGPR (width 1) or VGPR pair (width 2)."""
    return int(w.v[reg, wave, lane]) | (int(w.v[reg + 1, wave, lane]) << 32 if width == 2 else 0)


@pytest.mark.parametrize(("arch", "name"), [(a, n) for a in ARCHS for n in _atomic_names(a)])
def test_atomic_on_edge_values(arch, name):
    """LDS and global atomics, each lane on its own address holding an edge value, the data another: the memory
    afterwards and the value returned, against ATOMIC's references."""
    _, op, _, typ = _atomic_parts(arch, name).groups()
    t = Type("u" + typ[1:] if typ[0] == "b" else typ)
    sources = 2 if op in ("cmpswap", "cmpstore", "mskor", "wrap") else 1
    width = 2 if t.bits == 64 else 1
    rng = random.Random(name)
    rows = cases([t.name] * (1 + sources), rng)  # (old value, data[, data2]): 256 cases
    lanes = wave_size(arch)
    waves = len(rows) // lanes
    text = _atomic_text(arch, name, width, sources)
    mem = Memory()
    base = mem.map(len(rows) * 8)

    def column(i: int) -> np.ndarray:
        return np.array([r[i] for r in rows], np.uint64)

    lo, hi = np.uint64(0xFFFFFFFF), np.uint64(32)
    addr = np.arange(len(rows), dtype=np.uint64) * np.uint64(8)
    v = {0: addr, 2: addr + np.uint64(base) & lo, 3: addr + np.uint64(base) >> hi, 16: column(0) & lo,
         17: column(0) >> hi}
    for i in range(sources):
        v[8 + 4 * i], v[9 + 4 * i] = column(1 + i) & lo, column(1 + i) >> hi
    if sources == 2 and not name.startswith("ds_"):  # [data, compare] in consecutive registers
        v[8 + width], v[9 + width] = column(2) & lo, column(2) >> hi
    v = {r: x.reshape(waves, lanes) for r, x in v.items()}
    old_store, result = ("v[16:17]", "v[44:45]") if width == 2 else ("v16", "v44")
    ds_store, ds_load, store, load = _moves(arch, width)
    program = (f"{ds_store} v0, {old_store}\ns_waitcnt lgkmcnt(0)\n{text}\ns_waitcnt lgkmcnt(0)\n"
               f"{ds_load} {result}, v0\ns_waitcnt lgkmcnt(0)" if name.startswith("ds_") else
               f"{store} v[2:3], {old_store}, off\n{text}\ns_waitcnt vmcnt(0)\n"
               f"{load} {result}, v[2:3], off\ns_waitcnt vmcnt(0)")
    w = execute(program, arch, v=v, waves=waves, memory=mem, lanes=lanes)
    ref, k = ATOMIC[op], Kind(t, [t])
    wrong = []
    for i, row in enumerate(rows):
        wave, lane = divmod(i, lanes)
        new = ref(k, *(value(x, t.name) for x in row))
        got = _lane_value(w, 44, wave, lane, width)
        if new is not None and (problem := compare(got, new, t, op)):
            wrong.append(f"{[hex(x) for x in row]}: memory {problem}")
        if "_rtn" in name or not name.startswith("ds_"):
            returned = _lane_value(w, 40, wave, lane, width) & ((1 << t.bits) - 1)
            if returned != row[0]:
                wrong.append(f"{[hex(x) for x in row]}: returned {returned:#x}, want the old {row[0]:#x}")
    assert not wrong, f"{text} on {arch}: {len(wrong)} of {len(rows)} wrong\n" + "\n".join(wrong[:8])
