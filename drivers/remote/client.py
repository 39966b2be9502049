"""The remote PCI client: functions that another machine's `usergpu serve` (or tinygrad's server) exports, as
PCIDevices (drivers/pci.py), so AM drives them as it drives local ones. `REMOTE=host:port[,host:port]` (tinygrad's
variable, read by the HAL) names the servers; each server is one connection, shared by its functions.

Config space and registers are requests (register and doorbell writes posted, as on PCIe). VRAM is reached two
ways: block reads and writes of BAR0 are requests, and the parts a driver shares (what its allocator hands out,
which it writes through CPU pointers) live in a local mirror (mirror.py) that a memfd maps where a local BAR0's
resource file would; it is pushed before every register write and pulled where the driver syncs for the CPU.
System memory (MAP_SYSMEM) is not used: the protocol has no command that frees it (a client's goes when it
disconnects), and the runtime allocates and frees "gtt" memory all along, so a remote function's "gtt" memory is
VRAM, as without VFIO."""

from __future__ import annotations

import errno
import socket
import struct
import threading

from usergpu.drivers.pci import BAR, BAR0, PCIDevice, Registers
from usergpu.drivers.remote.mirror import CHUNK, Mirror
from usergpu.drivers.remote.protocol import (
    DEFAULT_PORT,
    POSTED,
    REPLY,
    Closed,
    Cmd,
    Request,
    receive,
    reply_bytes,
)
from usergpu.errors import DeviceNotFound, DriverError
from usergpu.hostmem import MMIO, CallbackMMIO

CONNECT_TIMEOUT = 3.0  # seconds (tinygrad's REMOTE_TIMEOUT default)


class Link:
    """One connection to a server: requests in order, one caller at a time; a batch of reads is pipelined."""

    def __init__(self, address: str):
        host, _, port = address.strip().rpartition(":") if ":" in address else (address.strip(), "", "")
        self.address = f"{host}:{port or DEFAULT_PORT}"
        try:
            self.sock = socket.create_connection((host, int(port or DEFAULT_PORT)), timeout=CONNECT_TIMEOUT)
        except (OSError, ValueError) as e:
            raise DeviceNotFound(f"REMOTE {self.address}: cannot connect: {getattr(e, 'strerror', None) or e}") \
                from None
        self.sock.settimeout(None)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.lock = threading.Lock()

    def calls(self, requests: list[Request]) -> list[tuple[int, int, bytes]]:
        """Send the requests, then read their replies (none for posted writes): (first, second, data) of each
        answered one; DriverError with the server's message for a refused one."""
        with self.lock:
            try:
                self.sock.sendall(b"".join(r.encode() for r in requests))
                out = []
                for r in requests:
                    if r.cmd not in POSTED:
                        status, first, second = REPLY.unpack(receive(self.sock, REPLY.size))
                        data = receive(self.sock, reply_bytes(r.cmd, r.args, status, first))
                        out.append((r, status, first, second, data))
            except (Closed, OSError) as e:
                raise DriverError(f"REMOTE {self.address}", errno.ECONNRESET, f"the connection broke: {e}") from None
        for r, status, _, _, data in out:
            if status:
                raise DriverError(f"REMOTE {self.address}: {Cmd(r.cmd).name}", errno.EIO, data.decode(errors="replace"))
        return [(first, second, data) for _, _, first, second, data in out]

    def close(self) -> None:
        self.sock.close()

    def call(self, cmd: Cmd, device: int = 0, bar: int = 0, *args: int, payload: bytes = b"") -> tuple[int, int, bytes]:
        request = Request(cmd, device, bar, (*args, 0, 0, 0)[:3], payload)
        answers = self.calls([request])
        return answers[0] if answers else (0, 0, b"")


_links: dict[str, Link] = {}


def link(address: str) -> Link:
    """The process's connection to a server (one per server, as tinygrad keeps)."""
    key = address.strip()
    if key not in _links:
        _links[key] = Link(key)
    return _links[key]


class RemoteRegisters(Registers):
    """A remote BAR: reads are requests; writes are posted, after the mirror's push on a register BAR."""

    def __init__(self, dev: RemotePCIDevice, n: int, registers: bool | None = None):
        """registers: whether writes go to registers or doorbells (the mirror is pushed first); by default, whether
        the BAR is not prefetchable memory."""
        self.dev, self.n = dev, n
        self.registers = not dev.bar(n).prefetchable if registers is None else registers

    @property
    def memory(self):
        """The local mirror of a memory BAR (whose shared parts are kept coherent with the board)."""
        return self.dev.mirror(self.n).memory

    def read32(self, offset: int) -> int:
        return int.from_bytes(self.read(offset, 4), "little")

    def write32(self, offset: int, value: int) -> None:
        self.write(offset, value.to_bytes(4, "little"))

    def read(self, offset: int, size: int) -> bytes:
        return self.dev.read_bar(self.n, [(offset, size)])[0]

    def write(self, offset: int, data: bytes) -> None:
        if self.registers:
            self.dev.push()
        self.dev.write_bar(self.n, offset, data)


class RemotePCIDevice(PCIDevice):
    can_dma = False

    def __init__(self, link: Link, index: int):
        self.link, self.index = link, index
        self.name = f"remote:{link.address}:{index}"
        self._bars: dict[int, BAR] = {}
        self._mirrors: dict[int, Mirror] = {}

    def _call(self, cmd: Cmd, bar: int = 0, *args: int, payload: bytes = b"") -> tuple[int, int, bytes]:
        return self.link.call(cmd, self.index, bar, *args, payload=payload)

    def config_read(self, offset: int, size: int = 4) -> int:
        return self._call(Cmd.CFG_READ, 0, offset, size)[0]

    def config_write(self, offset: int, value: int, size: int = 4) -> None:
        self._call(Cmd.CFG_WRITE, 0, offset, size, value)

    def bar(self, n: int) -> BAR:
        """The server's address and size of BAR n; its kind from the BAR register."""
        if n not in self._bars:
            address, size, _ = self._call(Cmd.MAP_BAR, n)
            low = self.config_read(BAR0 + 4 * n)
            self._bars[n] = BAR(n, address, size, (low >> 1) & 3 == 2, bool(low & 8), bool(low & 1))
        return self._bars[n]

    def map_bar(self, n: int) -> Registers:
        return RemoteRegisters(self, n)

    def mmio(self, n: int, width: int = 4) -> MMIO:
        # an MMIO view is registers or doorbells (AMD's doorbell BAR is prefetchable): the mirror goes first
        regs = RemoteRegisters(self, n, registers=True)
        return CallbackMMIO(lambda i: int.from_bytes(regs.read(width * i, width), "little"),
                            lambda i, v: regs.write(width * i, v.to_bytes(width, "little")))

    def bar_file(self, n: int) -> tuple[int, int]:
        return self.mirror(n).fd, 0

    def mirror(self, n: int) -> Mirror:
        if n not in self._mirrors:
            bar = self.bar(n)
            if not bar.prefetchable:
                raise DriverError(f"map {self.name} BAR {n}", errno.EINVAL, "a register BAR has no local copy")
            self._mirrors[n] = Mirror(bar.size, lambda at, data: self.write_bar(n, at, data),
                                      lambda parts: self.read_bar(n, parts))
        return self._mirrors[n]

    def read_bar(self, n: int, parts: list[tuple[int, int]]) -> list[bytes]:
        """Blocks of BAR n, in one pipelined batch of reads of at most CHUNK bytes."""
        pieces = [(offset + at, min(CHUNK, size - at)) for offset, size in parts for at in range(0, size, CHUNK)]
        data = [d for _, _, d in self.link.calls([Request(Cmd.MMIO_READ, self.index, n, (at, size, 0))
                                                  for at, size in pieces])]
        out, i = [], 0
        for _, size in parts:
            count = max(1, -(-size // CHUNK))
            out.append(b"".join(data[i : i + count]))
            i += count
        return out

    def write_bar(self, n: int, offset: int, data: bytes) -> None:
        self.link.calls([Request(Cmd.MMIO_WRITE, self.index, n, (offset + at, len(piece), 0), piece)
                         for at in range(0, len(data), CHUNK) for piece in [data[at : at + CHUNK]]])

    def share(self, n: int, offset: int, size: int) -> None:
        self.mirror(n).share(offset, size)

    def unshare(self, n: int, offset: int) -> None:
        self.mirror(n).unshare(offset)

    def push(self) -> None:
        for mirror in self._mirrors.values():
            mirror.push()

    def sync_for_cpu(self, n: int, offset: int | None = None, size: int | None = None) -> None:
        if n in self._mirrors:
            self._mirrors[n].pull(offset, size)

    def reset(self) -> None:
        self._call(Cmd.RESET)

    def close(self) -> None:
        for mirror in self._mirrors.values():
            mirror.close()
        self._mirrors.clear()


def probe(conn: Link, vendor: int) -> list[RemotePCIDevice]:
    """The functions of vendor a server exports (PROBE with a table matching any device id)."""
    _, _, text = conn.call(Cmd.PROBE, 0, 0, 0, 8, vendor, payload=struct.pack("<2I", 0, 0))
    return [RemotePCIDevice(conn, int(i)) for i in text.decode().split("\n") if i.strip().isdigit()]


def remote_functions(addresses: list[str], vendor: int) -> list[RemotePCIDevice]:
    """The functions of vendor each server exports, in the servers' order, on the process's connections."""
    return [f for address in addresses for f in probe(link(address), vendor)]


def remote_board(name: str) -> RemotePCIDevice:
    """The function a remote address (remote:HOST:PORT:N) names, on a connection of its own: closing its link lets
    the board go at once (a monitor must not keep the board from its driver)."""
    _, _, rest = name.partition("remote:")
    address, _, index = rest.rpartition(":")
    if not name.startswith("remote:") or not address or not index.isdigit():
        raise DeviceNotFound(f"{name!r} is not a remote board's address (remote:HOST:PORT:N)")
    return RemotePCIDevice(Link(address), int(index))
