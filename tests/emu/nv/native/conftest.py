"""The native backend's tests use the PTX case harness (tests/emu/nv) and the kernel corpus (tests/kernels)."""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for folder in (HERE.parent, HERE.parents[2] / "kernels", HERE):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
