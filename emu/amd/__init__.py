"""AMD emulation: ISA, code objects, wave executor and mock hardware.

    usergpu.emu.amd.launch(co, "vadd", grid=(4, 1, 1), block=(256, 1, 1), args=[a, b, c])
"""

from usergpu.emu.amd.exec import launch

__all__ = ["launch"]
