"""Instruction encodings of the AMD GPU ISAs, by arch (hand-written facts from the vendors' ISA guides, not
generated): for each family, how to recognise it and where its fields lie. The families of each generation
are in isa_enc_gfx<N>.py; isa_family.py says what a family is.
"""

from __future__ import annotations

from usergpu.isa.amd.encoding import gfx9 as isa_enc_gfx9
from usergpu.isa.amd.encoding import gfx11 as isa_enc_gfx11
from usergpu.isa.amd.encoding import gfx12 as isa_enc_gfx12
from usergpu.isa.amd.encoding.family import Family

ALL: dict[str, list[Family]] = {"gfx1100": isa_enc_gfx11.FAMILIES, "gfx1200": isa_enc_gfx12.FAMILIES,
                                "gfx942": isa_enc_gfx9.GFX942, "gfx950": isa_enc_gfx9.GFX950}
FAMILIES = {arch: fams for arch, fams in ALL.items() if fams}  # the archs whose encodings are written down
GENERATION = {"gfx1100": 11, "gfx1200": 12, "gfx942": 9, "gfx950": 9}
SAME_ISA = {"gfx1201": "gfx1200"}  # an arch whose instruction set is another's, bit for bit (Navi48's is Navi44's)
__all__ = ["FAMILIES", "GENERATION", "SAME_ISA", "Family", "isa_arch"]


def isa_arch(arch: str) -> str:
    """The arch whose tables decode and run arch's instructions."""
    return SAME_ISA.get(arch, arch)
