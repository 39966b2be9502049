"""What every engine of the mock GPU shares: a class's methods by byte offset (nv_classes.METHODS), the value last
written to each (the engine's state, as the hardware latches it) and the methods that act when written.

The GPFIFO headers from Hopper on are partial (the RM SDK's clc86f.h, clc96f.h and clca6f.h list only the methods the
RM pushes itself; open-gpu-doc has none of them), so a class's table is its own methods over those of the classes it
extends (its chain), field by field: a widened field of the newer class wins and the rest come from the older one.
The copy and compute classes have full headers (open-gpu-doc's), a chain of one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cache
from typing import TYPE_CHECKING, ClassVar

from usergpu.autogen import nv_classes as nc
from usergpu.autogen._nvclass import Method
from usergpu.errors import Error

if TYPE_CHECKING:
    from usergpu.emu.nv.mock.channel import Channel


DECODED = 4096  # (method, value) decodings a class's table keeps


class MethodError(Error):
    """A method the engine cannot execute; `code` is the ROBUST_CHANNEL_* error the RM reports for it."""

    def __init__(self, code: int, why: str):
        self.code = code
        super().__init__(why)


class MethodTable:
    """The methods of a class whose chain of METHODS prefixes is given, newest first."""

    def __init__(self, chain: tuple[str, ...]):
        self.prefix = chain[0]
        self.methods: dict[str, Method] = {}
        for prefix in reversed(chain):
            for name, m in nc.METHODS.items():
                if name.startswith(f"{prefix}_"):
                    short, old = name[len(prefix) + 1:], self.methods.get(name[len(prefix) + 1:])
                    self.methods[short] = m if old is None else Method(m.offset, m.stride, {**old.fields, **m.fields})
        self._exact = {m.offset: n for n, m in self.methods.items() if not m.stride}
        self._indexed = sorted(((m.offset, n) for n, m in self.methods.items() if m.stride), reverse=True)
        self._found: dict[int, tuple[str, int | None] | None] = {}
        self._decoded: dict[tuple[str, int], dict[str, int]] = {}

    def lookup(self, offset: int) -> tuple[str, int | None] | None:
        """(name, element) of the method at a byte offset: a plain one, or element i of the nearest indexed method
        below it that no plain method interrupts; None if the class has none there."""
        if offset in self._exact:
            return self._exact[offset], None
        if offset not in self._found:
            self._found[offset] = next(
                ((name, (offset - base) // self.methods[name].stride) for base, name in self._indexed
                 if base < offset and not (offset - base) % self.methods[name].stride
                 and not any(base < o < offset for o in self._exact)), None)
        return self._found[offset]

    def decoded(self, method: str, value: int) -> dict[str, int]:
        """The fields of a value written to a method (read only): a runtime writes the same few values again and
        again."""
        got = self._decoded.get((method, value))
        if got is None:
            got = self._decoded[method, value] = self.methods[method].decode(value)
            if len(self._decoded) > DECODED:
                self._decoded.pop(next(iter(self._decoded)))
        return got

    def name(self, offset: int) -> str:
        """The method's C name for messages ('NVC6C0_SEND_PCAS_A', 'NVC6C0_LOAD_INLINE_QMD_DATA(3)')."""
        hit = self.lookup(offset)
        if hit is None:
            return f"{offset:#x}"
        return f"{self.prefix}_{hit[0]}" + ("" if hit[1] is None else f"({hit[1]})")


@cache
def table(chain: tuple[str, ...]) -> MethodTable:
    return MethodTable(chain)


def named(prefix: str, names: Iterable[str]) -> dict[int, str]:
    """value -> name of nv_classes' named values prefix + name (a field's values, by the names the code uses)."""
    return {getattr(nc, prefix + n): n for n in names}


class Engine:
    """One class's engine on one channel. Subclasses give the class chains (class id -> METHODS prefixes), the
    ROBUST_CHANNEL code of their errors, the methods whose effect the mock does not model (an error, never a silent
    no-op) and the methods that act (`actions`: name -> function(engine, value); it returns False to stall, leaving
    the method to be executed again on a later step)."""

    chains: ClassVar[dict[int, tuple[str, ...]]] = {}
    code: ClassVar[int]
    unmodelled: ClassVar[tuple[str, ...]] = ()
    actions: ClassVar[dict[str, Callable[[Engine, int], bool | None]]] = {}

    def __init__(self, channel: Channel, class_id: int):
        self.channel, self.class_id = channel, class_id
        self.table = table(self.chains[class_id])
        self.state: dict[str, int] = {}
        self._resolved: dict[int, tuple[str, Callable | None]] = {}  # method offset -> (state key, action), checked

    @property
    def gpu(self):
        return self.channel.gpu

    @property
    def vas(self):
        return self.channel.vaspace

    def method(self, offset: int, value: int) -> bool:
        """Execute one method; False when it stalls."""
        got = self._resolved.get(offset)
        if got is None:
            hit = self.table.lookup(offset)
            if hit is None:
                raise MethodError(self.code, f"class {self.class_id:#06x} has no method at offset {offset:#x}")
            name, i = hit
            if name.startswith(self.unmodelled):
                raise MethodError(self.code, f"{self.table.prefix}_{name} is not modelled by the mock GPU")
            got = self._resolved[offset] = (name if i is None else f"{name}({i})", self.actions.get(name))
        key, act = got
        self.state[key] = value
        return act is None or act(self, value) is not False

    def field(self, method: str, field: str) -> int:
        """A field of the value last written to a method (0 before any write)."""
        return self.table.methods[method].fields[field].decode(self.state.get(method, 0))

    def fields(self, method: str, value: int) -> dict[str, int]:
        """A value's fields as the method's (read only: kept for the next write of the same value)."""
        return self.table.decoded(method, value)

    def fail(self, why: str) -> MethodError:
        return MethodError(self.code, why)
