"""AMD emulation: ISA, code objects, wave executor and mock hardware.

    usergpu.emu.amd.launch(co, "vadd", grid=(4, 1, 1), block=(256, 1, 1), args=[a, b, c])

The executor (and numpy) loads on the first use of launch: `usergpu.isa.amd` alone stays light.
"""

from __future__ import annotations

__all__ = ["launch"]


def __getattr__(name: str):
    if name != "launch":
        raise AttributeError(f"module 'usergpu.emu.amd' has no attribute {name!r}")
    from usergpu.emu.amd.exec import launch

    return launch
