"""CDNA3 (gfx942) and CDNA4 (gfx950) instruction encodings, from AMD's CDNA3/CDNA4 ISA guides (hand-written
facts, not generated).

Families are tried in order: more specific matches come first.
"""

from __future__ import annotations

from usergpu.autogen.isa_family import Family

GFX942: list[Family] = []
GFX950: list[Family] = []
