"""encode(): the inverse of decode, off the same tables. Real captures re-encode to their own bytes; random
packet lists and hand-made traces with absolute times survive the round trip; bad input raises FieldError."""

from __future__ import annotations

import random

import pytest

from usergpu.errors import FieldError
from usergpu.isa.amd.sqtt import LAYOUTS, Packet, decode, encode, layout_of

ARCHS = ("gfx1100", "gfx1200", "gfx942", "gfx950")


def test_real_capture_reencodes_to_its_own_bytes(blob):
    packets = decode(blob.data)
    again = encode(packets, blob.arch)
    assert decode(again, blob.arch) == packets
    cut = packets.truncated  # less only the cut-off last token (its first nibble may share the last byte)
    assert blob.data.startswith(again) and len(blob.data) - len(again) == (cut.bits // 8 if cut else 0)


def _random_packets(arch: str, rng: random.Random, count: int) -> list[tuple[str, dict[str, int]]]:
    layout = layout_of(arch)
    tokens = [t for t in layout.tokens if not t.first]
    header = layout.by_kind["LAYOUT_HEADER"]
    fields = {n: rng.randrange(m + 1) for n, (_, m) in header.spans.items()}
    out = [("LAYOUT_HEADER", fields | {"layout": layout.version})]
    for _ in range(count):
        token = rng.choice(tokens)
        fields = {name: rng.randrange(mask + 1) for name, (_, mask) in token.spans.items()}
        while layout.dispatch[token.pack(fields) & (0xF if layout.unit == 16 else 0xFF)] is not token:
            fields["delta"] = rng.randrange(token.spans["delta"][1] + 1)  # gfx12 gave some of these bits away
        if token.kind == "LAYOUT_HEADER":
            fields["layout"] = layout.version
        if token.ext:  # the extension, when there is one, starts with a set bit; a NOP keeps the next token apart
            fields["ext"] = rng.randrange(256) | 1 if rng.random() < 0.5 else 0
            out += [(token.kind, {k: v for k, v in fields.items() if k != "ext" or v}), ("NOP", {})]
            continue
        out.append((token.kind, fields))
    return out


@pytest.mark.parametrize("arch", ARCHS)
def test_random_packet_lists_round_trip(arch):
    rng = random.Random(arch)
    for _ in range(150):
        items = _random_packets(arch, rng, rng.randrange(1, 60))
        packets = decode(encode(items, arch), arch)
        assert [(p.kind, p.fields) for p in packets[:len(items)]] == items
        assert [p.kind for p in packets[len(items):]] in ([], ["NOP"])  # a NOP fills an odd last nibble
        assert decode(encode(packets, arch), arch) == packets


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200"])
def test_times_become_deltas_and_fillers(arch):
    wanted = [("LAYOUT_HEADER", {"layout": layout_of(arch).version}, 0), ("WAVESTART", {"wave": 2}, 3),
              ("VALUINST", {"wave": 2}, 5), ("INST", {"wave": 2, "op": 1}, 13), ("IMMEDIATE", {"wave": 2}, 30),
              ("WAVERDY", {"mask": 4}, 30), ("VALUINST", {"wave": 2}, 1_000_030), ("WAVEEND", {"wave": 2}, 2**40)]
    packets = decode(encode(wanted, arch), arch)
    real = [p for p in packets if p.kind not in ("TS_DELTA_SHORT", "TS_DELTA_OR_MARK", "NOP")]
    assert [(p.kind, p.time) for p in real] == [(k, t) for k, _, t in wanted]
    assert all(p.wave == 2 for p in real[1:] if "wave" in p.fields)
    assert {p.kind for p in packets} - {p.kind for p in real} <= {"TS_DELTA_SHORT", "TS_DELTA_OR_MARK", "NOP"}
    assert decode(encode(packets, arch), arch) == packets


def test_gfx9_times_count_in_fours():
    packets = decode(encode([("LAYOUT_HEADER", {}, 0), ("CDNA_WAVESTART", {"cu": 1}, 4), ("CDNA_INST", {}, 4000)],
                            "gfx950"), "gfx950")
    assert [(p.kind, p.time) for p in packets if p.kind != "CDNA_MISC"] == [
        ("LAYOUT_HEADER", 0), ("CDNA_WAVESTART", 4), ("CDNA_INST", 4000)]
    with pytest.raises(FieldError, match="multiples of 4"):
        encode([("CDNA_INST", {}, 6)], "gfx950")


@pytest.mark.parametrize(("arch", "version"), [("gfx942", 5), ("gfx950", 6)])
def test_gfx9_header_names_the_part_and_the_traced_unit(arch, version):
    """The 8 bytes the profiler's software puts first (rocprof-trace-decoder's gfx9 header): legacy version 0x11,
    the part, the SIMDs and CU traced, the shader engine; a stream opening with one needs no arch to decode."""
    fields = {"version": version, "simd_mask": 0xF, "cu": 3, "se": 17}
    blob = encode([("LAYOUT_HEADER", fields), ("CDNA_WAVESTART", {"cu": 3}, 8)], arch)
    assert blob[:8] == (0x11 | version << 13 | 0xF << 16 | 3 << 20 | 17 << 26).to_bytes(8, "little")
    (head, start) = [p for p in decode(blob) if p.kind != "CDNA_MISC"]
    assert head.kind == "LAYOUT_HEADER" and {k: head.fields[k] for k in fields} == fields
    assert (start.kind, start.time, start.cu) == ("CDNA_WAVESTART", 8, 3)


def test_gfx12_wave_start_extension():
    ext = [("LAYOUT_HEADER", {"layout": 4}), ("TS_DELTA_S5_W2", {"wave": 5, "ext": 0x81}), ("VALUINST", {"wave": 5})]
    packets = decode(encode(ext, "gfx1200"), "gfx1200")
    assert [(p.kind, p.size) for p in packets] == [("LAYOUT_HEADER", 64), ("TS_DELTA_S5_W2", 48), ("VALUINST", 12),
                                                   ("NOP", 4)]
    assert packets[1].ext == 0x81 and packets[2].wave == 5
    with pytest.raises(FieldError, match="would read as its extension: put a NOP between"):
        encode([("TS_DELTA_S5_W2", {}), ("VALUINST", {})], "gfx1200")
    with pytest.raises(FieldError, match="starts with a set bit"):
        encode([("TS_DELTA_S5_W2", {"ext": 2})], "gfx1200")
    assert [p.kind for p in decode(encode([("TS_DELTA_S5_W2", {}), ("NOP", {}), ("VALUINST", {})], "gfx1200"),
                                   "gfx1200")] == ["TS_DELTA_S5_W2", "NOP", "VALUINST"]


def test_bad_input_is_a_field_error():
    with pytest.raises(FieldError, match="no packet kind 'CDNA_ISSUE'"):
        encode([("CDNA_ISSUE", {})], "gfx1100")
    with pytest.raises(FieldError, match="INST has no field mask"):
        encode([("INST", {"mask": 1})], "gfx1100")
    with pytest.raises(FieldError, match=r"INST.wave = 32 does not fit its 5 bits"):
        encode([("INST", {"wave": 32})], "gfx1100")
    with pytest.raises(FieldError, match="cannot follow time 10"):
        encode([("INST", {}, 10), ("INST", {}, 9)], "gfx1100")
    with pytest.raises(FieldError, match="LAYOUT_HEADER can only open a gfx9 stream"):
        encode([("CDNA_INST", {}), ("LAYOUT_HEADER", {})], "gfx950")
    with pytest.raises(FieldError, match=r"would read as SHADER_DATA: its low bits 0x06 belong to that token"):
        encode([("TS_DELTA_S5_W3", {"delta": 0})], "gfx1200")
    with pytest.raises(FieldError, match="would read as a header"):
        encode([("CDNA_TIMESTAMP", {"delta": 1})], "gfx950")
    with pytest.raises(FieldError, match="no packet: give a Packet or a"):
        encode([("INST",)], "gfx1100")
    with pytest.raises(FieldError, match="adds at least 4 cycles"):
        encode([("TS_DELTA_SHORT", {}, 2)], "gfx1100")


def test_every_layout_table_is_whole():
    for layout in LAYOUTS.values():
        for token in layout.tokens:  # every bit is the match pattern's or one field's: checked on building
            match = (1 << token.bits) - 1
            assert token.pack(token.unpack(token.mask)) == token.mask & ~match | token.match
        kinds = [t.kind for t in layout.tokens]
        assert len(kinds) == len(set(kinds))
    assert Packet("NOP") == decode(b"\x00", "gfx1100")[0]
