"""The SMs' PC sampler as a profiler's PMA stream carries it: the samples a launch yields and the bytes the PMA
writes of them.

Each SM takes one sample of a warp every SAMPLE_PERIOD cycles (CUPTI's shortest sampling period, 2^5 cycles). The
launch's blocks share the SMs out evenly, and an SM issues a warp-instruction a cycle from each of its schedulers
that has a warp (chips.SCHEDULERS_PER_SM, fewer where fewer warps are resident): so a launch yields one sample per
SAMPLE_PERIOD times that many warp-instructions, and its samples fall on its instructions in proportion to how often
its warps issued each (the emulator counts them: State.issued). The mock emulates PTX, not
SASS: an instruction's PC is the program's address plus 16 bytes (one SASS instruction) per PTX instruction before
it. Every sample is of a warp that was issuing (the emulator models no stall): the stall reason is "selected", the
warp active. The SMs the launch's blocks ran on take the samples in turn.

The stream's layout (tinygrad's reading of it, checked against CUPTI's PC sampling: extra/nv_pma/decode.py): the
PMA writes 32-byte packets, each with a header dword at byte 4 (NUM_BYTES 4:0, the SM's id 15:8 and 27:25 as its
low 8 and high 3 bits, DROPPED 28) and up to 28 bytes of the SM's sample records at bytes 0-3 and 8-31; records run
on from one packet of an SM to its next. A record is 8 bytes up to Hopper (PC >> 4 in 44:0, stall reason 49:45,
warp 55:50, active 62) and 9 bytes from Blackwell (stall reason 5:0, warp 7:6 high and 71:68 low bits, PC >> 4 in
60:8, active 67). An SM's id is gpc << 5 | tpc << 1 | sm, as tinygrad's PMA=1 enumerates them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from usergpu.emu.nv.mock.chips import SCHEDULERS_PER_SM, Chip

SAMPLE_PERIOD = 32  # cycles between an SM's samples
PACKET, HEADER_AT = 32, 4  # bytes a packet, where its header dword is
CARRIED = (*range(0, HEADER_AT), *range(HEADER_AT + 4, PACKET))  # the packet bytes that carry record bytes
INSTRUCTION = 16  # bytes of a SASS instruction: the PC step from one instruction to the next


@dataclass(frozen=True)
class RecordFormat:
    """A sample record's bytes and where its fields lie (bit ranges, low first; a field may be split)."""

    size: int
    pc: tuple[tuple[int, int], ...]  # (low bit, width) pieces of PC >> 4, least significant first
    stall: tuple[int, int]
    warp: tuple[tuple[int, int], ...]
    active: int
    selected: int  # the stall reason code of a warp that issued

    def encode(self, pc: int, warp: int) -> bytes:
        value = _put(0, self.stall, self.selected) | 1 << self.active
        value = _pieces(value, self.pc, pc >> 4)
        return _pieces(value, self.warp, warp).to_bytes(self.size, "little")


def _put(value: int, at: tuple[int, int], field: int) -> int:
    low, width = at
    return value | (field & ((1 << width) - 1)) << low


def _pieces(value: int, pieces: tuple[tuple[int, int], ...], field: int) -> int:
    for low, width in pieces:
        value, field = _put(value, (low, width), field), field >> width
    return value


AMPERE = RecordFormat(8, ((0, 45),), (45, 5), ((50, 6),), 62, 18)
BLACKWELL = RecordFormat(9, ((8, 53),), (0, 6), ((68, 4), (6, 2)), 67, 0x11)
BLACKWELL_SM = 0xA04  # the first SM version that writes BLACKWELL records


def record_format(sm_version: int) -> RecordFormat:
    return BLACKWELL if sm_version >= BLACKWELL_SM else AMPERE


def sm_ids(chip: Chip) -> list[int]:
    """Each SM's id in the stream, SMs numbered GPC by GPC, TPC by TPC."""
    return [gpc << 5 | tpc << 1 | sm for gpc in range(chip.gpcs) for tpc in range(chip.tpc_per_gpc)
            for sm in range(chip.sm_per_tpc)]


def sample_counts(issued: np.ndarray, per_sample: int) -> np.ndarray:
    """Samples per instruction: one per per_sample warp-instructions of the launch, shared out in proportion to each
    instruction's (largest remainders first, earlier instructions on a tie)."""
    issued = np.asarray(issued, np.int64)
    total = int(issued.sum()) // per_sample
    if total == 0:
        return np.zeros_like(issued)
    exact = issued * total
    counts = exact // int(issued.sum())
    left = total - int(counts.sum())
    order = np.lexsort((np.arange(len(issued)), -(exact % int(issued.sum()))))
    counts[order[:left]] += 1
    return counts


def packets(chip: Chip, program: int, issued: np.ndarray, blocks: int, warps_per_block: int) -> bytes:
    """The PMA's packets of a launch's samples: its program's address, the warp-instructions issued at each of its
    instructions, its block count and warps per block."""
    fmt, ids = record_format(chip.sm_version), sm_ids(chip)
    used = max(1, min(blocks, len(ids)))
    resident = max(1, min(chip.warps_per_sm, warps_per_block * -(-blocks // used)))
    streams: dict[int, bytearray] = {}
    n = 0
    per_sample = SAMPLE_PERIOD * min(SCHEDULERS_PER_SM, resident)
    for index, count in enumerate(sample_counts(issued, per_sample)):
        for _ in range(int(count)):
            sm = ids[n % used]
            streams.setdefault(sm, bytearray()).extend(fmt.encode(program + INSTRUCTION * index, n // used % resident))
            n += 1
    out = bytearray()
    for sm, data in streams.items():
        for at in range(0, len(data), len(CARRIED)):
            chunk = data[at:at + len(CARRIED)]
            packet = bytearray(PACKET)
            header = len(chunk) | (sm & 0xFF) << 8 | (sm >> 8 & 0x7) << 25  # NUM_BYTES, the SM id's low, high bits
            packet[HEADER_AT:HEADER_AT + 4] = header.to_bytes(4, "little")
            for i, byte in enumerate(chunk):
                packet[CARRIED[i]] = byte
            out += packet
    return bytes(out)
