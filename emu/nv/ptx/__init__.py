"""The PTX emulator: PTX kernels run on the CPU, warps of 32 lanes batched as numpy arrays."""

from usergpu.emu.nv.ptx.launch import launch, run

__all__ = ["launch", "run"]
