"""The remote PCI server behind `usergpu serve`: exports PCI functions (this machine's through sysfs or VFIO, or a
mock machine's) to clients speaking protocol.py, tinygrad's wire protocol.

Each connection is served in its own thread; requests of all of them run one at a time (the HAL's devices are not
shared between threads otherwise). A client holds the boards it touches (any request naming one but PROBE and
PING) until it disconnects; another client asking for a held board gets an error naming the holder. The system
memory a client mapped (MAP_SYSMEM: anonymous pages, DMA-mapped through the function's IOMMU at their own address)
is unmapped and freed when it goes. Every request is checked before it reaches a device: the device index, the BAR
(present, the access inside it, whole dwords on a register BAR), the handle (this client's), the config offset
and size, and a size cap per transfer; a bad request is answered with an error, a bad posted write (which has no
reply) closes its connection. A peer outside the allowed networks is closed before any request is read."""

from __future__ import annotations

import ipaddress
import json
import socket
import struct
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from usergpu.drivers.hal import HAL, MAP_ANONYMOUS, MAP_PRIVATE, PROT_READ, PROT_WRITE
from usergpu.drivers.pci import PCIDevice, Registers
from usergpu.drivers.remote.protocol import PAGE, POSTED, Closed, Cmd, Request, error, ok, read_request
from usergpu.errors import Error
from usergpu.hostmem import view

MAX_TRANSFER = 64 << 20  # bytes one MMIO/SYSMEM read or write may move
MAX_SYSMEM = 1 << 30  # bytes one MAP_SYSMEM may ask for
MAX_CLIENT_SYSMEM = 16 << 30  # bytes of system memory one client may hold
CONFIG_SPACE = 4096  # PCIe extended configuration space


class Refused(Exception):
    """A request answered with an error message."""


class Fatal(Exception):
    """A request after which the stream cannot go on (a bad posted write, an oversized payload)."""


@dataclass
class SystemMemory:
    va: int
    size: int
    pci: PCIDevice  # the function whose IOMMU maps it


@dataclass
class Client:
    peer: str
    boards: set[int] = field(default_factory=set)
    memory: dict[int, SystemMemory] = field(default_factory=dict)  # handle -> its pages


@dataclass
class Board:
    pci: PCIDevice
    holder: Client | None = None
    bars: dict[int, Registers] = field(default_factory=dict)


class Server:
    """Serves boards (PCIDevice functions of hal) on a listening socket; allow: the networks peers may come from."""

    def __init__(self, hal: HAL, boards: list[PCIDevice], allow: list, log: Callable[[dict], None] | None = None):
        self.hal, self.boards = hal, [Board(b) for b in boards]
        self.allow = [ipaddress.ip_network(a, strict=False) for a in allow]
        self.lock = threading.Lock()
        self.log = log or (lambda event: None)
        self._handles = 0
        self.handlers: dict[int, Callable[[Client, Request], bytes | None]] = {
            Cmd.PROBE: self.probe, Cmd.MAP_BAR: self.map_bar, Cmd.CFG_READ: self.cfg_read,
            Cmd.CFG_WRITE: self.cfg_write, Cmd.RESET: self.reset, Cmd.MMIO_READ: self.mmio_read,
            Cmd.MMIO_WRITE: self.mmio_write, Cmd.MAP_SYSMEM: self.map_sysmem, Cmd.SYSMEM_READ: self.sysmem_read,
            Cmd.SYSMEM_WRITE: self.sysmem_write, Cmd.RESIZE_BAR: self.resize_bar, Cmd.PING: self.ping}

    # ---- connections ----------------------------------------------------------------------------------------
    def serve(self, listener: socket.socket, stop: threading.Event) -> None:
        """Accept and serve connections until stop is set (the listener polls it every 0.2 s)."""
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, address = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                break
            peer = f"{address[0]}:{address[1]}"
            if not any(ipaddress.ip_address(address[0]) in n for n in self.allow):
                self.log({"event": "refused", "peer": peer, "why": "outside --allow"})
                conn.close()
                continue
            threading.Thread(target=self.connection, args=(conn, peer), daemon=True, name=f"serve {peer}").start()

    def connection(self, conn: socket.socket, peer: str) -> None:
        """Serve one client until it disconnects (or sends what cannot be answered); then release what it held."""
        conn.settimeout(None)
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        client = Client(peer)
        self.log({"event": "connected", "peer": peer})
        why = "disconnected"
        try:
            while True:
                try:
                    req = read_request(conn, MAX_TRANSFER)
                except ValueError as e:
                    raise Fatal(str(e)) from None
                answer = self.answer(client, req)
                if answer is not None:
                    conn.sendall(answer)
        except Closed:
            pass
        except Fatal as e:
            why = f"closed: {e}"
        except OSError as e:
            why = f"closed: {e.strerror or e}"
        finally:
            try:
                with self.lock:  # before the close: a peer that sees the connection end finds the boards free
                    self.release(client)
            finally:
                conn.close()
            self.log({"event": "released", "peer": peer, "why": why})

    def answer(self, client: Client, req: Request) -> bytes | None:
        """The reply to a request (None for a posted write); Fatal where the stream cannot go on."""
        with self.lock:
            try:
                handler = self.handlers.get(req.cmd)
                if handler is None:
                    raise Refused(f"command {req.cmd} is not one this server answers "
                                  f"({'TCP carries no descriptor' if req.cmd == Cmd.MAP_SYSMEM_FD else 'unknown'})")
                return handler(client, req)
            except (Refused, Error, OSError) as e:
                if req.cmd in POSTED:
                    raise Fatal(f"{Cmd(req.cmd).name}: {e}") from None
                return error(f"{Cmd(req.cmd).name if req.cmd in Cmd._value2member_map_ else req.cmd}: {e}")

    def release(self, client: Client) -> None:
        for mem in client.memory.values():
            mem.pci.dma_unmap(mem.va, mem.size)
            self.hal.munmap(mem.va, mem.size)
        client.memory.clear()
        for index in client.boards:
            self.boards[index].holder = None
        client.boards.clear()

    # ---- checks ---------------------------------------------------------------------------------------------
    def board(self, client: Client, req: Request) -> Board:
        """The board a request names, held by this client from now on."""
        if req.device >= len(self.boards):
            raise Refused(f"device {req.device}: this server exports {len(self.boards)}")
        board = self.boards[req.device]
        if board.holder is not None and board.holder is not client:
            raise Refused(f"device {req.device} ({board.pci.name}) is held by {board.holder.peer}")
        board.holder = client
        client.boards.add(req.device)
        return board

    def bar(self, board: Board, index: int, offset: int, size: int) -> Registers:
        """BAR index's registers, for an access of size bytes at offset that must lie inside it."""
        bar = board.pci.bar(index) if index < 6 else None
        if bar is None or not bar.size or bar.io:
            raise Refused(f"BAR {index} of {board.pci.name} is not a memory BAR")
        if size > MAX_TRANSFER or offset + size > bar.size:
            raise Refused(f"{size} bytes at {offset:#x} of BAR {index} ({bar.size:#x} bytes; at most "
                          f"{MAX_TRANSFER} a transfer)")
        if not bar.prefetchable and (offset | size) % 4:
            raise Refused(f"BAR {index} holds registers: whole dwords only ({size} bytes at {offset:#x})")
        if index not in board.bars:
            board.bars[index] = board.pci.map_bar(index)
        return board.bars[index]

    @staticmethod
    def memory(client: Client, req: Request, offset: int, size: int) -> SystemMemory:
        mem = client.memory.get(req.bar)
        if mem is None:
            raise Refused(f"system memory handle {req.bar} is not this client's")
        if size > MAX_TRANSFER or offset + size > mem.size:
            raise Refused(f"{size} bytes at {offset:#x} of system memory {req.bar} ({mem.size:#x} bytes)")
        return mem

    # ---- commands -------------------------------------------------------------------------------------------
    def probe(self, client: Client, req: Request) -> bytes:
        base_class, _, vendor = req.args
        if len(req.payload) % 8:
            raise Refused(f"a device table of {len(req.payload)} bytes is no list of (mask, id) pairs")
        table = struct.unpack(f"<{len(req.payload) // 4}I", req.payload)
        pairs = list(zip(table[::2], table[1::2], strict=True))
        found = [str(i) for i, b in enumerate(self.boards)
                 if b.pci.vendor_id == vendor and any(b.pci.device_id & mask == dev for mask, dev in pairs)
                 and (not base_class or b.pci.config_read(8) >> 24 == base_class)]
        text = "\n".join(found).encode()
        return ok(len(text), 0, text)

    def map_bar(self, client: Client, req: Request) -> bytes:
        board = self.board(client, req)
        self.bar(board, req.bar, 0, 0)
        bar = board.pci.bar(req.bar)
        return ok(bar.address, bar.size)

    def _config(self, client: Client, req: Request) -> tuple[Board, int, int]:
        board = self.board(client, req)
        offset, size = req.args[0], req.args[1]
        if size not in (1, 2, 4) or offset % size or offset + size > CONFIG_SPACE:
            raise Refused(f"a config access of {size} bytes at {offset:#x} (1, 2 or 4 bytes, aligned, inside "
                          f"{CONFIG_SPACE:#x})")
        return board, offset, size

    def cfg_read(self, client: Client, req: Request) -> bytes:
        board, offset, size = self._config(client, req)
        return ok(board.pci.config_read(offset, size))

    def cfg_write(self, client: Client, req: Request) -> bytes:
        board, offset, size = self._config(client, req)
        board.pci.config_write(offset, req.args[2] & ((1 << 8 * size) - 1), size)
        return ok()

    def reset(self, client: Client, req: Request) -> bytes:
        board = self.board(client, req)
        reset = getattr(board.pci, "reset", None)
        if reset is None:
            raise Refused(f"{board.pci.name} offers no function reset here")
        reset()
        return ok()

    def mmio_read(self, client: Client, req: Request) -> bytes:
        offset, size = req.args[0], req.args[1]
        return ok(0, 0, self.bar(self.board(client, req), req.bar, offset, size).read(offset, size))

    def mmio_write(self, client: Client, req: Request) -> None:
        offset = req.args[0]
        self.bar(self.board(client, req), req.bar, offset, len(req.payload)).write(offset, req.payload)

    def map_sysmem(self, client: Client, req: Request) -> bytes:
        board = self.board(client, req)
        size = -(-req.args[0] // PAGE) * PAGE
        if not 0 < size <= MAX_SYSMEM:
            raise Refused(f"{req.args[0]} bytes of system memory (1 .. {MAX_SYSMEM})")
        held = sum(m.size for m in client.memory.values())
        if held + size > MAX_CLIENT_SYSMEM:
            raise Refused(f"{size} bytes more of system memory: the client holds {held} of the {MAX_CLIENT_SYSMEM} "
                          "a client may")
        if not board.pci.can_dma:
            raise Refused(f"{board.pci.name} is not bound to vfio-pci: no IOMMU maps system memory for it")
        va = self.hal.mmap(-1, size, 0, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS)
        try:
            board.pci.dma_map(va, va, size)  # the pages' own addresses as their DMA addresses
        except BaseException:
            self.hal.munmap(va, size)
            raise
        self._handles += 1
        client.memory[self._handles] = SystemMemory(va, size, board.pci)
        pages = struct.pack(f"<{size // PAGE}Q", *range(va, va + size, PAGE))
        return ok(len(pages), self._handles, pages)

    def sysmem_read(self, client: Client, req: Request) -> bytes:
        offset, size = req.args[0], req.args[1]
        mem = self.memory(client, req, offset, size)
        return ok(0, 0, bytes(view(mem.va + offset, size)))

    def sysmem_write(self, client: Client, req: Request) -> None:
        offset = req.args[0]
        mem = self.memory(client, req, offset, len(req.payload))
        view(mem.va + offset, len(req.payload))[:] = req.payload

    def resize_bar(self, client: Client, req: Request) -> bytes:
        board = self.board(client, req)
        raise Refused(f"{board.pci.name}: BAR {req.bar} is not resized by this server (its size is "
                      f"{board.pci.bar(req.bar).size:#x} bytes)" if req.bar < 6 else f"BAR {req.bar}: there are 6")

    def ping(self, client: Client, req: Request) -> bytes:
        return ok()


def json_log(event: dict) -> None:
    print(json.dumps(event), file=sys.stderr, flush=True)
