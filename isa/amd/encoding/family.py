"""The shape of an instruction encoding family and helpers to declare one (hand-written, not generated).

Bit positions are in the instruction's first 64 bits read little-endian (dword 0 in bits 0..31, dword 1 in
32..63). A field's kind says how its value reads (see isa_text) and how the table generator probes it.
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
    ops: frozenset[int] | None = None  # the opcodes it claims, where its mask cannot say (gfx9's MFMA opcodes)

    def matches(self, word: int) -> bool:
        return word & self.mask == self.value and (self.ops is None or self.opcode(word) in self.ops)

    def opcode(self, word: int) -> int:
        op = (word >> self.op[0]) & ((1 << self.op[1]) - 1)
        return op | ((word >> self.opx[0]) & ((1 << self.opx[1]) - 1)) << self.op[1]

    def place(self, opcode: int) -> int:
        """The bits of an opcode in the instruction word (the inverse of opcode())."""
        low = opcode & ((1 << self.op[1]) - 1)
        return self.value | low << self.op[0] | (opcode >> self.op[1]) << self.opx[0]


def top(bits: str, nbits: int = 32) -> tuple[int, int]:
    """mask, value for a prefix of the dword's top bits, e.g. '101111101'."""
    n = len(bits)
    return ((1 << n) - 1) << (nbits - n), int(bits, 2) << (nbits - n)


def fam(name: str, size: int, prefix: str, op: tuple[int, int], **fields: tuple) -> Family:
    mask, value = top(prefix)
    return Family(name, size, mask, value, op, fields)


def dpp(fam: Family, src0: int, size: int = 8, **fields: tuple) -> Family:
    """A VOP1/VOP2/VOPC (or VOP3) encoding whose src0 field selects DPP8 (0xE9, 0xEA with fi:1) or DPP16 (0xFA);
    the DPP dword follows the base encoding: fields given for a 4-byte base move up by the base's extra bytes."""
    at = fam.fields["src0"][0]
    shift = 8 * (fam.size - 4)
    kept = {k: v for k, v in fam.fields.items() if k != "src0"}
    moved = {k: (v[0] + shift, *v[1:]) for k, v in fields.items() if k not in kept}
    first = {k: moved.pop(k) for k in ("vsrc0",) if k in moved}  # in src0's place: the learner reads fields in order
    return Family(f"{fam.name}_DPP{'16' if src0 == 0xFA else '8'}{'FI' if src0 == 0xEA else ''}", size + shift // 8,
                  fam.mask | 0x1FF << at, fam.value | src0 << at, fam.op, {**first, **kept, **moved}, fam.opx)


DPP8 = {"vsrc0": (32, 8, "vgpr"), "dpp8": (40, 24, "dpp8")}
DPP16 = {"vsrc0": (32, 8, "vgpr"), "dpp_ctrl": (40, 9, "dppctrl", 0xE4), "fi": (50, 1, "flag"),
         "bound_ctrl": (51, 1, "flag"), "abs0": (53, 1, "abs"), "neg0": (52, 1, "neg"), "abs1": (55, 1, "abs"),
         "neg1": (54, 1, "neg"), "bank_mask": (56, 4, "mask", 0xF), "row_mask": (60, 4, "mask", 0xF)}


def with_dpp(fams: list[Family]) -> list[Family]:
    """Each VOP1/VOP2/VOPC/VOP3 family preceded by its DPP forms."""
    out = []
    for f in fams:
        if f.name in ("VOP1", "VOP2", "VOPC", "VOP3"):
            out += [dpp(f, 0xE9, **DPP8), dpp(f, 0xEA, **DPP8), dpp(f, 0xFA, **DPP16)]
        out.append(f)
    return out


# the three 9-bit sources of the 64-bit VALU encodings (VOP3, VOP3P) of every generation
VOP3_SRCS = {"src0": (32, 9, "src"), "src1": (41, 9, "src"), "src2": (50, 9, "src")}
