"""The SQTT token tables: one per trace layout, each row a token's name, match bits, size and fields.

The same rows drive decode (a 256-entry dispatch on a token's low byte) and encode (fields packed back at
their bit positions). Every bit of a token belongs to its match pattern or to exactly one field, which is
checked when a layout is built, so a decoded token re-encodes to the same bits.

Facts come from AMD's open rocprof-trace-decoder sources (gfx10/gfx11/gfx12 token lookup tables: pattern,
pattern length, token length, time-field position; the token bitfield unions; the gfx9 token header) and
from tinygrad's sqtt.py, whose packet names the kinds here use (rocprof's names are kept in `aka`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from usergpu.errors import FieldError

# How a token moves the clock: by its delta field, by delta + 4 (the short time token), by its delta only
# when its rt (realtime) bit is clear (the long timestamp token: with rt set it carries a reference-clock
# sample instead), or not at all.
DELTA, SHORT, STAMP, NONE = "delta", "short", "stamp", "none"
TOKENS: list[Token] = []  # every row, by its id


@dataclass(frozen=True)
class Token:
    kind: str  # packet kind, as tinygrad names it (rocprof's name in aka)
    match: int  # value of the token's low `bits` bits
    bits: int  # how many low bits identify the token
    size: int  # token length in bits
    fields: tuple[tuple[str, int, int], ...]  # (name, first bit, width), every bit outside the match
    time: str = DELTA
    aka: str = ""
    ext: bool = False  # gfx12 wave start (ext): 8 more bits follow when the next bit 0 is set
    first: bool = False  # only ever the stream's first token (gfx9's header shares its byte with TIME tokens)
    names: tuple[str, ...] = field(init=False)
    mask: int = field(init=False)  # all the token's bits
    spans: dict[str, tuple[int, int]] = field(init=False)  # name -> (shift, mask)
    id: int = field(init=False)  # index in TOKENS: packets hold it, so they hold no GC-tracked object

    def __post_init__(self):
        spans = {n: (lo, (1 << w) - 1) for n, lo, w in self.fields}
        covered = (1 << self.bits) - 1
        for n, lo, w in self.fields:
            bits = ((1 << w) - 1) << lo
            if covered & bits or lo + w > self.size:
                raise ValueError(f"{self.kind}: field {n} overlaps another or the token's end")
            covered |= bits
        if covered != (1 << self.size) - 1:
            raise ValueError(f"{self.kind}: bits {(1 << self.size) - 1 & ~covered:#x} belong to no field")
        if self.time != NONE and "delta" not in spans:
            raise ValueError(f"{self.kind}: a timed token needs a delta field")
        object.__setattr__(self, "names", tuple(n for n, _, _ in self.fields))
        object.__setattr__(self, "mask", (1 << self.size) - 1)
        object.__setattr__(self, "spans", spans)
        object.__setattr__(self, "id", len(TOKENS))
        TOKENS.append(self)

    def unpack(self, raw: int) -> dict[str, int]:
        return {n: (raw >> lo) & m for n, (lo, m) in self.spans.items()}

    def pack(self, values: dict[str, int]) -> int:
        unknown = set(values) - set(self.spans)
        if unknown:
            raise FieldError(f"{self.kind} has no field {', '.join(sorted(unknown))} (fields: {', '.join(self.names)})")
        raw = self.match
        for n, v in values.items():
            lo, m = self.spans[n]
            if not 0 <= v <= m:
                raise FieldError(f"{self.kind}.{n} = {v} does not fit its {m.bit_length()} bits")
            raw |= v << lo
        return raw


@dataclass(frozen=True)
class Layout:
    name: str  # 'gfx11', 'gfx12' or 'gfx9'
    version: int  # the LAYOUT_HEADER layout number (0 for the gfx9 header aqlprofile writes)
    unit: int  # tokens are aligned to this many bits (4: nibble stream, 16: gfx9's 16-bit words)
    scale: int  # cycles per delta unit
    tokens: tuple[Token, ...]
    dispatch: tuple[Token | None, ...] = field(init=False)  # low byte -> token (None: no token starts so)
    by_kind: dict[str, Token] = field(init=False)
    extended: dict[str, Token] = field(init=False)  # kind -> the token with its 8 extension bits

    def __post_init__(self):
        # the longest matching pattern wins, as the rocprof tables are filled (general first, specific over it)
        ranked = sorted((t for t in self.tokens if not t.first), key=lambda t: -t.bits)
        table = tuple(next((t for t in ranked if b & ((1 << t.bits) - 1) == t.match), None) for b in range(256))
        extended = {t.kind: Token(t.kind, t.match, t.bits, t.size + 8, t.fields + (("ext", t.size, 8),), t.time, t.aka)
                    for t in self.tokens if t.ext}
        object.__setattr__(self, "dispatch", table)
        object.__setattr__(self, "by_kind", {t.kind: t for t in self.tokens})
        object.__setattr__(self, "extended", extended)


def F(*spec) -> tuple[tuple[str, int, int], ...]:
    """Fields from 'name', lo, width triples written flat."""
    return tuple((spec[i], spec[i + 1], spec[i + 2]) for i in range(0, len(spec), 3))


_WAVE_GFX11 = F("delta", 5, 2, "sa", 7, 1, "simd", 8, 2, "wgp", 10, 3, "wave", 13, 5, "queue", 18, 3, "pipe", 21, 2,
                "me", 23, 1, "dispatcher", 24, 1, "count", 25, 7)
_WAVE_GFX12 = F("delta", 5, 2, "sa", 7, 1, "simd", 8, 2, "wgp", 10, 4, "rsvd14", 14, 1, "wave", 15, 5,
                "dispatcher", 20, 5, "count", 25, 7)
_EVENT = F("delta", 8, 3, "bop", 11, 1, "evtype", 12, 2, "pipe", 14, 2, "me", 16, 2, "id", 18, 6)

# Tokens both RDNA layouts share (gfx10 base table, gfx11 overrides).
_RDNA_COMMON = (
    Token("NOP", 0b0000, 4, 4, (), NONE, "NOP"),
    Token("TS_DELTA_SHORT", 0b1000, 4, 8, F("delta", 4, 4), SHORT, "TIME"),
    Token("VALUINST", 0b011, 3, 12, F("delta", 3, 3, "w64h", 6, 1, "wave", 7, 5), DELTA, "VALU_INST"),
    Token("IMMEDIATE", 0b1101, 4, 12, F("delta", 4, 3, "wave", 7, 5), DELTA, "IMM_ONE"),
    Token("IMMEDIATE_MASK", 0b00100, 5, 24, F("delta", 5, 3, "mask", 8, 16), DELTA, "IMMEDIATE"),
    Token("WAVERDY", 0b10100, 5, 24, F("delta", 5, 3, "mask", 8, 16), DELTA, "WAVE_READY"),
    Token("ALUEXEC", 0b1110, 4, 8, F("delta", 4, 2, "src", 6, 2), DELTA, "ALU_EXEC"),
    Token("VMEMEXEC", 0b1111, 4, 8, F("delta", 4, 2, "src", 6, 2), DELTA, "VMEM_EXEC"),
    Token("UTILCTR", 0b0110001, 7, 48, F("delta", 7, 2, "counters", 9, 39), DELTA, "UTIL_COUNTER"),
    Token("TS_WAVE_STATE", 0b1010001, 7, 24, F("delta", 7, 9, "flags", 16, 8), DELTA, "MISC"),
    Token("EVENT", 0b01100001, 8, 24, _EVENT, DELTA, "EVENT"),
    Token("EVENT_BIG", 0b11100001, 8, 32, _EVENT + F("rsvd24", 24, 8), DELTA, "EVENT_SYNC"),
    Token("REG", 0b1001, 4, 64, F("delta", 4, 3, "pipe", 7, 2, "me", 9, 2, "rdp", 11, 1, "context", 12, 3, "cs", 15, 1,
                                   "addr", 16, 16, "data", 32, 32), DELTA, "REG"),
    Token("SNAPSHOT", 0b1110001, 7, 64, F("delta", 7, 3, "vmid", 10, 4, "pipe", 14, 2, "me", 16, 2, "type", 18, 2,
                                          "data", 20, 32, "sync_id", 52, 10, "rsvd62", 62, 2), DELTA, "REG_INIT"),
    # layout: 3 (gfx11) or 4 (gfx12); simd/wgp/sa: the unit instruction tracing covers
    Token("LAYOUT_HEADER", 0b0010001, 7, 64, F("layout", 7, 6, "simd", 13, 2, "wgp", 15, 3, "rsvd18", 18, 1,
                                               "sa", 19, 1, "nsa", 20, 1, "nwgp", 21, 3, "rsvd24", 24, 1, "wsm", 25, 2,
                                               "ucf", 27, 1, "dprate", 28, 4, "wv20", 32, 1, "dp_derate", 33, 3,
                                               "rsvd36", 36, 28), NONE, "HEADER"),
    # gfx10's shader-data tokens (s_ttracedata), kept where no later pattern covers their bytes
    Token("TS_DELTA_S5_W3", 0b00110, 5, 52, F("delta", 5, 3, "data", 8, 44), DELTA, "SHADER_DATA"),
    Token("PERF", 0b10110, 5, 28, F("delta", 5, 3, "data", 8, 20), DELTA, "SHADER_DATA_SHORT"),
)

GFX11 = Layout("gfx11", 3, 4, 1, _RDNA_COMMON + (
    Token("INST", 0b010, 3, 20, F("flag", 3, 1, "delta", 4, 3, "w64h", 7, 1, "wave", 8, 5, "op", 13, 7), DELTA, "INST"),
    Token("WAVESTART", 0b01100, 5, 32, _WAVE_GFX11, DELTA, "WAVE_START"),
    Token("TS_DELTA_S5_W2", 0b11100, 5, 48, _WAVE_GFX11 + F("ext", 32, 16), DELTA, "WAVE_START_EXT"),
    Token("WAVEALLOC", 0b00101, 5, 20, F("delta", 5, 3, "rsvd8", 8, 12), DELTA, "WAVE_ALLOC"),
    Token("WAVEEND", 0b10101, 5, 20, F("delta", 5, 3, "sa", 8, 1, "simd", 9, 2, "wgp", 11, 3, "rsvd14", 14, 1,
                                       "wave", 15, 5), DELTA, "WAVE_END"),
    Token("TS_DELTA_S8_W3", 0b0100001, 7, 64, F("rsvd7", 7, 1, "delta", 8, 3, "wave", 11, 5, "pc", 16, 46, "err", 62, 1,
                                                "rsvd63", 63, 1), DELTA, "NEW_PC"),
    Token("TS_DELTA_OR_MARK", 0b0000001, 7, 48, F("rsvd7", 7, 1, "pl", 8, 1, "rt", 9, 1, "rsvd10", 10, 2,
                                                  "delta", 12, 36), STAMP, "TIMESTAMP"),
))

GFX12 = Layout("gfx12", 4, 4, 1, _RDNA_COMMON + (
    Token("INST", 0b010, 3, 20, F("delta", 3, 3, "w64h", 6, 1, "wave", 7, 5, "op", 12, 8), DELTA, "INST"),
    Token("WAVESTART", 0b01100, 5, 32, _WAVE_GFX12, DELTA, "WAVE_START"),
    Token("TS_DELTA_S5_W2", 0b11100, 5, 40, _WAVE_GFX12 + F("extlds", 32, 1, "wgid", 33, 5, "last", 38, 1,
                                                            "dvg", 39, 1), DELTA, "WAVE_START_EXT", ext=True),
    Token("WAVEALLOC", 0b00101, 5, 24, F("delta", 5, 3, "rsvd8", 8, 16), DELTA, "WAVE_ALLOC"),
    Token("WAVEEND", 0b10101, 5, 20, F("delta", 5, 3, "sa", 8, 1, "simd", 9, 2, "wgp", 11, 4, "wave", 15, 5),
          DELTA, "WAVE_END"),
    Token("TS_DELTA_S8_W3", 0b0100001, 7, 72, F("rsvd7", 7, 1, "delta", 8, 3, "wave", 11, 5, "pc", 16, 55,
                                                "err", 71, 1), DELTA, "NEW_PC_GFX12"),
    Token("TS_DELTA_OR_MARK", 0b0000001, 7, 64, F("rt", 7, 1, "pl", 8, 1, "tl", 9, 1, "rsvd10", 10, 2, "delta", 12, 52),
          STAMP, "TIMESTAMP"),
    Token("SHADER_DATA", 0b0000110, 7, 56, F("delta", 7, 3, "sa", 10, 1, "simd", 11, 2, "wgp", 13, 4, "wave", 17, 5,
                                             "data", 22, 32, "sdt", 54, 2), DELTA, "SHADER_DATA"),
    Token("SHADER_DATA_SHORT", 0b1000110, 7, 32, F("delta", 7, 3, "sa", 10, 1, "simd", 11, 2, "wgp", 13, 4,
                                                   "wave", 17, 5, "data", 22, 8, "sdt", 30, 2),
          DELTA, "SHADER_DATA_SHORT"),
    Token("EXEC_POPCOUNT1", 0b1100110, 7, 24, F("delta", 7, 3, "data", 10, 14), DELTA, "EXEC_POPCOUNT1"),
    Token("EXEC_POPCOUNT3", 0b010110, 6, 48, F("delta", 6, 3, "data", 9, 39), DELTA, "EXEC_POPCOUNT3"),
))

_GROUP = F("delta", 4, 1, "sh", 5, 1, "cu", 6, 4, "wave", 10, 4, "simd", 14, 2)
_REG_CS = F("delta", 4, 1, "pipe", 5, 2, "me", 7, 2, "addr", 9, 7, "data", 16, 32)

# gfx9 (CDNA): 16-bit-aligned tokens, type in the low nibble, every token's bit 4 (MISC: bits 4..11) counts 4 cycles.
GFX9 = Layout("gfx9", 0, 16, 4, (
    # the header the profiler's software puts first (rocprof-trace-decoder's gfx9_header_t): a 13-bit legacy
    # version 0x11 (its high bits read as layout 0), the part (version: 4 MI200 or earlier, 5 MI300, 6 MI350), the
    # SIMDs and CU (and shader array) traced instruction by instruction, the shader engine, double buffering
    Token("LAYOUT_HEADER", 0b0010001, 7, 64, F("layout", 7, 6, "version", 13, 3, "simd_mask", 16, 4, "cu", 20, 5,
                                               "sa", 25, 1, "se", 26, 6, "double_buffer", 32, 1, "rsvd33", 33, 31),
          NONE, "gfx9 header", first=True),
    Token("CDNA_MISC", 0, 4, 16, F("delta", 4, 8, "sh", 12, 1, "misc_type", 13, 3), DELTA, "MISC"),
    Token("CDNA_TIMESTAMP", 1, 4, 64, F("delta", 4, 1, "rsvd5", 5, 11, "timestamp", 16, 48), DELTA, "TIME"),
    Token("CDNA_REG", 2, 4, 64, F("delta", 4, 1, "pipe", 5, 2, "me", 7, 2, "rsvd9", 9, 1, "type", 10, 3,
                                  "rsvd13", 13, 2, "enable", 15, 1, "addr", 16, 16, "data", 32, 32), DELTA, "REG"),
    Token("CDNA_WAVESTART", 3, 4, 32, _GROUP + F("pipe", 16, 2, "me", 18, 2, "rsvd20", 20, 2, "count", 22, 7,
                                                 "tg_id", 29, 3), DELTA, "WAVE_START"),
    Token("CDNA_WAVEALLOC", 4, 4, 16, _GROUP, DELTA, "WAVE_ALLOC"),
    Token("CDNA_REG_CS", 5, 4, 48, _REG_CS, DELTA, "REG_CS"),
    Token("CDNA_WAVEEND", 6, 4, 16, _GROUP, DELTA, "WAVE_END"),
    Token("CDNA_EVENT", 7, 4, 16, F("delta", 4, 1, "data", 5, 11), DELTA, "EVENT"),
    Token("CDNA_EVENT_CS", 8, 4, 16, F("delta", 4, 1, "data", 5, 11), DELTA, "EVENT_CS"),
    Token("CDNA_EVENT_GFX1", 9, 4, 16, F("delta", 4, 1, "data", 5, 11), DELTA, "EVENT_GFX1"),
    Token("CDNA_INST", 10, 4, 16, F("delta", 4, 1, "wave", 5, 4, "simd", 9, 2, "op", 11, 5), DELTA, "INST"),
    Token("CDNA_INST_PC", 11, 4, 64, F("delta", 4, 1, "wave", 5, 4, "simd", 9, 2, "rsvd11", 11, 4, "err", 15, 1,
                                       "pc", 16, 48), DELTA, "INST_PC"),
    Token("CDNA_USERDATA", 12, 4, 48, _GROUP + F("data", 16, 32), DELTA, "SHADERDATA"),
    Token("CDNA_ISSUE", 13, 4, 32, F("delta", 4, 1, "simd", 5, 2, "rsvd7", 7, 1,
                                     *(x for i in range(10) for x in (f"inst{i}", 8 + 2 * i, 2)), "rsvd28", 28, 4),
          DELTA, "ISSUE"),
    Token("CDNA_PERF", 14, 4, 64, F("delta", 4, 1, "sh", 5, 1, "cu", 6, 4, "bank", 10, 2, "cntr0", 12, 13,
                                    "cntr1", 25, 13, "cntr2", 38, 13, "cntr3", 51, 13), DELTA, "PERF"),
    Token("CDNA_REG_CS_PRIV", 15, 4, 48, _REG_CS, DELTA, "REG_CS_PRIV"),
))

LAYOUTS = {layout.name: layout for layout in (GFX11, GFX12, GFX9)}
BY_VERSION = {3: GFX11, 4: GFX12}

# gfx9 MISC misc_type values
MISC_TIME_RESET = 1
# the gfx9 header's version by arch family (rocprof-trace-decoder: 5 MI300, 6 MI350; 4 MI200 and earlier)
GFX9_VERSION = {"gfx94": 5, "gfx95": 6, "gfx90": 4}

# INST `op` values (rocprof's EINST enums): name, category, cycles. Categories follow rocprof's WaveInstCategory;
# *_OTHER_SIMD ops belong to waves on another SIMD of the traced unit and are no instruction of a traced wave.
_RDNA_OPS = {
    0: ("SALU", "SALU", 1), 1: ("SMEM_RD", "SMEM", 1), 2: ("SMEM_WR", "SMEM", 1), 3: ("BRANCH_TAKEN", "JUMP", 1),
    4: ("BRANCH_NOT_TAKEN", "NEXT", 1), 5: ("JUMP", "SALU", 1), 6: ("TRAP", "TRAP", 1), 7: ("SALU_NO_EXEC", "SALU", 1),
    8: ("FATAL_HALT", "TRAP", 1), 9: ("MESSAGE", "MSG", 1), 10: ("VALU_1", "VALU", 1), 11: ("VALUT_4", "VALU", 4),
    12: ("VALUB_1", "VALU", 1), 13: ("VALUB_2", "VALU", 2), 14: ("VALUB_4", "VALU", 4), 15: ("VALUB_16", "VALU", 16),
    18: ("VINTERP", "VALU", 1), 19: ("BARRIER", "IMMED", 1),
    **{28 + i: (f"FLAT_{'RD' if i == 0 else 'WR'}_{i + 2}", "FLAT", i + 2) for i in range(5)},
    33: ("SGMEM_RD_1", "VMEM", 1), 34: ("SGMEM_RD_2", "VMEM", 2),
    **{35 + i: (f"SGMEM_WR_{i + 1}", "VMEM", i + 1) for i in range(6)},
    41: ("LDS_RD", "LDS", 1), **{42 + i: (f"LDS_WR_{i + 1}", "LDS", i + 1) for i in range(5)},
    47: ("BUF_RD_1", "VMEM", 1), 48: ("BUF_RD_2", "VMEM", 2),
    **{49 + i: (f"BUF_WR_{i + 1}", "VMEM", i + 1) for i in range(6)},
    **{80 + i: (f"LDS_OTHER_SIMD_{i + 1}", "LDS_OTHER_SIMD", i + 1) for i in range(5)},
    **{85 + i: (f"FLAT_OTHER_SIMD_{i + 2}", "FLAT_OTHER_SIMD", i + 2) for i in range(5)},
    110: ("LDS_DIR_LOAD", "LDS", 1), 111: ("LDS_PARAM_LOAD", "LDS", 1), 114: ("SALU_WR_EXEC", "SALU", 1),
    115: ("VALU1_WR_EXEC", "VALU", 1),
}
INST_OPS = {
    "gfx11": {**_RDNA_OPS, **{90 + i: (f"VMEM_OTHER_SIMD_{i + 1}", "VMEM_OTHER_SIMD", i + 1) for i in range(12)}},
    "gfx12": {**_RDNA_OPS, 116: ("VALU_B2_WR_EXEC", "VALU", 2), 117: ("RFE", "SALU", 1),
              119: ("LDS_OTHER_SIMD_6", "LDS_OTHER_SIMD", 6), 120: ("LDS_OTHER_SIMD_10", "LDS_OTHER_SIMD", 10),
              122: ("BARRIER_SIGNAL", "MSG", 1), 135: ("DYN_VGPR", "SALU", 1), 138: ("BARRIER_JOIN", "MSG", 1),
              **{140 + i: (f"WMMA{8 << i}", "VALU", 8 << i) for i in range(4)}, 146: ("VALU_DPFP", "VALU", 1),
              150: ("ICPREF", "SMEM", 1), 151: ("KCPREF", "SMEM", 1), 152: ("SALU_FLOAT3", "SALU", 3),
              153: ("VALU_SCL_TRANS", "VALU", 1), 155: ("SALU2", "SALU", 2), 156: ("SALU5", "SALU", 5),
              **{188 + i: (f"VMEM_OTHER_SIMD_{i + 1}", "VMEM_OTHER_SIMD", i + 1) for i in range(34)}},
    # gfx9 INST token types (rocprof's gfx9 parser); 19..24 are replays of an erased issue
    "gfx9": {0: ("SMEM_RD", "SMEM", 1), 1: ("SALU_32", "SALU", 1), 2: ("VMEM_RD", "VMEM", 1), 3: ("VMEM_WR", "VMEM", 1),
             4: ("FLAT_WR", "FLAT", 1), 5: ("VALU_32", "VALU", 1), 6: ("LDS", "LDS", 1), 7: ("PC", "SALU", 1),
             8: ("EXPREQ_GDS", "MSG", 1), 9: ("EXPREQ_GFX", "MSG", 1), 10: ("EXPGNT_PAR_COL", "MSG", 1),
             11: ("EXPGNT_POS_GDS", "MSG", 1), 12: ("JUMP", "JUMP", 1), 13: ("NEXT", "NEXT", 1),
             14: ("FLAT_RD", "FLAT", 1), 15: ("OTHER_MSG", "MSG", 1), 16: ("SMEM_WR", "SMEM", 1),
             17: ("SALU_64", "SALU", 1), 18: ("VALU_64", "VALU", 1),
             **{19 + i: (f"REPLAY_{i}", "REPLAY", 0) for i in range(6)}, 28: ("VALU_MAI", "VALU", 1)},
}


def inst_op(layout: str, op: int) -> tuple[str, str, int]:
    """(name, category, cycles) of an INST token's op on a layout; unknown ops are ('OP_0x..', 'NONE', 0)."""
    return INST_OPS[layout].get(op, (f"OP_{op:#04x}", "NONE", 0))
