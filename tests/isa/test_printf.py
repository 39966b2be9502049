"""isa/printf.py against the C library's snprintf (glibc, through ctypes) for a table of formats and values, and
OpenCL C's vector conversions against the text the OpenCL C specification gives them."""

from __future__ import annotations

import functools
import pickle
import struct
import subprocess
import sys

import pytest

from usergpu.isa.printf import FIELD_LIMIT, parse, sprintf

# (struct format of the device's bytes, ctypes type C's varargs promote it to)
KINDS = {"i": ("<i", "c_int"), "I": ("<I", "c_uint"), "q": ("<q", "c_longlong"), "Q": ("<Q", "c_ulonglong"),
         "d": ("<d", "c_double"), "f": ("<f", "c_double"), "p": ("<Q", "c_void_p")}
NAN, INF = float("nan"), float("inf")
NEG_NAN = struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000000))[0]
# glibc's snprintf in a fresh process: a library that registers a printf modifier (libquadmath, which numpy loads)
# switches glibc to another path that prints malformed specs otherwise
LIBC = r"""
import ctypes, ctypes.util, pickle, struct, sys
libc = ctypes.CDLL(ctypes.util.find_library("c"))
kinds, cases = pickle.load(sys.stdin.buffer)
out = []
for fmt, args in cases:
    buf = ctypes.create_string_buffer(4096)
    cargs = [ctypes.c_char_p(v) if k == "s" else getattr(ctypes, kinds[k][1])(
        struct.unpack(kinds[k][0], struct.pack(kinds[k][0], v))[0]) for k, v in args]  # as the device stored it
    n = libc.snprintf(buf, len(buf), fmt.encode(), *cargs)
    out.append(buf.raw[:n] if n >= 0 else buf.value)  # -1: a spec the string's end cuts off; the text before stays
pickle.dump(out, sys.stdout.buffer)
"""


@functools.cache
def libc() -> list[bytes]:
    """What glibc's snprintf writes for each (format, args) of CASES."""
    res = subprocess.run([sys.executable, "-c", LIBC], input=pickle.dumps((KINDS, CASES)), capture_output=True,
                         check=True, timeout=120)
    return pickle.loads(res.stdout)


def ours(fmt: str, args: list) -> bytes:
    return sprintf(fmt, [v + b"\0" if k == "s" else struct.pack(KINDS[k][0], v) for k, v in args])


INTS = [0, 1, -1, 7, -42, 255, 2**31 - 1, -(2**31), 123456789]
CASES = [(f, [("i", v)]) for v in INTS for f in
         ("%d", "%i", "%5d", "%-5d|", "%05d", "%+d", "% d", "%.3d", "%.0d|", "%+.0d|", "%08.3d", "%-+6d|", "% 05d",
          "%x", "%X", "%#x", "%#X", "%#o", "%o", "%#.0o|", "%#5x|", "%#08x", "%u", "%+u", "%hhd", "%hhu", "%hd",
          "%hx", "%c|", "%5c|", "%-3c|", "%05c|", "%'d")]
CASES += [(f, [("q", v)]) for v in (0, -1, 2**63 - 1, -(2**63), 1 << 40) for f in
          ("%ld", "%lld", "%lx", "%llo", "%lu", "%jd", "%zd", "%td", "%zu", "%#lx", "%20ld|", "%-20lx|")]
FLOATS = [0.0, -0.0, 1.0, -1.5, 0.1, 1e-300, 5e-324, 2.2250738585072014e-308, 1e300, 123456.789, 0.5, 2.5, 1.96875,
          1.03125, 1.00390625, 3.14159265358979, NAN, NEG_NAN, INF, -INF]
CASES += [(f, [("d", v)]) for v in FLOATS for f in
          ("%f", "%F", "%e", "%E", "%g", "%G", "%a", "%A", "%.0f", "%.0e", "%#.0f", "%#.0e", "%#g", "%.3g", "%10.4f|",
           "%-12e|", "%+f", "% e", "%012f", "%012.3e", "%-012g|", "%.1a", "%.0a", "%.2a", "%.15a", "%#a", "%#.0a",
           "%010a", "%-+14a|", "%.20g", "%.17e", "%5.1F|")]
CASES += [(f, [("f", v)]) for v in (1.5, 0.1, 3.4028234663852886e38, 1.401298464324817e-45) for f in
          ("%f", "%a", "%g", "%e")]
CASES += [(f, [("s", s)]) for s in (b"", b"hello", b"abc\xc3\xa9") for f in
          ("%s", "%10s|", "%-10s|", "%.2s|", "%.0s|", "%05s|", "%-5.2s|")]
CASES += [(f, [("p", v)]) for v in (0, 255, 0x7FFF12345678) for f in
          ("%p", "%20p|", "%-20p|", "%+p", "% p", "%.3p", "%05p", "%#p")]
CASES += [  # '*' width and precision, %%, several arguments
    ("%*d|", [("i", 6), ("i", 42)]), ("%*d|", [("i", -6), ("i", 42)]), ("%.*f|", [("i", 2), ("d", 3.14159)]),
    ("%.*f|", [("i", -1), ("d", 3.14159)]), ("%*.*e|", [("i", 14), ("i", 3), ("d", -2.5)]),
    ("100%% %d%%", [("i", 5)]), ("%5%|%-5%|%05%|", []), ("%d %s %f %c%%\n", [("i", 3), ("s", b"x"), ("d", 2.0),
                                                                             ("i", 65)]),
]
MALFORMED = ["%y|", "abc%", "%5", "%-|", "%.|", "%hy|", "%+-5y|", "%-+5y|", "%0-5y|", "%#0 +-y|", "%-.5y|", "%5.y|",
             "%00005y|", "%.005y|", "%hhhd|", "%lhd|", "%hld|", "%jy|", "%5%d|", "% %|", "%%%|", "%.", "%l", "%-",
             "%v|", "%zz|", "%llld|", "% 05y|", "%ly", "%k%d"]
CASES += [(f, [("i", 7)]) for f in MALFORMED] + [("%*y|", [("i", 7)]), ("%.*y|", [("i", 9)])]


@pytest.mark.parametrize("case", range(len(CASES)), ids=[f"{f!r}-{a}" for f, a in CASES])
def test_matches_libc(case):
    assert ours(*CASES[case]) == libc()[case]


@pytest.mark.parametrize(("fmt", "data", "want"), [
    ("%v4hlf", struct.pack("<4f", 1, 2, 3, 4), b"1.000000,2.000000,3.000000,4.000000"),
    ("%v4f", struct.pack("<4f", 1, 2, 3, 4), b"1.000000,2.000000,3.000000,4.000000"),  # no length: by the size
    ("%v2hd", struct.pack("<2h", 5, -6), b"5,-6"),
    ("%v4hhx", bytes([1, 2, 3, 255]), b"1,2,3,ff"),
    ("%#v4hhx", bytes([1, 0, 3, 255]), b"0x1,0,0x3,0xff"),
    ("%v3hhd", bytes([1, 0xFE, 3, 0x55]), b"1,-2,3"),  # a 3-vector is stored as 4: the 4th is padding
    ("%v3d", struct.pack("<4i", 1, 2, 3, 99), b"1,2,3"),
    ("%5v2d|", struct.pack("<2i", 1, -2), b"    1,   -2|"),
    ("%v2ld", struct.pack("<2q", -(2**40), 7), b"-1099511627776,7"),
    ("%.1v2lf", struct.pack("<2d", 0.25, 1.75), b"0.2,1.8"),
    ("%v2hf", struct.pack("<2e", 0.5, -2.0), b"0.500000,-2.000000"),
    ("%v8hu", struct.pack("<8H", *range(8)), b"0,1,2,3,4,5,6,7"),
    ("%v16hhd", bytes(range(16)), b",".join(str(i).encode() for i in range(16))),
    ("%v5d|", b"\0" * 20, b"%v5d|"),  # not an OpenCL vector count: as written
    ("%v4s|", b"abcd", b"%v4s|"),  # strings have no vector form
    ("%v2d", b"\x01", b"1,0"),  # too short: the rest reads as 0
])
def test_opencl_vectors(fmt, data, want):
    assert sprintf(fmt, [data]) == want


@pytest.mark.parametrize(("fmt", "args", "want"), [
    ("%d %d %d\n", [struct.pack("<i", 1)], b"1 %d %d\n"),  # no argument left: as written
    ("%*d|", [struct.pack("<i", 3)], b"%*d|"),
    ("%n%d", [b"\0" * 8, struct.pack("<i", 4)], b"4"),  # %n takes its pointer and writes nothing
    ("%1$d", [struct.pack("<i", 4)], b"%1$d"),
    ("%hhd", [struct.pack("<i", 0x1FF)], b"-1"),  # a device sign-extends a char to 4 bytes; hh cuts it again
    ("%d", [struct.pack("<q", 2**32 + 5)], b"5"),  # a long read as an int: its low 32 bits
    ("%ld", [struct.pack("<i", -3)], b"-3"),  # an int read as a long: sign-extended
    ("%Ld|%qd", [struct.pack("<q", -(2**40))] * 2, b"-1099511627776|-1099511627776"),  # glibc: both long long
    ("%f", [b""], b"0.000000"),
    ("%c", [b""], b"\0"),
    ("%s", [b"no terminator"], b"no terminator"),
    ("a%2147483648d|b", [struct.pack("<i", 1)], b"a"),  # past INT_MAX: glibc stops (EOVERFLOW)
    ("x%.3000000000f", [struct.pack("<d", 1)], b"x"),
    ("caf\u00e9 %d", [struct.pack("<i", 1)], "caf\u00e9 1".encode()),
])
def test_edges(fmt, args, want):
    assert sprintf(fmt, args) == want


def test_a_huge_field_is_cut_to_the_limit():
    assert sprintf("%.2000000f", [struct.pack("<d", 1)]) == b"1." + b"0" * FIELD_LIMIT
    assert sprintf("%*d", [struct.pack("<i", 2**31 - 1), struct.pack("<i", 7)]) == b"7".rjust(FIELD_LIMIT)


def test_parse_counts_arguments():
    specs = [p for p in parse("%*.*f %d %% %y %v4hlf") if not isinstance(p, bytes)]
    assert [s.arguments for s in specs] == [3, 1, 0, 0, 1]
    assert [s.conversion for s in specs] == [b"f", b"d", b"%", b"y", b"f"]
    assert specs[-1].vector == 4 and specs[-1].length == b"hl"
