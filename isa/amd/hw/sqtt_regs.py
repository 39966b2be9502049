"""Thread-trace (SQTT) register values of gfx11 and gfx12 (hand-written, like _regs.py: linux 6.12's
soc21_enum.h enumerations, whose values gfx12 keeps) and of gfx9 (GC 9.4.3: aqlprofile's gfx9 primitives): which
registers a trace includes, which tokens an engine leaves out, the wave type a compute trace follows, and the trace
buffer's write-pointer unit (32 bytes on both). Shared by the runtime (which programs a trace) and the mock GPU
(which writes one)."""

SQ_TT_MODE_ON = 1
SQ_TT_WTYPE_INCLUDE_CS_BIT = 0x40
SQ_TT_TOKEN_MASK_SQDEC_BIT, SQ_TT_TOKEN_MASK_SHDEC_BIT, SQ_TT_TOKEN_MASK_GFXUDEC_BIT = 0x1, 0x2, 0x4
SQ_TT_TOKEN_MASK_COMP_BIT, SQ_TT_TOKEN_MASK_CONTEXT_BIT = 0x8, 0x10
# SQ_THREAD_TRACE_TOKEN_MASK.TOKEN_EXCLUDE bits (SQ_TT_TOKEN_EXCLUDE_*_SHIFT)
VMEMEXEC, ALUEXEC, VALUINST, WAVERDY, WAVESTARTEND, IMMEDIATE, REG, EVENT, INST, UTILCTR, WAVEALLOC, PERF = range(12)
# what an engine that traces no instructions leaves out (RADV and tinygrad alike)
NO_INSTRUCTIONS = sum(1 << b for b in (VMEMEXEC, ALUEXEC, VALUINST, IMMEDIATE, INST))
WPTR_UNIT = 32  # SQ_THREAD_TRACE_WPTR.OFFSET counts 32-byte units from the buffer's base

# gfx9 (GC 9.4.3, aqlprofile's gfx9 primitives): SQ_THREAD_TRACE_MODE.MODE off/on; TOKEN_MASK.TOKEN_MASK has a bit
# per token type, the type being a token's low nibble (isa/amd/sqtt/tables.py's GFX9 rows)
SQ_THREAD_TRACE_MODE_OFF, SQ_THREAD_TRACE_MODE_ON = 0, 1
GFX9_MISC, GFX9_TIME, GFX9_REG, GFX9_WAVE_START, GFX9_REG_CS, GFX9_WAVE_END = 0, 1, 2, 3, 5, 6
GFX9_INST, GFX9_INST_PC, GFX9_USERDATA, GFX9_ISSUE, GFX9_REG_CS_PRIV = 10, 11, 12, 13, 15
# what every engine keeps, and what instruction tracing adds (tinygrad's choice, as rocprof's)
GFX9_WAVE_TOKENS = sum(1 << b for b in (GFX9_MISC, GFX9_TIME, GFX9_REG, GFX9_WAVE_START, GFX9_REG_CS, GFX9_WAVE_END,
                                        GFX9_USERDATA, GFX9_REG_CS_PRIV))
GFX9_INSTRUCTION_TOKENS = sum(1 << b for b in (GFX9_INST, GFX9_INST_PC, GFX9_ISSUE))
