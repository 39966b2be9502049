"""A generated module for a test: those made from linux-source-6.12's headers (amdgpu's, the uapi of amdkfd and
amdgpu's DRM) skip (saying why) only where that package is not installed."""

from __future__ import annotations

import importlib

import pytest

from usergpu.autogen.generator import amdkernel, toolchain
from usergpu.errors import ToolchainError

KERNEL = {i.name for i in amdkernel.INTERFACES} | {"kfd", "amdgpu_drm"}  # the modules made from linux-source-6.12


def module(name: str):
    if name in KERNEL:
        try:
            toolchain.linux_tree()
        except ToolchainError as e:  # only when linux-source-6.12 is not installed
            pytest.skip(str(e))
    return importlib.import_module(f"usergpu.autogen.{name}")
