"""usergpu serve's server (drivers/remote/server.py) on a mock machine's boards: tinygrad's own client speaks to it
(probe, config space, BARs, system memory), bad requests of every kind are answered with an error or close their
connection and the server goes on (a fuzz of 10,000), one client holds a board at a time, and a peer outside the
allowed networks is closed before any request is read."""

from __future__ import annotations

import random
import socket
import struct
import time

import pytest

from usergpu.drivers.remote import protocol
from usergpu.drivers.remote.protocol import REPLY, REQUEST, Cmd, Request
from usergpu.drivers.remote.server import MAX_TRANSFER, Server
from usergpu.tools.serve import boards

NAVI31 = 0x744C


def connect(address) -> socket.socket:
    sock = socket.create_connection(address, timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def ended(sock: socket.socket) -> None:
    """Close a connection once the server has closed its end: it frees the boards the peer held before it closes, so
    a connection made after this finds them free (a bare close races the server's thread noticing it)."""
    sock.shutdown(socket.SHUT_WR)
    try:
        while sock.recv(1 << 16):
            pass
    except OSError:  # reset: the server closed with our last bytes unread, after freeing the boards all the same
        pass
    sock.close()


def call(sock: socket.socket, cmd: int, *args: int, bar: int = 0, device: int = 0, payload: bytes = b""):
    """A request and its reply: (status, first, second, the bytes after it)."""
    sock.sendall(Request(cmd, device, bar, (*args, 0, 0, 0)[:3], payload).encode())
    status, first, second = REPLY.unpack(protocol.receive(sock, REPLY.size))
    extra = protocol.reply_bytes(cmd, (*args, 0, 0, 0)[:3], status, first)
    return status, first, second, protocol.receive(sock, extra)


def probe_payload() -> bytes:
    return struct.pack("<2I", 0xFFFF, NAVI31)


def test_tinygrads_client_reaches_the_board(served, monkeypatch):
    system = pytest.importorskip("tinygrad.runtime.support.system")
    monkeypatch.setenv("REMOTE", f"{served[0]}:{served[1]}")
    found = system.RemotePCIDevice.remote_list.__wrapped__(0x1002, ((0xFFFF, (NAVI31,)),), None)
    assert [name for _, name in found] == [f"remote:{served[0]}:{served[1]}:0"]
    sock, name = found[0]
    dev = system.RemotePCIDevice("AM", name, sock=sock)
    assert dev.read_config(0, 4) == 0x1002 | NAVI31 << 16
    address, size = dev.bar_info(0)
    assert size >= 1 << 30 and address  # VRAM behind a (resized) 64-bit BAR
    regs = dev.map_bar(5, fmt="I")
    assert len(regs) == dev.bar_info(5)[1] // 4
    mem, pages = dev.alloc_sysmem(3 * 4096)
    mem[100:105] = b"hello"
    assert bytes(mem[98:107]) == b"\0\0hello\0\0" and len(pages) == 3 and pages[1] - pages[0] == 4096
    with pytest.raises(RuntimeError, match="RESIZE_BAR: .*not resized by this server"):
        dev.resize_bar(0)
    sock.close()


def test_requests_are_checked_and_answered_with_an_error(served):
    sock = connect(served)
    assert call(sock, Cmd.PING)[0] == 0
    status, n, _, text = call(sock, Cmd.PROBE, 0, 8, 0x1002, payload=probe_payload())
    assert (status, text) == (0, b"0")
    for cmd, args, bar, device, why in [
        (Cmd.MAP_BAR, (), 0, 7, b"device 7: this server exports 1"),
        (Cmd.MAP_BAR, (), 6, 0, b"BAR 6"),
        (Cmd.MMIO_READ, (1 << 40, 4), 5, 0, b"4 bytes at 0x10000000000 of BAR 5"),
        (Cmd.MMIO_READ, (2, 4), 5, 0, b"whole dwords only"),
        (Cmd.MMIO_READ, (0, MAX_TRANSFER + 4), 0, 0, b"at most"),
        (Cmd.CFG_READ, (4095, 4), 0, 0, b"a config access of 4 bytes at 0xfff"),
        (Cmd.CFG_READ, (0, 3), 0, 0, b"a config access of 3 bytes"),
        (Cmd.SYSMEM_READ, (0, 4), 99, 0, b"system memory handle 99 is not this client's"),
        (Cmd.MAP_SYSMEM, (0, 0), 0, 0, b"0 bytes of system memory"),
        (Cmd.MAP_SYSMEM_FD, (4096, 0), 0, 0, b"TCP carries no descriptor"),
        (99, (), 0, 0, b"command 99"),
    ]:
        status, length, _, message = call(sock, cmd, *args, bar=bar, device=device)
        assert status and len(message) == length and why in message, (cmd, message)
    assert call(sock, Cmd.CFG_READ, 0, 2)[1] == 0x1002  # the connection goes on after each
    sock.close()


def test_a_board_is_one_clients_until_it_goes(served):
    first, second = connect(served), connect(served)
    assert call(first, Cmd.CFG_READ, 0, 2)[0] == 0
    status, _, _, message = call(second, Cmd.CFG_READ, 0, 2)
    assert status and b"is held by 127.0.0.1:" in message
    assert call(second, Cmd.PING)[0] == 0 and call(second, Cmd.PROBE, 0, 8, 0x1002, payload=probe_payload())[0] == 0
    first.close()
    deadline = time.monotonic() + 20
    while call(second, Cmd.CFG_READ, 0, 2)[0]:  # the server releases the board when it sees the close
        assert time.monotonic() < deadline, "the board was not released"
        time.sleep(0.01)
    second.close()


def test_a_bad_posted_write_closes_its_connection_only(served):
    sock = connect(served)
    sock.sendall(Request(Cmd.MMIO_WRITE, 0, 5, (1 << 40, 4, 0), b"\0" * 4).encode())  # no reply to say no with
    assert sock.recv(1) == b""
    good = connect(served)
    assert call(good, Cmd.CFG_READ, 0, 2)[1] == 0x1002


def test_a_peer_outside_the_allowed_networks_is_closed_before_any_request(monkeypatch, tmp_path, serve_boards):
    monkeypatch.setenv("MOCKPCI_DIR", str(tmp_path))
    monkeypatch.setenv("MOCKPCI_VFIO", "1")
    hal, found = boards("MOCKPCI+AMD")
    events = []
    for address in serve_boards(Server(hal, found, ["10.0.0.0/8"], events.append)):
        sock = connect(address)
        assert sock.recv(1) == b""
    assert events and events[0]["event"] == "refused" and events[0]["why"] == "outside --allow"


def test_fuzz_random_and_truncated_requests_leave_the_server_serving(served):
    """10,000 requests: random commands, devices, BARs, handles, offsets and sizes, some truncated or cut off
    mid-payload. Each is answered (a reply, or the connection closed); nothing stops the server."""
    rng = random.Random(28)
    sizes = [0, 1, 2, 3, 4, 8, 4096, MAX_TRANSFER + 1, 1 << 40, (1 << 64) - 1]
    sock, answered, closed = connect(served), 0, 0
    for i in range(10_000):
        cmd = rng.choice([*Cmd, 13, 255])
        args = [rng.choice([rng.randrange(1 << 64), rng.randrange(1 << 20), *sizes]) for _ in range(3)]
        bar = rng.choice([0, 2, 5, 6, 1 << 31, rng.randrange(1 << 32)])
        device = rng.choice([0, 0, 0, 1, rng.randrange(1 << 32)])
        if cmd in (Cmd.MMIO_WRITE, Cmd.SYSMEM_WRITE, Cmd.PROBE):
            args[1] = rng.choice([0, 4, 8, 12, 64])
        if cmd in (Cmd.MMIO_READ, Cmd.SYSMEM_READ, Cmd.MAP_SYSMEM):
            args[1 if cmd != Cmd.MAP_SYSMEM else 0] = rng.choice([0, 4, 64, MAX_TRANSFER + 4])
        payload = bytes(rng.randrange(256) for _ in range(args[1])) if cmd in protocol.PAYLOAD else b""
        message = REQUEST.pack(cmd, device, bar, *args) + payload
        cut = i % 97 == 0
        try:
            sock.sendall(message[:rng.randrange(len(message))] if cut else message)
            if cut:
                raise ConnectionResetError
            if cmd in protocol.POSTED:
                continue
            status, first, _ = REPLY.unpack(protocol.receive(sock, REPLY.size))
            if status or cmd in (Cmd.PROBE, Cmd.MAP_SYSMEM):
                protocol.receive(sock, first)
            elif cmd in (Cmd.MMIO_READ, Cmd.SYSMEM_READ):
                protocol.receive(sock, args[1])
            answered += 1
        except (protocol.Closed, ConnectionResetError, BrokenPipeError):
            sock.close()
            sock, closed = connect(served), closed + 1
    assert answered > 5000 and closed > 50
    ended(sock)
    good = connect(served)
    assert call(good, Cmd.CFG_READ, 0, 4)[1] == 0x1002 | NAVI31 << 16
    assert call(good, Cmd.MMIO_READ, 0, 4, bar=5)[0] == 0
