"""What a launch of an NVIDIA kernel is checked against before it runs, on the PTX emulator and on a GPU alike: the
kernel it names (its PTX name, or the C++ name of a mangled one) and its grid, block and shared memory against the
hardware's limits and the kernel's .reqntid / .maxntid."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from usergpu.errors import LaunchError

# per arch: SMs (%nsmid) and the most shared memory one block may have (bytes); chips: A100, A10/3090, 4090, H100
ARCHS = {"sm_80": (108, 163 * 1024), "sm_86": (84, 99 * 1024), "sm_89": (128, 99 * 1024),
         "sm_90": (132, 227 * 1024), "sm_100": (148, 227 * 1024), "sm_120": (170, 99 * 1024)}
MAX_BLOCK = (1024, 1024, 64)
MAX_GRID = ((1 << 31) - 1, 65535, 65535)
_MANGLED = re.compile(r"_Z(\d+)")


def find_kernel(names: Iterable[str], name: str, where: str) -> str:
    """A kernel of names by its own name, or by the name a C++ source gave it when that is unique (vadd for
    _Z4vaddPfS_); LaunchError naming the kernels there are (where: 'the PTX module', 'the cubin')."""
    names = list(names)
    if name in names:
        return name
    found = [k for k in names if (m := _MANGLED.match(k)) and k[m.end():m.end() + int(m.group(1))] == name]
    if len(found) == 1:
        return found[0]
    raise LaunchError(f"no kernel {name!r} in {where} (kernels: {', '.join(names) or 'none'})")


def _dims(value, what: str) -> tuple[int, int, int]:
    v = tuple(int(x) for x in (value if isinstance(value, list | tuple) else (value,)))
    if not 1 <= len(v) <= 3 or any(x < 1 for x in v):
        raise LaunchError(f"{what} must be 1 to 3 positive integers, not {value!r}")
    return (*v, 1, 1)[:3]


def check_launch(kernel: str, grid, block, shared: int, arch: str, static_shared: int = 0,
                 reqntid: tuple[int, ...] | None = None, maxntid: tuple[int, ...] | None = None) -> tuple[tuple, tuple]:
    """(grid, block) as 3 ints each, checked; shared is the dynamic shared memory, which starts after the static
    (static_shared bytes, without what the hardware reserves) at a 16-byte boundary."""
    grid, block = _dims(grid, "grid"), _dims(block, "block")
    threads = math.prod(block)
    if threads > 1024 or any(b > m for b, m in zip(block, MAX_BLOCK, strict=True)):
        raise LaunchError(f"block {block} has {threads} threads: at most 1024, and at most {MAX_BLOCK} per dimension")
    if any(g > m for g, m in zip(grid, MAX_GRID, strict=True)):
        raise LaunchError(f"grid {grid} is past the largest, {MAX_GRID}")
    if reqntid and tuple((*reqntid, 1, 1)[:3]) != block:
        raise LaunchError(f"kernel {kernel} requires blocks of {reqntid} threads (.reqntid), not {block}")
    if maxntid and threads > math.prod(maxntid):
        raise LaunchError(f"kernel {kernel} takes at most {math.prod(maxntid)} threads a block (.maxntid "
                          f"{maxntid}), not {threads}")
    if shared < 0:
        raise LaunchError(f"dynamic shared memory of {shared} bytes")
    limit = ARCHS.get(arch, ARCHS["sm_90"])[1]
    total = (-(-static_shared // 16) * 16 + shared) if shared else static_shared
    if total > limit:
        raise LaunchError(f"{total} bytes of shared memory a block ({static_shared} static, {shared} dynamic): "
                          f"{arch} has {limit}")
    return grid, block
