"""Cases for the warp-level matrix instructions: mma.sync for the shapes and types clang emits (fragments laid out
as the PTX ISA's "Matrix Fragments for mma.mMnNkK" sections say), wmma.load/mma/store round trips through memory
(their fragments are implementation-defined, so only the matrices in memory are checked), and ldmatrix,
stmatrix and movmatrix on 8x8 matrices of 16-bit elements.

The matrices hold small dyadic values whose products and sums are exact in the accumulator type: the ISA leaves
the order and precision of the accumulation to the hardware, so only exact results are asserted."""

from __future__ import annotations

import itertools
from fractions import Fraction

import ptx_refs as R
from ptx_harness import Case, rng

WARP = 32


# ---- fragment layouts (PTX ISA 9.7.14.5): element i of lane L -> (row, col), g = L >> 2, t = L % 4 ---------------
def _a_h16(g, t, i):
    return g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2)


def _b_h16(g, t, i):
    return 2 * t + (i & 1) + 8 * (i >> 1), g


def _c16(g, t, i):  # m16n8 C/D; also m16n8k8 .f16 A
    return g + 8 * (i >> 1), 2 * t + (i & 1)


def _b_h8(g, t, i):
    return 2 * t + i, g


def _a_tf8(g, t, i):
    return g + 8 * (i & 1), t + 4 * (i >> 1)


def _b_tf8(g, t, i):
    return t + 4 * i, g


def _a_i16(g, t, i):
    return g + 8 * (i >> 2), 4 * t + (i & 3)


def _b_i16(g, t, i):
    return 4 * t + i, g


def _a_i32(g, t, i):
    return g + 8 * ((i >> 2) & 1), 4 * t + (i & 3) + 16 * (i >> 3)


def _b_i32(g, t, i):
    return 4 * t + (i & 3) + 16 * (i >> 2), g


def _a_i8x8(g, t, i):  # m8n8k16 A
    return g, 4 * t + i


def _c8(g, t, i):  # m8n8 C/D
    return g, 2 * t + i


# shape, A/B type, D/C type -> (m, n, k), (A layout, elements), (B), (C/D)
MMA = {
    ("m16n8k16", "f16", "f32"): ((16, 8, 16), (_a_h16, 8), (_b_h16, 4), (_c16, 4)),
    ("m16n8k16", "f16", "f16"): ((16, 8, 16), (_a_h16, 8), (_b_h16, 4), (_c16, 4)),
    ("m16n8k16", "bf16", "f32"): ((16, 8, 16), (_a_h16, 8), (_b_h16, 4), (_c16, 4)),
    ("m16n8k8", "f16", "f32"): ((16, 8, 8), (_c16, 4), (_b_h8, 2), (_c16, 4)),
    ("m16n8k8", "bf16", "f32"): ((16, 8, 8), (_c16, 4), (_b_h8, 2), (_c16, 4)),
    ("m16n8k8", "tf32", "f32"): ((16, 8, 8), (_a_tf8, 4), (_b_tf8, 2), (_c16, 4)),
    ("m16n8k4", "tf32", "f32"): ((16, 8, 4), (lambda g, t, i: (g + 8 * i, t), 2), (lambda g, t, i: (t, g), 1),
                                 (_c16, 4)),
    ("m16n8k16", "s8", "s32"): ((16, 8, 16), (_a_i16, 8), (_b_i16, 4), (_c16, 4)),
    ("m16n8k16", "u8", "s32"): ((16, 8, 16), (_a_i16, 8), (_b_i16, 4), (_c16, 4)),
    ("m16n8k32", "s8", "s32"): ((16, 8, 32), (_a_i32, 16), (_b_i32, 8), (_c16, 4)),
    ("m8n8k16", "s8", "s32"): ((8, 8, 16), (_a_i8x8, 4), (_b_i16, 4), (_c8, 2)),
    ("m16n8k32", "e4m3", "f32"): ((16, 8, 32), (_a_i32, 16), (_b_i32, 8), (_c16, 4)),
}
BITS = {"f16": 16, "bf16": 16, "tf32": 32, "f32": 32, "s32": 32, "s8": 8, "u8": 8, "e4m3": 8}


def _encode(v, t: str) -> int:
    if t in ("s8", "u8", "s32"):
        return R.wrap(int(v), BITS[t])
    if t == "e4m3":
        return R.to_eight_bit(float(v), "e4m3")
    return R.bits(float(v), "f32" if t == "tf32" else t)


def _decode(raw: int, t: str):
    if t in ("s8", "u8", "s32"):
        return R.as_value(raw, t)
    if t == "e4m3":
        e, m = raw >> 3 & 0xF, raw & 7
        v = (m / 8 + (e > 0)) * 2.0 ** (max(e, 1) - 7)
        return Fraction(-v if raw & 0x80 else v)
    return Fraction(R.value(raw, "f32" if t == "tf32" else t))


def _value(r, t: str):
    """A small random entry whose products and sums stay exact in the accumulator."""
    if t in ("s8", "u8"):
        return r.randint(-128, 127) if t == "s8" else r.randint(0, 255)
    return Fraction(r.randint(-8, 8), 4)


def _to_regs(elements: list[int], bits: int) -> list[int]:
    per = 32 // bits
    return [sum(elements[r * per + j] << (bits * j) for j in range(per)) for r in range(len(elements) // per)]


def _from_regs(regs: tuple, bits: int, count: int) -> list[int]:
    per, mask = 32 // bits, (1 << bits) - 1
    return [regs[i // per] >> (bits * (i % per)) & mask for i in range(count)]


def _fragment(mat, layout, count, lane: int) -> list:
    return [mat[r][c] for r, c in (layout(lane >> 2, lane & 3, i) for i in range(count))]


def mma() -> list[Case]:
    cases = []
    for (shape, ab, cd), ((m, n, k), (la, na), (lb, nb), (lc, nc)) in MMA.items():
        for satfinite in (False, True) if cd == "s32" else (False,):
            r = rng(f"mma{shape}{ab}{cd}{satfinite}")
            bits_ab, bits_c = BITS[ab], BITS[cd]
            lanes = []
            for _ in range(2):  # two warps, each its own matrices
                a = [[_value(r, ab) for _ in range(k)] for _ in range(m)]
                b = [[_value(r, ab) for _ in range(n)] for _ in range(k)]
                c = [[(r.choice((2 ** 31 - 1, -2 ** 31, 5)) if satfinite else r.randint(-1000, 1000)) if cd == "s32"
                      else Fraction(r.randint(-64, 64), 8) for _ in range(n)] for _ in range(m)]
                for lane in range(WARP):
                    regs = _to_regs([_encode(v, ab) for v in _fragment(a, la, na, lane)], bits_ab)
                    regs += _to_regs([_encode(v, ab) for v in _fragment(b, lb, nb, lane)], bits_ab)
                    regs += _to_regs([_encode(v, cd) for v in _fragment(c, lc, nc, lane)], bits_c)
                    lanes.append(tuple(regs))
            ra, rb, rc = na * bits_ab // 32, nb * bits_ab // 32, nc * bits_c // 32

            def ref(ls, m=m, n=n, k=k, la=la, na=na, lb=lb, nb=nb, lc=lc, nc=nc, ab=ab, cd=cd, ra=ra, rb=rb,
                    rc=rc, sat=satfinite):
                out = []
                for w in range(0, len(ls), WARP):
                    mats = [[[None] * cols for _ in range(rows)] for rows, cols in ((m, k), (k, n), (m, n))]
                    for lane in range(WARP):
                        regs = ls[w + lane]
                        for mat, lay, cnt, bits, t, first, count in (
                                (mats[0], la, na, BITS[ab], ab, 0, ra), (mats[1], lb, nb, BITS[ab], ab, ra, rb),
                                (mats[2], lc, nc, BITS[cd], cd, ra + rb, rc)):
                            els = _from_regs(regs[first:first + count], bits, cnt)
                            for i, raw in enumerate(els):
                                row, col = lay(lane >> 2, lane & 3, i)
                                mat[row][col] = _decode(raw, t)
                    a, b, c = mats
                    d = [[c[i][j] + sum(a[i][q] * b[q][j] for q in range(k)) for j in range(n)] for i in range(m)]
                    if cd == "s32" and sat:
                        d = [[min(max(v, -2 ** 31), 2 ** 31 - 1) for v in row] for row in d]
                    for lane in range(WARP):
                        out.append(tuple(_to_regs([_encode(v, cd) for v in _fragment(d, lc, nc, lane)], BITS[cd])))
                return out
            regs = [f"%i{i}" for i in range(ra + rb + rc)]
            fa, fb, fc = (", ".join(regs[s:e]) for s, e in ((0, ra), (ra, ra + rb), (ra + rb, ra + rb + rc)))
            fd = ", ".join(f"%o{i}" for i in range(rc))
            types = f"{cd}.{ab}.{ab}.{cd}"
            name = f"mma.sync.aligned.{shape}.row.col{'.satfinite' if satfinite else ''}.{types}"
            cases.append(Case(name, "mma", f"{name} {{{fd}}}, {{{fa}}}, {{{fb}}}, {{{fc}}};",
                              ("b32",) * (ra + rb + rc), ("b32",) * rc, lanes, ref, whole=True))
    return cases


# ---- wmma through memory -----------------------------------------------------------------------------------------
WMMA = {  # shape -> (m, n, k); type -> (A/B type, fragment registers of A, B, and C/D per D type)
    "m16n16k16": (16, 16, 16), "m32n8k16": (32, 8, 16), "m8n32k16": (8, 32, 16), "m16n16k8": (16, 16, 8),
}
FRAGS = {("m16n16k8", "tf32"): (4, 4), ("m16n16k16", "bf16"): (4, 4), ("m16n16k16", "s8"): (2, 2),
         ("m32n8k16", "s8"): (4, 1), ("m8n32k16", "s8"): (1, 4)}  # A and B registers (f16: 8 and 8)


def _wmma_case(shape: str, ab: str, cd: str, alay: str, blay: str, clay: str) -> Case:
    """Each warp loads A, B and C from its part of the buffers (row- or column-major, leading dimension the
    matrix's), multiplies, and stores D row- or column-major."""
    m, n, k = WMMA[shape]
    size_ab, size_c = BITS[ab] // 8, BITS[cd] // 8
    slot_a, slot_b, slot_c = (-(-rows * cols * size // WARP) for rows, cols, size in
                              ((m, k, size_ab), (k, n, size_ab), (m, n, size_c)))
    ra, rb = FRAGS.get((shape, ab), (8, 8))
    rc = 8 if cd in ("f32", "s32") else 4
    r = rng(f"wmma{shape}{ab}{cd}{alay}{blay}{clay}")

    def layout_bytes(mat, lay: str, t: str, rows: int, cols: int) -> bytes:
        order = [(i, j) for i in range(rows) for j in range(cols)] if lay == "row" else \
            [(i, j) for j in range(cols) for i in range(rows)]
        return b"".join(_encode(mat[i][j], t).to_bytes(BITS[t] // 8, "little") for i, j in order)

    def parse(raw: bytes, lay: str, t: str, rows: int, cols: int):
        size = BITS[t] // 8
        vals = [_decode(int.from_bytes(raw[q * size:(q + 1) * size], "little"), t) for q in range(rows * cols)]
        return [[vals[i * cols + j] if lay == "row" else vals[j * rows + i] for j in range(cols)] for i in range(rows)]

    def split(blob: bytes, slot: int) -> list[int]:
        blob = blob.ljust(slot * WARP, b"\0")
        return [int.from_bytes(blob[q * slot:(q + 1) * slot], "little") for q in range(WARP)]
    lanes = []
    for _ in range(2):
        a = [[_value(r, ab) for _ in range(k)] for _ in range(m)]
        b = [[_value(r, ab) for _ in range(n)] for _ in range(k)]
        c = [[r.randint(-1000, 1000) if cd == "s32" else Fraction(r.randint(-64, 64), 8) for _ in range(n)]
             for _ in range(m)]
        lanes += list(zip(split(layout_bytes(a, alay, ab, m, k), slot_a),
                          split(layout_bytes(b, blay, ab, k, n), slot_b),
                          split(layout_bytes(c, clay, cd, m, n), slot_c), strict=True))

    def ref(ls: list) -> list:
        out = []
        for w in range(0, len(ls), WARP):
            blobs = [b"".join(ls[w + q][s].to_bytes(slot, "little") for q in range(WARP))
                     for s, slot in enumerate((slot_a, slot_b, slot_c))]
            a, b, c = (parse(blob, lay, t, rows, cols) for blob, lay, t, rows, cols in
                       ((blobs[0], alay, ab, m, k), (blobs[1], blay, ab, k, n), (blobs[2], clay, cd, m, n)))
            d = [[c[i][j] + sum(a[i][q] * b[q][j] for q in range(k)) for j in range(n)] for i in range(m)]
            out += [(v,) for v in split(layout_bytes(d, clay, cd, m, n), slot_c)]
        return out
    regs = {name: ", ".join(f"%{name}{i}" for i in range(count)) for name, count in
            (("fa", ra), ("fb", rb), ("fc", rc), ("fd", rc))}
    mma_types = f"{cd}.{cd}" if ab == "f16" else f"{cd}.{ab}.{ab}.{cd}"
    body = f"""
        mov.u32 %t0, %laneid;
        mul.wide.u32 %x0, %t0, {slot_a};
        sub.u64 %pa, %ga0, %x0;
        mul.wide.u32 %x0, %t0, {slot_b};
        sub.u64 %pb, %ga1, %x0;
        mul.wide.u32 %x0, %t0, {slot_c};
        sub.u64 %pc, %ga2, %x0;
        sub.u64 %pd, %ga3, %x0;
        wmma.load.a.sync.aligned.{alay}.{shape}.global.{ab} {{{regs['fa']}}}, [%pa], {k if alay == 'row' else m};
        wmma.load.b.sync.aligned.{blay}.{shape}.global.{ab} {{{regs['fb']}}}, [%pb], {n if blay == 'row' else k};
        wmma.load.c.sync.aligned.{clay}.{shape}.global.{cd} {{{regs['fc']}}}, [%pc], {n if clay == 'row' else m};
        wmma.mma.sync.aligned.{alay}.{blay}.{shape}.{mma_types}
            {{{regs['fd']}}}, {{{regs['fa']}}}, {{{regs['fb']}}}, {{{regs['fc']}}};
        wmma.store.d.sync.aligned.{clay}.{shape}.global.{cd} [%pd], {{{regs['fd']}}}, {n if clay == 'row' else m};"""
    decls = (f".reg .b32 %t0, {regs['fa']}, {regs['fb']}, {regs['fc']}, {regs['fd']};\n"
             ".reg .b64 %x0, %pa, %pb, %pc, %pd;")
    name = f"wmma.{shape}.{alay}.{blay}.{cd}.{ab}.{clay}"
    return Case(name, "wmma", body, (f"m{slot_a}", f"m{slot_b}", f"m{slot_c}"), (f"m{slot_c}",), lanes, ref,
                whole=True, decls=decls)


def wmma() -> list[Case]:
    cases = [_wmma_case("m16n16k16", "f16", "f32", a, b, c) for a, b, c in itertools.product(("row", "col"), repeat=3)]
    cases += [_wmma_case(shape, "f16", cd, "row", "col", "row") for shape in ("m32n8k16", "m8n32k16")
              for cd in ("f32", "f16")]
    cases += [_wmma_case("m16n16k16", "f16", "f16", "row", "row", "col"),
              _wmma_case("m16n16k16", "bf16", "f32", "row", "col", "row"),
              _wmma_case("m16n16k8", "tf32", "f32", "row", "col", "row"),
              _wmma_case("m16n16k16", "s8", "s32", "row", "col", "row"),
              _wmma_case("m32n8k16", "s8", "s32", "row", "col", "col")]
    return cases


# ---- 8x8 matrices of b16: ldmatrix, stmatrix, movmatrix ----------------------------------------------------------
MATRIX_DECLS = ".shared .align 16 .b8 mats[2048];\n.reg .b32 %t<3>;\n.reg .b64 %a<4>;"
_ROW_OF = "mov.u32 %t0, %tid.x;\nmov.u32 %t1, %laneid;\nsub.u32 %t2, %t0, %t1;\n"  # %t2: the warp's first thread


def _rows_setup(perm_mul: int) -> str:
    """Every lane stores its 16 bytes as a row of its warp's region of shared memory, then points %a2 at the row
    of lane (laneid * perm_mul) % 32 of that region."""
    return _ROW_OF + f"""
        mov.u64 %a0, mats;
        mul.wide.u32 %a1, %t0, 16;
        add.u64 %a1, %a0, %a1;
        st.shared.v4.b32 [%a1], {{%i0, %i1, %i2, %i3}};
        bar.warp.sync 0xffffffff;
        mul.lo.u32 %t1, %t1, {perm_mul};
        and.b32 %t1, %t1, 31;
        add.u32 %t1, %t1, %t2;
        mul.wide.u32 %a2, %t1, 16;
        add.u64 %a2, %a0, %a2;"""


def _halves(word: int) -> tuple[int, int]:
    return word & 0xFFFF, word >> 16


def matrices() -> list[Case]:
    """ldmatrix: lanes 8i..8i+7 give the rows of matrix i; register i of lane L holds row L/4, columns 2(L%4) and
    2(L%4)+1 of it (transposed with .trans). stmatrix stores that way; movmatrix transposes a fragment."""
    r = rng("ldmatrix")
    lanes = [tuple(r.getrandbits(32) for _ in range(4)) for _ in range(64)]
    perm = 5  # row q of the region is given by lane q * 5 mod 32

    def rows_of(ls: list, w: int) -> list[list[int]]:  # the warp's 32 rows as given by lanes 0..31
        return [[h for word in ls[w + (q * perm) % WARP] for h in _halves(word)] for q in range(WARP)]
    cases = []
    for num, trans in itertools.product((1, 2, 4), (False, True)):
        def ref(ls: list, num=num, trans=trans) -> list:
            out = []
            for w in range(0, len(ls), WARP):
                rows = rows_of(ls, w)
                for lane in range(WARP):
                    regs = []
                    for i in range(num):
                        mat = rows[8 * i:8 * i + 8]
                        g, c = lane >> 2, 2 * (lane & 3)
                        lo, hi = (mat[c][g], mat[c + 1][g]) if trans else (mat[g][c], mat[g][c + 1])
                        regs.append(lo | hi << 16)
                    out.append(tuple(regs))
            return out
        regs = ", ".join(f"%o{i}" for i in range(num))
        name = f"ldmatrix.sync.aligned.m8n8.x{num}{'.trans' if trans else ''}.shared.b16"
        cases.append(Case(name, "ldmatrix", _rows_setup(perm) + f"\n{name} {{{regs}}}, [%a2];", ("b32",) * 4,
                          ("b32",) * num, lanes, ref, whole=True, decls=MATRIX_DECLS))
    for num, trans in ((1, False), (4, False), (4, True)):
        def st_ref(ls: list, num=num, trans=trans) -> list:
            out = []
            for w in range(0, len(ls), WARP):
                mats = [[[0] * 8 for _ in range(8)] for _ in range(num)]
                for lane in range(WARP):
                    g, c = lane >> 2, 2 * (lane & 3)
                    for i in range(num):
                        lo, hi = _halves(ls[w + lane][i])
                        if trans:
                            mats[i][c][g], mats[i][c + 1][g] = lo, hi
                        else:
                            mats[i][g][c], mats[i][g][c + 1] = lo, hi
                for lane in range(WARP):  # row `lane` went to the address lane gave; the others kept their rows
                    if lane < 8 * num:
                        row = mats[lane // 8][lane % 8]
                        out.append(tuple(row[2 * j] | row[2 * j + 1] << 16 for j in range(4)))
                    else:
                        out.append(ls[w + (lane * perm) % WARP])
            return out
        regs = ", ".join(f"%i{i}" for i in range(num))
        name = f"stmatrix.sync.aligned.m8n8.x{num}{'.trans' if trans else ''}.shared.b16"
        cases.append(Case(name, "stmatrix", _rows_setup(perm) + f"""
            bar.warp.sync 0xffffffff;
            {name} [%a2], {{{regs}}};
            bar.warp.sync 0xffffffff;
            ld.shared.v4.b32 {{%o0, %o1, %o2, %o3}}, [%a2];""", ("b32",) * 4, ("b32",) * 4, lanes, st_ref,
            whole=True, decls=MATRIX_DECLS))

    def mov_ref(ls: list) -> list:
        out = []
        for w in range(0, len(ls), WARP):
            mat = [[0] * 8 for _ in range(8)]
            for lane in range(WARP):
                mat[lane >> 2][2 * (lane & 3)], mat[lane >> 2][2 * (lane & 3) + 1] = _halves(ls[w + lane][0])
            for lane in range(WARP):
                g, c = lane >> 2, 2 * (lane & 3)
                out.append(mat[c][g] | mat[c + 1][g] << 16)
        return out
    cases.append(Case("movmatrix.sync.aligned.m8n8.trans.b16", "movmatrix",
                      "movmatrix.sync.aligned.m8n8.trans.b16 %o0, %i0;", ("b32",), ("b32",),
                      [lane[:1] for lane in lanes], mov_ref, whole=True))
    return cases


def cases() -> list[Case]:
    return mma() + wmma() + matrices()
