"""Register BARs a process maps into its own memory, trapped: a driver that mmaps a mock board's register BAR (as
tinygrad's AM does with resource5) reads and writes it through Python memoryviews, so every memoryview made over a
tracked range is a view whose element reads and writes become the board's register reads and writes, in the order
the driver makes them (a write's side effects — a mailbox, a queue starting — run at once, in the caller's thread).
The process's `memoryview` becomes a factory that makes those views over tracked memory and real ones elsewhere
(installed while a range is tracked; isinstance(x, memoryview) holds for both). Memory behind a tracked range
stays mapped, so a store that bypasses memoryview lands there unseen rather than faulting. A doorbell mapping is
trapped the same way by its doorbell agent (emu/mock/tinygrad/agent.py `trap`): a store lands in the memory and runs
the queues at once; a store made otherwise the agent's thread notices."""

from __future__ import annotations

import bisect
import builtins
import ctypes
import struct
import threading
from collections.abc import Callable

Read = Callable[[int, int], int]  # (offset in the range, bytes 1/2/4/8) -> value
Write = Callable[[int, int, int], None]  # (offset, bytes, value)

_REAL = builtins.memoryview
_ranges: list[tuple[int, int, Read, Write]] = []  # (start, end, read, write), sorted by start
_lock = threading.Lock()


def track(address: int, size: int, read: Read, write: Write) -> None:
    """Trap memoryviews over [address, address + size) from now on (replacing a range at the same address)."""
    with _lock:
        untrack(address, locked=True)
        bisect.insort(_ranges, (address, address + size, read, write), key=lambda r: r[0])
        if builtins.memoryview is _REAL:
            builtins.memoryview = memoryview  # type: ignore[misc]


def untrack(address: int, locked: bool = False) -> None:
    """Stop trapping the range that starts at address (its memory was unmapped); with none left, the builtin
    memoryview is back."""
    if not locked:
        with _lock:
            return untrack(address, locked=True)
    _ranges[:] = [r for r in _ranges if r[0] != address]
    if not _ranges:
        builtins.memoryview = _REAL  # type: ignore[misc]


def _find(address: int) -> tuple[int, int, Read, Write] | None:
    i = bisect.bisect_right(_ranges, address, key=lambda r: r[0]) - 1
    return _ranges[i] if i >= 0 and address < _ranges[i][1] else None


class _Factory(type):
    def __instancecheck__(cls, instance) -> bool:
        return isinstance(instance, (_REAL, RegisterView))

    def __call__(cls, obj):
        if _ranges and isinstance(obj, ctypes.Array):
            found = _find(ctypes.addressof(obj))
            if found is not None:
                start, _, read, write = found
                return RegisterView(ctypes.addressof(obj) - start, ctypes.sizeof(obj), "B", read, write)
        return _REAL(obj)


class memoryview(metaclass=_Factory):  # noqa: N801 (it stands in for the builtin)
    """builtins.memoryview while a range is tracked: a RegisterView over tracked memory, else the real one."""


class RegisterView:
    """A memoryview over trapped registers: elements of its format (B, H, I, Q and their signed forms), each read or
    written through the range's functions."""

    def __init__(self, offset: int, nbytes: int, fmt: str, read: Read, write: Write):
        self.offset, self.nbytes, self.format, self._read, self._write = offset, nbytes, fmt, read, write
        self.itemsize = struct.calcsize("<" + fmt)

    def cast(self, fmt: str, shape=None) -> RegisterView:
        return RegisterView(self.offset, self.nbytes, fmt, self._read, self._write)

    def __len__(self) -> int:
        return self.nbytes // self.itemsize

    def _indices(self, key) -> range:
        return range(*key.indices(len(self))) if isinstance(key, slice) else range(key % len(self), key % len(self) + 1)

    def _get(self, i: int) -> int:
        raw = self._read(self.offset + i * self.itemsize, self.itemsize)
        return struct.unpack("<" + self.format, raw.to_bytes(self.itemsize, "little"))[0]

    def _set(self, i: int, value: int) -> None:
        raw = int.from_bytes(struct.pack("<" + self.format, value), "little")
        self._write(self.offset + i * self.itemsize, self.itemsize, raw)

    def __getitem__(self, key):
        if not isinstance(key, slice):
            return self._get(self._indices(key)[0])
        return self._packed([self._get(i) for i in self._indices(key)])  # a copy of the registers read now

    def __setitem__(self, key, value) -> None:
        indices = self._indices(key)
        if not isinstance(key, slice):
            values = [value]
        elif isinstance(value, (bytes, bytearray, _REAL)):
            values = list(_REAL(value).cast("B").cast(self.format))
        else:
            values = list(value)
        if len(values) != len(indices):
            raise ValueError(f"memoryview assignment: {len(values)} values for {len(indices)} elements")
        for i, v in zip(indices, values, strict=True):
            self._set(i, v)

    def _packed(self, items: list[int]):
        """Values as a real memoryview of this view's format."""
        return _REAL(struct.pack(f"<{len(items)}{self.format}", *items)).cast(self.format)

    def tolist(self) -> list[int]:
        return [self._get(i) for i in range(len(self))]

    def tobytes(self) -> bytes:
        return self._packed(self.tolist()).tobytes()


def dwords(read32: Callable[[int], int], write32: Callable[[int, int], None]) -> tuple[Read, Write]:
    """A range's read and write of any width from a device's dword register access (offset in bytes, 4-aligned):
    a wider access is its dwords, a narrower write a read-modify-write of its dword."""

    def read(offset: int, size: int) -> int:
        base = offset & ~3
        words = [read32(base + 4 * k) for k in range((offset + size - base + 3) // 4)]
        value = sum(w << (32 * k) for k, w in enumerate(words)) >> (8 * (offset - base))
        return value & ((1 << (8 * size)) - 1)

    def write(offset: int, size: int, value: int) -> None:
        if size >= 4 and offset % 4 == 0:
            for k in range(size // 4):
                write32(offset + 4 * k, value >> (32 * k) & 0xFFFFFFFF)
            return
        base, shift = offset & ~3, 8 * (offset & 3)
        mask = ((1 << (8 * size)) - 1) << shift
        write32(base, read32(base) & ~mask | (value << shift) & mask)

    return read, write
