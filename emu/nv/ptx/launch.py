"""usergpu.emu.nv.launch: a kernel of a PTX module (or of a cubin, through the PTX it carries) run on the PTX
emulator, with numpy arrays for global buffers and scalars packed as the parameters' types say, checked.

`run` is the engine under it: a linked program, a Memory, the launch dimensions, the parameter bytes (what constant
bank 0 holds at the parameters' offset) and the dynamic shared memory size. `slices` runs the same a time slice at a
time (the mock NVIDIA GPU's engine: a kernel that never ends keeps its channel busy instead of holding the caller).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from functools import lru_cache

import numpy as np

from usergpu.emu.memory import Memory
from usergpu.emu.nv.ptx import native, printf
from usergpu.emu.nv.ptx.executor import DEFAULT_BUDGET, Compiled
from usergpu.emu.nv.ptx.program import Program, link
from usergpu.emu.nv.ptx.state import State, cluster_shape
from usergpu.errors import GPUHang, LaunchError
from usergpu.isa.nv import launch_check, param_types, ptx
from usergpu.isa.nv.cubin import sm_number
from usergpu.isa.nv.launch_check import ARCHS
from usergpu.isa.nv.params import of_ptx, pack
from usergpu.isa.text import text_of

BATCH_LANES = 16384  # threads run together (whole blocks; at least one block)
TIMEOUT = 30.0  # seconds a bare launch may run before it is a GPUHang
SLICE = 0.1  # seconds between a bare launch's looks at its timeout
CLUSTER_MAX = 16  # blocks a cluster may hold (8 is CUDA's portable size; 16 with the non-portable attribute)


def _text(code: bytes | str) -> str | bytes:
    """The PTX text of PTX (str or bytes) or of a cubin made by assemble_ptx."""
    if isinstance(code, bytes | bytearray) and bytes(code[:4]) == b"\x7fELF":
        return _cubin_ptx(bytes(code))
    return bytes(code) if isinstance(code, bytearray) else code


def module_of(code: bytes | str) -> ptx.Module:
    """The PTX module of PTX text or of a cubin made by assemble_ptx."""
    return _parse(_text(code))


@lru_cache(maxsize=64)
def _cubin_ptx(data: bytes) -> str:
    """The PTX a cubin carries, read once per cubin's bytes (a suite launches the same cubin many times)."""
    from usergpu.isa.nv import cubin

    text = cubin.parse(data).ptx
    if text is None:
        raise cubin.no_ptx("the PTX emulator")
    return text


@lru_cache(maxsize=64)
def _parse(text: str | bytes) -> ptx.Module:
    """ptx.parse, once per text (bytes that are not UTF-8 are its CodeObjectError)."""
    return ptx.parse(text)


def find_kernel(module: ptx.Module, name: str) -> str:
    """A kernel by its PTX name, or by the name a C++ source gave it when that is unique (vadd for _Z4vaddPfS_)."""
    return launch_check.find_kernel(module.kernels, name, "the PTX module")


_PROGRAMS: dict[tuple[int, str], tuple[ptx.Module, Compiled]] = {}


def compiled(module: ptx.Module, kernel: str) -> Compiled:
    """The kernel linked and compiled once per module."""
    key = (id(module), kernel)
    hit = _PROGRAMS.get(key)
    if hit is None or hit[0] is not module:
        hit = _PROGRAMS[key] = (module, Compiled(link(module, kernel)))
    return hit[1]


def check_launch(prog: Program, grid, block, shared: int, arch: str) -> tuple[tuple, tuple]:
    """(grid, block) checked against the limits and the kernel's static shared memory, .reqntid and .maxntid."""
    k = prog.kernel
    return launch_check.check_launch(k.name, grid, block, shared, arch, prog.shared_size, k.reqntid, k.maxntid)


def map_globals(prog: Program, mem: Memory) -> dict[str, int]:
    """The module's .global and .const variables, mapped with their initializers; their addresses by name."""
    return {name: mem.map(np.frombuffer(v.init, np.uint8).copy() if v.init else max(v.size, 1), align=max(v.align, 16))
            for name, v in prog.globals.items()}


def check_cluster(prog: Program, grid: tuple, cluster: tuple, arch: str) -> tuple[int, int, int]:
    """The launch's cluster shape (cluster_shape: the one given, else .reqnctapercluster), which only sm_90 and
    later have, of at most CLUSTER_MAX blocks."""
    cluster = cluster_shape(prog, tuple(grid), tuple(cluster))
    size = cluster[0] * cluster[1] * cluster[2]
    if size > 1 and sm_number(arch) < 90:
        raise LaunchError(f"kernel {prog.kernel.name}: clusters of {cluster} blocks need sm_90 or later, not {arch}")
    if size > CLUSTER_MAX:
        raise LaunchError(f"kernel {prog.kernel.name}: a cluster of {cluster} is {size} blocks, more than "
                          f"{CLUSTER_MAX}")
    return cluster


def _blocks_per_batch(grid: tuple, block: tuple, cluster: tuple) -> int:
    """As many blocks as BATCH_LANES threads hold, in whole runs of clusters: blocks are numbered x fastest, so
    whole clusters come in runs of cluster-deep planes, of cluster-high rows, or of cluster-wide spans."""
    run = grid[0] * grid[1] * cluster[2] if cluster[2] > 1 else grid[0] * cluster[1] if cluster[1] > 1 else cluster[0]
    return max(run, BATCH_LANES // (block[0] * block[1] * block[2]) // run * run)


def slices(c: Compiled, mem: Memory, grid: tuple, block: tuple, params: bytes, shared: int = 0,
           arch: str = "sm_90", budget: int = DEFAULT_BUDGET, globals_: dict[str, int] | None = None,
           stats: dict | None = None, slice_s: float | None = None,
           cluster: tuple = (1, 1, 1)) -> Iterator[State]:
    """Every block of the grid, in batches of whole blocks (of whole clusters), on the emulator; with slice_s,
    yields the batch's State each time it has run that many seconds without ending (the next step goes on from
    there)."""
    globals_ = map_globals(c.prog, mem) if globals_ is None else globals_
    cluster = check_cluster(c.prog, grid, cluster, arch)
    total = grid[0] * grid[1] * grid[2]
    per = _blocks_per_batch(grid, block, cluster)
    sms = ARCHS.get(arch, ARCHS["sm_90"])[0]
    start = time.time_ns()
    execute = native.execute(c)
    printed: list[bytes] = []
    st = None
    for i in range(0, total, per):
        if st is not None and st.blocks == min(per, total - i):
            st.renew(i)
        else:
            st = State(c.prog, mem, i, min(per, total - i), tuple(block), tuple(grid), params, shared, sms, cluster)
        st.globals, st.time_ns = globals_, start
        while True:
            with np.errstate(all="ignore"):  # a GPU's overflow, NaN and division by zero are values, not warnings
                if execute(c, st, budget, deadline=None if slice_s is None else time.monotonic() + slice_s):
                    break
            yield st
        printed += st.printed
        if stats is not None:
            stats["steps"] = stats.get("steps", 0) + st.steps
            stats["lane_instructions"] = stats.get("lane_instructions", 0) + st.lane_steps
            stats["issued"] = stats.get("issued", 0) + st.issued
    printf.flush(printed)  # after the kernel completes, as CUDA's driver prints


def run(c: Compiled, mem: Memory, grid: tuple, block: tuple, params: bytes, shared: int = 0, arch: str = "sm_90",
        budget: int = DEFAULT_BUDGET, globals_: dict[str, int] | None = None, stats: dict | None = None,
        cluster: tuple = (1, 1, 1)) -> None:
    """The whole launch at once (slices with no slice)."""
    for _ in slices(c, mem, grid, block, params, shared, arch, budget, globals_, stats, cluster=cluster):
        pass


def pack_params(prog: Program, args: list, address_of, c_params: list | None = None) -> bytes:
    """The kernel's parameter block: each argument at its parameter's offset, checked against its C type where the
    PTX names it (compile_cuda's usergpu.params lines), else its .param type."""
    return pack(of_ptx(prog.kernel, c_params), args, address_of)


def launch(code: bytes | str, kernel: str, grid, block, args: list, shared: int = 0, arch: str | None = None,
           budget: int = DEFAULT_BUDGET, stats: dict | None = None,
           timeout: float | None = TIMEOUT, cluster: tuple = (1, 1, 1)) -> list[np.ndarray]:
    """Run a kernel of PTX (or of a cubin carrying its PTX) on the emulator. grid counts blocks, block threads per
    block; numpy arrays are copied in and the list of them (after the kernel) is returned in argument order;
    shared is the dynamic shared memory in bytes. A stats dict receives the steps and lane-instructions run. A
    launch running past timeout seconds (None: no limit) or budget steps in a batch of blocks is a GPUHang.
    cluster: blocks per cluster (sm_90), (1, 1, 1) for none (then a kernel's .reqnctapercluster gives it)."""
    if not isinstance(code, bytes | bytearray | str):
        raise LaunchError(f"PTX or a cubin is bytes or str, not {type(code).__name__}")
    module = module_of(code)
    arch = arch or module.arch or "sm_90"
    name = find_kernel(module, kernel)
    c = compiled(module, name)
    grid, block = check_launch(c.prog, grid, block, shared, arch)
    mem = Memory()
    arrays: list[np.ndarray] = []

    def address_of(a: np.ndarray) -> int:
        arrays.append(np.array(a, copy=True))
        return mem.map(arrays[-1])

    params = pack_params(c.prog, list(args), address_of, param_types.read(text_of(_text(code), "ptx")).get(name))
    if timeout is None:
        run(c, mem, grid, block, params, shared, arch, budget, stats=stats, cluster=cluster)
        return arrays
    limit = time.monotonic() + timeout
    for st in slices(c, mem, grid, block, params, shared, arch, budget, stats=stats, slice_s=min(SLICE, timeout),
                     cluster=cluster):
        if time.monotonic() >= limit:
            ins = c.prog.code[st.p]
            raise GPUHang(f"ran {timeout:g} s without ending (line {ins.line}: {ins.text})", c.prog.kernel.name,
                          "timeout= of usergpu.emu.nv.launch allows longer (None: no limit)")
    return arrays
