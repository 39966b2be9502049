"""AMD's signal: an amd_signal_t (ROCr's layout, so AQL packets can name it as their completion signal)."""

from __future__ import annotations

from usergpu.autogen import amdhsa as hsa
from usergpu.runtime.signal import Signal

AMD_SIGNAL_KIND_USER = 1


class AMDSignal(Signal):
    """The value, and the GPU timestamp of its last write in end_ts."""

    VALUE, TIMESTAMP = hsa.amd_signal_t.value.offset, hsa.amd_signal_t.end_ts.offset

    def prepare(self) -> None:
        """An amd_signal_t says it is a user signal."""
        self._words[hsa.amd_signal_t.kind.offset // 8] = AMD_SIGNAL_KIND_USER
