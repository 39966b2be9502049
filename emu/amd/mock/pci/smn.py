"""NBIO's indirect register access on the CDNA boards, for the registers BAR5 does not reach (the other IO dies', the
SMU's scratch, anything past the BAR's 1 MiB): a register's byte address on the SMN bus written to
BIF_BX0_PCIE_INDEX2 (its bits 39:32 to BIF_BX0_PCIE_INDEX2_HI), then BIF_BX0_PCIE_DATA2 read or written
(amdgpu_device_indirect_rreg / _ext, which soc15's pcie_rreg is); likewise BIF_BX_PF0_RSMU_INDEX and _DATA (the
path tinygrad's AM takes past BAR5). An address below BAR5's size is the BAR's own register; a register the board
models answers from its model (MP1_PUB_SCRATCH0: the SMU firmware's version, which amdgpu's PSP reads to pick the SOS
binaries); the rest hold what was written, in this process."""

from __future__ import annotations

from collections.abc import Callable


class SMN:
    def __init__(self, board, bar: int, answers: dict[int, Callable[[], int]]):
        """bar: the board's register BAR; answers: byte address -> the model's value of a register there."""
        self.board, self.bar, self.answers = board, bar, answers
        self.stored: dict[int, int] = {}
        at = {n: board.address("NBIF", n) for n in ("BIF_BX0_PCIE_INDEX2", "BIF_BX0_PCIE_INDEX2_HI",
                                                    "BIF_BX0_PCIE_DATA2", "BIF_BX_PF0_RSMU_INDEX",
                                                    "BIF_BX_PF0_RSMU_DATA")}
        for data, index, high in ((at["BIF_BX0_PCIE_DATA2"], at["BIF_BX0_PCIE_INDEX2"], at["BIF_BX0_PCIE_INDEX2_HI"]),
                                  (at["BIF_BX_PF0_RSMU_DATA"], at["BIF_BX_PF0_RSMU_INDEX"], None)):
            board.on_read[data] = lambda data=data, index=index, high=high: self._read(data, self._address(index, high))
            board.on_write[data] = lambda value, index=index, high=high: self.write(self._address(index, high), value)

    def _address(self, index: int, high: int | None) -> int:
        regs = self.board.regs
        return (int(regs[high]) & 0xFF) << 32 | int(regs[index]) if high is not None else int(regs[index])

    def read(self, address: int) -> int:
        if address + 4 <= 4 * len(self.board.regs):
            return self.board.bar_read(self.bar, address)
        if address in self.answers:
            return self.answers[address]()
        return self.stored.get(address, 0)

    def write(self, address: int, value: int) -> None:
        if address + 4 <= 4 * len(self.board.regs):
            self.board.bar_write(self.bar, address, value)
        else:
            self.stored[address] = value

    def _read(self, data: int, address: int) -> None:
        self.board.regs[data] = self.read(address)
