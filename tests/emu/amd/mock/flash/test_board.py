"""The mock board's BAR5 models: the ROM_SW engine's quirks, the ROM_INDEX/ROM_DATA window and the PSP mailbox."""

from __future__ import annotations

import pytest

from usergpu.emu.amd.mock.flash.board import BARS, Navi31Board
from usergpu.emu.amd.mock.flash.spiflash import default_image
from usergpu.emu.amd.mock.pci.pcie import UR, CompletionError, Unplugged
from usergpu.isa.amd.hw.bar5 import (
    MP0_COMMAND,
    MP0_COMMAND_DATA,
    MP0_DOORBELL,
    MP0_READY,
    ROM_DATA,
    ROM_INDEX,
    ROM_SW_CNTL,
    ROM_SW_COMMAND,
    ROM_SW_DATA,
    ROM_SW_GATED,
    ROM_SW_RETURN_DATA_ENABLE,
    ROM_SW_STATUS,
)

BAR5 = BARS[5][0]


@pytest.fixture
def board(tmp_path):
    b = Navi31Board(tmp_path / "flash.bin", fault="", gated=False)
    yield b
    b.close()


def reg(board, offset, value=None):
    if value is None:
        return board.mem_read(BAR5 + offset)
    board.mem_write(BAR5 + offset, value)


def spi_read(board, opcode, address, size):
    reg(board, ROM_SW_CNTL, size | 4 << 16 | ROM_SW_RETURN_DATA_ENABLE)
    reg(board, ROM_SW_STATUS, 0)
    reg(board, ROM_SW_COMMAND, address << 8 | opcode)
    assert reg(board, ROM_SW_STATUS) & 1
    return b"".join(reg(board, ROM_SW_DATA + i).to_bytes(4, "big") for i in range(0, size, 4))[:size]


def test_a_read_shows_the_previous_read(board):
    image = default_image()
    first = spi_read(board, 0x03, 0x1000, 16)
    assert first == bytes(16)  # nothing received before
    assert spi_read(board, 0x03, 0x2000, 16) == image[0x1000:0x1010]
    assert spi_read(board, 0x03, 0x2000, 16) == image[0x2000:0x2010]


def spi_send(board, opcode, address=None, size=0):
    reg(board, ROM_SW_CNTL, size | (1 if address is None else 4) << 16)
    reg(board, ROM_SW_COMMAND, (address or 0) << 8 | opcode)
    while board.flash.status_register(0) & 1:  # until the flash is no longer busy
        pass


def test_tx_window_is_big_endian(board):
    """A page program of the window: the first byte on the wire is bits 31:24 of ROM_SW_DATA_1."""
    spi_send(board, 0x06)
    spi_send(board, 0x20, 0)  # erase sector 0
    reg(board, ROM_SW_DATA, 0x00112233)
    spi_send(board, 0x06)
    spi_send(board, 0x02, 0x40, 4)
    spi_read(board, 0x03, 0x40, 4)
    assert spi_read(board, 0x03, 0x40, 4) == bytes([0x00, 0x11, 0x22, 0x33])


def test_gated_engine_ignores_commands(tmp_path):
    board = Navi31Board(tmp_path / "flash.bin", fault="", gated=True)
    assert reg(board, ROM_SW_STATUS) == ROM_SW_GATED
    reg(board, ROM_SW_CNTL, 3 | 1 << 16 | ROM_SW_RETURN_DATA_ENABLE)
    reg(board, ROM_SW_COMMAND, 0x9F)
    reg(board, ROM_SW_COMMAND, 0x9F)
    assert reg(board, ROM_SW_DATA) == 0
    reg(board, ROM_INDEX, 0x100)  # the ROM_INDEX/ROM_DATA window still reads, moving on a dword each time
    image = default_image()
    assert [reg(board, ROM_DATA) for _ in range(2)] == [int.from_bytes(image[a : a + 4], "little")
                                                         for a in (0x100, 0x104)]


def mailbox(board, command, argument=0):
    reg(board, MP0_COMMAND_DATA, argument)
    reg(board, MP0_COMMAND, command)
    reg(board, MP0_DOORBELL, 1)
    value = reg(board, MP0_COMMAND)
    assert value & MP0_READY
    return value & 0xFFFF, reg(board, MP0_COMMAND_DATA)


def test_psp_mailbox_answers_and_refuses(board):
    assert mailbox(board, 0x0B) == (0, 0xC86015)
    assert mailbox(board, 0x06) == (0, 1)
    assert mailbox(board, 0x42)[0] == 1  # unknown command
    assert mailbox(board, 0x07, 0x9)[0] == 2  # unknown transfer type
    assert mailbox(board, 0x09, 4096)[0] == 3  # data before a transfer started
    assert mailbox(board, 0x07, 0x1) == (0, 0)
    error, request = mailbox(board, 0x08, 2 << 20)
    assert error == 0 and request == 1 << 24 | 1 << 12  # phase 1: one sector at offset 0


def test_requests_nothing_decodes_are_unsupported(board):
    with pytest.raises(CompletionError) as e:
        board.mem_read(0x1000)
    assert e.value.status == UR
    with pytest.raises(CompletionError):
        board.config_read(2, 0, 0)
    board.dead = True
    with pytest.raises(Unplugged):
        board.mem_read(BAR5)


def test_two_boards_share_no_state(tmp_path):
    """Boards on different images: a power loss on one leaves the other answering with its own flash."""
    a = Navi31Board(tmp_path / "a.bin", fault="power-loss:erase:sector=0", gated=False)
    b = Navi31Board(tmp_path / "b.bin", fault="", gated=False)
    spi_send(b, 0x06)
    spi_send(b, 0x20, 0x1000)  # erase sector 1 of b only
    spi_send(a, 0x06)
    with pytest.raises(Unplugged):
        spi_send(a, 0x20, 0)
    assert a.dead and not b.dead
    spi_read(b, 0x03, 0x1000, 16)  # each read shows the previous one's data
    assert spi_read(b, 0x03, 0, 16) == b"\xff" * 16
    assert spi_read(b, 0x03, 0, 16) == default_image()[:16]
    b.close()
    a.close()
