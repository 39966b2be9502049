"""SQTT decode throughput over every real capture in tests/data/sqtt (gfx1100, gfx1200, gfx950), per format and
in all, each against baselines run in the same process on the same bytes: a plain Python loop visiting every
byte, and numpy summing them (ratio: decode time / baseline time).

    .venv/bin/python bench/sqtt_bench.py [repeats]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from timing import median_seconds  # bench/timing.py: run as python bench/<name>.py

import usergpu
from usergpu.isa.amd import sqtt

DATA = Path(usergpu.__file__).resolve().parent / "tests" / "data" / "sqtt"  # the repository's copy of shared/data/sqtt


def python_loop(blobs: list[bytes]) -> None:
    for blob in blobs:
        for _ in blob:
            pass


def numpy_sum(blobs: list[bytes]) -> None:
    for blob in blobs:
        np.frombuffer(blob, np.uint8).sum()


def main(repeats: int = 20) -> None:
    by_arch: dict[str, list[bytes]] = {}
    for capture in sorted(DATA.glob("*/*")):
        by_arch.setdefault(capture.parent.name, []).extend(p.read_bytes() for p in sorted(capture.glob("*.bin")))
    if not by_arch:
        sys.exit(f"no captures in {DATA}")
    by_arch["all"] = [blob for blobs in list(by_arch.values()) for blob in blobs]
    for arch, blobs in by_arch.items():
        size = sum(map(len, blobs))
        packets = sum(len(sqtt.decode(blob, strict=False)) for blob in blobs)  # also warms up
        decode = median_seconds(lambda b=blobs: [sqtt.decode(blob, strict=False) for blob in b], repeats)
        loop = median_seconds(lambda b=blobs: python_loop(b), repeats)
        summed = median_seconds(lambda b=blobs: numpy_sum(b), repeats)
        print(f"{arch:8} {len(blobs):3} blobs, {size / 1e3:6.1f} KB, {packets:6} packets, median of {repeats}: "
              f"decode {size / 1e6 / decode:5.2f} MB/s ({decode / packets * 1e9:4.0f} ns/packet); "
              f"python byte loop {size / 1e6 / loop:6.1f} MB/s (ratio {decode / loop:5.1f}x the time); "
              f"numpy sum {size / 1e6 / summed:7.1f} MB/s (ratio {decode / summed:6.0f}x)")


if __name__ == "__main__":
    main(*map(int, sys.argv[1:]))
