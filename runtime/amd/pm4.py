"""The PM4 compute queue: packets built in userspace (register writes, dispatches, releases, waits), written to a
ring in GPU memory, submitted by moving the write pointer and ringing the doorbell.

The packets are the arch's family's (nvd.h for gfx10+, soc15d.h for gfx9: the same encodings but ACQUIRE_MEM's, which
gfx9 gives CP_COHER_CNTL's cache actions instead of GCR_CNTL). Every XCC of a CDNA GPU runs a PM4 queue, each the
whole of every dispatch (amdkfd's PM4 MQD splits no workgroups), so on such a GPU the queue predicates what it
submits to its first XCC: an indirect buffer of PRED_EXEC and the packets (the MEC takes PRED_EXEC in IBs only).
"""

from __future__ import annotations

import functools
from array import array

from usergpu.isa.amd.hw.soc import PM4, family
from usergpu.runtime.amd.ring import RingQueue

CACHE_FLUSH_AND_INV_TS_EVENT, CS_PARTIAL_FLUSH = 0x14, 0x7
DATA_SEL_VALUE64, DATA_SEL_TIMESTAMP = 2, 3
INT_SEL_NONE, INT_SEL_AFTER_WRITE = 0, 2
WAIT_EQ, WAIT_GEQ, MEM_SPACE_REGISTER, MEM_SPACE_MEMORY = 3, 5, 0, 1
COPY_SRC_REGISTER, COPY_DST_MEMORY, COPY_COUNT_64, COPY_WR_CONFIRM = 0, 5 << 8, 1 << 16, 1 << 20
FIRST_XCC = 1  # PRED_EXEC's VIRTUALXCCID_SELECT of XCC 0
XCC_SELECT_SHIFT = 24
EVENT_INDEX_PARTIAL_FLUSH, EVENT_INDEX_EOP = 4, 5  # EVENT_INDEX of *S_PARTIAL_FLUSH and of EOP events (nvd.h)
WAIT_POLL_INTERVAL = 0x20  # WAIT_REG_MEM's last dword, as gfx_v11_0_ring_emit_reg_wait writes it
IB_BASE_LO = 0xFFFFFFFC  # INDIRECT_BUFFER's base is dword-aligned: the low dword's bits 1:0 are not address
# ACQUIRE_MEM's range and poll as amdgpu's emit_mem_sync writes them (gfx_v9_4_3.c, gfx_v11_0.c): CP_COHER_SIZE and
# _HI all of memory (in 256-byte units), CP_COHER_BASE and _HI 0, then POLL_INTERVAL
COHER_ALL_MEMORY = (0xFFFFFFFF, 0xFFFFFF, 0, 0)
COHER_POLL_INTERVAL = 0x0A
GCR_FIRST_LAST = 3  # GCR_CNTL's GLI_INV and GL1_RANGE value FIRST_LAST (nvd.h)


def _acquire_gfx9(pm4) -> tuple[int, ...]:
    """gfx_v9_4_3_emit_mem_sync's: the I$, K$, TC and TCL1 actions with TC write-back, on all of memory."""
    cntl = (pm4.PACKET3_ACQUIRE_MEM_CP_COHER_CNTL_SH_ICACHE_ACTION_ENA(1)
            | pm4.PACKET3_ACQUIRE_MEM_CP_COHER_CNTL_SH_KCACHE_ACTION_ENA(1)
            | pm4.PACKET3_ACQUIRE_MEM_CP_COHER_CNTL_TC_ACTION_ENA(1)
            | pm4.PACKET3_ACQUIRE_MEM_CP_COHER_CNTL_TCL1_ACTION_ENA(1)
            | pm4.PACKET3_ACQUIRE_MEM_CP_COHER_CNTL_TC_WB_ACTION_ENA(1))
    return cntl, *COHER_ALL_MEMORY, COHER_POLL_INTERVAL


def _acquire_gfx10(pm4) -> tuple[int, ...]:
    """No CP_COHER_CNTL actions (gfx10+ takes them from GCR_CNTL), all of memory, then GCR_CNTL: the I$ and GL1
    (FIRST_LAST), GLM and K$ written back and invalidated, GLV and GL1 invalidated; GL2 left alone."""
    gcr = (pm4.PACKET3_ACQUIRE_MEM_GCR_CNTL_GLI_INV(GCR_FIRST_LAST)
           | pm4.PACKET3_ACQUIRE_MEM_GCR_CNTL_GL1_RANGE(GCR_FIRST_LAST)
           | pm4.PACKET3_ACQUIRE_MEM_GCR_CNTL_GLM_WB(1) | pm4.PACKET3_ACQUIRE_MEM_GCR_CNTL_GLM_INV(1)
           | pm4.PACKET3_ACQUIRE_MEM_GCR_CNTL_GLK_WB(1) | pm4.PACKET3_ACQUIRE_MEM_GCR_CNTL_GLK_INV(1)
           | pm4.PACKET3_ACQUIRE_MEM_GCR_CNTL_GLV_INV(1) | pm4.PACKET3_ACQUIRE_MEM_GCR_CNTL_GL1_INV(1))
    return 0, *COHER_ALL_MEMORY, COHER_POLL_INTERVAL, gcr


# family -> ACQUIRE_MEM's body, and RELEASE_MEM's field encoders (EVENT_TYPE, EVENT_INDEX, DATA_SEL, INT_SEL)
ACQUIRE = {"gfx94": _acquire_gfx9, "gfx95": _acquire_gfx9, "gfx11": _acquire_gfx10, "gfx12": _acquire_gfx10}
RELEASE = {"gfx94": ("EVENT_TYPE", "EVENT_INDEX", "DATA_SEL", "INT_SEL"),
           "gfx95": ("EVENT_TYPE", "EVENT_INDEX", "DATA_SEL", "INT_SEL"),
           **dict.fromkeys(("gfx11", "gfx12"), ("PACKET3_RELEASE_MEM_EVENT_TYPE", "PACKET3_RELEASE_MEM_EVENT_INDEX",
                                               "PACKET3_RELEASE_MEM_DATA_SEL", "PACKET3_RELEASE_MEM_INT_SEL"))}


@functools.cache
def _encoded(family: str, macro: str, args: tuple[int, ...]) -> int:
    """A field macro of the family's PM4 header applied to args: a runtime builds the same few dwords launch after
    launch, so each is worked out once."""
    return getattr(PM4[family], macro)(*args)


@functools.lru_cache(maxsize=256)
def _runs(offsets: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """The offsets sorted and cut into runs of consecutive ones (a launch sets the same registers as the last)."""
    ordered, runs = sorted(offsets), []
    for offset in ordered:
        if runs and offset == runs[-1][-1] + 1:
            runs[-1].append(offset)
        else:
            runs.append([offset])
    return tuple(tuple(run) for run in runs)


@functools.cache
def _acquire(family: str) -> tuple[int, ...]:
    return ACQUIRE[family](PM4[family])


class ComputeQueue(RingQueue):
    """A user-mode PM4 queue of a device (a KFD compute queue); its pointers count dwords."""

    kind, unit = "pm4", 4

    def submit(self, packets: list[int]) -> None:
        """On a GPU of several XCCs, the packets run on the first one alone, from an IB (see the module doc)."""
        if self.dev.xccs > 1:
            body = self.dev.first_xcc(packets)
            ib = self.dev.arena(4 * len(body))
            self.dev.arena_view(ib, 4 * len(body)).cast("I")[:] = array("I", body)
            packets = self.dev.packets().indirect_buffer(ib, len(body))
        super().submit(packets)


class Packets(list):
    """A list of PM4 dwords with builders for the packets the runtime uses, in the arch's encodings."""

    def __init__(self, arch: str = "gfx1100"):
        super().__init__()
        self.family = family(arch)
        self.pm4 = PM4[self.family]

    def encode(self, macro: str, *args: int) -> int:
        """A field macro of the arch's PM4 header (PACKET3, EVENT_TYPE, ...) applied to args."""
        return _encoded(self.family, macro, args)

    def pkt3(self, op: int, *body: int) -> Packets:
        self += [_encoded(self.family, "PACKET3", (op, len(body) - 1)), *body]
        return self

    def pred_exec(self, xccs: int, packets: list[int]) -> Packets:
        """PRED_EXEC: the packets run on the XCCs of the mask (bit n: the partition's XCC n) only (in an IB)."""
        self.pkt3(self.pm4.PACKET3_PRED_EXEC, xccs << XCC_SELECT_SHIFT | len(packets))
        self += packets
        return self

    def indirect_buffer(self, address: int, dwords: int) -> Packets:
        return self.pkt3(self.pm4.PACKET3_INDIRECT_BUFFER, address & IB_BASE_LO, address >> 32,
                         dwords | self.pm4.INDIRECT_BUFFER_VALID)

    def set_sh_regs(self, regs: dict[int, int]) -> Packets:
        """SET_SH_REG for each run of consecutive register offsets (dword offsets from the SH base)."""
        for run in _runs(tuple(regs)):
            self.pkt3(self.pm4.PACKET3_SET_SH_REG, run[0], *(regs[o] for o in run))
        return self

    def set_uconfig_regs(self, regs: dict[int, int]) -> Packets:
        """SET_UCONFIG_REG of each register (dword address) to its value, in the order given."""
        for address, value in regs.items():
            self.pkt3(self.pm4.PACKET3_SET_UCONFIG_REG, address - self.pm4.PACKET3_SET_UCONFIG_REG_START, value)
        return self

    def event(self, event_type: int, index: int = 0) -> Packets:
        """EVENT_WRITE of a VGT event (soc.vgt_event names them)."""
        return self.pkt3(self.pm4.PACKET3_EVENT_WRITE, self.encode("EVENT_TYPE", event_type)
                         | self.encode("EVENT_INDEX", index))

    def copy_register(self, address: int, dst: int, qword: bool = False) -> Packets:
        """COPY_DATA of a register (dword address; with qword, it and the next) to memory at dst."""
        control = COPY_SRC_REGISTER | COPY_DST_MEMORY | COPY_WR_CONFIRM | (COPY_COUNT_64 if qword else 0)
        return self.pkt3(self.pm4.PACKET3_COPY_DATA, control, address, 0, dst & 0xFFFFFFFF, dst >> 32)

    def wait_register(self, address: int, mask: int, reference: int) -> Packets:
        """Stall until (register & mask) == reference."""
        return self.pkt3(self.pm4.PACKET3_WAIT_REG_MEM,
                         self.encode("WAIT_REG_MEM_FUNCTION", WAIT_EQ)
                         | self.encode("WAIT_REG_MEM_MEM_SPACE", MEM_SPACE_REGISTER),
                         address, 0, reference, mask, WAIT_POLL_INTERVAL)

    def memory_barrier(self) -> Packets:
        """ACQUIRE_MEM: invalidate the caches before what follows (the family's body, ACQUIRE)."""
        return self.pkt3(self.pm4.PACKET3_ACQUIRE_MEM, *_acquire(self.family))

    def exec(self, registers: list[int], grid: tuple[int, int, int], initiator: int) -> Packets:
        """A dispatch: the packets that set its COMPUTE_* registers (set_sh_regs'), DISPATCH_DIRECT over grid
        workgroups, and a partial flush so what follows sees its writes."""
        self += registers
        return self.pkt3(self.pm4.PACKET3_DISPATCH_DIRECT, *grid, initiator).event(CS_PARTIAL_FLUSH,
                                                                                   EVENT_INDEX_PARTIAL_FLUSH)

    def timestamp(self, address: int) -> Packets:
        """The GPU clock, written to address when the work before has finished."""
        return self.release_mem(address, 0, DATA_SEL_TIMESTAMP)

    def release_mem(self, address: int, value: int, data_sel: int, interrupt_ctx: int | None = None) -> Packets:
        """At the end of the preceding work: write value (or the GPU clock) to address; interrupt if asked."""
        int_sel = INT_SEL_NONE if interrupt_ctx is None else INT_SEL_AFTER_WRITE
        event, index, data, interrupt = RELEASE[self.family]
        return self.pkt3(self.pm4.PACKET3_RELEASE_MEM,
                         self.encode(event, CACHE_FLUSH_AND_INV_TS_EVENT) | self.encode(index, EVENT_INDEX_EOP),
                         self.encode(data, data_sel) | self.encode(interrupt, int_sel),
                         address & 0xFFFFFFFF, address >> 32, value & 0xFFFFFFFF, value >> 32, interrupt_ctx or 0)

    def wait(self, sig, value: int) -> Packets:
        """Stall until the signal's value (its low dword) is >= value."""
        return self.wait_geq(sig.va + sig.VALUE, value)

    def wait_geq(self, address: int, value: int) -> Packets:
        """Stall until the dword at address is >= value."""
        return self.pkt3(self.pm4.PACKET3_WAIT_REG_MEM,
                         self.encode("WAIT_REG_MEM_FUNCTION", WAIT_GEQ)
                         | self.encode("WAIT_REG_MEM_MEM_SPACE", MEM_SPACE_MEMORY),
                         address & 0xFFFFFFFF, address >> 32, value & 0xFFFFFFFF, 0xFFFFFFFF, WAIT_POLL_INTERVAL)

    def signal(self, sig, value: int, interrupt_ctx: int | None) -> Packets:
        """The signal's timestamp, then its value (which wakes the CPU through the event)."""
        return self.timestamp(sig.va + sig.TIMESTAMP).release_mem(sig.va + sig.VALUE, value, DATA_SEL_VALUE64,
                                                                  interrupt_ctx)
