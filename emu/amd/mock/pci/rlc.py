"""The mock RLC's safe-mode handshake (gfx_v9_4_3.c's / gfx_v11_0.c's set_safe_mode): a driver writes RLC_SAFE_MODE
with CMD set (MESSAGE 1 to enter safe mode, 0 to leave it) and waits for the RLC to clear CMD. The mock's RLC
acknowledges at once once its firmware (RLC_G) is in; without it CMD stays set, as an RLC that never ran leaves it.
Each XCC's RLC answers the same way (the mock's XCCs share one register aperture)."""

from __future__ import annotations

from usergpu.autogen import psp_gfx_if


class RLC:
    def __init__(self, board):
        self.board = board
        self.at = board.address("GC", "RLC_SAFE_MODE")
        board.on_write[self.at] = self._safe_mode

    def _safe_mode(self, value: int) -> None:
        psp = self.board.psp
        if psp is None or psp.has_firmware(psp_gfx_if.GFX_FW_TYPE_RLC_G):
            self.board.regs[self.at] = value & ~self.board.table("GC", "RLC_SAFE_MODE").encode(CMD=1)
