"""The mock HDP's flush: NBIO's BIF_BX0_REMAP_HDP_MEM_FLUSH_CNTL says where in BAR5 the flush register is remapped
(the MMIO hole); a write there flushes. The mock's VRAM is coherent (CPU writes land at once), so a flush only
counts: `flushes`, and `unflushed`, the doorbells rung with no flush since the one before — on a real board the
engine could then read packets the HDP still holds back."""

from __future__ import annotations


class HDP:
    def __init__(self, board):
        self.board = board
        self.remap = board.address("NBIF", "BIF_BX0_REMAP_HDP_MEM_FLUSH_CNTL")
        self.flushes, self.unflushed = 0, 0
        self.flushed = False  # since the last doorbell
        board.on_write[self.remap] = self._remapped

    def _remapped(self, offset: int) -> None:
        self.board.on_write[offset // 4] = self._flush

    def _flush(self, value: int) -> None:
        self.flushes += 1
        self.flushed = True

    def doorbell(self) -> None:
        self.unflushed += not self.flushed
        self.flushed = False
