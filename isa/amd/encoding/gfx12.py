"""RDNA4 (gfx12) instruction encodings, from AMD's RDNA4 ISA guide (hand-written facts, not generated).

Families are tried in order: more specific matches come first. The scalar, VALU and LDS encodings are gfx11's;
SMEM, the memory encodings (VBUFFER, VFLAT/VSCRATCH/VGLOBAL, 96 bits) and the parameter-interpolation ones
are new. The memory ones end in a cache policy that isa_text_gfx12's tail printers print: their trailing fields
have kinds of their own (g12*), see there.
"""

from __future__ import annotations

from dataclasses import dataclass

from usergpu.isa.amd.encoding.family import Family, fam, top, with_dpp
from usergpu.isa.amd.encoding.gfx11 import GFX11, nops

SAME = {f.name: f for f in GFX11}  # unchanged from gfx11


@dataclass(frozen=True)
class Except(Family):
    """A family that leaves out the words some (mask, value) pairs match: they are left to later families."""

    skip: tuple[tuple[int, int], ...] = ()

    def matches(self, word: int) -> bool:
        return super().matches(word) and not any(word & m == v for m, v in self.skip)


# VOP3/VOP3P DPP: src1 and src2 cannot be a literal (255). LLVM prints one from the next dword yet does not count
# it (nor does its assembler emit it): such words are left to fail as plain VOP3
NO_LITERAL = ((0x1FF << 41, 0xFF << 41), (0x1FF << 50, 0xFF << 50))


def vop3_dpp(f: Family, skip16: tuple[tuple[int, int], ...] = ()) -> list[Family]:
    """A VOP3/VOP3P family's DPP forms (src0 0xE9, 0xEA with fi:1, 0xFA): 96 bits, the DPP word in bits 64..95
    (src0's VGPR, then the DPP8 selects or DPP16's controls)."""
    # src0's VGPR takes src0's place (the field order is the order of a printer's fields)
    kept = {"vdst": f.fields["vdst"], "vsrc0": (64, 8, "vgpr")}
    kept |= {k: v for k, v in f.fields.items() if k != "src0"}
    dpp8 = {"dpp8": (72, 24, "dpp8")}
    dpp16 = {"dpp_ctrl": (72, 9, "dppctrl", 0xE4), "fi": (82, 1, "flag"), "bound_ctrl": (83, 1, "flag"),
             "bank_mask": (88, 4, "mask", 0xF), "row_mask": (92, 4, "mask", 0xF)}
    return [Except(f"{f.name}_DPP{'16' if src0 == 0xFA else '8'}{'FI' if src0 == 0xEA else ''}", 12,
                   f.mask | 0x1FF << 32, f.value | src0 << 32, f.op, {**kept, **fields}, skip=NO_LITERAL
                   + (skip16 if src0 == 0xFA else ()))
            for src0, fields in ((0xE9, dpp8), (0xEA, dpp8), (0xFA, dpp16))]


# th bit 0 (bit 52) makes an atomic return its old value (another operand list): it is part of the opcode (opx),
# th bits 2..1 and the scope are fields
CPOL = {"th": (53, 2, "g12th"), "scope": (50, 2, "g12scope")}
# the segment in bits 24..25 (0 flat, 1 scratch, 2 global) names another instruction: one family each
VFLAT = dict(vdst=(32, 8, "vgpr"), vaddr=(64, 8, "vgpr"), data=(55, 8, "vgpr"), saddr=(0, 7, "saddr", 124),
             sve=(49, 1, "g12sve"), offset=(72, 24, "g12off"), scale_offset=(48, 1, "g12so"), **CPOL,
             nv=(7, 1, "g12nv"))
VFLAT_CPOL = dict(saddr=(0, 7, "saddr", 124), sve=(49, 1, "g12sve"), scale_offset=(48, 1, "g12so"),
                  th=(53, 2, "g12th"), scope=(50, 2, "g12scope", 2), nv=(7, 1, "g12nv"))
VBUF = dict(vdata=(32, 8, "vgpr"), vaddr=(64, 8, "vgpr"), srsrc=(41, 7, "sgpr"), soffset=(0, 7, "sgpr"),
            format=(55, 7, "g12fmt"), idxen=(63, 1, "g12idxen"), offen=(62, 1, "g12offen", 1),
            offset=(72, 23, "g12off"), **CPOL, nv=(7, 1, "g12nv"), reserved=(48, 2, "g12zero"),
            reserved95=(95, 1, "g12zero"))

# image instructions (kind "img": read by the image learner, generator/isa_image); four addresses in dword 2,
# a fifth (BVH) in VIMAGE's bits 56..63
IMG = dict(dim=(0, 3), r128=(4, 1), d16=(5, 1), a16=(6, 1), nv=(7, 1), dmask=(22, 4), vdata=(32, 8), srsrc=(41, 9),
           scope=(50, 2), th=(52, 3), **{f"vaddr{i}": (64 + 8 * i, 8) for i in range(4)})
VIMAGE = {n: (*v, "img") for n, v in {**IMG, "tfe": (55, 1), "vaddr4": (56, 8)}.items()}
VSAMPLE = {n: (*v, "img")
           for n, v in {**IMG, "tfe": (3, 1), "unorm": (13, 1), "lwe": (40, 1), "ssamp": (57, 7)}.items()}
SMEM_IMM = dict(sbase=(0, 6, "sbase"), sdata=(6, 5, "imm"), soffset=(57, 7, "sgpr", 124), offset=(32, 24, "g12smoff"),
                reserved=(11, 2, "g12zero"))


def masked(name: str, size: int, prefix: str, op: tuple[int, int], fields: dict, opx: tuple[int, int] = (0, 0),
           mask: int = 0, value: int = 0) -> Family:
    """A family recognised by a prefix of dword 0's top bits and further bits (mask, value)."""
    m, v = top(prefix)
    return Family(name, size, m | mask, v | value, op, fields, opx)


# VOP3P: gfx11's, with bit 23 reserved (a field LLVM only accepts at 0)
P = Family("VOP3P", 8, SAME["VOP3P"].mask, SAME["VOP3P"].value, (16, 7),
           {**SAME["VOP3P"].fields, "reserved": (23, 1, "g12zero")})
# v_fma_mix* (VOP3P 0x20..0x22): op_sel_hi selects f16 sources, 0 by default (LLVM prints it unless all 0)
MIX = Family("VOP3P_MIX", 8, P.mask | 0x1F << 18, P.value | 0x8 << 18, (16, 2),
             {**P.fields, **{f"opsel_hi{i}": (b, 1, "opsel", 0) for i, b in enumerate((59, 60, 14))}})
# v_fma_mixlo/hi_f16 (0x21, 0x22) DPP16 with dpp_ctrl 0x80..0xc0: LLVM reads dpp_ctrl as an inline constant
# (128 + n for n): families of their own, after the plain DPP16 form (which skips those words) so that the
# assembler picks that one. (name, value, mask over the opcode's low bits and dpp_ctrl, dpp_ctrl bits shown)
MIX_IC = [(f"VOP3P_MIX{lh}_DPP16_IC{tag}", op << 16 | ctrl << 72, 3 << 16 | (0x1FF >> low << low) << 72, width)
          for lh, op in (("LO", 1), ("HI", 2)) for tag, ctrl, low, width in (("", 0x80, 6, 6), ("40", 0xC0, 0, 7))]


def mix_ic() -> list[Family]:
    """The MIX_IC families: DPP16 of v_fma_mix* with dpp_ctrl cut to the bits LLVM shows."""
    dpp16 = vop3_dpp(MIX)[2]
    return [Except(name, 12, dpp16.mask | mask, dpp16.value | value, (16, 0),
                   {**dpp16.fields, "dpp_ctrl": (72, width, "dppctrl", value >> 72 & 0x7F)}, skip=NO_LITERAL)
            for name, value, mask, width in MIX_IC]


GFX12 = [
    *(SAME[n] for n in ("SOP1", "SOPC", "SOPP", "SOPK", "SOP2")),
    # the offset is 24 bits, signed; th (2 bits) and scope replace glc/dlc. s_atc_probe* (0x22, 0x23) and the
    # prefetches (0x24..0x28) hold a small immediate where the others' sdata is
    masked("SMEM_PROBE", 8, "111101", (13, 1), SMEM_IMM, mask=0x1F << 14, value=0x11 << 14),
    masked("SMEM_PREFETCH", 8, "111101", (13, 2), SMEM_IMM, mask=0xF << 15, value=0x9 << 15),
    masked("SMEM_PREFETCH_PC", 8, "111101", (13, 0), SMEM_IMM, mask=0x3F << 13, value=0x28 << 13),
    fam("SMEM", 8, "111101", (13, 6), sbase=(0, 6, "sbase"), sdata=(6, 7, "sgpr"), soffset=(57, 7, "sgpr", 124),
        offset=(32, 24, "g12smoff"), scale_offset=(56, 1, "g12so"), th=(23, 2, "g12sth"), scope=(21, 2, "g12scope"),
        nv=(20, 1, "g12nv")),
    *nops("VOP1", 4, "0111111", (9, 8), (0, 0x1B)), *nops("VOP3", 8, "110101", (16, 10), (0x180, 0x19B)),
    *with_dpp([SAME["VOP1"]]), *with_dpp([SAME["VOPC"]]),
    *vop3_dpp(SAME["VOP3"]), SAME["VOP3"],
    *vop3_dpp(MIX, tuple((m, v) for _, v, m, _ in MIX_IC)), *mix_ic(), MIX,
    *vop3_dpp(P),
    # LLVM sets the unused op_sel_hi bit of two-source opcodes: tried first, the assembler sets it too
    Family("VOP3P_HI2", 8, P.mask | 1 << 14, P.value | 1 << 14, (16, 7), P.fields),
    P,
    SAME["DS"],
    masked("VFLAT", 12, "11101100", (14, 8), VFLAT, (52, 1)),
    # scratch: vaddr shows (sve 1) or is off
    masked("VSCRATCH", 12, "11101101", (14, 8), {**VFLAT, "sve": (49, 1, "g12sve", 1)}, (52, 1)),
    # global_inv, global_wb, global_wbinv: no operands, the cache policy alone (scope's base value shows it)
    *(masked(name, 12, "11101110", (14, 0), VFLAT_CPOL, (52, 1), 0xFF << 14, op << 14)
      for name, op in (("VGLOBAL_INV", 0x2B), ("VGLOBAL_WB", 0x2C), ("VGLOBAL_WBINV", 0x4F))),
    masked("VGLOBAL", 12, "11101110", (14, 8), VFLAT, (52, 1)),
    # tfe (bit 22) widens the data by a register and prints last: a family of its own. LLVM ignores the format of
    # buffer_* (not tbuffer_*) opcodes (op bit 7 clear) but sets its bit 0: families tried first for the assembler
    *(masked(f"VBUFFER{tfe}{fmt}", 12, "110001", (14, 8), VBUF, (52, 1), 1 << 22 | m, t << 22 | m & 1 << 55)
      for tfe, t in (("_TFE", 1), ("", 0)) for fmt, m in (("_FMT1", 1 << 55 | 1 << 21), ("", 0))),
    SAME["VOPD"],
    fam("VIMAGE", 12, "110100", (14, 8), **VIMAGE),
    fam("VSAMPLE", 12, "111001", (14, 8), **VSAMPLE),
    # parameter interpolation: VINTERP (VALU, VGPR sources), VDSDIR (LDS parameter/direct loads); exports
    fam("VINTERP", 8, "11001101", (16, 7), vdst=(0, 8, "vgpr"), src0=(32, 9, "src"), src1=(41, 9, "src"),
        src2=(50, 9, "src"), **{f"neg{i}": (61 + i, 1, "g12neg") for i in range(3)},
        **{f"opsel{i}": (11 + i, 1, "g12opsel") for i in range(4)}, clamp=(15, 1, "g12clamp"),
        wait_exp=(8, 3, "g12wexp")),
    fam("VDSDIR", 4, "11001110", (20, 2), vdst=(0, 8, "vgpr"), attr=(10, 6, "g12attr"), chan=(8, 2, "g12chan"),
        wait_va_vdst=(16, 4, "g12wva"), wait_vm_vsrc=(23, 1, "g12wvm"), reserved=(22, 1, "g12zero")),
    SAME["EXP"],
    *with_dpp([SAME["VOP2"]]),
]

FAMILIES = GFX12
