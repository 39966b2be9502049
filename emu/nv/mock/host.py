"""The GPFIFO class's host methods (executed by the channel itself, whatever the subchannel: every method below 0x100)
and the semaphore operations every engine shares.

Classes: AMPERE_CHANNEL_GPFIFO_A (c56f, Ampere and Ada), HOPPER_CHANNEL_GPFIFO_A (c86f) and Blackwell's
BLACKWELL_CHANNEL_GPFIFO_A and _B (c96f, ca6f). Their RM SDK headers have only the methods the RM pushes (MEM_OP_*,
SEM_ADDR_LO/HI, SEM_EXECUTE, WFI); nvidia-uvm's full clc86f.h has c56f's host methods at c56f's offsets, with
SEM_ADDR_HI widened to 25 bits, so each one's table is its own methods over its predecessors', down to c56f's.

Semaphores: a release writes the payload (4 or 8 bytes) and, with a timestamp, the GPU's ns clock at +8 (a 16-byte
report); a reduction combines the payload with the value there; an acquire stalls its channel until the value at the
address satisfies the compare (ACQ_CIRC_GEQ compares as a wrapping counter of the payload's width).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from usergpu.autogen import nv_classes as nc
from usergpu.autogen import nv_rm_535 as rm
from usergpu.emu.nv.mock.engine import Engine, named

if TYPE_CHECKING:
    from usergpu.emu.nv.mock.vaspace import VASpace

HOST_METHODS = 0x100  # methods below this offset go to the host (PBDMA), above it to the subchannel's engine
_CHAIN = ("NVCA6F", "NVC96F", "NVC86F", "NVC56F")  # newest first
CHAINS = {nc.AMPERE_CHANNEL_GPFIFO_A: _CHAIN[3:], nc.HOPPER_CHANNEL_GPFIFO_A: _CHAIN[2:],
          nc.BLACKWELL_CLASSES["BLACKWELL_CHANNEL_GPFIFO_A"]: _CHAIN[1:],
          nc.BLACKWELL_CLASSES["BLACKWELL_CHANNEL_GPFIFO_B"]: _CHAIN}


def _signed(v: int, bits: int) -> int:
    return v - (1 << bits) if v >> (bits - 1) & 1 else v


def _pick(choose: Callable) -> Callable[[int, int, int, bool], int]:
    return lambda old, p, bits, signed: choose(old, p, key=lambda v: _signed(v, bits) if signed else v)


# reduction -> new value from (old value, payload, width in bits, signed)
REDUCE: dict[str, Callable[[int, int, int, bool], int]] = {
    "MIN": _pick(min), "MAX": _pick(max),
    "XOR": lambda o, p, b, s: o ^ p, "AND": lambda o, p, b, s: o & p, "OR": lambda o, p, b, s: o | p,
    "ADD": lambda o, p, b, s: o + p,
    "INC": lambda o, p, b, s: 0 if o >= p else o + 1,  # a counter wrapping after the payload
    "DEC": lambda o, p, b, s: p if o == 0 or o > p else o - 1,
}

# acquire -> whether (value in memory, payload, width in bits) lets the channel go on
ACQUIRE: dict[str, Callable[[int, int, int], bool]] = {
    "ACQUIRE": lambda v, p, b: v == p,
    "ACQ_STRICT_GEQ": lambda v, p, b: v >= p,
    "ACQ_CIRC_GEQ": lambda v, p, b: (v - p) & ((1 << b) - 1) < 1 << (b - 1),
    "ACQ_AND": lambda v, p, b: v & p != 0,
    "ACQ_NOR": lambda v, p, b: ~(v | p) & ((1 << b) - 1) != 0,
}


def reductions(prefix: str, spelling: str) -> dict[int, str]:
    """value -> REDUCE name of a reduction field's named values, spelled prefix + spelling + name or prefix + name
    (the headers write IMIN and INC, RED_MIN and RED_INC)."""
    out = {}
    for key in REDUCE:
        found = [n for n in (prefix + spelling + key, prefix + key) if hasattr(nc, n)]
        if found:
            out[getattr(nc, found[0])] = key
    return out


def release(gpu, vas: VASpace, va: int, payload: int, nbytes: int, timestamp: bool = False,
            reduce: str | None = None, signed: bool = False) -> None:
    """A semaphore release: the payload (or its reduction with what is there), then the timestamp at +8."""
    if reduce is not None:
        payload = REDUCE[reduce](vas.load(va, nbytes), payload, 8 * nbytes, signed)
    vas.store(va, nbytes, payload)
    if timestamp:
        vas.store(va + 8, 8, gpu.timestamp())


OPERATION = named("NVC56F_SEM_EXECUTE_OPERATION_", ("RELEASE", "REDUCTION", *ACQUIRE))
REDUCTION = reductions("NVC56F_SEM_EXECUTE_REDUCTION_", "I")


class Host(Engine):
    chains = CHAINS
    code = rm.ROBUST_CHANNEL_PBDMA_ERROR
    unmodelled = ("SEMAPHORED",)  # the pre-Volta semaphore (SEMAPHOREA..D): a runtime uses SEM_*

    def _sem_execute(self, value: int) -> bool:
        f = self.fields("SEM_EXECUTE", value)
        va = self.field("SEM_ADDR_LO", "OFFSET") << 2 | self.field("SEM_ADDR_HI", "OFFSET") << 32
        wide = f["PAYLOAD_SIZE"] == nc.NVC56F_SEM_EXECUTE_PAYLOAD_SIZE_64BIT
        payload = self.field("SEM_PAYLOAD_LO", "PAYLOAD") | (self.field("SEM_PAYLOAD_HI", "PAYLOAD") << 32 if wide
                                                             else 0)
        nbytes = 8 if wide else 4
        op = OPERATION.get(f["OPERATION"])
        if op in ACQUIRE:
            return ACQUIRE[op](self.vas.load(va, nbytes), payload, 8 * nbytes)
        if op == "RELEASE":
            release(self.gpu, self.vas, va, payload, nbytes, f["RELEASE_TIMESTAMP"] ==
                    nc.NVC56F_SEM_EXECUTE_RELEASE_TIMESTAMP_EN)
        elif op == "REDUCTION" and f["REDUCTION"] in REDUCTION:
            release(self.gpu, self.vas, va, payload, nbytes, reduce=REDUCTION[f["REDUCTION"]],
                    signed=f["REDUCTION_FORMAT"] == nc.NVC56F_SEM_EXECUTE_REDUCTION_FORMAT_SIGNED)
        else:
            raise self.fail(f"SEM_EXECUTE operation {f['OPERATION']} reduction {f['REDUCTION']} is not one of "
                            f"{', '.join(OPERATION.values())}")
        return True

    def _non_stall_interrupt(self, value: int) -> None:
        self.channel.interrupt()

    def _set_reference(self, value: int) -> None:
        self.channel.set_reference(value)

    def _illegal(self, value: int) -> None:
        raise self.fail(f"the ILLEGAL method (handle {value:#x})")

    # the rest (NOP, WFI, FB_FLUSH, MEM_OP_A..D, YIELD, CLEAR_FAULTED) are accepted: the mock runs a channel's
    # methods in order, its caches and TLBs hold nothing stale
    actions = {"SEM_EXECUTE": _sem_execute, "NON_STALL_INTERRUPT": _non_stall_interrupt,
               "SET_REFERENCE": _set_reference, "ILLEGAL": _illegal}
