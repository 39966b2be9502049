"""CDNA3 (gfx942) and CDNA4 (gfx950) instruction encodings, from AMD's CDNA3/CDNA4 ISA guides (hand-written
facts, not generated).

Families are tried in order: more specific matches come first. The layouts are GCN's (gfx9) with the gfx90a/
gfx940 additions: AGPRs (an acc bit per encoding), and the cache bits renamed sc0/sc1/nt.
"""

from __future__ import annotations

from usergpu.isa.amd.encoding.family import Family, fam, top

VOP3_MODS = {"abs0": (8, 1, "abs"), "abs1": (9, 1, "abs"), "abs2": (10, 1, "abs"),
             "neg0": (61, 1, "neg"), "neg1": (62, 1, "neg"), "neg2": (63, 1, "neg")}


def _sdwa_src(i: int, reg: tuple, lo: int) -> dict[str, tuple]:
    """One SDWA source: its register (VGPR, or scalar/constant when its s bit is set) and sel, sext, neg, abs.
    Probed as a scalar source (s set), so that its constants show the operand's type."""
    return {f"src{i}": reg, f"s{i}": (lo + 7, 1, "sdwas", 1), f"abs{i}": (lo + 5, 1, "abs"),
            f"neg{i}": (lo + 4, 1, "neg"), f"sext{i}": (lo + 3, 1, "sext"), f"src{i}_sel": (lo, 3, "sel", 6)}


# SDWA (src0 = 0xF9): the second dword holds src0 and the sub-dword selects
SDWA_SRCS = {**_sdwa_src(0, (32, 8, "ssrc_nolit"), 48), **_sdwa_src(1, (9, 8, "ssrc_nolit"), 56)}
SDWA = {"dst_sel": (40, 3, "sel", 6), "dst_unused": (43, 2, "enum", 2), "clamp": (45, 1, "flag"),
        "omod": (46, 2, "omod"), **SDWA_SRCS}
SDWA_VOPC = {"sdst": (40, 7, "sgpr"), "sd": (47, 1, "sdwasd", 1), **SDWA_SRCS}  # sd clear: the destination is vcc
# DPP (src0 = 0xFA): gfx9 has DPP16 without fi
DPP = {"vsrc0": (32, 8, "vgpr"), "dpp_ctrl": (40, 9, "dppctrl", 0xE4), "bound_ctrl": (51, 1, "flag"),
       "abs0": (53, 1, "abs"), "neg0": (52, 1, "neg"), "abs1": (55, 1, "abs"), "neg1": (54, 1, "neg"),
       "bank_mask": (56, 4, "mask", 0xF), "row_mask": (60, 4, "mask", 0xF)}


def _ext(f: Family, src0: int, suffix: str, fields: dict[str, tuple]) -> Family:
    """f's encoding with src0 selecting SDWA (0xF9) or DPP (0xFA): src0 is in the second dword."""
    kept = {k: v for k, v in f.fields.items() if k != "src0" and (k != "vsrc1" or suffix == "DPP")}
    if suffix == "SDWA" and "vsrc1" not in f.fields:  # VOP1: bits 9..16 are the opcode, no src1
        fields = {k: v for k, v in fields.items() if not k.startswith(("src1", "s1", "abs1", "neg1", "sext1"))}
    return Family(f"{f.name}_{suffix}", 8, f.mask | 0x1FF, f.value | src0, f.op, {**kept, **fields})


def with_sdwa_dpp(fams: list[Family]) -> list[Family]:
    """Each VOP1/VOP2/VOPC family preceded by its SDWA and DPP forms."""
    out = []
    for f in fams:
        if f.name in ("VOP1", "VOP2", "VOPC"):
            out += [_ext(f, 0xF9, "SDWA", SDWA_VOPC if f.name == "VOPC" else SDWA), _ext(f, 0xFA, "DPP", DPP)]
        out.append(f)
    return out


# acc_cd makes vdst and src2 AGPRs, acc0/1 src0/1; src0/1 are VGPRs or AGPRs only (llvm-mc crashes on others)
# (an acc bit is declared after the registers it applies to: the printers read (register, acc))
MAI = {"vdst": (0, 8, "vgpr"), "cbsz": (8, 3, "offset"), "abid": (11, 4, "offset"), "src0": (32, 9, "vsrc"),
       "src1": (41, 9, "vsrc"), "src2": (50, 9, "src"), "acc_cd": (15, 1, "acc"), "acc0": (59, 1, "acc"),
       "acc1": (60, 1, "acc"), **{f"blgp{i}": (61 + i, 1, "flag") for i in range(3)}}


def _smem(name: str, soe: int, imm: int, **fields: tuple) -> Family:
    mask, value = top("110000")
    return Family(name, 8, mask | 1 << 17 | 1 << 14, value | imm << 17 | soe << 14, (18, 8), dict(
        sbase=(0, 6, "sbase"), sdata=(6, 7, "sgpr"), nv=(15, 1, "flag"), glc=(16, 1, "flag"), **fields))


def _mubuf(name: str, lds: int, soffset: str) -> Family:
    """MUBUF, with or without lds (bit 16); sc0 selects an atomic's returning form (opx)."""
    mask, value = top("111000")
    return Family(name, 8, mask | 1 << 16, value | lds << 16, (18, 7), dict(
        offset=(0, 12, "offset"), offen=(12, 1, "flag", 1), idxen=(13, 1, "flag"), sc1=(15, 1, "flag"),
        nt=(17, 1, "flag"), vaddr=(32, 8, "vgpr"), vdata=(40, 8, "vgpr"), srsrc=(48, 5, "srsrc"),
        soffset=(56, 8, soffset), acc=(55, 1, "acc")), (14, 1))


def _flat(name: str, seg: int, **fields: tuple) -> Family:
    """FLAT, SCRATCH or GLOBAL (by the segment in bits 14..15); sc0 selects an atomic's returning form (opx)."""
    mask, value = top("110111")
    return Family(name, 8, mask | 3 << 14, value | seg << 14, (18, 7), dict(
        offset=(0, 13, "offset"), nt=(17, 1, "flag"), sc1=(25, 1, "flag"), addr=(32, 8, "vgpr"),
        data=(40, 8, "vgpr"), vdst=(56, 8, "vgpr"), acc=(55, 1, "acc"), **fields), (16, 1))


# MFMA/SMFMAC: VOP3P opcodes whose fields differ (accv_read/write, 0x58..0x59, are plain VOP3P ones)
MAI_OPS = frozenset(range(0x40, 0x80)) - {0x58, 0x59}
MAI_942 = MAI_OPS | {0x3E, 0x3F}
MAI_950 = MAI_OPS | {0x2D, 0x2E, *range(0x35, 0x3E)}
# gfx950's scaled f8f6f4 MFMAs: v_mfma_ld_scale_b32 (VOP3P 0x2C) then the MFMA (0x2D, 0x2E) with abid 1, as one
# 16-byte instruction (where abid is another value the two are separate instructions)
_P3 = top("110100111")
VOP3PX2 = Family("VOP3PX2", 16, _P3[0] | 0x7F << 16 | _P3[0] << 64 | 15 << 75,
                 _P3[1] | 0x2C << 16 | _P3[1] << 64 | 1 << 75, (80, 7),
                 {"scale0": (32, 9, "vsrc"), "scale1": (41, 9, "vsrc"),
                           **{f"opsel{i}": (11 + i, 1, "opsel") for i in range(2)},
                           **{f"opsel_hi{i}": (59 + i, 1, "opsel") for i in range(2)},
                           **{k: (spec[0] + 64, *spec[1:]) for k, spec in MAI.items() if k != "abid"}},
                 ops=frozenset({0x2D, 0x2E}))


def _with_kinds(fields: dict[str, tuple], kinds: dict[str, str]) -> dict[str, tuple]:
    return {n: (spec[0], spec[1], kinds.get(spec[2], spec[2]), *spec[3:]) for n, spec in fields.items()}


def cdna(mai_ops: frozenset[int], literal: bool, extra: tuple[Family, ...] = ()) -> list[Family]:
    """The families of a CDNA arch: its MFMA opcodes, whether VOP3 sources and MUBUF/MTBUF's soffset take a
    literal (gfx950; llvm-mc-22 crashes on one on gfx942), and families of its own (tried before VOP3P)."""
    kinds = {} if literal else {"src": "src_nolit", "ssrc": "ssrc_nolit"}
    vop3 = _with_kinds({"src0": (32, 9, "src"), "src1": (41, 9, "src"), "src2": (50, 9, "src")}, kinds)
    soffset = kinds.get("ssrc", "ssrc")
    return with_sdwa_dpp([
        fam("SOP1", 4, "101111101", (8, 8), sdst=(16, 7, "sgpr"), ssrc0=(0, 8, "ssrc")),
        fam("SOPC", 4, "101111110", (16, 7), ssrc0=(0, 8, "ssrc"), ssrc1=(8, 8, "ssrc")),
        fam("SOPP", 4, "101111111", (16, 7), simm16=(0, 16, "imm")),
        fam("SOPK", 4, "1011", (23, 5), sdst=(16, 7, "sgpr"), simm16=(0, 16, "imm")),
        fam("SOP2", 4, "10", (23, 7), sdst=(16, 7, "sgpr"), ssrc0=(0, 8, "ssrc"), ssrc1=(8, 8, "ssrc")),
        # imm (bit 17) and soe (bit 14) say what the offset operand is: an SGPR in the offset field (neither), the
        # immediate (imm), the SGPR in soffset (soe), or both (SGPR with an offset item that is always printed)
        # (SMEM before SMEM_SOE: both print an SGPR offset the same way, and the assembler takes the first, as LLVM)
        _smem("SMEM", 0, 0, soff=(32, 7, "sgpr")),
        _smem("SMEM_SOE", 1, 0, soffset=(57, 7, "sgpr")),
        _smem("SMEM_IMM", 0, 1, offset=(32, 21, "soffset21")),
        _smem("SMEM_SOE_IMM", 1, 1, soffset=(57, 7, "sgpr"), offset=(32, 21, "soffset21")),
        fam("VOP1", 4, "0111111", (9, 8), vdst=(17, 8, "vgpr"), src0=(0, 9, "src")),
        fam("VOPC", 4, "0111110", (17, 8), src0=(0, 9, "src"), vsrc1=(9, 8, "vgpr")),
        *extra,
        Family("VOP3P_MAI", 8, *top("110100111"), (16, 7), _with_kinds(MAI, kinds), ops=mai_ops),
        # op_sel_hi defaults to 1s (no op_sel_hi printed)
        fam("VOP3P", 8, "110100111", (16, 7), vdst=(0, 8, "vgpr"), **vop3, clamp=(15, 1, "flag"),
            **{f"opsel{i}": (11 + i, 1, "opsel") for i in range(3)},
            opsel_hi0=(59, 1, "opsel", 1), opsel_hi1=(60, 1, "opsel", 1), opsel_hi2=(14, 1, "opsel", 1),
            **{f"abs{i}": (8 + i, 1, "abs") for i in range(3)}, **{f"neg{i}": (61 + i, 1, "neg") for i in range(3)}),
        # VOP3b opcodes put a scalar destination where the others keep abs and op_sel: both are probed
        fam("VOP3", 8, "110100", (16, 10), vdst=(0, 8, "vdst"), **vop3, **VOP3_MODS, clamp=(15, 1, "flag"),
            omod=(59, 2, "omod"), **{f"opsel{i}": (11 + i, 1, "opsel") for i in range(4)}, sdst=(8, 7, "sgpr", 0)),
        fam("DS", 8, "110110", (17, 8), offset0=(0, 8, "offset"), offset1=(8, 8, "offset"), gds=(16, 1, "flag"),
            addr=(32, 8, "vgpr"), data0=(40, 8, "vgpr"), data1=(48, 8, "vgpr"), vdst=(56, 8, "vgpr"),
            acc=(25, 1, "acc")),
        _flat("FLAT", 0, sve=(13, 1, "flag"), saddr=(48, 7, "saddr", 0x7F)),  # both unused: LLVM wants 0 and off
        _flat("SCRATCH", 1, sve=(13, 1, "flag", 1), saddr=(48, 7, "saddr", 0x7F)),
        _flat("GLOBAL", 2, saddr=(48, 7, "saddr", 0x7F)),
        _mubuf("MUBUF_LDS", 1, soffset),  # lds: the data goes to LDS, no vdata operand
        _mubuf("MUBUF", 0, soffset),
        Family("MTBUF", 8, *top("111010"), (15, 4), dict(offset=(0, 12, "offset"), offen=(12, 1, "flag", 1),
               idxen=(13, 1, "flag"), sc0=(14, 1, "flag"), fmt=(19, 7, "fmt9", 1), vaddr=(32, 8, "vgpr"),
               vdata=(40, 8, "vgpr"), srsrc=(48, 5, "srsrc"), sc1=(53, 1, "flag"), nt=(54, 1, "flag"),
               soffset=(56, 8, soffset), acc=(55, 1, "acc"))),
        fam("VOP2", 4, "0", (25, 6), vdst=(17, 8, "vgpr"), src0=(0, 9, "src"), vsrc1=(9, 8, "vgpr")),
    ])


GFX942: list[Family] = cdna(MAI_942, literal=False)
GFX950: list[Family] = cdna(MAI_950, literal=True, extra=(VOP3PX2,))
