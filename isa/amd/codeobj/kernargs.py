"""A kernel's argument segment as code object v5 lays it out: the explicit arguments at their metadata offsets, then
the hidden arguments (block counts, group sizes, grid dims, dynamic LDS size) the kernel reads."""

from __future__ import annotations

import struct
from collections.abc import Callable

import numpy as np

from usergpu.errors import LaunchError
from usergpu.isa import argtypes
from usergpu.isa.amd.codeobj.kernel import Kernel

POINTER_KINDS = ("global_buffer", "image", "sampler", "queue")


def _what(i: int, a) -> str:
    return f"argument {i}{f' ({a.name})' if a.name else ''}"


def check_args(k: Kernel, args: list) -> None:
    """Refuse, before anything runs, arguments the kernel's metadata says it cannot take: the wrong count, an array
    whose dtype is not the pointee type (float64 for float*), a Python float for an integer, an integer out of its
    type's range, a numpy scalar of another type. A pointer's pointee is known only when the code object was built
    with argument info (compile_opencl adds -cl-kernel-arg-info); a type the metadata does not name is taken as
    given."""
    explicit = [a for a in k.args if not a.value_kind.startswith("hidden_")]
    if len(args) != len(explicit):
        kinds = ", ".join(a.value_kind for a in explicit)
        raise LaunchError(f"kernel {k.name} takes {len(explicit)} arguments ({kinds}), got {len(args)}")
    for i, (a, v) in enumerate(zip(explicit, args, strict=True)):
        if isinstance(v, np.ndarray) and v.ndim and a.value_kind not in POINTER_KINDS \
                and not (a.value_kind == "by_value" and a.size == 8):
            raise LaunchError(f"{_what(i, a)} of {k.name} is {a.type_name or a.value_kind} by value: an array "
                              "cannot be passed for it")
        argtypes.check(f"{_what(i, a)} of {k.name}", a.type_name, a.size, v)


def pack_kernargs(k: Kernel, args: list, grid: tuple, block: tuple, address_of: Callable[[object], int | None],
                  printf_buffer: int | None = None) -> tuple[bytes, int]:
    """(the kernarg segment, the LDS bytes the workgroup needs with dynamic LDS) for args in order. address_of gives
    a pointer argument's GPU address (None: not something that has one); printf_buffer the address of the printf
    buffer of a kernel that calls printf (its hidden_printf_buffer)."""
    check_args(k, args)
    explicit = [a for a in k.args if not a.value_kind.startswith("hidden_")]
    buf = bytearray(max(k.kernarg_size, 8) + 256)
    lds_end = k.group_segment_fixed_size
    for i, (a, v) in enumerate(zip(explicit, args, strict=True)):
        address = address_of(v)
        if a.value_kind in POINTER_KINDS or (a.value_kind == "by_value" and a.size == 8 and address is not None):
            if address is None:
                raise LaunchError(f"argument {i} of {k.name} is a pointer: pass an array or buffer, not "
                                  f"{type(v).__name__}")
            struct.pack_into("<Q", buf, a.offset, address)
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
    dims = 3 if grid[2] * block[2] > 1 else 2 if grid[1] * block[1] > 1 else 1
    hidden = {"hidden_block_count_x": ("<I", grid[0]), "hidden_block_count_y": ("<I", grid[1]),
              "hidden_block_count_z": ("<I", grid[2]), "hidden_group_size_x": ("<H", block[0]),
              "hidden_group_size_y": ("<H", block[1]), "hidden_group_size_z": ("<H", block[2]),
              "hidden_grid_dims": ("<H", dims), "hidden_dynamic_lds_size": ("<I", lds_end - k.group_segment_fixed_size),
              "hidden_printf_buffer": ("<Q", printf_buffer)}
    for a in k.args:
        if a.value_kind == "hidden_printf_buffer" and printf_buffer is None:
            raise LaunchError(f"kernel {k.name} calls printf: its launch needs a printf buffer (printf_buffer=)")
        if a.value_kind in hidden:
            fmt, value = hidden[a.value_kind]
            struct.pack_into(fmt, buf, a.offset, value)
    return bytes(buf), lds_end


def _python_scalar(v, size: int, type_name: str) -> bytes:
    """A Python number's bytes in a by-value slot of size bytes (its type from the metadata's name, else from v)."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise LaunchError(f"a {size}-byte {type_name or 'by-value'} argument takes a number, bytes or a numpy value, "
                          f"not {type(v).__name__}")
    if isinstance(v, float) or "float" in type_name or "double" in type_name or "half" in type_name:
        if size not in (2, 4, 8):
            raise LaunchError(f"a float cannot fill a {size}-byte {type_name or 'by-value'} argument")
        return {2: np.float16, 4: np.float32, 8: np.float64}[size](v).tobytes()
    if not -(1 << 8 * size - 1) <= v < 1 << 8 * size:
        raise LaunchError(f"{v} does not fit a {size}-byte {type_name or 'by-value'} argument")
    return int(v).to_bytes(size, "little", signed=v < 0)


def _dims(value, what: str) -> tuple[int, int, int]:
    """A grid or block as given by a caller (1 to 3 positive ints), as a 3-tuple."""
    items = tuple(value) if isinstance(value, tuple | list) else None
    if not items or len(items) > 3 or any(isinstance(x, bool) or not isinstance(x, int | np.integer) for x in items):
        raise LaunchError(f"{what} {value!r}: expected a tuple of 1 to 3 ints, e.g. (4, 1, 1)")
    return tuple(int(x) for x in items) + (1,) * (3 - len(items))


def check_launch(k: Kernel, grid: tuple, block: tuple) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """grid and block as 3-tuples, checked against the kernel's limits and the dispatch packet's 32-bit sizes."""
    grid, block = _dims(grid, "grid"), _dims(block, "block")
    if any(g * b >= 1 << 32 for g, b in zip(grid, block, strict=True)):
        raise LaunchError(f"grid {grid} of blocks {block}: a dimension has 2^32 work-items or more")
    threads = block[0] * block[1] * block[2]
    if not 0 < threads <= k.max_flat_workgroup_size:
        raise LaunchError(f"block {block} has {threads} work-items; {k.name} allows 1..{k.max_flat_workgroup_size}")
    if min(grid) < 1:
        raise LaunchError(f"grid {grid} must have at least one workgroup in each dimension")
    return grid, block


def dispatch_packet(k: Kernel, grid: tuple, block: tuple, kernarg: int, lds: int) -> bytes:
    """The hsa_kernel_dispatch_packet_t (64 bytes) a kernel reading its dispatch pointer sees."""
    dims = 3 if grid[2] * block[2] > 1 else 2 if grid[1] * block[1] > 1 else 1
    sizes = (g * b for g, b in zip(grid, block, strict=True))
    return struct.pack("<HHHHHHIIIIIQQQQ", 2 | 1 << 8, dims, *block, 0, *sizes, k.private_segment_fixed_size, lds,
                       0, kernarg, 0, 0)
