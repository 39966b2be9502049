"""A mock machine's boards served on a free loopback port, for the server's and the client's tests."""

from __future__ import annotations

import socket
import threading

import pytest

from usergpu.drivers.remote.server import Server
from usergpu.tools.serve import boards


@pytest.fixture
def served(monkeypatch, tmp_path, request):
    """A server of one mock board (bound to vfio-pci; gfx1100, or the arch a test's parameter names) on a free
    loopback port: its (host, port)."""
    monkeypatch.setenv("MOCKPCI_DIR", str(tmp_path))
    monkeypatch.setenv("MOCKGPU_ARCH", getattr(request, "param", "gfx1100"))
    monkeypatch.setenv("MOCKPCI_VFIO", "1")
    hal, found = boards("MOCKPCI+AMD")
    yield from serving(Server(hal, found, ["127.0.0.0/8"]))


def serving(server: Server):
    """Serve while the generator is suspended: yields (host, port)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    stop = threading.Event()
    thread = threading.Thread(target=server.serve, args=(listener, stop), daemon=True)
    thread.start()
    yield listener.getsockname()
    stop.set()
    thread.join()
    listener.close()


@pytest.fixture
def serve_boards():
    """serving, for a test that makes its own Server: iterate it to serve while the loop body runs."""
    return serving
