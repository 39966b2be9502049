"""RDNA3 (gfx11) instruction encodings, from AMD's RDNA3 ISA guide (hand-written facts, not generated).

Families are tried in order: more specific matches come first.
"""

from __future__ import annotations

from usergpu.isa.amd.encoding.family import VOP3_SRCS, Family, fam, top, with_dpp

OPSEL = {f"opsel{i}": (11 + i, 1, "opsel") for i in range(4)}  # bit 3 is the destination's
BUF = {"vaddr": (32, 8, "vgpr"), "vdata": (40, 8, "vgpr"), "srsrc": (48, 5, "srsrc"), "tfe": (53, 1, "flag"),
       "offen": (54, 1, "flag", 1), "idxen": (55, 1, "flag"), "soffset": (56, 8, "ssrc")}
# image instructions: every field is read by the image learner (generator/isa_image), kind "img"; NSA forms hold
# four more addresses in a third dword
MIMG = {n: (lo, w, "img") for n, (lo, w) in dict(
    dim=(2, 3), unorm=(7, 1), dmask=(8, 4), slc=(12, 1), dlc=(13, 1), glc=(14, 1), r128=(15, 1), a16=(16, 1),
    d16=(17, 1), vaddr0=(32, 8), vdata=(40, 8), srsrc=(48, 5), tfe=(53, 1), lwe=(54, 1), ssamp=(58, 5)).items()}
NSA = {f"vaddr{i}": (56 + 8 * i, 8, "img") for i in range(1, 5)}
VOP3_MODS = {"abs0": (8, 1, "abs"), "abs1": (9, 1, "abs"), "abs2": (10, 1, "abs"),
             "neg0": (61, 1, "neg"), "neg1": (62, 1, "neg"), "neg2": (63, 1, "neg")}



def nops(enc: str, size: int, prefix: str, op: tuple[int, int], codes: tuple[int, int]) -> list[Family]:
    """v_nop and v_pipeflush (opcodes codes) read no source: LLVM takes them at the encoding's own size whatever
    src0 says (no DPP form). A family each, tried before the encoding's DPP forms."""
    mask, value = top(prefix)
    return [Family(f"{enc}_{name}", size, mask | ((1 << op[1]) - 1) << op[0], value | code << op[0], (op[0], 0),
                   {"vdst": (17, 8, "vgpr")} if size == 4 else {})
            for name, code in zip(("NOP", "PIPEFLUSH"), codes, strict=True)]


GFX11 = [
    fam("SOP1", 4, "101111101", (8, 8), sdst=(16, 7, "sgpr"), ssrc0=(0, 8, "ssrc")),
    fam("SOPC", 4, "101111110", (16, 7), ssrc0=(0, 8, "ssrc"), ssrc1=(8, 8, "ssrc")),
    fam("SOPP", 4, "101111111", (16, 7), simm16=(0, 16, "imm")),
    fam("SOPK", 4, "1011", (23, 5), sdst=(16, 7, "sgpr"), simm16=(0, 16, "imm")),
    fam("SOP2", 4, "10", (23, 7), sdst=(16, 7, "sgpr"), ssrc0=(0, 8, "ssrc"), ssrc1=(8, 8, "ssrc")),
    fam("SMEM", 8, "111101", (18, 8), sbase=(0, 6, "sbase"), sdata=(6, 7, "sgpr"), glc=(14, 1, "flag"),
         dlc=(13, 1, "flag"), soffset=(57, 7, "sgpr", 124), offset=(32, 21, "soffset21")),
    fam("VOP1", 4, "0111111", (9, 8), vdst=(17, 8, "vgpr"), src0=(0, 9, "src")),
    fam("VOPC", 4, "0111110", (17, 8), src0=(0, 9, "src"), vsrc1=(9, 8, "vgpr")),
    # VOP3SD opcodes put a scalar destination where the others keep abs and op_sel: both are probed
    fam("VOP3", 8, "110101", (16, 10), vdst=(0, 8, "vdst"), **VOP3_SRCS, **VOP3_MODS, clamp=(15, 1, "flag"),
         omod=(59, 2, "omod"), **OPSEL, sdst=(8, 7, "sgpr", 0)),
    # op_sel_hi defaults to 1s (no op_sel_hi printed); neg_hi is abs for the fma_mix opcodes
    fam("VOP3P", 8, "11001100", (16, 7), vdst=(0, 8, "vgpr"), **VOP3_SRCS, clamp=(15, 1, "flag"),
         **{f"opsel{i}": (11 + i, 1, "opsel") for i in range(3)},
         opsel_hi0=(59, 1, "opsel", 1), opsel_hi1=(60, 1, "opsel", 1), opsel_hi2=(14, 1, "opsel", 1),
         **{f"abs{i}": (8 + i, 1, "abs") for i in range(3)}, **{f"neg{i}": (61 + i, 1, "neg") for i in range(3)}),
    fam("DS", 8, "110110", (18, 8), offset0=(0, 8, "offset"), offset1=(8, 8, "offset"), gds=(17, 1, "flag"),
         addr=(32, 8, "vgpr"), data0=(40, 8, "vgpr"), data1=(48, 8, "vgpr"), vdst=(56, 8, "vgpr")),
    # the segment (0 flat, 1 scratch, 2 global) in bits 16..17 is part of the opcode: it changes the mnemonic
    # glc selects an atomic's returning form, so it is part of the opcode (opx)
    Family("FLAT", 8, *top("110111"), (16, 9), dict(offset=(0, 13, "offset"), dlc=(13, 1, "flag"),
         slc=(15, 1, "flag"), addr=(32, 8, "vgpr"), data=(40, 8, "vgpr"), saddr=(48, 7, "saddr", 124),
         sve=(55, 1, "flag", 1), vdst=(56, 8, "vgpr")), (14, 1)),
    # dual issue: opcode X in bits 22..25, Y in 17..21; Y's destination holds bits 7..1 of the register, whose
    # bit 0 is the opposite of X's destination's
    Family("VOPD", 8, *top("110010"), (22, 4), dict(srcx0=(0, 9, "src"), vsrcx1=(9, 8, "vgpr"),
           srcy0=(32, 9, "src"), vsrcy1=(41, 8, "vgpr"), vdsty=(49, 7, "vgpr"), vdstx=(56, 8, "vgpr")), (17, 5)),
    # buffer instructions: vaddr prints as off, vN or v[N:N+1] by offen/idxen; glc picks an atomic's returning form
    Family("MUBUF", 8, *top("111000"), (18, 8), dict(offset=(0, 12, "offset"), slc=(12, 1, "flag"),
           dlc=(13, 1, "flag"), lds=(16, 1, "flag"), **BUF), (14, 1)),
    fam("MTBUF", 8, "111010", (15, 4), offset=(0, 12, "offset"), slc=(12, 1, "flag"), dlc=(13, 1, "flag"),
        glc=(14, 1, "flag"), format=(19, 7, "format"), **BUF),
    fam("VINTERP", 8, "11001101", (16, 7), vdst=(0, 8, "vgpr"), **VOP3_SRCS, neg0=(61, 1, "neg"),
        neg1=(62, 1, "neg"), neg2=(63, 1, "neg"), **OPSEL, clamp=(15, 1, "flag"), wait_exp=(8, 3, "offset")),
    fam("LDSDIR", 4, "11001110", (20, 2), vdst=(0, 8, "vgpr"), attr_chan=(8, 8, "imm"), wait_vdst=(16, 4, "offset")),
    Family("MIMG", 8, top("111100")[0] | 1, top("111100")[1], (18, 8), MIMG),
    Family("MIMG_NSA", 12, top("111100")[0] | 1, top("111100")[1] | 1, (18, 8), {**MIMG, **NSA}),
    # no opcode; each source prints as off unless its enable bit is set
    fam("EXP", 8, "111110", (0, 0), target=(4, 6, "exptgt"), done=(11, 1, "flag"), row_en=(13, 1, "flag"),
        **{k: v for i in range(4) for k, v in ((f"vsrc{i}", (32 + 8 * i, 8, "vgpr")), (f"en{i}", (i, 1, "expen", 1)))}),
    fam("VOP2", 4, "0", (25, 6), vdst=(17, 8, "vgpr"), src0=(0, 9, "src"), vsrc1=(9, 8, "vgpr")),
]

FAMILIES = [*nops("VOP1", 4, "0111111", (9, 8), (0, 0x1B)), *nops("VOP3", 8, "110101", (16, 10), (0x180, 0x19B)),
            *with_dpp(GFX11)]
