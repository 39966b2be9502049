"""NVIDIA's signal: a semaphore."""

from __future__ import annotations

from usergpu.runtime.signal import Signal


class NVSignal(Signal):
    """The 64-bit payload, then the GPU's timestamp (ns) of the release that wrote it (the four-word report a release
    with RELEASE_TIMESTAMP writes)."""

    VALUE, TIMESTAMP = 0, 8
