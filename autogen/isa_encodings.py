"""Instruction encodings of the AMD GPU ISAs (hand-written facts from the RDNA3/RDNA4/CDNA3 ISA guides,
not generated): for each family, how to recognise it and where its fields lie.

Bit positions are in the instruction's first 64 bits read little-endian (dword 0 in bits 0..31, dword 1 in
32..63). A field's kind says how its value reads (see isa_text) and how the table generator probes it.
Families are tried in order: more specific matches come first.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Family:
    name: str
    size: int  # bytes, without a literal constant
    mask: int  # over the first 64 bits
    value: int
    op: tuple[int, int]  # (lowest bit, width) of the opcode
    # name -> (lowest bit, width, kind) or (lowest bit, width, kind, base value the generator probes around)
    fields: dict[str, tuple] = field(default_factory=dict)
    opx: tuple[int, int] = (0, 0)  # a further opcode field (lowest bit, width) above op's bits: FLAT's glc

    def matches(self, word: int) -> bool:
        return word & self.mask == self.value

    def opcode(self, word: int) -> int:
        op = (word >> self.op[0]) & ((1 << self.op[1]) - 1)
        return op | ((word >> self.opx[0]) & ((1 << self.opx[1]) - 1)) << self.op[1]

    def place(self, opcode: int) -> int:
        """The bits of an opcode in the instruction word (the inverse of opcode())."""
        low = opcode & ((1 << self.op[1]) - 1)
        return self.value | low << self.op[0] | (opcode >> self.op[1]) << self.opx[0]


def _top(bits: str, nbits: int = 32) -> tuple[int, int]:
    """mask, value for a prefix of the dword's top bits, e.g. '101111101'."""
    n = len(bits)
    return ((1 << n) - 1) << (nbits - n), int(bits, 2) << (nbits - n)


def _fam(name: str, size: int, prefix: str, op: tuple[int, int], **fields: tuple) -> Family:
    mask, value = _top(prefix)
    return Family(name, size, mask, value, op, fields)


def _dpp(fam: Family, src0: int, size: int = 8, **fields: tuple) -> Family:
    """A VOP1/VOP2/VOPC encoding whose src0 field selects DPP8 (0xE9, 0xEA with fi:1) or DPP16 (0xFA)."""
    kept = {k: v for k, v in fam.fields.items() if k != "src0"}
    return Family(f"{fam.name}_DPP{'16' if src0 == 0xFA else '8'}{'FI' if src0 == 0xEA else ''}", size,
                  fam.mask | 0x1FF, fam.value | src0, fam.op, {**kept, **fields})


DPP8 = {"vsrc0": (32, 8, "vgpr"), "dpp8": (40, 24, "dpp8")}
DPP16 = {"vsrc0": (32, 8, "vgpr"), "dpp_ctrl": (40, 9, "dppctrl", 0xE4), "fi": (50, 1, "flag"),
         "bound_ctrl": (51, 1, "flag"), "abs0": (53, 1, "abs"), "neg0": (52, 1, "neg"), "abs1": (55, 1, "abs"),
         "neg1": (54, 1, "neg"), "bank_mask": (56, 4, "mask", 0xF), "row_mask": (60, 4, "mask", 0xF)}


def _with_dpp(fams: list[Family]) -> list[Family]:
    """Each VOP1/VOP2/VOPC family preceded by its DPP forms."""
    out = []
    for f in fams:
        if f.name in ("VOP1", "VOP2", "VOPC"):
            out += [_dpp(f, 0xE9, **DPP8), _dpp(f, 0xEA, **DPP8), _dpp(f, 0xFA, **DPP16)]
        out.append(f)
    return out


VOP3_SRCS = {"src0": (32, 9, "src"), "src1": (41, 9, "src"), "src2": (50, 9, "src")}
OPSEL = {f"opsel{i}": (11 + i, 1, "opsel") for i in range(4)}  # bit 3 is the destination's
VOP3_MODS = {"abs0": (8, 1, "abs"), "abs1": (9, 1, "abs"), "abs2": (10, 1, "abs"),
             "neg0": (61, 1, "neg"), "neg1": (62, 1, "neg"), "neg2": (63, 1, "neg")}

GFX11 = [
    _fam("SOP1", 4, "101111101", (8, 8), sdst=(16, 7, "sgpr"), ssrc0=(0, 8, "ssrc")),
    _fam("SOPC", 4, "101111110", (16, 7), ssrc0=(0, 8, "ssrc"), ssrc1=(8, 8, "ssrc")),
    _fam("SOPP", 4, "101111111", (16, 7), simm16=(0, 16, "imm")),
    _fam("SOPK", 4, "1011", (23, 5), sdst=(16, 7, "sgpr"), simm16=(0, 16, "imm")),
    _fam("SOP2", 4, "10", (23, 7), sdst=(16, 7, "sgpr"), ssrc0=(0, 8, "ssrc"), ssrc1=(8, 8, "ssrc")),
    _fam("SMEM", 8, "111101", (18, 8), sbase=(0, 6, "sbase"), sdata=(6, 7, "sgpr"), glc=(14, 1, "flag"),
         dlc=(13, 1, "flag"), soffset=(57, 7, "sgpr", 124), offset=(32, 21, "soffset21")),
    _fam("VOP1", 4, "0111111", (9, 8), vdst=(17, 8, "vgpr"), src0=(0, 9, "src")),
    _fam("VOPC", 4, "0111110", (17, 8), src0=(0, 9, "src"), vsrc1=(9, 8, "vgpr")),
    # VOP3SD opcodes put a scalar destination where the others keep abs and op_sel: both are probed
    _fam("VOP3", 8, "110101", (16, 10), vdst=(0, 8, "vgpr"), **VOP3_SRCS, **VOP3_MODS, clamp=(15, 1, "flag"),
         omod=(59, 2, "omod"), **OPSEL, sdst=(8, 7, "sgpr", 0)),
    # op_sel_hi defaults to 1s (no op_sel_hi printed); neg_hi is abs for the fma_mix opcodes
    _fam("VOP3P", 8, "11001100", (16, 7), vdst=(0, 8, "vgpr"), **VOP3_SRCS, clamp=(15, 1, "flag"),
         **{f"opsel{i}": (11 + i, 1, "opsel") for i in range(3)},
         opsel_hi0=(59, 1, "opsel", 1), opsel_hi1=(60, 1, "opsel", 1), opsel_hi2=(14, 1, "opsel", 1),
         **{f"abs{i}": (8 + i, 1, "abs") for i in range(3)}, **{f"neg{i}": (61 + i, 1, "neg") for i in range(3)}),
    _fam("DS", 8, "110110", (18, 8), offset0=(0, 8, "offset"), offset1=(8, 8, "offset"), gds=(17, 1, "flag"),
         addr=(32, 8, "vgpr"), data0=(40, 8, "vgpr"), data1=(48, 8, "vgpr"), vdst=(56, 8, "vgpr")),
    # the segment (0 flat, 1 scratch, 2 global) in bits 16..17 is part of the opcode: it changes the mnemonic
    # glc selects an atomic's returning form, so it is part of the opcode (opx)
    Family("FLAT", 8, *_top("110111"), (16, 9), dict(offset=(0, 13, "offset"), dlc=(13, 1, "flag"),
         slc=(15, 1, "flag"), addr=(32, 8, "vgpr"), data=(40, 8, "vgpr"), saddr=(48, 7, "saddr", 124),
         sve=(55, 1, "flag", 1), vdst=(56, 8, "vgpr")), (14, 1)),
    _fam("VOP2", 4, "0", (25, 6), vdst=(17, 8, "vgpr"), src0=(0, 9, "src"), vsrc1=(9, 8, "vgpr")),
]

GFX11 = _with_dpp(GFX11)
FAMILIES: dict[str, list[Family]] = {"gfx1100": GFX11}
GENERATION = {"gfx1100": 11, "gfx1200": 12, "gfx942": 9, "gfx950": 9}
