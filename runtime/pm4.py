"""The PM4 compute queue: packets built in userspace (register writes, dispatches, releases, waits), written to a
ring in GPU memory, submitted by moving the write pointer and ringing the doorbell."""

from __future__ import annotations

from usergpu.autogen import pm4_nv as pm4
from usergpu.runtime.ring import RingQueue

CACHE_FLUSH_AND_INV_TS_EVENT, CS_PARTIAL_FLUSH = 0x14, 0x7
DATA_SEL_VALUE64, DATA_SEL_TIMESTAMP = 2, 3
INT_SEL_NONE, INT_SEL_AFTER_WRITE = 0, 2
WAIT_EQ, WAIT_GEQ, MEM_SPACE_REGISTER, MEM_SPACE_MEMORY = 3, 5, 0, 1
COPY_SRC_REGISTER, COPY_DST_MEMORY, COPY_COUNT_64, COPY_WR_CONFIRM = 0, 5 << 8, 1 << 16, 1 << 20


class ComputeQueue(RingQueue):
    """A user-mode PM4 queue of a device (a KFD compute queue); its pointers count dwords."""

    kind, unit = "pm4", 4


class Packets(list):
    """A list of PM4 dwords with builders for the packets the runtime uses."""

    def pkt3(self, op: int, *body: int) -> Packets:
        self += [pm4.PACKET3(op, len(body) - 1), *body]
        return self

    def set_sh_regs(self, regs: dict[int, int]) -> Packets:
        """SET_SH_REG for each run of consecutive register offsets (dword offsets from the SH base)."""
        offsets = sorted(regs)
        start = 0
        for i in range(1, len(offsets) + 1):
            if i == len(offsets) or offsets[i] != offsets[i - 1] + 1:
                run = offsets[start:i]
                self.pkt3(pm4.PACKET3_SET_SH_REG, run[0], *(regs[o] for o in run))
                start = i
        return self

    def set_uconfig_regs(self, regs: dict[int, int]) -> Packets:
        """SET_UCONFIG_REG of each register (dword address) to its value, in the order given."""
        for address, value in regs.items():
            self.pkt3(pm4.PACKET3_SET_UCONFIG_REG, address - pm4.PACKET3_SET_UCONFIG_REG_START, value)
        return self

    def event(self, event_type: int, index: int = 0) -> Packets:
        """EVENT_WRITE of a VGT event (soc.vgt_event names them)."""
        return self.pkt3(pm4.PACKET3_EVENT_WRITE, pm4.EVENT_TYPE(event_type) | pm4.EVENT_INDEX(index))

    def copy_register(self, address: int, dst: int, qword: bool = False) -> Packets:
        """COPY_DATA of a register (dword address; with qword, it and the next) to memory at dst."""
        control = COPY_SRC_REGISTER | COPY_DST_MEMORY | COPY_WR_CONFIRM | (COPY_COUNT_64 if qword else 0)
        return self.pkt3(pm4.PACKET3_COPY_DATA, control, address, 0, dst & 0xFFFFFFFF, dst >> 32)

    def wait_register(self, address: int, mask: int, reference: int) -> Packets:
        """Stall until (register & mask) == reference."""
        return self.pkt3(pm4.PACKET3_WAIT_REG_MEM,
                         pm4.WAIT_REG_MEM_FUNCTION(WAIT_EQ) | pm4.WAIT_REG_MEM_MEM_SPACE(MEM_SPACE_REGISTER),
                         address, 0, reference, mask, 0x20)

    def memory_barrier(self) -> Packets:
        """ACQUIRE_MEM: invalidate the caches before what follows (gfx10+: coher_cntl, size, base, poll interval,
        GCR_CNTL)."""
        return self.pkt3(pm4.PACKET3_ACQUIRE_MEM, 0, 0xFFFFFFFF, 0xFFFFFF, 0, 0, 0x0A, 0x3FF)

    def exec(self, regs: dict[int, int], grid: tuple[int, int, int], initiator: int) -> Packets:
        """A dispatch: the COMPUTE_* registers (by SH offset), DISPATCH_DIRECT over grid workgroups, and a partial
        flush so what follows sees its writes."""
        self.set_sh_regs(regs).pkt3(pm4.PACKET3_DISPATCH_DIRECT, *grid, initiator)
        return self.pkt3(pm4.PACKET3_EVENT_WRITE, pm4.EVENT_TYPE(CS_PARTIAL_FLUSH) | pm4.EVENT_INDEX(4))

    def timestamp(self, address: int) -> Packets:
        """The GPU clock, written to address when the work before has finished."""
        return self.release_mem(address, 0, DATA_SEL_TIMESTAMP)

    def release_mem(self, address: int, value: int, data_sel: int, interrupt_ctx: int | None = None) -> Packets:
        """At the end of the preceding work: write value (or the GPU clock) to address; interrupt if asked."""
        int_sel = INT_SEL_NONE if interrupt_ctx is None else INT_SEL_AFTER_WRITE
        return self.pkt3(pm4.PACKET3_RELEASE_MEM,
                         pm4.PACKET3_RELEASE_MEM_EVENT_TYPE(CACHE_FLUSH_AND_INV_TS_EVENT)
                         | pm4.PACKET3_RELEASE_MEM_EVENT_INDEX(5),
                         pm4.PACKET3_RELEASE_MEM_DATA_SEL(data_sel) | pm4.PACKET3_RELEASE_MEM_INT_SEL(int_sel),
                         address & 0xFFFFFFFF, address >> 32, value & 0xFFFFFFFF, value >> 32, interrupt_ctx or 0)

    def wait(self, sig, value: int) -> Packets:
        """Stall until the signal's value (its low dword) is >= value."""
        return self.wait_geq(sig.va + sig.VALUE, value)

    def wait_geq(self, address: int, value: int) -> Packets:
        """Stall until the dword at address is >= value."""
        return self.pkt3(pm4.PACKET3_WAIT_REG_MEM,
                         pm4.WAIT_REG_MEM_FUNCTION(WAIT_GEQ) | pm4.WAIT_REG_MEM_MEM_SPACE(MEM_SPACE_MEMORY),
                         address & 0xFFFFFFFF, address >> 32, value & 0xFFFFFFFF, 0xFFFFFFFF, 0x20)

    def signal(self, sig, value: int, interrupt_ctx: int | None) -> Packets:
        """The signal's timestamp, then its value (which wakes the CPU through the event)."""
        return self.timestamp(sig.va + sig.TIMESTAMP).release_mem(sig.va + sig.VALUE, value, DATA_SEL_VALUE64,
                                                                  interrupt_ctx)
