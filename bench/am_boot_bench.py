"""AM's bring-up on the mock PCI GPU (MOCKPCI+AMD, gfx1100): a cold boot (PSP bootloader stages, sOS, ring, TMR,
Navi31's 27 firmware loads, GMC, IH, MEC, SDMA) against a partial boot of the same board (firmware kept: only what
a process owns is set up anew), in the same process (ratio: cold / partial).

    .venv/bin/python bench/am_boot_bench.py [boots]
"""

from __future__ import annotations

import os
import sys
import tempfile

from timing import median_seconds  # bench/timing.py: run as python bench/<name>.py

from usergpu.drivers.amd.am.driver import AM
from usergpu.emu.amd.mock.pci.machine import machine


def main(boots: int = 10) -> None:
    with tempfile.TemporaryDirectory() as d:
        hal = machine("gfx1100", directory=d)
        os.environ["AM_RESET"] = "1"
        cold = median_seconds(lambda: AM(hal).close(), boots)
        os.environ["AM_RESET"] = "0"
        partial = median_seconds(lambda: AM(hal).close(), boots)
    print(f"AM bring-up of a mock gfx1100, median of {boots}: cold {cold * 1e3:,.1f} ms, partial {partial * 1e3:,.1f}"
          f" ms; ratio {cold / partial:.1f}x")


if __name__ == "__main__":
    main(*map(int, sys.argv[1:]))
