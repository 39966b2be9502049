"""One dispatch path, the hardware's: the waves of the grid's workgroups start from the COMPUTE_* registers
(isa/amd/dispatch.py works them out from a kernel descriptor), a batch of workgroups at a time. launch runs a code
object's kernel through them: the image, the kernel arguments (explicit ones, then the hidden ones code object v5
lays out) and the AQL dispatch packet in a fresh Memory.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import NamedTuple

import numpy as np

from usergpu.emu.amd.exec.native import executor_class
from usergpu.emu.amd.exec.trace import tracer
from usergpu.emu.amd.exec.waves import EXEC, Waves
from usergpu.emu.memory import Memory, MemoryFault
from usergpu.errors import GPUFault, LaunchError
from usergpu.isa.amd.codeobj import CodeObject, parse, printf
from usergpu.isa.amd.codeobj import kd as kdesc
from usergpu.isa.amd.codeobj.kernargs import check_launch, dispatch_packet, pack_kernargs
from usergpu.isa.amd.codeobj.target import version
from usergpu.isa.amd.dispatch import (
    DENORM_SHIFT,
    LDS_GRANULE,
    SCRATCH_GRANULE,
    image,
    kernel_registers,
    regs_of,
    user_sgpr_values,
)

# USERGPU_EMU_BACKGROUND=1 (usergpu mock sets it for a foreign suite, whose many small kernels each run about once):
# the native backend runs a kernel not compiled before on the reference, and compiles it in a worker thread once it
# has run there long enough to pay for clang (native/executor.py HOT_S)
BACKGROUND = os.environ.get("USERGPU_EMU_BACKGROUND") == "1"

BATCH_VGPR_BYTES = 8 << 20  # most VGPR bytes a batch holds (the allocator reuses them); workgroups never split
# a small batch's executor is kept for the next batch of its shape (a suite launches the same small grids again and
# again): its set-up, the native backend's included, is done once; at most this many, this big, per thread
SPARE_EXECUTORS, SPARE_EXECUTOR_BYTES = 8, 1 << 20
SMALL_BATCH = 64  # workgroups: the IDs of a batch this small are kept for the next dispatch of its grid
DEFAULT_BUDGET = 2_000_000  # instructions per wave before GPUHang
USER_DATA = tuple(f"COMPUTE_USER_DATA_{i}" for i in range(64))  # the user SGPRs' registers, in order
# The system SGPRs SPI writes after the user SGPRs, in order, as COMPUTE_PGM_RSRC2 enables them (no scratch wave
# offset: gfx940+ and gfx11+ architect flat scratch).
SYSTEM_SGPRS = ("TGID_X_EN", "TGID_Y_EN", "TGID_Z_EN", "TG_SIZE_EN")
TTMP = 108  # gfx12 architects the workgroup IDs: TTMP9 = x, TTMP7 = y | z << 16
WORKITEM_ID_BITS = 10  # X, Y, Z packed into v0 (gfx90a+, gfx11+)
# the registers that say how a dispatch's waves start, but for the user SGPRs' values
PLAN_REGS = ("COMPUTE_PGM_LO", "COMPUTE_PGM_HI", "COMPUTE_PGM_RSRC1", "COMPUTE_PGM_RSRC2", "COMPUTE_PGM_RSRC3",
             "COMPUTE_NUM_THREAD_X", "COMPUTE_NUM_THREAD_Y", "COMPUTE_NUM_THREAD_Z", "COMPUTE_DISPATCH_INITIATOR",
             "COMPUTE_TMPRING_SIZE")


_spares = threading.local()


class _Code:
    """A mapping's bytes as the decoder reads them (a slice is bytes), without copying the whole mapping."""

    def __init__(self, buf: np.ndarray):
        self.buf = buf

    def __len__(self) -> int:
        return len(self.buf)

    def __getitem__(self, part: slice) -> bytes:
        return self.buf[part].tobytes()


def dispatch(mem: Memory, regs: dict[str, int], grid: tuple[int, int, int], arch: str, budget: int = DEFAULT_BUDGET,
             stats: dict | None = None, kernel: str = "kernel", observer: Callable | None = None) -> None:
    """Run grid (workgroups in x, y, z) as the COMPUTE_* registers regs (REGS names; missing ones 0) describe, the
    code fetched from mem at COMPUTE_PGM_HI:LO << 8. A stats dict, if given, receives the wave-instructions and
    lane-instructions (wave-instructions x lanes) executed. Faults, hangs and unimplemented instructions raise
    GPUFault, GPUHang and UnsupportedInstruction. An observer, if given, is called after every step as
    observer(executor, waves, first, pc, instruction): waves are the executor's numbers of the waves that ran it,
    first + those the dispatch-wide numbers (workgroup number * waves per workgroup + wave in the workgroup)."""
    for _ in dispatch_slices(mem, regs, grid, arch, budget, stats, kernel, observer):
        pass


def dispatch_slices(mem: Memory, regs: dict[str, int], grid: tuple[int, int, int], arch: str,
                    budget: int = DEFAULT_BUDGET, stats: dict | None = None, kernel: str = "kernel",
                    observer: Callable | None = None, slice_s: float | None = None,
                    workgroups: np.ndarray | None = None) -> Iterator[None]:
    """dispatch, a time slice at a time: with slice_s, yields each time the waves have run that many seconds (the
    next step goes on from there), as a GPU runs on while its host does other things; ends when the grid has.
    workgroups: the dispatch-order numbers of the grid's workgroups to run (an XCC's share), None for all."""
    plan = _plan(arch, *(regs.get(name, 0) for name in PLAN_REGS))
    entry, block, lanes, n_user, system, lds, scratch, vgprs, arch_vgprs, denorm, waves_per_group, dims = plan
    grid = tuple(grid)
    if min(grid) < 1 or min(block) < 1:
        raise LaunchError(f"grid {grid} and block {block} must have at least one workgroup and work-item in each "
                          "dimension")
    try:
        base, code = mem.mapping(entry, "execute")
    except MemoryFault as f:
        raise GPUFault(f.address, f.access, kernel, 0, entry, f.why) from None
    user = [regs.get(name, 0) for name in USER_DATA[:n_user]]
    total = grid[0] * grid[1] * grid[2] if workgroups is None else len(workgroups)
    backend = executor_class()
    batch_waves = min(backend.BATCH_WAVES, BATCH_VGPR_BYTES // (vgprs * lanes * 4))
    per_batch = max(1, batch_waves // waves_per_group)
    trace = tracer() if os.environ.get("USERGPU_TRACE") else None
    fetch, program = _Code(code), {}  # instructions decoded and compiled once for all batches
    spares = None if observer or trace else _spares.__dict__.setdefault("executors", {})
    for start in range(0, total, per_batch):
        stop = min(start + per_batch, total)
        ids = (_wave_groups(grid, waves_per_group, start, stop - start) if workgroups is None
               else _workgroups(grid, workgroups[start:stop], waves_per_group))
        shape = (backend, arch, lanes, arch_vgprs, vgprs, stop - start, waves_per_group, lds, scratch)
        ex = spares.pop(shape, None) if spares is not None else None
        if ex is None:
            w = Waves((stop - start) * waves_per_group, lanes, arch_vgprs, vgprs - arch_vgprs)
            ex = backend(arch, fetch, base, mem, w, _waves_of(stop - start, waves_per_group)[0], lds, scratch, kernel,
                         budget, program)
            ex.background = BACKGROUND  # native: a new kernel compiles while the reference runs it
        else:
            ex.reuse(fetch, base, mem, kernel, budget, program)
        w = ex.w
        _setup(w, ids, block, arch, user, system, waves_per_group, dims)
        w.pc[:] = entry
        ex.denorm = dict(denorm)  # s_denorm_mode changes it
        ex.trace = trace
        if observer:
            first = start * waves_per_group
            ex.observe = lambda ex, idx, pc, step, first=first: observer(ex, idx, first, pc, step)
        while not ex.run(None if slice_s is None else time.monotonic() + slice_s):
            yield
        if stats is not None:
            steps = int(np.add.reduce(w.steps))
            stats["instructions"] = stats.get("instructions", 0) + steps
            stats["lane_instructions"] = stats.get("lane_instructions", 0) + steps * lanes
        if spares is not None and w.v.nbytes + ex.lds.nbytes + ex.scratch.nbytes <= SPARE_EXECUTOR_BYTES:
            ex.park()
            spares[shape] = ex
            while len(spares) > SPARE_EXECUTORS:
                spares.pop(next(iter(spares)))


class _Plan(NamedTuple):
    """What the PLAN_REGS values say about a dispatch's waves."""

    entry: int  # the code's GPU address
    block: tuple[int, int, int]
    lanes: int
    user_sgprs: int
    system: tuple[str, ...]  # the system SGPRs' enables, in order
    lds: int  # bytes per workgroup
    scratch: int  # bytes per lane
    vgprs: int  # ArchVGPRs and AccVGPRs
    arch_vgprs: int
    denorm: dict[int, int]  # FLOAT_MODE's denorm bits by type size
    waves_per_group: int
    dims: int  # work-item ID dimensions packed in v0


@functools.lru_cache(maxsize=1024)
def _plan(arch: str, *values: int) -> _Plan:
    """The PLAN_REGS values decoded: a kernel launched again decodes none of them."""
    table = regs_of(arch)
    lo, hi, rsrc1, rsrc2, rsrc3, *threads, initiator, tmpring = (table[name].decode(v) for name, v in
                                                                 zip(PLAN_REGS, values, strict=True))
    block = tuple(t["NUM_THREAD_FULL"] for t in threads)
    lanes = 32 if initiator.get("CS_W32_EN") else 64  # gfx9: wave64 only
    vgprs = (rsrc1["VGPRS"] + 1) * kdesc.vgpr_granule(arch, lanes == 32)
    return _Plan(
        entry=(hi["DATA"] << 32 | lo["DATA"]) << 8, block=block, lanes=lanes, user_sgprs=rsrc2["USER_SGPR"],
        system=tuple(name for name in SYSTEM_SGPRS if rsrc2[name]), lds=rsrc2["LDS_SIZE"] * LDS_GRANULE,
        scratch=tmpring["WAVESIZE"] * SCRATCH_GRANULE[version(arch)[0]] // lanes, vgprs=vgprs,
        arch_vgprs=min((rsrc3["ACCUM_OFFSET"] + 1) * 4, vgprs) if "ACCUM_OFFSET" in rsrc3 else vgprs,
        denorm={bits: rsrc1["FLOAT_MODE"] >> shift & 3 for bits, shift in DENORM_SHIFT.items()},
        waves_per_group=-(-block[0] * block[1] * block[2] // lanes), dims=min(rsrc2["TIDIG_COMP_CNT"], 2) + 1)


def _workgroups(grid: tuple[int, int, int], numbers: np.ndarray, waves_per_group: int) -> np.ndarray:
    """The workgroup IDs (x, y, z rows) of each wave of the workgroups with these dispatch-order numbers (x
    fastest)."""
    numbers = np.repeat(numbers, waves_per_group)
    return np.stack((numbers % grid[0], numbers // grid[0] % grid[1], numbers // (grid[0] * grid[1])))


def _small_batches(fn: Callable) -> Callable:
    """fn(..., groups), its result read-only, kept for batches of at most SMALL_BATCH workgroups (a suite's many
    small grids) and worked out anew for bigger ones (their arrays are big, and their set-up small beside them)."""
    kept = functools.lru_cache(maxsize=256)(fn)

    def call(*args):
        return kept(*args) if args[-1] <= SMALL_BATCH else fn(*args)

    return call


@_small_batches
def _wave_groups(grid: tuple[int, int, int], waves_per_group: int, start: int, groups: int) -> np.ndarray:
    """_workgroups of the groups workgroups numbered from start."""
    out = _workgroups(grid, np.arange(start, start + groups), waves_per_group)
    out.flags.writeable = False
    return out


@functools.lru_cache(maxsize=256)
def _waves_of(groups: int, waves_per_group: int) -> tuple[np.ndarray, np.ndarray]:
    """Each wave's workgroup within a batch of groups and its number within the workgroup (read-only)."""
    out = (np.repeat(np.arange(groups), waves_per_group), np.tile(np.arange(waves_per_group), groups))
    for a in out:
        a.flags.writeable = False
    return out


def _setup(w: Waves, ids: np.ndarray, block: tuple, arch: str, user: list[int], system: tuple[str, ...],
           waves_per_group: int, dims: int) -> None:
    """Every wave's initial state: ids its workgroup's (x, y, z rows); user SGPRs, then the system SGPRs named by
    their COMPUTE_PGM_RSRC2 enables (the workgroup info, TG_SIZE_EN's, is threadgroup_size_in_waves in bits 5:0);
    dims work-item IDs packed in v0; EXEC."""
    if user:
        w.s[: len(user)] = np.asarray(user, np.uint32)[:, None]
    for i, name in enumerate(system, len(user)):
        w.s[i] = waves_per_group if name == "TG_SIZE_EN" else ids[SYSTEM_SGPRS.index(name)]
    if version(arch)[0] == 12:
        w.s[TTMP + 9], w.s[TTMP + 7] = ids[0], ids[1] | ids[2] << 16
    w.v[0], w.s[EXEC], w.s[EXEC + 1] = _batch_start(tuple(block), w.lanes, waves_per_group, dims,
                                                    w.n // waves_per_group)


@_small_batches
def _batch_start(block: tuple, lanes: int, waves_per_group: int, dims: int, groups: int) -> tuple[np.ndarray, ...]:
    """_wave_start for each wave of a batch of groups workgroups (read-only)."""
    index = _waves_of(groups, waves_per_group)[1]
    out = tuple(a[index] for a in _wave_start(block, lanes, waves_per_group, dims))
    for a in out:
        a.flags.writeable = False
    return out


@functools.lru_cache(maxsize=256)
def _wave_start(block: tuple, lanes: int, waves_per_group: int, dims: int) -> tuple[np.ndarray, ...]:
    """v0 (the packed work-item IDs) and EXEC's halves of each wave number within a workgroup: they depend on the
    block's shape only, so a suite's many launches of one shape work them out once (read-only arrays)."""
    first = np.arange(waves_per_group)
    flat = first[:, None] * lanes + np.arange(lanes)
    ids = (flat % block[0], flat // block[0] % block[1], flat // (block[0] * block[1]))
    v0 = sum(ids[i] << WORKITEM_ID_BITS * i for i in range(dims)).astype(np.uint32)
    threads = block[0] * block[1] * block[2]
    active = np.clip(threads - first * lanes, 0, lanes).astype(np.uint64)  # EXEC: the wave's real lanes
    bits = np.where(active >= 64, np.uint64(0xFFFFFFFFFFFFFFFF), (np.uint64(1) << np.minimum(active, 63)) - 1)
    out = (v0, (bits & np.uint64(0xFFFFFFFF)).astype(np.uint32), (bits >> np.uint64(32)).astype(np.uint32))
    for a in out:
        a.flags.writeable = False
    return out


@functools.lru_cache(maxsize=64)
def _parsed(data: bytes) -> tuple[CodeObject, bytes]:
    """A code object's parse and loaded image, kept by its bytes: launching the same bytes again (a test suite's
    kernels) parses once. Only this module reads them, and only reads."""
    co = parse(data)
    return co, image(co)


def launch(co: CodeObject | bytes, kernel: str, grid: tuple[int, ...], block: tuple[int, ...], args: list,
           arch: str | None = None, budget: int = DEFAULT_BUDGET, stats: dict | None = None,
           observer: Callable | None = None) -> list[np.ndarray]:
    """Run a kernel of a code object on the emulator. grid counts workgroups, block work-items per workgroup;
    numpy arrays are copied in and the list of them (after the kernel) is returned in argument order. A stats
    dict, if given, receives the wave-instructions and lane-instructions (wave-instructions x lanes) executed;
    an observer sees every step (see dispatch)."""
    if not isinstance(co, CodeObject | bytes | bytearray):
        raise LaunchError(f"a code object is bytes (an ELF file's contents), not {type(co).__name__}")
    co, loaded = _parsed(bytes(co)) if isinstance(co, bytes | bytearray) else (co, image(co))
    if kernel not in co.kernels:
        raise LaunchError(f"no kernel {kernel!r} in the code object (kernels: {', '.join(co.kernels)})")
    k = co.kernels[kernel]
    if arch and co.arch and arch != co.arch:
        raise LaunchError(f"the code object is built for {co.arch}; it cannot run as {arch} (compile it for {arch}, "
                          f"or run it as {co.arch})")
    arch = arch or co.arch
    grid, block = check_launch(k, grid, block)
    mem = Memory()
    base = mem.map(np.frombuffer(loaded, np.uint8).copy(), align=1 << 16)
    arrays: list[np.ndarray] = []

    def address_of(v) -> int | None:  # a pointer argument: a copy of the array, mapped
        if not (isinstance(v, np.ndarray) and v.ndim):
            return None
        arrays.append(np.array(v, copy=True))
        return mem.map(arrays[-1])

    printf_buffer = printf.new_buffer() if printf.takes_buffer(k) else None
    kernarg_bytes, lds = pack_kernargs(k, args, grid, block, address_of,
                                       None if printf_buffer is None else mem.map(printf_buffer))
    kernarg = mem.map(np.frombuffer(kernarg_bytes, np.uint8).copy())
    packet = mem.map(np.frombuffer(dispatch_packet(k, grid, block, kernarg, lds), np.uint8).copy())
    scratch = k.private_segment_fixed_size + (16384 if k.uses_dynamic_stack else 0)
    kd = mem.read_bytes(base + k.descriptor_addr, kdesc.KD_SIZE)
    user = user_sgpr_values(kd, arch, {"kernarg_segment_ptr": kernarg, "dispatch_ptr": packet,
                                       "queue_ptr": mem.map(256), "private_segment_size": scratch,
                                       "kernarg_preload": kernarg_bytes})
    dispatch(mem, kernel_registers(kd, base + k.descriptor_addr, arch, block, user, lds, scratch), grid, arch, budget,
             stats, kernel, observer)
    if printf_buffer is not None:
        printf.drain(memoryview(printf_buffer), printf.formats(co.metadata))
    return arrays
