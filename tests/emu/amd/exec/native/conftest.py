"""The native backend's tests use the executor harness (tests/emu/amd) and the kernel corpus (tests/kernels)."""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for folder in (HERE.parents[1], HERE.parents[3] / "kernels", HERE):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
