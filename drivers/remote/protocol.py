"""Remote PCI: the wire protocol tinygrad's `RemotePCIDevice` speaks (its runtime/support/system.py), one codec for
the server (`usergpu serve`) and a client. Over one TCP connection (default port 6667), little-endian:

- a request is `<BIIQQQ`: command, device (the function's index in the PROBE answer), BAR index or system-memory
  handle, and three arguments; PROBE, MMIO_WRITE and SYSMEM_WRITE carry a payload of args[1] bytes after it;
- a reply is `<BQQ`: status (0: done) and two values, then the bytes the command reads (PROBE's list, MAP_SYSMEM's
  page addresses: value 0 bytes; MMIO_READ and SYSMEM_READ: the size asked). An error is a non-zero status whose
  first value is the length of the message (UTF-8) that follows;
- MMIO_WRITE and SYSMEM_WRITE are posted: no reply. A bad one can only be answered by closing the connection.

Commands (values as tinygrad numbers them): PROBE (args: PCI base class or 0, payload bytes, vendor; payload: (mask,
device id) pairs of u32) answers the matching functions' indices, one a line; MAP_BAR (bar) answers its bus address
and size; CFG_READ (offset, size) the value, CFG_WRITE (offset, size, value); MMIO_READ/MMIO_WRITE (bar; offset,
size); MAP_SYSMEM (size, contiguous) answers the page addresses' byte count and a handle, then each 4 KiB page's
DMA address (u64); SYSMEM_READ/SYSMEM_WRITE (handle; offset, size); RESET; RESIZE_BAR (bar); PING; MAP_SYSMEM_FD
hands a descriptor over a UNIX socket, which TCP cannot carry."""

from __future__ import annotations

import enum
import socket
import struct
from dataclasses import dataclass

DEFAULT_PORT = 6667
REQUEST = struct.Struct("<BIIQQQ")
REPLY = struct.Struct("<BQQ")
PAGE = 4096


class Cmd(enum.IntEnum):
    PROBE = 0
    MAP_BAR = 1
    MAP_SYSMEM_FD = 2
    CFG_READ = 3
    CFG_WRITE = 4
    RESET = 5
    MMIO_READ = 6
    MMIO_WRITE = 7
    MAP_SYSMEM = 8
    SYSMEM_READ = 9
    SYSMEM_WRITE = 10
    RESIZE_BAR = 11
    PING = 12


PAYLOAD = {Cmd.PROBE, Cmd.MMIO_WRITE, Cmd.SYSMEM_WRITE}  # args[1] bytes follow the request
POSTED = {Cmd.MMIO_WRITE, Cmd.SYSMEM_WRITE}  # no reply


class Closed(Exception):
    """The peer closed the connection (or it broke) before a whole message came."""


@dataclass(frozen=True)
class Request:
    cmd: int
    device: int
    bar: int
    args: tuple[int, int, int]
    payload: bytes = b""

    def encode(self) -> bytes:
        return REQUEST.pack(self.cmd, self.device, self.bar, *self.args) + self.payload


def receive(sock: socket.socket, n: int) -> bytes:
    """Exactly n bytes; Closed if the stream ends first."""
    chunks, got = [], 0
    while got < n:
        try:
            chunk = sock.recv(min(n - got, 1 << 20))
        except OSError as e:
            raise Closed(str(e)) from None
        if not chunk:
            raise Closed(f"the peer closed the connection {got} bytes into {n}")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_request(sock: socket.socket, max_payload: int) -> Request:
    """The next request and its payload; ValueError for a payload over max_payload (its bytes are not read: the
    stream cannot be resynchronised, so the caller closes the connection)."""
    cmd, device, bar, *args = REQUEST.unpack(receive(sock, REQUEST.size))
    payload = b""
    if cmd in PAYLOAD:
        if args[1] > max_payload:
            raise ValueError(f"{Cmd(cmd).name} carries {args[1]} bytes, over the {max_payload} a request may carry")
        payload = receive(sock, args[1])
    return Request(cmd, device, bar, (args[0], args[1], args[2]), payload)


def ok(first: int = 0, second: int = 0, data: bytes = b"") -> bytes:
    return REPLY.pack(0, first, second) + data


def error(message: str) -> bytes:
    text = message.encode()
    return REPLY.pack(1, len(text), 0) + text


def reply_bytes(cmd: int, args: tuple[int, int, int], status: int, first: int) -> int:
    """How many bytes follow a reply: an error's message, PROBE's list, MAP_SYSMEM's pages, what a read asked."""
    if status or cmd in (Cmd.PROBE, Cmd.MAP_SYSMEM):
        return first
    return args[1] if cmd in (Cmd.MMIO_READ, Cmd.SYSMEM_READ) else 0
