"""The mock IH (OSSSYS): an interrupt an engine raises becomes an IV entry (8 dwords, _ih.py) written to the ring
the driver set up (IH_RB_BASE, size from IH_RB_CNTL.RB_SIZE, an MC address in VRAM), advancing IH_RB_WPTR (a
byte offset). A full ring drops the entry and sets IH_RB_WPTR.RB_OVERFLOW, as the hardware does with
WPTR_OVERFLOW_ENABLE. Reading IH_RB_WPTR lets the engines run first: a driver polling for interrupts is where
the mock's single thread does the GPU's work."""

from __future__ import annotations

import numpy as np

from usergpu.isa.amd.hw import ih as _ih


class IH:
    def __init__(self, board, gpu, run):
        """run: the board's engines, run until they can make no more progress."""
        self.board, self.run = board, run
        self.reg = {n: board.address("OSSSYS", n) for n in ("IH_RB_CNTL", "IH_RB_BASE", "IH_RB_BASE_HI",
                                                            "IH_RB_RPTR", "IH_RB_WPTR")}
        self.cntl = board.table("OSSSYS", "IH_RB_CNTL")
        self._cntl_fields: tuple[int | None, dict] = (None, {})  # IH_RB_CNTL's last value and its fields
        gpu.interrupt_handlers.append(self.interrupt)
        board.on_read[self.reg["IH_RB_WPTR"]] = self.run
        board.on_write[self.reg["IH_RB_CNTL"]] = self._cntl

    def _cntl(self, value: int) -> None:
        if self.cntl.decode(value)["WPTR_OVERFLOW_CLEAR"]:
            self.board.regs[self.reg["IH_RB_WPTR"]] &= 0xFFFFFFFE

    def interrupt(self, source: str, context_id: int) -> None:
        self.post(source, (context_id,))

    def post(self, source: str, data: tuple[int, ...]) -> None:
        """An IV entry from source (_ih.SOURCES) with its source data."""
        regs = self.board.regs
        raw = int(regs[self.reg["IH_RB_CNTL"]])
        if self._cntl_fields[0] != raw:  # decoded again only when the driver changes it
            self._cntl_fields = (raw, self.cntl.decode(raw))
        cntl = self._cntl_fields[1]
        if not cntl["RB_ENABLE"] or not cntl["ENABLE_INTR"]:
            return
        size = 4 << cntl["RB_SIZE"]
        wptr, rptr = int(regs[self.reg["IH_RB_WPTR"]]) & (size - 4), int(regs[self.reg["IH_RB_RPTR"]]) & (size - 4)
        if (wptr + _ih.ENTRY_BYTES) % size == rptr:
            regs[self.reg["IH_RB_WPTR"]] |= 1 if cntl["WPTR_OVERFLOW_ENABLE"] else 0
            return
        base = (int(regs[self.reg["IH_RB_BASE_HI"]]) << 32 | int(regs[self.reg["IH_RB_BASE"]])) << 8
        client, src = _ih.SOURCES[source]
        words = np.array(_ih.encode(client, src, data, self.board.gpu.timestamp()), np.uint32)
        at = self.board.mc_to_vram(base + wptr, _ih.ENTRY_BYTES)
        self.board.vram[at : at + _ih.ENTRY_BYTES] = words.view(np.uint8)
        regs[self.reg["IH_RB_WPTR"]] = (wptr + _ih.ENTRY_BYTES) % size | int(regs[self.reg["IH_RB_WPTR"]]) & 1
