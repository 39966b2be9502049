"""RDNA4 (gfx12) instruction encodings, from AMD's RDNA4 ISA guide (hand-written facts, not generated).

Families are tried in order: more specific matches come first.
"""

from __future__ import annotations

from usergpu.autogen.isa_family import Family

FAMILIES: list[Family] = []
