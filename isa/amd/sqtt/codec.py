"""decode(): SQTT bytes -> packets with absolute times; encode(): packets -> bytes. Both run off tables.py.

gfx11/gfx12 streams are a little-endian nibble stream: each token starts on a nibble, its low byte picks the
row, the row gives its length. gfx9 streams are 16-bit words, the low nibble of the first word is the type.
Time: every timed token adds its delta field to a running clock (TS_DELTA_SHORT adds delta + 4, the long
TS_DELTA_OR_MARK only when its rt bit is clear; gfx9 deltas count 4 cycles, and a gfx9 MISC TIME_RESET
re-bases the clock on the next CDNA_TIMESTAMP), as rocprof-trace-decoder's token generators do. Decoding is
causal: a packet's fields and time depend only on the bytes up to its end. A buffer that ends inside a token
(the hardware stops writing mid-token) is marked, not refused: `truncated` of the result says where.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Iterable
from functools import cache

from usergpu.errors import FieldError
from usergpu.isa.amd.sqtt.packet import Packet, Packets, SQTTError, Truncated
from usergpu.isa.amd.sqtt.tables import (
    BY_VERSION,
    DELTA,
    GFX9,
    GFX11,
    GFX12,
    LAYOUTS,
    MISC_TIME_RESET,
    NONE,
    SHORT,
    STAMP,
    Layout,
)

_HEADER = 0b0010001  # low 7 bits of a LAYOUT_HEADER
_CHUNK = 64  # bytes loaded into the bit window at a time: keeps the shifted int small
_RULE = {NONE: 0, DELTA: 1, SHORT: 2, STAMP: 3}
_NONZERO = re.compile(rb"[^\x00]")


def layout_of(arch: str) -> Layout:
    """The trace layout an arch writes: gfx11* -> layout 3, gfx12* -> layout 4, gfx9* (CDNA) -> gfx9."""
    for prefix, layout in (("gfx11", GFX11), ("gfx12", GFX12), ("gfx9", GFX9)):
        if arch.startswith(prefix):
            return layout
    raise FieldError(f"no SQTT layout for arch {arch!r} (supported: gfx11*, gfx12*, gfx9* / CDNA)")


def _detect(blob: bytes, arch: str | None) -> tuple[Layout, bool]:
    """The stream's layout and whether it opens with a LAYOUT_HEADER; the header and arch must agree."""
    header = len(blob) >= 8 and blob[0] & 0x7F == _HEADER
    version = ((blob[0] >> 7) | (blob[1] << 1)) & 0x3F if header else -1
    found = GFX9 if version == 0 else BY_VERSION.get(version)  # aqlprofile's gfx9 header reads as layout 0
    if arch is None:
        if found is None:
            what = f"LAYOUT_HEADER of unknown layout {version}" if header else "no LAYOUT_HEADER"
            raise SQTTError(f"{what} at the start: pass arch to say the format", 0)
        return found, True
    layout = layout_of(arch)
    if header and found is not layout:
        raise SQTTError(f"LAYOUT_HEADER says layout {version}, not {layout.name} as {arch} writes", 0)
    return layout, header


def decode(blob: bytes, arch: str | None = None, *, strict: bool = False) -> Packets:
    """Every whole packet of an SQTT buffer, in stream order, with absolute times in shader cycles.

    The format comes from the stream's LAYOUT_HEADER, or from arch (gfx1100, gfx1200, gfx942, gfx950, ...).
    A damaged stream (an unknown token, a contradicting header) raises SQTTError holding the packets before
    the damage. A hardware buffer normally ends inside a token, where the hardware stopped writing: the
    result's `truncated` then says which token, where and how many bits were left; strict=True makes that
    an SQTTError too."""
    blob = bytes(blob)
    layout, header = _detect(blob, arch)
    packets = Packets()
    collecting = gc.isenabled()
    gc.disable()  # millions of small packets would set the cyclic collector scanning them over and over
    try:
        if layout is GFX9:
            _decode_words(blob, header, strict, packets)
        else:
            _decode_nibbles(blob, layout, strict, packets)
    finally:
        if collecting:
            gc.enable()
    return packets


@cache
def _rows(name: str) -> list[tuple | None]:
    """A layout's dispatch flattened for the hot loops. gfx11/gfx12, by low byte: (kind, size, mask, delta shift,
    delta mask, time rule, rt shift, ext, token, token id); gfx9, by low nibble: (kind, size in bytes, delta
    mask, token, token id)."""
    layout = LAYOUTS[name]
    if layout is GFX9:
        return [(t.kind, t.size >> 3, t.spans["delta"][1], t, t.id) for t in layout.dispatch[:16]]
    return [None if t is None else (t.kind, t.size, t.mask, *(t.spans.get("delta", (0, 0))), _RULE[t.time],
                                    t.spans.get("rt", (0, 0))[0], t.ext, t, t.id)
            for t in layout.dispatch]


def _cut(out: Packets, strict: bool, kind: str, offset: int, size: int, bits: int) -> None:
    """The buffer ended inside a token: mark the result, or with strict raise."""
    out.truncated = Truncated(kind, offset, size, bits)
    if strict:
        raise SQTTError(str(out.truncated), offset, out)


def _decode_nibbles(blob: bytes, layout: Layout, strict: bool, out: Packets) -> None:
    rows = _rows(layout.name)
    header_kind, version, extended, nop = "LAYOUT_HEADER", layout.version, layout.extended, layout.by_kind["NOP"]
    new, P, append = tuple.__new__, Packet, out.append
    nbytes = len(blob)
    win, wbits, loaded, pos, time = 0, 0, 0, 0, 0  # window bits start at nibble pos
    while True:
        if wbits < 80 and loaded < nbytes:
            chunk = blob[loaded:loaded + _CHUNK]
            win |= int.from_bytes(chunk, "little") << wbits
            wbits += len(chunk) * 8
            loaded += len(chunk)
        if not wbits:
            return
        row = rows[win & 0xFF]
        if row is None:
            raise SQTTError(f"unknown token (low byte {win & 0xFF:#04x}) in a {layout.name} stream", pos, out)
        kind, size, mask, dshift, dmask, rule, rtshift, ext, token, tid = row
        if token is nop:  # runs of NOPs (idle nibbles, buffer padding) go in one step
            run = wbits >> 2 if not win else ((win & -win).bit_length() - 1) >> 2
            out.extend([new(P, (kind, time, pos + i, 0, tid, None)) for i in range(run)])
            win >>= run << 2
            wbits -= run << 2
            pos += run
            continue
        if size > wbits or (wbits < 8 and token.bits > wbits):  # (too few bits left to even tell the token)
            return _cut(out, strict, kind, pos, size, wbits)
        raw = win & mask
        win >>= size
        wbits -= size
        if rule:
            delta = (raw >> dshift) & dmask
            if rule == 1:
                time += delta
            elif rule == 2:
                time += delta + 4
            elif not (raw >> rtshift) & 1:
                time += delta
        elif kind == header_kind and (raw >> 7) & 0x3F != version:
            raise SQTTError(f"LAYOUT_HEADER of layout {(raw >> 7) & 0x3F} inside a layout {version} stream", pos, out)
        if ext and win & 1:  # a gfx12 wave start carries 8 more bits when the next bit 0 is set
            if wbits < 8:
                return _cut(out, strict, kind, pos, size + 8, size + wbits)
            raw |= (win & 0xFF) << size
            tid = extended[kind].id
            size += 8
            win >>= 8
            wbits -= 8
        append(new(P, (kind, time, pos, raw, tid, None)))
        pos += size >> 2


def _decode_words(blob: bytes, header: bool, strict: bool, out: Packets) -> None:
    rows = _rows(GFX9.name)
    misc, stamp = GFX9.by_kind["CDNA_MISC"], GFX9.by_kind["CDNA_TIMESTAMP"]
    new, P, append, nonzero = tuple.__new__, Packet, out.append, _NONZERO.search
    nbytes, pos, time, base, reset = len(blob), 0, 0, None, False
    if header:
        token = GFX9.by_kind["LAYOUT_HEADER"]
        append(new(P, (token.kind, 0, 0, int.from_bytes(blob[:8], "little"), token.id, None)))
        pos = 8
    while pos < nbytes:
        kind, size, dmask, token, tid = rows[blob[pos] & 15]
        if pos + size > nbytes:
            return _cut(out, strict, kind, 2 * pos, size * 8, (nbytes - pos) * 8)
        if size == 2:
            raw = blob[pos] | blob[pos + 1] << 8
            if not raw:  # runs of zero words (idle MISC tokens) go in one step
                found = nonzero(blob, pos)
                run = ((found.start() if found else nbytes) - pos) >> 1
                out.extend([new(P, (kind, time, 2 * pos + 4 * i, 0, tid, None)) for i in range(run)])
                pos += 2 * run
                continue
        else:
            raw = int.from_bytes(blob[pos:pos + size], "little")
        if token is stamp and reset:
            # the first timestamp after a TIME_RESET re-bases the clock (rocprof re-bases from the reset on,
            # so the few tokens between get the new clock there; here they keep the old one: decoding stays causal)
            reset, found = False, raw >> 16
            if base is None:
                base = found - time + 4
            if found > base:
                time = (found - base) & ~3
        else:
            time += ((raw >> 4) & dmask) << 2
            reset = reset or (token is misc and raw >> 13 == MISC_TIME_RESET)
        append(new(P, (kind, time, 2 * pos, raw, tid, None)))
        pos += size


def encode(packets: Iterable[Packet | tuple], arch: str) -> bytes:
    """The SQTT bytes of packets in arch's format: decode(encode(p), arch) == p for decoded packets.

    Each item is a Packet or a (kind, fields) / (kind, fields, time) tuple. A field left out is 0. When a
    packet gives its time but no delta, the delta comes from the time, with TS_DELTA_SHORT/TS_DELTA_OR_MARK
    (gfx9: CDNA_MISC) tokens put in front for gaps its own delta field cannot hold (the gfx9 clock is taken
    as running on: a TIME_RESET's re-basing is not modelled). A stream of an odd number of nibbles ends with
    one NOP to fill its last byte. Bad kinds or values, and fields that would read back as another token,
    raise FieldError."""
    layout = layout_of(arch)
    writer = _Writer(layout)
    for item in packets:
        if isinstance(item, Packet):
            kind, fields, time = item.kind, dict(item.fields), item.time
        elif isinstance(item, tuple) and len(item) in (2, 3):
            kind, fields, time = item[0], dict(item[1]), item[2] if len(item) == 3 else None
        else:
            raise FieldError(f"{item!r} is no packet: give a Packet or a (kind, fields[, time]) tuple")
        token = layout.by_kind.get(kind)
        if token is not None and token.ext and "ext" in fields:
            ext = fields.pop("ext")
            if ext:
                if not ext & 1:
                    raise FieldError(f"{kind}.ext = {ext}: an extension starts with a set bit")
                token, fields = layout.extended[kind], {**fields, "ext": ext}
        if token is None:
            raise FieldError(f"{layout.name} SQTT has no packet kind {kind!r} (kinds: {', '.join(layout.by_kind)})")
        if token.first and writer.count:
            raise FieldError(f"{kind} can only open a {layout.name} stream")
        if time is not None and "delta" not in fields:
            fields = writer.catch_up(token, fields, time)
        writer.put(token, fields)
    return writer.finish()


class _Writer:
    """Packs tokens into bytes and keeps the clock the decoder will compute."""

    def __init__(self, layout: Layout):
        self.layout, self.out, self.acc, self.bits, self.time, self.count = layout, bytearray(), 0, 0, 0, 0
        self.open_ext = False  # the last token was a gfx12 wave start that an odd next token would extend

    def catch_up(self, token, fields: dict[str, int], time: int) -> dict[str, int]:
        """fields with the delta that lands the token on time, after filler tokens for what it cannot hold."""
        gap, scale = time - self.time, self.layout.scale
        if gap < 0 or gap % scale:
            raise FieldError(f"{token.kind} at time {time} cannot follow time {self.time} in a {self.layout.name} "
                             f"stream (gaps must be non-negative{f' multiples of {scale}' if scale > 1 else ''})")
        units = gap // scale
        if token.time == NONE or (token.time == STAMP and fields.get("rt")):
            self._fill(units)
            return fields
        least = 4 if token.time == SHORT else 0  # the short token always adds 4 beyond its field
        if units < least:
            raise FieldError(f"{token.kind} adds at least {least} cycles; {units} asked")
        own = min(units - least, token.spans["delta"][1])
        self._fill(units - least - own)
        return {**fields, "delta": own}

    def _fill(self, units: int) -> None:
        layout = self.layout
        while units > 0:
            if layout is GFX9:
                step = min(units, 255)
                self.put(layout.by_kind["CDNA_MISC"], {"delta": step})
            else:
                short = layout.by_kind["TS_DELTA_SHORT"]
                if 4 <= units <= 4 + short.spans["delta"][1]:
                    step = units
                    self.put(short, {"delta": units - 4})
                else:
                    stamp = layout.by_kind["TS_DELTA_OR_MARK"]
                    step = min(units, stamp.spans["delta"][1])
                    self.put(stamp, {"delta": step})
            units -= step

    def put(self, token, fields: dict[str, int]) -> None:
        raw = token.pack(fields)
        reads_as = self.layout.dispatch[raw & (0xF if self.layout is GFX9 else 0xFF)]
        if token.first or self.layout is GFX9 and not self.count and raw & 0x7F == _HEADER:
            reads_as = token if token.first else None
        if reads_as is None or reads_as.kind != token.kind:
            raise FieldError(f"{token.kind} with {fields} would read as {reads_as.kind if reads_as else 'a header'}: "
                             f"its low bits {raw & 0xFF:#04x} belong to that token in {self.layout.name}")
        if self.open_ext and raw & 1:
            raise FieldError(f"{token.kind} right after an unextended {self.layout.name} TS_DELTA_S5_W2 would read as "
                             "its extension: put a NOP between them")
        self.open_ext = token.ext
        delta = (raw >> token.spans["delta"][0]) & token.spans["delta"][1] if token.time != NONE else 0
        if token.time == SHORT:
            delta += 4
        elif token.time == STAMP and (raw >> token.spans["rt"][0]) & 1:
            delta = 0
        self.time += delta * self.layout.scale
        self.acc |= raw << self.bits
        self.bits += token.size
        self.count += 1
        if self.bits >= 512:
            whole = self.bits >> 3
            self.out += (self.acc & ((1 << (whole * 8)) - 1)).to_bytes(whole, "little")
            self.acc >>= whole * 8
            self.bits -= whole * 8

    def finish(self) -> bytes:
        if self.bits & 7:  # half a byte left: a NOP nibble fills it
            self.bits += 4
        return bytes(self.out) + self.acc.to_bytes(self.bits >> 3, "little")
