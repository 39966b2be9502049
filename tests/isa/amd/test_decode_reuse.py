"""decode() keeps what bytes decoded to: the same bytes at another offset, or in other code, give the same
instruction at their own offset; other bytes, or too few of them, are decoded for what they are."""

from __future__ import annotations

import pytest

import usergpu
from usergpu.isa import amd as isa
from usergpu.isa.amd import decoder

MOV = isa.asm("v_mov_b32 v1, 0x12345678", "gfx1100")  # 8 bytes: VOP1 and its literal


def test_the_same_bytes_elsewhere_decode_alike_at_their_own_offset(monkeypatch):
    monkeypatch.setattr(decoder, "_KNOWN", {})
    decoded = []
    real = decoder._decode
    monkeypatch.setattr(decoder, "_decode", lambda *a: decoded.append(a[2]) or real(*a))
    first = isa.decode(MOV, "gfx1100")
    again = isa.decode(b"\0" * 8 + MOV, "gfx1100", 8)
    assert decoded == [0] and (again.offset, first.offset) == (8, 0)
    assert again.text == first.text == "v_mov_b32_e32 v1, 0x12345678" and again.literal == 0x12345678
    other = isa.decode(MOV[:4] + (0x87654321).to_bytes(4, "little"), "gfx1100")
    assert decoded == [0, 0] and other.literal == 0x87654321  # another literal: decoded anew
    with pytest.raises(usergpu.DecodeError, match="truncated literal constant"):
        isa.decode(MOV[:4], "gfx1100")  # its first 4 bytes alone: too few, whatever was known of all 8


def test_bytes_that_later_bytes_can_change_are_kept_with_them(monkeypatch):
    """gfx950's v_mfma_ld_scale_b32 (8 bytes) followed by a scaled MFMA is one 16-byte VOP3PX2 instruction: the
    lone ld_scale decoded first must not stand for the pair, nor the pair for a lone ld_scale."""
    monkeypatch.setattr(decoder, "_KNOWN", {})
    pair = isa.asm("v_mfma_scale_f32_32x32x64_f8f6f4 a[64:79], v[0:7], v[32:37], a[0:15], v61, v62 op_sel:[0,1,0] "
                   "op_sel_hi:[1,1,0] blgp:3", "gfx950")
    nops = isa.asm("s_nop 0\ns_nop 0", "gfx950")
    lone = isa.decode(pair[:8] + nops, "gfx950")
    assert (lone.mnemonic, lone.size) == ("v_mfma_ld_scale_b32", 8)
    assert (isa.decode(pair, "gfx950").family, isa.decode(pair[:8] + nops, "gfx950").family) == ("VOP3PX2", "VOP3P")
