"""The mock HDP's flushes, from both sides of the bus.

The CPU's: NBIO's BIF_BX0_REMAP_HDP_MEM_FLUSH_CNTL says where in BAR5 the flush register is remapped (the MMIO
hole); a write there flushes (`HDP`, the PCI board's). The engines': NBIO's GPU_HDP_FLUSH_REQ / GPU_HDP_FLUSH_DONE
pair (`FlushRequests`, every mock GPU's): a client writes its bit (CP0..CP9, SDMA0/1, RSVD_ENG*) to REQ and waits
for it in DONE — amdgpu's gfx_v11_0/gfx_v12_0 emit_hdp_flush (WAIT_REG_MEM WR_WAIT_WR_REG) and sdma_v6_0/v7_0's
(POLL_REGMEM with HDP_FLUSH), tinygrad's memory_barrier. The registers are BIF_BX_PF0's, at the NBIO block's bases
in the mock's discovery table (nbio_v4_3.c / nbif_v6_3_1.c / nbio_v7_9.c get_hdp_flush_req/done_offset).

The mock's VRAM is coherent (CPU writes land at once), so a flush does nothing but count, and completes as it is
requested: a bit written to REQ reads as set in DONE from then on. `HDP.unflushed` counts the doorbells rung with no
flush since the one before — on a real board the engine could then read packets the HDP still holds back."""

from __future__ import annotations

from usergpu.emu.amd.mock import discovery
from usergpu.isa.amd.hw import ipmaps as _ipmaps

FLUSH_REQ, FLUSH_DONE = "BIF_BX_PF0_GPU_HDP_FLUSH_REQ", "BIF_BX_PF0_GPU_HDP_FLUSH_DONE"


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


def flush_registers(arch: str) -> dict[str, int]:
    """The dword addresses of GPU_HDP_FLUSH_REQ and _DONE on a mock GPU of the arch (an arch the discovery table
    does not list has its family's first board's NBIO)."""
    ips = discovery.IPS.get(arch) or next(ips for name, ips in discovery.IPS.items() if name[:5] == arch[:5])
    _, _, version, bases = next(ip for ip in ips if ip[0] == "NBIF")
    return {name: _ipmaps.address("NBIF", version, bases, name) for name in (FLUSH_REQ, FLUSH_DONE)}


class FlushRequests:
    """The engines' HDP flush: a write to REQ sets the same bits in DONE (the flush is done at once) and counts."""

    def __init__(self, gpu):
        self.gpu, self.flushes = gpu, 0
        for name, address in flush_registers(gpu.arch).items():
            gpu.attach(name, address)
        gpu.on_write[FLUSH_REQ] = self._request

    def _request(self, value: int) -> None:
        self.flushes += 1
        self.gpu.shared[FLUSH_DONE] = self.gpu.shared.get(FLUSH_DONE, 0) | value
