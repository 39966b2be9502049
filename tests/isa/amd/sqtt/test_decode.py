"""decode() on the real captures: packet counts per kind as the reference decoder's, sane clocks, a buffer that ends
mid-token (as real ones do, and as any cut of one does) decoded to its whole packets with the tail marked, and
damage (flipped bytes, garbage, and a cut tail with strict=True) answered with SQTTError holding the packets before
it, never a hang."""

from __future__ import annotations

import bisect
import collections
import random
import time

import pytest

from usergpu.errors import Error, FieldError
from usergpu.isa.amd import sqtt
from usergpu.isa.amd.sqtt import Packet, SQTTError, decode

# The reference decoder reads a 64-bit window from each token's start and stops once fewer than 64 bits are
# left, so it never sees the tokens that start in a buffer's last 15 nibbles. Counts compare on what it saw.
WINDOW = 16  # nibbles


def reference_counts(blob) -> dict[str, int]:
    return {kind.removesuffix("_RDNA4"): n for kind, n in blob.reference["packets"].items()}


def test_counts_per_kind_match_the_reference(blob):
    packets = decode(blob.data)
    seen = collections.Counter(p.kind for p in packets if p.offset + WINDOW <= 2 * len(blob.data))
    assert dict(seen) == reference_counts(blob)


def test_the_header_or_the_arch_gives_the_same_decode(blob):
    by_header = decode(blob.data)
    assert decode(blob.data, blob.arch) == by_header
    assert by_header[0].kind == "LAYOUT_HEADER"
    assert by_header[0].layout == {"gfx1100": 3, "gfx1200": 4}.get(blob.arch, 0)


def _check_tail(data: bytes, arch: str | None, packets: sqtt.Packets) -> None:
    """packets end where the buffer does, or .truncated marks the rest (and strict=True raises there)."""
    end = packets[-1].offset + packets[-1].size // 4 if packets else 0
    left = 4 * (2 * len(data) - end)
    cut = packets.truncated
    if not left:
        assert cut is None and decode(data, arch, strict=True) == packets
        return
    assert cut is not None and (cut.offset, cut.byte, cut.bits) == (end, end // 2, left) and cut.bits < cut.size
    with pytest.raises(SQTTError, match=rf"{cut.kind} token \({cut.size} bits\) cut off by the end of the buffer "
                                        rf"\({left} bits left\) at nibble {end} \(byte {end // 2}\)") as info:
        decode(data, arch, strict=True)
    assert info.value.offset == end and info.value.packets == packets and info.value.packets.truncated == cut


def test_packets_tile_the_buffer(blob):
    """Each packet starts where the previous one ended, up to the end of the buffer or a tail marked truncated."""
    packets = decode(blob.data)
    for prev, p in zip(packets, packets[1:], strict=False):
        assert p.offset == prev.offset + prev.size // 4
    _check_tail(blob.data, None, packets)
    assert packets.truncated is None or packets.truncated.bits < 72


def test_real_buffers_end_mid_token(captures):
    """Hardware stops writing a buffer mid-token: some real ones end so, each marked, none refused by default."""
    cut = {name: decode(b.data).truncated for name, b in captures.items()}
    assert {c.kind for c in cut.values() if c} == {"TS_DELTA_OR_MARK"}
    assert 0 < sum(map(bool, cut.values())) < len(cut)


def test_clock_is_monotonic_and_carried_by_deltas(blob):
    packets = decode(blob.data)
    if blob.arch.startswith("gfx9"):  # re-based on timestamps: only check the deltas between re-basings
        for prev, p in zip(packets, packets[1:], strict=False):
            if p.kind != "CDNA_TIMESTAMP" and p.kind != "LAYOUT_HEADER":
                assert p.time - prev.time == 4 * p.delta
        return
    for prev, p in zip(packets, packets[1:], strict=False):
        step = p.time - prev.time
        if p.kind == "TS_DELTA_SHORT":
            assert step == p.delta + 4
        elif p.kind == "TS_DELTA_OR_MARK":
            assert step == (0 if p.rt else p.delta)
        elif "delta" in p.fields:
            assert step == p.delta
        else:
            assert step == 0


def test_packet_api():
    p = Packet("INST", {"wave": 3, "op": 9}, time=17)
    assert (p.kind, p.time, p.wave, p.fields) == ("INST", 17, 3, {"wave": 3, "op": 9})
    assert p == Packet("INST", {"op": 9, "wave": 3}, 17) and p != Packet("INST", {"wave": 3, "op": 9}, 18)
    assert len({p, Packet("INST", {"wave": 3, "op": 9}, 17)}) == 1
    with pytest.raises(AttributeError, match="no field 'simd'"):
        _ = p.simd
    # 17 cycles: a TS_DELTA_SHORT (4 + 6) and the INST's own 7; a NOP fills the last byte
    decoded = decode(sqtt.encode([p], "gfx1200"), "gfx1200")
    assert [(q.kind, q.time, q.offset) for q in decoded] == [("TS_DELTA_SHORT", 10, 0), ("INST", 17, 2), ("NOP", 17, 7)]
    assert decoded[1] == Packet("INST", {"wave": 3, "op": 9, "delta": 7, "w64h": 0}, 17)
    assert repr(decoded[1]) == "<INST t=17 @2 delta=7 w64h=0 wave=3 op=9>"


def test_unknown_token_is_damage():
    header = sqtt.encode([("LAYOUT_HEADER", {"layout": 3})], "gfx1100")
    with pytest.raises(SQTTError, match=r"unknown token \(low byte 0x07\).* at nibble 18") as info:
        decode(header + b"\x00\x07")
    assert [p.kind for p in info.value.packets] == ["LAYOUT_HEADER", "NOP", "NOP"]
    assert info.value.offset == 18 and isinstance(info.value, Error)


def test_format_must_be_known():
    with pytest.raises(SQTTError, match="no LAYOUT_HEADER at the start: pass arch"):
        decode(b"\x00" * 16)
    assert decode(b"\x00" * 3, "gfx1100") == [Packet("NOP", {}, 0)] * 6
    gfx12 = sqtt.encode([("LAYOUT_HEADER", {"layout": 4})], "gfx1200")
    with pytest.raises(SQTTError, match="layout 4, not gfx11 as gfx1100 writes"):
        decode(gfx12, "gfx1100")
    with pytest.raises(SQTTError, match="LAYOUT_HEADER of layout 4 inside a layout 3 stream"):
        decode(sqtt.encode([("LAYOUT_HEADER", {"layout": 3})], "gfx1100") + gfx12)
    with pytest.raises(FieldError, match="no SQTT layout for arch 'gfx1030'"):
        decode(b"", "gfx1030")


def _prefix_before(clean: list[Packet], nibble: int) -> list[Packet]:
    """The clean packets that lie wholly before a nibble."""
    return clean[:bisect.bisect_right([p.offset + p.size // 4 for p in clean], nibble)]


def _bounded(blob: bytes, arch: str | None) -> tuple[list[Packet], SQTTError | None]:
    start = time.perf_counter()
    try:
        packets, error = decode(blob, arch), None
    except SQTTError as e:
        packets, error = e.packets, e
    assert time.perf_counter() - start < 1.0, "decoding a few KB took over a second"
    return packets, error


@pytest.mark.parametrize("with_arch", [False, True], ids=["header", "arch"])
def test_truncation_at_every_length(fuzz_blob, with_arch):
    """A real buffer cut at any byte decodes to the whole packets before the cut, exactly as the uncut buffer
    decodes them, with the tail marked; strict=True refuses the same cuts with SQTTError."""
    data = fuzz_blob.data
    clean = decode(data)
    ends = [p.offset + p.size // 4 for p in clean]
    arch = fuzz_blob.arch if with_arch else None
    cuts = 0
    for length in range(8 if arch is None else 0, len(data) + 1):  # without arch the 8-byte header must be there
        packets, error = _bounded(data[:length], arch)
        assert error is None and packets == clean[:bisect.bisect_right(ends, 2 * length)], length
        _check_tail(data[:length], arch, packets)
        cuts += packets.truncated is not None
    assert cuts  # most cuts land inside a token


def test_byte_flips_keep_what_came_before(fuzz_blob):
    data = fuzz_blob.data
    clean = decode(data)
    rng = random.Random(f"flips-{fuzz_blob.id}")
    outcomes = collections.Counter()
    for _ in range(400):
        damaged = bytearray(data)
        where = rng.randrange(len(data))
        for k in range(rng.choice((1, 1, 2, 8))):
            if where + k < len(data):
                damaged[where + k] ^= rng.randrange(1, 256)
        packets, error = _bounded(bytes(damaged), fuzz_blob.arch)
        want = _prefix_before(clean, 2 * where)
        assert packets[:len(want)] == want
        if error is not None:
            assert error.offset >= (want[-1].offset + want[-1].size // 4 if want else 0)
        outcomes["error" if error else "clean"] += 1
    assert outcomes["clean"]


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200", "gfx950"])
def test_random_bytes_only_ever_raise_sqtterror(arch):
    rng = random.Random(arch)
    for _ in range(300):
        blob = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 200)))
        packets, error = _bounded(blob, arch)
        assert error is not None or all(isinstance(p, Packet) for p in packets)
