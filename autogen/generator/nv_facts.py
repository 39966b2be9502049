"""Facts about NVIDIA GPUs that no header states (hand-written; nv_classes carries them): what was measured, with
how it was measured named beside each table."""

from __future__ import annotations

# Constant bank 0 of a kernel launch, per arch: where the kernel parameters start and where the SASS ptxas emits
# reads %ntid.x/.y/.z and %nctaid.x/.y/.z (three dwords each). Measured with ptxas and nvdisasm 13.5 (PyPI
# nvidia-cuda-nvcc / nvidia-cuda-nvdisasm 13.5.37) on a kernel reading them (the .nv.info PARAM_CBANK attribute
# and the c[0x0][...] operands), as NV.md records; tests/autogen/test_nv_classes.py measures them again.
CBANK0 = {
    "sm_80": {"params": 0x160, "ntid": 0x0, "nctaid": 0xC},
    "sm_86": {"params": 0x160, "ntid": 0x0, "nctaid": 0xC},
    "sm_89": {"params": 0x160, "ntid": 0x0, "nctaid": 0xC},
    "sm_90": {"params": 0x210, "ntid": 0x0, "nctaid": 0xC},
    "sm_100": {"params": 0x380, "ntid": 0x360, "nctaid": 0x370},
    "sm_120": {"params": 0x380, "ntid": 0x360, "nctaid": 0x370},
}
