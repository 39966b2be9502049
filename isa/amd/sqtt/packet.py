"""Packet (one decoded SQTT token), Packets (what decode returns: the packets, and where the buffer was cut off)
and SQTTError (a stream that is damaged, with what decoded before it)."""

from __future__ import annotations

from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from usergpu.errors import Error
from usergpu.isa.amd.sqtt.tables import TOKENS, Token


class Packet(tuple):
    """One token: .kind, .time (absolute cycles), .offset (nibbles from the blob's start), .fields; each field
    also reads as an attribute (p.wave). Two packets are equal when kind, time and fields are.

    Decoded packets keep the token's raw bits and its table row's id, and unpack fields when asked, so decoding
    stays cheap (and they hold only ints and strings, which the cyclic GC stops tracking); Packet(kind, fields,
    time) builds one by hand (for encode)."""

    __slots__ = ()

    kind: str = property(itemgetter(0))  # type: ignore[assignment]
    time: int = property(itemgetter(1))  # type: ignore[assignment]
    offset: int = property(itemgetter(2))  # type: ignore[assignment]

    def __new__(cls, kind: str, fields: dict[str, int] | None = None, time: int = 0, offset: int = -1) -> Packet:
        return tuple.__new__(cls, (kind, time, offset, None, None, dict(fields or {})))

    @property
    def token(self) -> Token | None:
        """The table row it was decoded with (None for a hand-built packet)."""
        return None if self[4] is None else TOKENS[self[4]]

    @property
    def raw(self) -> int | None:
        """The token's bits (None for a hand-built packet)."""
        return self[3]

    @property
    def size(self) -> int | None:
        """The token's length in bits (None for a hand-built packet)."""
        return None if self[4] is None else TOKENS[self[4]].size

    @property
    def fields(self) -> dict[str, Any]:
        return TOKENS[self[4]].unpack(self[3]) if self[4] is not None else dict(self[5])

    def __getattr__(self, name: str) -> int:
        if self[4] is not None:
            span = TOKENS[self[4]].spans.get(name)
            if span is not None:
                return (self[3] >> span[0]) & span[1]
        elif name in self[5]:
            return self[5][name]
        raise AttributeError(f"{self[0]} packet has no field {name!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Packet):
            return NotImplemented
        if self[4] is not None and self[4] == other[4]:  # same row: equal bits are equal fields
            return self[0] == other[0] and self[1] == other[1] and self[3] == other[3]
        return self[0] == other[0] and self[1] == other[1] and self.fields == other.fields

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash((self[0], self[1], tuple(sorted(self.fields.items()))))

    def __repr__(self) -> str:
        fields = " ".join(f"{k}={v}" for k, v in self.fields.items() if not k.startswith("rsvd"))
        return f"<{self[0]} t={self[1]} @{self[2]}{' ' + fields if fields else ''}>"

    def __reduce__(self):
        return Packet, (self[0], self.fields, self[1], self[2])


@dataclass(frozen=True, slots=True)
class Truncated:
    """Where a buffer ends inside a token (where the hardware stopped writing): the token it starts, where, how
    long it is and how many of its bits the buffer still holds."""

    kind: str  # the token the leftover bits start
    offset: int  # where it starts, in nibbles from the blob's start (the end of the last whole packet)
    size: int  # its length in bits
    bits: int  # the bits left in the buffer from offset on (fewer than size)

    @property
    def byte(self) -> int:
        return self.offset // 2

    def __str__(self) -> str:
        return f"{self.kind} token ({self.size} bits) cut off by the end of the buffer ({self.bits} bits left)"


class Packets(list):
    """decode()'s packets, in stream order; `.truncated` says where the buffer ended inside a token (a Truncated),
    None when it ends on a token boundary. Compares as the list it is."""

    truncated: Truncated | None = None


class SQTTError(Error):
    """A damaged SQTT stream (cut short, an unknown token, a header that contradicts the layout) or a trace
    that does not fit its program. `.packets` holds what decoded before the damage, `.offset` where it is
    (in nibbles from the blob's start)."""

    def __init__(self, why: str, offset: int, packets: list[Packet] | None = None):
        self.why, self.offset, self.packets = why, offset, packets if packets is not None else []
        super().__init__(f"SQTT: {why} at nibble {offset} (byte {offset // 2}), after {len(self.packets)} packets")
