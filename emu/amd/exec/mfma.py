"""MFMA and SMFMAC (CDNA3 gfx942, CDNA4 gfx950): D = A * B + C by a whole wave64, over one or more M x N x K
blocks, with the matrices spread over the lanes' registers as the CDNA3/CDNA4 ISA guides ("Matrix Arithmetic
Instructions") and AMD's Matrix Instruction Calculator lay them out.

A (M x K per block; B alike, its N columns in place of A's M rows): block b, row i, k is in lane
b*M + (k // P)*M*B + i, value k % P of that lane's registers, P = M*K*B/64 values per lane packed low bits first
(fp6 straddles dwords). gfx950's f8f6f4 instructions with 8-bit formats split the lane's 32 values into two runs
of 16, the second run 16 * 64 / M further along K; fp6 and fp4 keep one run of 32.
D and C: 32-bit values in groups of h = 4 rows, f64 in single rows (h = 1): block b, row i, column j is value
b*M*N/64 + (i // (h*R))*h + i % h of lane (b % Q)*N + ((i // h) % R)*Q*N + j, with R = 64 / N row groups and
Q = ceil(64*h / (M*N)) blocks (the 4x4 shapes') sharing a register; a value is a register (f64: a pair).

Modifiers: cbsz/abid broadcast block (b with its low cbsz bits replaced by abid's) of A to each block of a
2^cbsz group; blgp has B read from other lanes (BLGP below); f64 forms have neg:[a,b,c] in blgp's place; gfx950's
f8f6f4 read A's and B's formats from cbsz and blgp, and the scaled forms an E8M0 scale per 32 K values from byte
op_sel + 2*op_sel_hi of each lane of their scale operands (A's row i, K block kb from lane i + M*kb).
SMFMAC: A holds 2 of every 4 K values (4:2 structured sparsity), P/2 per lane; the src2 register holds 32/P index
sets of P bits, and in the set abid picks (the first when cbsz is set) each kept value's 2 bits say which of its
group of 4 it stands for.

Arithmetic: products are exact and summed in double (exactly for the 16-bit and narrower formats' usual ranges;
f64: fused multiply-adds in K order, as DGEMM does), then rounded once to the accumulator (f32 ties to even;
i32 wraps); the guides leave the hardware's intermediate rounding open. EXEC masks the write. gfx942's fp8/bf8
are the FNUZ formats (bias 8 / 16, 0x80 NaN, no infinities); gfx950's are OCP E4M3 and E5M2 (lowp.py decodes all).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

import numpy as np

from usergpu.emu.amd.exec import lowp
from usergpu.emu.amd.exec.operands import Operand
from usergpu.emu.numerics import fma64

NAME = re.compile(r"(mfma|smfmac)_(scale_)?(f32|i32|f64)_(\d+)x(\d+)x(\d+)(?:_(\d+)b)?_(\w+)$")
# the name's source part -> A's and B's element kinds (f8f6f4: from cbsz and blgp)
SOURCES = {"f32": ("f32", "f32"), "xf32": ("xf32", "xf32"), "f16": ("f16", "f16"), "bf16": ("bf16", "bf16"),
           "i8": ("i8", "i8"), "f64": ("f64", "f64"),
           **{f"{a}_{b}": (a, b) for a in ("fp8", "bf8") for b in ("fp8", "bf8")}}
F8F6F4 = ("fp8", "bf8", "fp6", "bf6", "fp4")  # by cbsz (A) and blgp (B)
FNUZ = {"gfx942": {"fp8": "fp8_fnuz", "bf8": "bf8_fnuz"}}  # CDNA3's 8-bit floats
# blgp: the lane each lane reads B from
BLGP = [np.arange(64), np.arange(64) % 32, np.arange(64) % 32 + 32, (np.arange(64) + 16) % 64,
        *(np.arange(64) % 16 + 16 * q for q in range(4))]


# element kinds of at most 16 bits: (bits, every code's value); f32, xf32 and f64 decode by view
TABLES = {"i8": (8, np.arange(256) - (np.arange(256) >> 7 << 8)),
          **{k: (f.bits, lowp.decode(np.arange(1 << f.bits), f)) for k, f in lowp.FORMATS.items() if f.bits <= 16}}
WIDE = {"f32": 32, "xf32": 32, "f64": 64}


def bits_of(kind: str) -> int:
    return WIDE[kind] if kind in WIDE else TABLES[kind][0]


def _values(codes: np.ndarray, kind: str) -> np.ndarray:
    """Element codes (uint64) as float64 (int64 for i8)."""
    if kind in TABLES:
        return TABLES[kind][1][codes.astype(np.int64)]
    if kind == "f64":
        return codes.view(np.float64)
    bits = codes.astype(np.uint32)
    if kind == "xf32":  # 10 mantissa bits, rounded to nearest even; infinities and NaNs kept
        special = (bits & np.uint32(0x7F800000)) == np.uint32(0x7F800000)
        rounded = (bits + np.uint32(0xFFF) + ((bits >> np.uint32(13)) & np.uint32(1))) & np.uint32(0xFFFFE000)
        bits = np.where(special, bits, rounded)
    return bits.view(np.float32).astype(np.float64)


def _unpack(dwords: np.ndarray, bits: int, count: int) -> np.ndarray:
    """The first count bits-wide codes of each lane's dwords (..., d), low bits first, as uint64 (..., count)."""
    d = dwords.astype(np.uint64)
    if bits == 64:
        return d[..., 0:2 * count:2] | (d[..., 1:2 * count:2] << np.uint64(32))
    pos = np.arange(count) * bits
    padded = np.concatenate([d, np.zeros(d.shape[:-1] + (1,), np.uint64)], -1)
    wide = padded[..., pos // 32] | (padded[..., pos // 32 + 1] << np.uint64(32))
    return (wide >> (pos % 32).astype(np.uint64)) & np.uint64((1 << bits) - 1)


@dataclass(frozen=True)
class Plan:
    m: int
    n: int
    k: int
    blocks: int
    acc: str  # f32, i32 or f64
    a: str  # element kinds
    b: str
    sparse: bool
    scaled: bool
    f8f6f4: bool

    def per_lane(self) -> int:
        """Dense K values per lane, of A and of B."""
        return self.m * self.k * self.blocks // 64

    def run(self, kind: str) -> int:
        """Values of a lane that run along K together before the other lanes' (see the module's docstring)."""
        return 16 if self.f8f6f4 and bits_of(kind) == 8 else self.per_lane()

    def out_values(self) -> int:
        return self.m * self.n * self.blocks // 64


def plan(core: str, arch: str, mods: dict) -> Plan | None:
    """What an mfma_*/smfmac_* mnemonic (no v_, no suffix) computes on arch; None for a name that is no MFMA."""
    m = NAME.match(core)
    if m is None:
        return None
    op, scale, acc, mm, nn, kk, blocks, src = m.groups()
    mm, nn, kk, blocks = int(mm), int(nn), int(kk), int(blocks or 1)
    if src == "f8f6f4":
        picks = (int(mods.get("cbsz", 0)), int(mods.get("blgp", 0)))
        if any(p >= len(F8F6F4) for p in picks):
            return None
        kinds = tuple(F8F6F4[p] for p in picks)
    elif src in SOURCES:
        kinds = tuple(FNUZ.get(arch, {}).get(x, x) for x in SOURCES[src])
    else:
        return None
    p = Plan(mm, nn, kk, blocks, acc, *kinds, op == "smfmac", bool(scale), src == "f8f6f4")
    if mm != nn or 64 % (mm * blocks) or (mm * kk * blocks) % 64 or (p.sparse and p.per_lane() % 4):
        return None
    return p


def _flags(mods: dict, name: str, n: int = 3) -> list[int]:
    return [int(x) for x in mods.get(name, "[" + ",".join("0" * n) + "]").strip("[]").split(",")]


SOURCE_KINDS = ("v", "s", "int", "float", "lit", "special", "aperture")


def _dwords(w, op: Operand, count: int, g, typ: str) -> np.ndarray:
    """(waves, lanes, count) dwords of a VGPR range; an SGPR range gives every lane its dwords, any other operand
    (an inline constant, src_vccz, ...) every dword its value as typ (f64: each pair its double)."""
    n = len(w.pc[g])
    if op.kind in ("v", "s"):
        regs = w.v if op.kind == "v" else w.s[:, :, None]
        return np.stack([np.broadcast_to(regs[op.index + i, g], (n, w.lanes)) for i in range(count)], -1)
    bits = np.broadcast_to(w.read(op, typ, g), (n, 1)).view(np.uint64 if typ == "f64" else np.uint32)
    words = [bits & np.uint64(0xFFFFFFFF), bits >> np.uint64(32)] if typ == "f64" else [bits]
    row = np.concatenate(words * (count // len(words)), -1).astype(np.uint32)[:, None]
    return np.broadcast_to(row, (n, w.lanes, count))


def _elements(w, op: Operand, g, kind: str, count: int) -> np.ndarray:
    """(waves, lanes, count) values of a source operand."""
    bits = bits_of(kind)
    typ = "f64" if kind == "f64" else "f32"
    return _values(_unpack(_dwords(w, op, -(-count * bits // 32), g, typ), bits, count), kind)


def _matrix(vals: np.ndarray, rows: int, blocks: int, run: int) -> np.ndarray:
    """(waves, 64, per lane) values -> (waves, blocks, rows, K) by the lane layout."""
    n, lanes, per = vals.shape
    groups = lanes // (rows * blocks)
    v = vals.reshape(n, groups, blocks, rows, per // run, run)
    return v.transpose(0, 2, 3, 4, 1, 5).reshape(n, blocks, rows, -1)


@cache
def _out_place(m: int, n: int, blocks: int, wide: bool) -> tuple[np.ndarray, np.ndarray]:
    """The (lane, value index) of D[block][i][j] for each (block, i, j)."""
    h = 1 if wide else 4
    per_reg = 64 // n
    held = -(-64 // (m * n // h))
    b, i, j = np.meshgrid(np.arange(blocks), np.arange(m), np.arange(n), indexing="ij")
    value = b * (m * n // 64) + (i // (h * per_reg)) * h + i % h
    lane = (b % held) * n + ((i // h) % per_reg) * held * n + j
    return lane, value


def _scales(w, op: Operand, g, byte: int, rows: int) -> np.ndarray:
    """(waves, 1, rows, K) factors of A's rows (B's columns) for each K value: 2^(e - 127) from the E8M0 byte e of
    lane row + rows * (k // 32) (255: NaN)."""
    raw = np.broadcast_to(w.read(op, "u32", g), (len(w.pc[g]), w.lanes))
    factor = lowp.e8m0(raw >> np.uint32(8 * byte)).reshape(len(w.pc[g]), -1, rows)
    return np.repeat(factor, 32, 1).transpose(0, 2, 1)[:, None]


def _sparse_product(a: np.ndarray, b: np.ndarray, index: np.ndarray, m: int) -> np.ndarray:
    """(waves, 1, M, N) sum over the lanes' kept values of A times the B values their indices pick.
    a: (waves, 64, P/2), b: (waves, 64, P), index: (waves, 64) the lanes' index sets (2 bits per kept value)."""
    n, lanes, kept = a.shape
    groups = lanes // m
    sel = (index[..., None] >> (2 * np.arange(kept)).astype(np.uint32)) & np.uint32(3)
    pos = (4 * (np.arange(kept) // 2) + sel).reshape(n, groups, m, 1, kept)
    bb = np.broadcast_to(b.reshape(n, groups, 1, m, -1), (n, groups, m, m, b.shape[-1]))
    picked = np.take_along_axis(bb, np.broadcast_to(pos, (n, groups, m, m, kept)).astype(np.int64), -1)
    return np.einsum("ngie,ngije->nij", a.reshape(n, groups, m, kept), picked)[:, None]


def step(ex, core: str, ops: list[Operand], mods: dict):
    """The closure running an mfma_*/smfmac_* (core: the mnemonic without v_ and its encoding suffix), or None."""
    if core == "mfma_ld_scale_b32":  # its scales go to the f8f6f4 MFMA after it, which the decoder reads with
        return _no_state                # it as one v_mfma_scale_*: alone it changes no register
    p = plan(core, ex.arch, mods)
    if p is None or len(ops) < 4 + 2 * p.scaled:  # (gfx9 runs wave64 only)
        return None
    dst, a_op, b_op, c_op = ops[:4]
    if dst.kind != "v" or any(o.kind not in SOURCE_KINDS for o in ops[1:]):
        return None
    per = p.per_lane()
    cbsz, abid, blgp = (int(mods.get(x, 0)) for x in ("cbsz", "abid", "blgp"))
    wide = p.acc == "f64"
    neg = _flags(mods, "neg") if wide else [0, 0, 0]
    group = 1 if p.f8f6f4 else min(1 << cbsz, p.blocks)
    a_blocks = np.arange(p.blocks) // group * group + abid % group
    lanes_b = BLGP[0 if p.f8f6f4 or wide or p.sparse else blgp]
    lane, value = _out_place(p.m, p.n, p.blocks, wide)
    count = p.out_values() * (2 if wide else 1)
    index_shift = np.uint32(0 if cbsz or not p.sparse else per * (abid % (32 // per)))
    scale_bytes = [s + 2 * h for s, h in zip(_flags(mods, "op_sel"), _flags(mods, "op_sel_hi"), strict=True)]

    def mfma(ex, g) -> None:
        w = ex.w
        a = _elements(w, a_op, g, p.a, per // 2 if p.sparse else per)
        b = _elements(w, b_op, g, p.b, per)[:, lanes_b]
        c_dw = _dwords(w, dst if p.sparse else c_op, count, g, p.acc)
        c = CONVERT[p.acc][0](_unpack(c_dw, 64 if wide else 32, p.out_values()))[:, lane, value]
        with np.errstate(all="ignore"):
            if p.sparse:
                index = np.broadcast_to(w.read(c_op, "u32", g), a.shape[:2]) >> index_shift
                d = _sparse_product(a, b, index, p.m) + c
            else:
                am = _matrix(a, p.m, p.blocks, p.run(p.a))[:, a_blocks] * (-1 if neg[0] else 1)
                bm = _matrix(b, p.n, p.blocks, p.run(p.b)) * (-1 if neg[1] else 1)
                if p.scaled:
                    am = am * _scales(w, ops[4], g, scale_bytes[0], p.m)
                    bm = bm * _scales(w, ops[5], g, scale_bytes[1], p.n)
                d = _fma_chain(am, bm, -c if neg[2] else c) if wide else am @ np.swapaxes(bm, -1, -2) + c
            codes = CONVERT[p.acc][1](d)
        out = np.zeros((len(w.pc[g]), w.lanes, p.out_values()), np.uint64)
        out[:, lane, value] = codes
        if wide:  # each value's low dword, then its high one
            out = np.stack([out & np.uint64(0xFFFFFFFF), out >> np.uint64(32)], -1).reshape(*out.shape[:2], -1)
        exec_mask = w.exec_mask(g)
        for r in range(count):
            w.v[dst.index + r, g] = np.where(exec_mask, out[:, :, r].astype(np.uint32), w.v[dst.index + r, g])
    return mfma


def _fma_chain(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """c + a @ b^T (a: (..., M, K), b: (..., N, K)) as fused multiply-adds in K order."""
    d = c
    for k in range(a.shape[-1]):
        d = fma64(a[..., :, k, None], b[..., None, :, k], d)
    return d


def _no_state(ex, g) -> None:
    return None


# accumulator type: (its codes (uint64) to float64 / int64 values, and values to its codes (uint64))
CONVERT = {
    "f32": (lambda c: c.astype(np.uint32).view(np.float32).astype(np.float64),
            lambda r: r.astype(np.float32).view(np.uint32).astype(np.uint64)),
    "i32": (lambda c: c.astype(np.uint32).view(np.int32).astype(np.int64),
            lambda r: r.astype(np.int64).astype(np.uint32).astype(np.uint64)),
    "f64": (lambda c: c.view(np.float64), lambda r: r.astype(np.float64).view(np.uint64)),
}
