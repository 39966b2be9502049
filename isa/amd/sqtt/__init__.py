"""SQTT (SQ thread trace): decode and encode the token stream AMD GPUs write, and map it onto a program.

    packets = sqtt.decode(blob)                         # format from the stream's LAYOUT_HEADER (or arch=)
    packets.truncated                                   # where the buffer ended mid-token (None: on a boundary)
    blob = sqtt.encode(packets, "gfx1100")              # the inverse, for layouts 3 and 4 (and gfx9)
    insts = sqtt.wave_instructions(blob, elf, "gfx1100", base)  # what each traced wave executed, when
    tokens = sqtt.wave_tokens("gfx942", waves)          # the inverse: the tokens an SQ writes for waves it ran

The format is undocumented by AMD; what is known comes from public decoders: AMD's rocprof-trace-decoder
(open sources: token lookup tables, bitfield unions, gfx9 token header, wave timing model) and tinygrad's
renderer/amd/sqtt.py, whose packet names this module uses (without its _RDNA4 suffixes). Three formats:

- gfx11 (RDNA3, LAYOUT_HEADER layout 3) and gfx12 (RDNA4, layout 4): a little-endian stream of nibbles; a
  token's low 3..8 bits say its kind, the kind its length (4..72 bits). Most tokens carry a small delta of
  shader cycles since the previous token; TS_DELTA_SHORT and TS_DELTA_OR_MARK only move the clock. gfx12
  moves fields (INST, wave start/end), widens timestamps to 64 bits and adds tokens (EXEC_POPCOUNT*,
  SHADER_DATA*, a 72-bit NEW_PC). Instruction tokens (INST, VALUINST, IMMEDIATE*) name a wave slot of the
  one SIMD instruction tracing covers.
- gfx9 (CDNA: gfx942, gfx950): 16-bit words, the low nibble the token type; aqlprofile puts an 8-byte header
  first (the traced CU and SIMD mask). Deltas count 4 cycles; CDNA_ISSUE / CDNA_INST describe issue.

tables.py holds one table per format (kind, match bits, size, fields) that drives both directions.
"""

from usergpu.isa.amd.sqtt.codec import decode, encode, layout_of
from usergpu.isa.amd.sqtt.emit import Ran, Wave, dispatch_tokens, wave_tokens
from usergpu.isa.amd.sqtt.packet import Packet, Packets, SQTTError, Truncated
from usergpu.isa.amd.sqtt.tables import LAYOUTS, Layout, Token, inst_op
from usergpu.isa.amd.sqtt.waves import WaveInst, wave_instructions

__all__ = ["LAYOUTS", "Layout", "Packet", "Packets", "Ran", "SQTTError", "Token", "Truncated", "Wave", "WaveInst",
           "decode", "dispatch_tokens", "encode", "inst_op", "layout_of", "wave_instructions", "wave_tokens"]
