"""NVIDIA emulation: code objects (PTX modules, cubins), the PTX emulator, and (part 2) the mock GPU.

    usergpu.emu.nv.launch(ptx, "vadd", grid=(4, 1, 1), block=(256, 1, 1), args=[a, b, c, n])

The emulator (and numpy) loads on the first use of launch.
"""

from __future__ import annotations

__all__ = ["launch"]


def __getattr__(name: str):
    if name != "launch":
        raise AttributeError(f"module 'usergpu.emu.nv' has no attribute {name!r}")
    from usergpu.emu.nv.ptx import launch

    return launch
