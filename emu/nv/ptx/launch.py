"""usergpu.emu.nv.launch: a kernel of a PTX module (or of a cubin, through the PTX it carries) run on the PTX
emulator, with numpy arrays for global buffers and scalars packed as the parameters' types say, checked.

`run` is the engine under it and under the mock NVIDIA GPU: a linked program, a Memory, the launch dimensions, the
parameter bytes (what constant bank 0 holds at the parameters' offset) and the dynamic shared memory size.
"""

from __future__ import annotations

import re
import time
from functools import lru_cache

import numpy as np

from usergpu.emu.amd.codeobj.kernargs import LaunchError
from usergpu.emu.amd.exec.memory import Memory
from usergpu.emu.nv.codeobj import ptx
from usergpu.emu.nv.ptx.executor import DEFAULT_BUDGET, Compiled, execute
from usergpu.emu.nv.ptx.program import Program, link
from usergpu.emu.nv.ptx.state import State
from usergpu.errors import CodeObjectError

# per arch: SMs (%nsmid) and the most shared memory one block may have (bytes); chips: A100, A10/3090, 4090, H100
ARCHS = {"sm_80": (108, 163 * 1024), "sm_86": (84, 99 * 1024), "sm_89": (128, 99 * 1024),
         "sm_90": (132, 227 * 1024), "sm_100": (148, 227 * 1024), "sm_120": (170, 99 * 1024)}
MAX_BLOCK = (1024, 1024, 64)
MAX_GRID = ((1 << 31) - 1, 65535, 65535)
BATCH_LANES = 16384  # threads run together (whole blocks; at least one block)
_MANGLED = re.compile(r"_Z(\d+)")


def module_of(code: bytes | str) -> ptx.Module:
    """The PTX module of PTX text or of a cubin made by assemble_ptx."""
    if isinstance(code, bytes | bytearray) and bytes(code[:4]) == b"\x7fELF":
        from usergpu.emu.nv.codeobj import cubin

        text = cubin.parse(bytes(code)).ptx
        if text is None:
            raise CodeObjectError("the cubin carries no PTX (section .usergpu.ptx): the emulator runs PTX, not SASS; "
                                  "assemble it with usergpu.assemble_ptx, or launch the PTX itself")
        code = text
    return _parse(code.decode() if isinstance(code, bytes | bytearray) else code)


@lru_cache(maxsize=64)
def _parse(text: str) -> ptx.Module:
    return ptx.parse(text)


def find_kernel(module: ptx.Module, name: str) -> str:
    """A kernel by its PTX name, or by the name a C++ source gave it when that is unique (vadd for _Z4vaddPfS_)."""
    if name in module.kernels:
        return name
    found = [k for k in module.kernels if (m := _MANGLED.match(k)) and k[m.end():m.end() + int(m.group(1))] == name]
    if len(found) == 1:
        return found[0]
    raise LaunchError(f"no kernel {name!r} in the PTX module (kernels: {', '.join(module.kernels) or 'none'})")


_PROGRAMS: dict[tuple[int, str], tuple[ptx.Module, Compiled]] = {}


def compiled(module: ptx.Module, kernel: str) -> Compiled:
    """The kernel linked and compiled once per module."""
    key = (id(module), kernel)
    hit = _PROGRAMS.get(key)
    if hit is None or hit[0] is not module:
        hit = _PROGRAMS[key] = (module, Compiled(link(module, kernel)))
    return hit[1]


def _dims(value, what: str) -> tuple[int, int, int]:
    v = tuple(int(x) for x in (value if isinstance(value, list | tuple) else (value,)))
    if not 1 <= len(v) <= 3 or any(x < 1 for x in v):
        raise LaunchError(f"{what} must be 1 to 3 positive integers, not {value!r}")
    return (*v, 1, 1)[:3]


def check_launch(prog: Program, grid, block, shared: int, arch: str) -> tuple[tuple, tuple]:
    grid, block = _dims(grid, "grid"), _dims(block, "block")
    threads = block[0] * block[1] * block[2]
    if threads > 1024 or any(b > m for b, m in zip(block, MAX_BLOCK, strict=True)):
        raise LaunchError(f"block {block} has {threads} threads: at most 1024, and at most {MAX_BLOCK} per dimension")
    if any(g > m for g, m in zip(grid, MAX_GRID, strict=True)):
        raise LaunchError(f"grid {grid} is past the largest, {MAX_GRID}")
    k = prog.kernel
    if k.reqntid and tuple((*k.reqntid, 1, 1)[:3]) != block:
        raise LaunchError(f"kernel {k.name} requires blocks of {k.reqntid} threads (.reqntid), not {block}")
    if k.maxntid and threads > int(np.prod(k.maxntid)):
        raise LaunchError(f"kernel {k.name} takes at most {int(np.prod(k.maxntid))} threads a block (.maxntid "
                          f"{k.maxntid}), not {threads}")
    if shared < 0:
        raise LaunchError(f"dynamic shared memory of {shared} bytes")
    limit = ARCHS.get(arch, ARCHS["sm_90"])[1]
    total = (prog.dynamic_shared_at + shared) if shared else prog.shared_size
    if total > limit:
        raise LaunchError(f"{total} bytes of shared memory a block ({prog.shared_size} static, {shared} dynamic): "
                          f"{arch} has {limit}")
    return grid, block


def map_globals(prog: Program, mem: Memory) -> dict[str, int]:
    """The module's .global and .const variables, mapped with their initializers; their addresses by name."""
    return {name: mem.map(np.frombuffer(v.init, np.uint8).copy() if v.init else max(v.size, 1), align=max(v.align, 16))
            for name, v in prog.globals.items()}


def run(c: Compiled, mem: Memory, grid: tuple, block: tuple, params: bytes, shared: int = 0, arch: str = "sm_90",
        budget: int = DEFAULT_BUDGET, globals_: dict[str, int] | None = None, stats: dict | None = None) -> None:
    """Every block of the grid, in batches of whole blocks, on the emulator."""
    globals_ = map_globals(c.prog, mem) if globals_ is None else globals_
    blocks = np.stack(np.meshgrid(*(np.arange(g) for g in reversed(grid)), indexing="ij"), -1).reshape(-1, 3)[:, ::-1]
    per = max(1, BATCH_LANES // (block[0] * block[1] * block[2]))
    sms = ARCHS.get(arch, ARCHS["sm_90"])[0]
    start = time.time_ns()
    for i in range(0, len(blocks), per):
        st = State(c.prog, mem, blocks[i:i + per], block, grid, params, shared, sms)
        st.globals, st.time_ns = globals_, start
        with np.errstate(all="ignore"):  # a GPU's overflow, NaN and division by zero are values, not warnings
            execute(c, st, budget)
        if stats is not None:
            stats["steps"] = stats.get("steps", 0) + st.steps
            stats["lane_instructions"] = stats.get("lane_instructions", 0) + st.lane_steps


def pack_params(prog: Program, args: list, address_of) -> bytes:
    """The kernel's parameter block: each argument at its parameter's offset, checked against its .param type."""
    k = prog.kernel
    if len(args) != len(k.params):
        raise LaunchError(f"kernel {k.name} takes {len(k.params)} parameters, {len(args)} given")
    out = bytearray(k.param_size)
    for i, (p, a) in enumerate(zip(k.params, args, strict=True)):
        out[p.offset:p.offset + p.size] = _param_bytes(k.name, i, p, a, address_of)
    return bytes(out)


def _param_bytes(kernel: str, i: int, p: ptx.Param, a, address_of) -> bytes:
    what = f"parameter {i} ({p.name}: .{p.type}{f'[{p.count}]' if p.count > 1 else ''}, {p.size} bytes) of {kernel}"
    if isinstance(a, bytes | bytearray):
        if len(a) != p.size:
            raise LaunchError(f"{what} takes {p.size} bytes, {len(a)} given")
        return bytes(a)
    if isinstance(a, np.ndarray) and a.ndim:
        if p.size != 8 or p.type[0] == "f" or p.count != 1:
            raise LaunchError(f"{what} is not a pointer: an array cannot be passed to it")
        return address_of(a).to_bytes(8, "little")
    if p.count != 1 and not (p.type == "b8" and p.count == p.size):
        raise LaunchError(f"{what} is an aggregate: pass its bytes")
    kind = p.type[0]
    if p.type in ("b8",) and p.count > 1:
        raise LaunchError(f"{what} is an aggregate: pass its bytes")
    if isinstance(a, np.generic):
        want = "f" if kind == "f" else "iu"
        if a.dtype.kind not in want or a.dtype.itemsize != p.size:
            raise LaunchError(f"{what}: a {a.dtype} cannot be passed to it")
        return a.tobytes()
    if isinstance(a, bool | int) and kind != "f":
        lo, hi = -(1 << (8 * p.size - 1)), (1 << (8 * p.size)) - 1
        if not lo <= a <= hi:
            raise LaunchError(f"{what}: {a} does not fit in {p.size} bytes")
        return (int(a) & ((1 << 8 * p.size) - 1)).to_bytes(p.size, "little")
    if isinstance(a, float | int) and kind == "f":
        return np.array(a, {2: np.float16, 4: np.float32, 8: np.float64}[p.size]).tobytes()
    raise LaunchError(f"{what}: cannot pass a {type(a).__name__}")


def launch(code: bytes | str, kernel: str, grid, block, args: list, shared: int = 0, arch: str | None = None,
           budget: int = DEFAULT_BUDGET, stats: dict | None = None) -> list[np.ndarray]:
    """Run a kernel of PTX (or of a cubin carrying its PTX) on the emulator. grid counts blocks, block threads per
    block; numpy arrays are copied in and the list of them (after the kernel) is returned in argument order;
    shared is the dynamic shared memory in bytes. A stats dict receives the steps and lane-instructions run."""
    if not isinstance(code, bytes | bytearray | str):
        raise LaunchError(f"PTX or a cubin is bytes or str, not {type(code).__name__}")
    module = module_of(code)
    arch = arch or module.arch or "sm_90"
    c = compiled(module, find_kernel(module, kernel))
    grid, block = check_launch(c.prog, grid, block, shared, arch)
    mem = Memory()
    arrays: list[np.ndarray] = []

    def address_of(a: np.ndarray) -> int:
        arrays.append(np.array(a, copy=True))
        return mem.map(arrays[-1])

    params = pack_params(c.prog, list(args), address_of)
    run(c, mem, grid, block, params, shared, arch, budget, stats=stats)
    return arrays
