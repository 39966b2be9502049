"""The wave executor: run AMD GPU kernels (gfx11/gfx12, wave32 and wave64) on the CPU, batched over waves."""

from usergpu.emu.amd.exec.dispatch import launch

__all__ = ["launch"]
