"""C printf: a format string and its arguments' bytes to the text glibc's printf writes, for the printf of GPU
kernels (AMD's buffered printf records, CUDA's vprintf buffers).

    sprintf("%5.2f|%-4d|%s\\n", [struct.pack("<d", 3.14159), struct.pack("<i", 7), b"hi\\0"])  # b' 3.14|7   |hi\\n'

An argument is the bytes the device stored for it, little-endian: an integer conversion reads them as the length
modifier says (hh: 8 bits, h: 16, none: 32, l ll j z t: 64) and a floating one by their count (2: half, 4: float,
8: double), as a C callee reads its promoted arguments; %s takes the string's bytes (up to a NUL). OpenCL C's
vector conversions (%v4f, %v2hd, %v8hlx) print each element with the same spec, joined by commas.

Where C leaves a case undefined, glibc's choice is printed: an unknown conversion as glibc writes it back (its
flags, width and precision, no length modifier), a spec cut off by the end of the string as nothing, -nan with its
sign. A conversion with no argument left is printed as written; %n writes nothing. Positional arguments (%1$d) are
not supported (printed as written). Unlike C, a width or precision past FIELD_LIMIT is cut to it; past INT_MAX,
nothing more is written, as glibc's EOVERFLOW.
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass

FLAGS = b"-+ #0'"
# longest first; hl is OpenCL's 32-bit vector element and is a length only after a vector count
LENGTHS = (b"hh", b"hl", b"ll", b"h", b"l", b"L", b"q", b"j", b"z", b"Z", b"t")
INT_BITS = {b"hh": 8, b"h": 16, b"": 32, b"l": 64, b"ll": 64, b"L": 64, b"q": 64, b"j": 64, b"z": 64, b"Z": 64,
            b"t": 64}
VECTOR_ELEMENT = {b"hh": 1, b"h": 2, b"hl": 4, b"l": 8}  # bytes
VECTOR_COUNTS = (2, 3, 4, 8, 16)
INTEGER, FLOATING = b"diouxX", b"fFeEgGaA"
CONVERSIONS = INTEGER + FLOATING + b"cspn%"
FLOAT_FORMATS = {2: "<e", 4: "<f", 8: "<d"}
INT_MAX = (1 << 31) - 1
FIELD_LIMIT = 1 << 20  # widths and precisions past it are cut to it: a kernel's printf cannot make gigabytes of text
SPEC = re.compile(rb"%([-+ #0']*)(\*|\d+)?(?:\.(\*|\d*))?(?:v(\d+))?")


@dataclass(frozen=True)
class Spec:
    """One conversion of a format: as written, and its parts (width/precision '*' when taken from an argument)."""

    text: bytes
    flags: bytes
    width: int | str | None
    precision: int | str | None
    vector: int  # 0: a scalar
    length: bytes
    conversion: bytes  # b"" when the string ends inside the spec

    @property
    def arguments(self) -> int:
        """How many arguments it takes: a '*' width and precision each, then the value (not for %%)."""
        stars = (self.width == "*") + (self.precision == "*")
        return stars + (self.conversion in CONVERSIONS and self.conversion != b"%" and bool(self.conversion))

    @property
    def valid(self) -> bool:
        """A conversion C (or OpenCL C, for a vector) defines."""
        if self.conversion not in CONVERSIONS or not self.conversion:
            return False
        if self.vector:
            return self.vector in VECTOR_COUNTS and self.conversion in INTEGER + FLOATING
        return self.length != b"hl"


def parse(fmt: bytes | str) -> list[bytes | Spec]:
    """A format as its literal text and conversions, in order."""
    data = fmt.encode() if isinstance(fmt, str) else bytes(fmt)
    out: list[bytes | Spec] = []
    at = 0
    while (pct := data.find(b"%", at)) >= 0:
        if pct > at:
            out.append(data[at:pct])
        m = SPEC.match(data, pct)
        end = m.end()
        vector = int(m.group(4)) if m.group(4) else 0
        length = next((n for n in LENGTHS if data.startswith(n, end) and (n != b"hl" or vector)), b"")
        end += len(length)
        conversion = data[end : end + 1]
        width, precision = m.group(2), m.group(3)
        out.append(Spec(data[pct : end + 1], m.group(1),
                        None if width is None else "*" if width == b"*" else int(width),
                        None if precision is None else "*" if precision == b"*" else int(precision or 0),
                        vector, length, conversion))
        at = end + 1
    if at < len(data):
        out.append(data[at:])
    return out


def sprintf(fmt: bytes | str, args: list[bytes]) -> bytes:
    """The bytes printf(fmt, ...) writes for arguments given as their bytes (see the module's docstring)."""
    out = bytearray()
    queue = list(args)
    for piece in parse(fmt):
        if isinstance(piece, bytes):
            out += piece
        elif not piece.conversion or max(_literal(piece.width), _literal(piece.precision)) > INT_MAX:
            break  # glibc writes nothing more for a spec the string's end cuts off, or past INT_MAX (EOVERFLOW)
        elif piece.arguments > len(queue):
            out += piece.text
            queue.clear()
        else:
            out += _convert(piece, queue)
    return bytes(out)


def _literal(field: int | str | None) -> int:
    return field if isinstance(field, int) else 0


def _int(raw: bytes, bits: int, signed: bool) -> int:
    """raw (sign- or zero-extended as read) cut to bits, as a C value of that width."""
    value = int.from_bytes(raw, "little", signed=signed) & ((1 << bits) - 1)
    return value - (1 << bits) if signed and value >> (bits - 1) else value


def _float(raw: bytes) -> float:
    n = max((k for k in FLOAT_FORMATS if k <= len(raw)), default=0)
    return struct.unpack(FLOAT_FORMATS[n], raw[:n])[0] if n else 0.0


def _convert(spec: Spec, queue: list[bytes]) -> bytes:
    flags, width, precision = spec.flags, spec.width, spec.precision
    if width == "*":
        width = _int(queue.pop(0), 32, True)
        flags, width = (flags + b"-", -width) if width < 0 else (flags, width)
    if precision == "*":
        precision = _int(queue.pop(0), 32, True)
        precision = None if precision < 0 else precision
    flags = flags.replace(b"0", b"") if b"-" in flags else flags
    width, precision = min(width or 0, FIELD_LIMIT), None if precision is None else min(precision, FIELD_LIMIT)
    conv = spec.conversion
    if not spec.valid:
        if spec.arguments > (spec.width == "*") + (spec.precision == "*"):
            queue.pop(0)
        return _unknown(spec, flags, width, precision)
    if conv == b"%":
        return b"%"
    raw = queue.pop(0)
    if conv == b"n":
        return b""
    if not spec.vector:
        return _scalar(conv, raw, flags, width, precision, INT_BITS[spec.length])
    size = VECTOR_ELEMENT.get(spec.length) or len(raw) // (4 if spec.vector == 3 else spec.vector) or 1
    raw = raw.ljust(size * spec.vector, b"\0")
    return b",".join(_scalar(conv, raw[i * size : (i + 1) * size], flags, width, precision, 8 * size)
                     for i in range(spec.vector))


def _unknown(spec: Spec, flags: bytes, width, precision) -> bytes:
    """An unknown conversion as glibc writes it back: flags in its order, width, precision, no length modifier (a
    vector spec OpenCL C does not define: as written)."""
    if spec.vector:
        return spec.text
    kept = (b"#" if b"#" in flags else b"") + (b"+" if b"+" in flags else b" " if b" " in flags else b"")
    kept += (b"-" if b"-" in flags else b"") + (b"0" if b"0" in flags else b"")
    text = b"%" + kept + (str(width).encode() if width else b"")
    text += b"." + str(precision).encode() if precision is not None else b""
    return text + spec.conversion


def _pad(body: bytes, width: int | None, flags: bytes) -> bytes:
    width = width or 0
    return body.ljust(width) if b"-" in flags else body.rjust(width)


def _scalar(conv: bytes, raw: bytes, flags: bytes, width, precision, bits: int) -> bytes:
    if conv in INTEGER:
        return _integer(_int(raw, bits, conv in b"di"), conv, flags, width, precision)
    if conv in FLOATING:
        return _floating(_float(raw), conv, flags, width, precision)
    if conv == b"c":
        return _pad(bytes([raw[0] if raw else 0]), width, flags)
    if conv == b"s":
        text = raw.split(b"\0", 1)[0]
        return _pad(text if precision is None else text[:precision], width, flags)
    value = int.from_bytes(raw[:8], "little")  # %p: glibc's %#lx with signs, (nil) for NULL
    if not value:
        return _pad(b"(nil)", width, flags)
    return _integer(value, b"x", flags + b"#", width, precision, signed=True)


def _sign(negative: bool, flags: bytes) -> bytes:
    return b"-" if negative else b"+" if b"+" in flags else b" " if b" " in flags else b""


def _integer(value: int, conv: bytes, flags: bytes, width, precision, signed: bool | None = None) -> bytes:
    signed = conv in b"di" if signed is None else signed
    base = {b"o": "o", b"x": "x", b"X": "X"}.get(conv, "d")
    digits = format(abs(value), base).encode()
    if precision is not None:
        digits = b"" if precision == 0 and value == 0 else digits.rjust(precision, b"0")
    prefix = b""
    if b"#" in flags and conv == b"o" and not digits.startswith(b"0"):
        digits = b"0" + digits
    elif b"#" in flags and conv in b"xX" and value:
        prefix = b"0" + conv
    prefix = (_sign(value < 0, flags) if signed else b"") + prefix
    if b"0" in flags and precision is None and width:
        digits = digits.rjust(width - len(prefix), b"0")
    return _pad(prefix + digits, width, flags)


def _floating(value: float, conv: bytes, flags: bytes, width, precision) -> bytes:
    upper = conv.isupper()
    sign = _sign(math.copysign(1.0, value) < 0, flags)
    if not math.isfinite(value):  # glibc: nan keeps its sign, and '0' never pads
        text = (b"nan" if math.isnan(value) else b"inf")
        return _pad(sign + (text.upper() if upper else text), width, flags.replace(b"0", b""))
    if conv in b"aA":
        body = _hex(abs(value), precision, b"#" in flags)
        prefix, body = b"0x", body
        if upper:
            prefix, body = b"0X", body.upper()
    else:
        spec = "%" + ("#" if b"#" in flags else "") + ("" if precision is None else f".{precision}") + conv.decode()
        prefix, body = b"", (spec % abs(value)).encode()
    if b"0" in flags and width:
        body = body.rjust(width - len(sign) - len(prefix), b"0")
    return _pad(sign + prefix + body, width, flags)


def _hex(value: float, precision: int | None, alt: bool) -> bytes:
    """value's %a digits after '0x': the leading digit (0 for a subnormal, as glibc), the fraction's hex digits
    (trailing zeros cut unless a precision is given; rounded half to even to it), 'p' and the binary exponent."""
    bits = struct.unpack("<Q", struct.pack("<d", value))[0]
    biased, fraction = bits >> 52 & 0x7FF, bits & ((1 << 52) - 1)
    lead, exponent = (1, biased - 1023) if biased else (0, -1022 if fraction else 0)
    if precision is None:
        digits = f"{fraction:013x}".rstrip("0")
    elif precision < 13:
        shift = 4 * (13 - precision)
        q, r = divmod(lead << 52 | fraction, 1 << shift)
        q += r > 1 << shift - 1 or (r == 1 << shift - 1 and q & 1)
        lead, digits = q >> 4 * precision, f"{q & ((1 << 4 * precision) - 1):0{precision}x}" if precision else ""
    else:
        digits = f"{fraction:013x}".ljust(precision, "0")
    point = "." if digits or alt else ""
    return f"{lead}{point}{digits}p{exponent:+d}".encode()

