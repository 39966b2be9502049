"""A dispatch as the hardware sets it up from the kernel descriptor: the code object's image and the kernel
arguments in memory (explicit ones, then the hidden ones code object v5 lays out), the AQL dispatch packet, and
for each wave its user and system SGPRs, work-item IDs in VGPRs and EXEC; then the waves run, a batch of
workgroups at a time.
"""

from __future__ import annotations

import os
import struct

import numpy as np

from usergpu.emu.amd.codeobj import CodeObject, Kernel, parse
from usergpu.emu.amd.exec.executor import Executor
from usergpu.emu.amd.exec.memory import Memory
from usergpu.emu.amd.exec.trace import tracer
from usergpu.emu.amd.exec.waves import Waves
from usergpu.errors import Error

PT_LOAD = 1
BATCH_WAVES = 1024  # waves run together (numpy arrays of waves x lanes); workgroups are never split
DEFAULT_BUDGET = 2_000_000  # instructions per wave before GPUHang


class LaunchError(Error):
    """A launch the kernel cannot take: wrong argument count or size, a grid or block out of range."""


def image(co: CodeObject) -> bytes:
    """The loaded image: every PT_LOAD segment at its virtual address."""
    loads = [s for s in co.segments if s.type == PT_LOAD]
    size = max((s.vaddr + s.memsz for s in loads), default=len(co.data))
    out = bytearray(size)
    for s in loads:
        out[s.vaddr : s.vaddr + s.filesz] = co.data[s.offset : s.offset + s.filesz]
    return bytes(out)


def _kernarg(k: Kernel, args: list, mem: Memory, grid: tuple, block: tuple) -> tuple:
    """The kernarg segment's bytes and the arrays mapped for the pointer arguments (in order)."""
    explicit = [a for a in k.args if not a.value_kind.startswith("hidden_")]
    if len(args) != len(explicit):
        kinds = ", ".join(a.value_kind for a in explicit)
        raise LaunchError(f"kernel {k.name} takes {len(explicit)} arguments ({kinds}), got {len(args)}")
    buf = bytearray(max(k.kernarg_size, 8) + 256)
    arrays = []
    lds_end = k.group_segment_fixed_size
    for i, (a, v) in enumerate(zip(explicit, args, strict=True)):
        if a.value_kind in ("global_buffer", "image", "sampler", "queue") or (
                a.value_kind == "by_value" and isinstance(v, np.ndarray) and a.size == 8 and v.ndim):
            if not isinstance(v, np.ndarray):
                raise LaunchError(f"argument {i} of {k.name} is a pointer: pass a numpy array, not {type(v).__name__}")
            copy = np.array(v, copy=True)
            arrays.append(copy)
            struct.pack_into("<Q", buf, a.offset, mem.map(copy))
        elif a.value_kind == "dynamic_shared_pointer":
            align = max(int(a.meta.get(".pointee_align", 4)), 4)
            lds_end = -(-lds_end // align) * align
            struct.pack_into("<I", buf, a.offset, lds_end)
            lds_end += int(v)
        else:
            raw = v if isinstance(v, bytes | bytearray) else np.asarray(v).tobytes() if isinstance(
                v, np.generic | np.ndarray) else _python_scalar(v, a.size, a.type_name or "")
            if len(raw) != a.size:
                raise LaunchError(f"argument {i} of {k.name} is {a.size} bytes ({a.type_name}), got {len(raw)}")
            buf[a.offset : a.offset + a.size] = raw
    hidden = {"hidden_block_count_x": ("<I", grid[0]), "hidden_block_count_y": ("<I", grid[1]),
              "hidden_block_count_z": ("<I", grid[2]), "hidden_group_size_x": ("<H", block[0]),
              "hidden_group_size_y": ("<H", block[1]), "hidden_group_size_z": ("<H", block[2]),
              "hidden_grid_dims": ("<H", 3 if grid[2] * block[2] > 1 else 2 if grid[1] * block[1] > 1 else 1),
              "hidden_dynamic_lds_size": ("<I", lds_end - k.group_segment_fixed_size)}
    for a in k.args:
        if a.value_kind in hidden:
            fmt, value = hidden[a.value_kind]
            struct.pack_into(fmt, buf, a.offset, value)
    return bytes(buf), arrays, lds_end


def _python_scalar(v, size: int, type_name: str) -> bytes:
    if isinstance(v, float) or "float" in type_name or "double" in type_name or "half" in type_name:
        return {2: np.float16, 4: np.float32, 8: np.float64}[size](v).tobytes()
    return int(v).to_bytes(size, "little", signed=v < 0)


def _packet(k: Kernel, grid: tuple, block: tuple, kernarg: int, lds: int) -> bytes:
    """hsa_kernel_dispatch_packet_t (64 bytes)."""
    dims = 3 if grid[2] * block[2] > 1 else 2 if grid[1] * block[1] > 1 else 1
    sizes = (g * b for g, b in zip(grid, block, strict=True))
    return struct.pack("<HHHHHHIIIIIQQQQ", 2 | 1 << 8, dims, *block, 0, *sizes, k.private_segment_fixed_size, lds,
                       0, kernarg, 0, 0)


def launch(co: CodeObject | bytes, kernel: str, grid: tuple[int, ...], block: tuple[int, ...], args: list,
           arch: str | None = None, budget: int = DEFAULT_BUDGET, stats: dict | None = None) -> list[np.ndarray]:
    """Run a kernel of a code object on the emulator. grid counts workgroups, block work-items per workgroup;
    numpy arrays are copied in and the list of them (after the kernel) is returned in argument order. A stats
    dict, if given, receives the wave-instructions and lane-instructions (wave-instructions x lanes) executed."""
    co = parse(co) if isinstance(co, bytes | bytearray) else co
    if kernel not in co.kernels:
        raise LaunchError(f"no kernel {kernel!r} in the code object (kernels: {', '.join(co.kernels)})")
    k = co.kernels[kernel]
    arch = arch or co.arch
    grid = tuple(grid) + (1,) * (3 - len(grid))
    block = tuple(block) + (1,) * (3 - len(block))
    threads = block[0] * block[1] * block[2]
    if not 0 < threads <= k.max_flat_workgroup_size:
        raise LaunchError(f"block {block} has {threads} work-items; {kernel} allows 1..{k.max_flat_workgroup_size}")
    if min(grid) < 1:
        raise LaunchError(f"grid {grid} must have at least one workgroup in each dimension")
    mem = Memory()
    img = image(co)
    base = mem.map(np.frombuffer(img, np.uint8).copy(), align=1 << 16)
    kernarg_bytes, arrays, lds = _kernarg(k, args, mem, grid, block)
    kernarg = mem.map(np.frombuffer(kernarg_bytes, np.uint8).copy())
    packet = mem.map(np.frombuffer(_packet(k, grid, block, kernarg, lds), np.uint8).copy())
    queue = mem.map(256)
    lanes = k.wavefront_size
    waves_per_group = -(-threads // lanes)
    groups = [(x, y, z) for z in range(grid[2]) for y in range(grid[1]) for x in range(grid[0])]
    per_batch = max(1, BATCH_WAVES // waves_per_group)
    scratch = k.private_segment_fixed_size + (16384 if k.uses_dynamic_stack else 0)
    trace = tracer() if os.environ.get("USERGPU_TRACE") else None
    program: dict = {}  # instructions decoded and compiled once for all batches
    for start in range(0, len(groups), per_batch):
        batch = groups[start : start + per_batch]
        w = Waves(len(batch) * waves_per_group, lanes, max(k.vgpr_count, k.vgpr_alloc, 1))
        owner = np.repeat(np.arange(len(batch)), waves_per_group)
        _setup(w, np.asarray(batch)[owner], np.tile(np.arange(waves_per_group), len(batch)), k, block, arch, {
            "kernarg_segment_ptr": kernarg, "dispatch_ptr": packet, "queue_ptr": queue,
            "private_segment_size": scratch}, kernarg_bytes)
        w.pc[:] = base + k.entry
        ex = Executor(arch, img, base, mem, w, owner, lds, scratch, kernel, budget, program)
        ex.denorm = {32: k.fields.get("COMPUTE_PGM_RSRC1_FLOAT_DENORM_MODE_32", 3),
                     16: k.fields.get("COMPUTE_PGM_RSRC1_FLOAT_DENORM_MODE_16_64", 3),
                     64: k.fields.get("COMPUTE_PGM_RSRC1_FLOAT_DENORM_MODE_16_64", 3)}
        ex.trace = trace
        ex.run()
        if stats is not None:
            stats["instructions"] = stats.get("instructions", 0) + int(w.steps.sum())
            stats["lane_instructions"] = stats.get("lane_instructions", 0) + int(w.steps.sum()) * lanes
    return arrays


def _setup(w: Waves, gids: np.ndarray, index: np.ndarray, k: Kernel, block: tuple, arch: str, values: dict,
           kernarg: bytes) -> None:
    """Every wave's initial state: gids (waves, 3) its workgroup's ID, index its number within the workgroup."""
    for name, first, count in k.user_sgprs:
        if name == "kernarg_preload":
            words = np.frombuffer(kernarg[: 4 * count].ljust(4 * count, b"\0"), np.uint32)
            w.s[first : first + count] = words[:, None]
            continue
        value = values.get(name, 0)
        for i in range(count):
            w.s[first + i] = (value >> (32 * i)) & 0xFFFFFFFF
    if arch.startswith("gfx12"):  # the workgroup IDs are architected: TTMP9 = x, TTMP7 = y | z << 16
        w.s[108 + 9], w.s[108 + 7] = gids[:, 0], gids[:, 1] | gids[:, 2] << 16
    for name, sgpr, _ in k.system_sgprs:
        axis = {"workgroup_id_x": 0, "workgroup_id_y": 1, "workgroup_id_z": 2}.get(name)
        w.s[sgpr] = 0 if axis is None else gids[:, axis]
    flat = index[:, None] * w.lanes + np.arange(w.lanes)
    x, y, z = flat % block[0], flat // block[0] % block[1], flat // (block[0] * block[1])
    if k.packed_workitem_ids:
        w.v[0] = (x | y << 10 | z << 20).astype(np.uint32)
    else:
        for i, ids in enumerate((x, y, z)[: max(k.workitem_id_dims, 1)]):
            w.v[i] = ids.astype(np.uint32)
    threads = block[0] * block[1] * block[2]
    active = np.clip(threads - index * w.lanes, 0, w.lanes).astype(np.uint64)  # EXEC: the wave's real lanes
    bits = np.where(active >= 64, np.uint64(0xFFFFFFFFFFFFFFFF), (np.uint64(1) << np.minimum(active, 63)) - 1)
    w.s[126], w.s[127] = (bits & np.uint64(0xFFFFFFFF)).astype(np.uint32), (bits >> np.uint64(32)).astype(np.uint32)
