"""Devices on each interface the runtime drives, for the runtime's tests."""

from __future__ import annotations

import pytest
from interfaces import INTERFACES, interface


@pytest.fixture(params=INTERFACES)
def open_device(request, monkeypatch):
    """Devices on the interface of the test's parameter, closed after it (AM holds its board until then)."""
    import usergpu

    opened = []
    device = interface(request.param, monkeypatch)

    def open_(index: int = 0, **kw):
        opened.append(usergpu.Device(f"{device}:{index}", **kw))
        return opened[-1]
    yield open_
    for dev in opened:
        dev.close()
