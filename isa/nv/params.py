"""An NVIDIA kernel's parameter block: where each parameter lies in it (a cubin's EIATTR_KPARAM_INFO: offsets and
sizes, in signature order), how big it is (EIATTR_CBANK_PARAM_SIZE) and where it lies in constant bank 0
(EIATTR_PARAM_CBANK); and one packing of launch arguments into it, for the PTX emulator and the runtime alike.

Where the PTX is known (the emulator's module, or a cubin carrying it), each parameter's PTX type checks what is
passed to it; a stock cubin says only sizes, so any value of the parameter's size goes: a device address (an int) or
a Python int in its bytes, a Python float as f32 or f64, a numpy scalar or bytes of that size. Where the C source's
parameter types are known too (the lines compile_cuda writes into its PTX, or a C++ kernel's mangled name:
param_types), they check each value as on AMD (isa/argtypes.py): an array holds the pointee type, a number is of its
parameter's kind and in range, a numpy scalar of exactly its type."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from usergpu.autogen import nv_classes as nvc
from usergpu.errors import CodeObjectError, LaunchError
from usergpu.isa import argtypes
from usergpu.isa.nv import cubin, ptx
from usergpu.isa.nv.param_types import CParam, of_mangled

FLOATS = {2: np.float16, 4: np.float32, 8: np.float64}


@dataclass(frozen=True)
class Slot:
    """A parameter: its offset in the block, its size, its PTX declaration and its C name and type where those are
    known."""

    offset: int
    size: int
    decl: ptx.Param | None = None
    c: CParam | None = None


@dataclass(frozen=True)
class Layout:
    kernel: str
    slots: tuple[Slot, ...]
    size: int  # bytes of the block


def of_ptx(fn: ptx.Function, c_params: tuple[CParam, ...] | None = None) -> Layout:
    """A PTX kernel's parameters as it declares them, with their C types where c_params gives them
    (param_types.read) or the kernel's mangled name says them."""
    return Layout(fn.name, _typed(fn.name, tuple(Slot(p.offset, p.size, p) for p in fn.params), c_params),
                  fn.param_size)


def of_cubin(k: cubin.Kernel, module: ptx.Module | None = None, c_params: tuple[CParam, ...] | None = None
             ) -> Layout:
    """A cubin kernel's parameters from its KPARAM_INFO, typed by the PTX module the cubin carries where given (its
    declarations must lie where the cubin says), and by their C types as of_ptx's are."""
    found = k.params
    size = k.cbank_param_size or max((p.offset + p.size for p in found), default=0)
    if module is None:
        return Layout(k.name, _typed(k.name, tuple(Slot(p.offset, p.size) for p in found), c_params), size)
    fn = module.kernels.get(k.name)
    if fn is None:
        raise CodeObjectError(f"kernel {k.name} is not in the PTX the cubin carries (kernels: "
                              f"{', '.join(module.kernels) or 'none'})")
    have, declared = [(p.offset, p.size) for p in found], [(p.offset, p.size) for p in fn.params]
    if have != declared:
        raise CodeObjectError(f"kernel {k.name}: EIATTR_KPARAM_INFO puts its parameters at (offset, size) {have}, "
                              f"the PTX the cubin carries at {declared}")
    slots = tuple(Slot(p.offset, p.size, d) for p, d in zip(found, fn.params, strict=True))
    return Layout(k.name, _typed(k.name, slots, c_params), size)


def _typed(kernel: str, slots: tuple[Slot, ...], c_params: tuple[CParam, ...] | None) -> tuple[Slot, ...]:
    """The slots with their C parameters: c_params, which must fit them (CodeObjectError), else what a mangled name
    says where it fits them (a name that only looks mangled says nothing)."""
    says = c_params if c_params is not None else of_mangled(kernel)
    if says is None:
        return slots
    bad = _misfit(slots, says)
    if bad is None:
        return tuple(replace(s, c=c) for s, c in zip(slots, says, strict=True))
    if c_params is not None:
        raise CodeObjectError(f"kernel {kernel}: {bad}")
    return slots


def _misfit(slots: tuple[Slot, ...], says: tuple[CParam, ...]) -> str | None:
    """Why C parameters cannot be the slots' (a count, a pointer not 8 bytes, a scalar of another size, a vector not
    whole elements); None when they fit."""
    if len(says) != len(slots):
        return f"the source declares {len(says)} parameters, the PTX {len(slots)}"
    for i, (s, c) in enumerate(zip(slots, says, strict=True)):
        want = argtypes.element_type(c.type)
        if want is None:
            continue
        fits = s.size == 8 if argtypes.is_pointer(c.type) else s.size == want.itemsize if c.type in argtypes.C_TYPES \
            else s.size % want.itemsize == 0  # a pointer; a scalar; a vector of want (a float3 is 12 or 16 bytes)
        if not fits:
            return f"parameter {i} ({c.name or '?'}) is {c.type} in the source, {s.size} bytes in the PTX"
    return None


def cbank0(arch: str) -> dict[str, int]:
    """Where the arch's SASS reads the parameters, %ntid and %nctaid in constant bank 0 (sm_90's for an arch the
    table lacks)."""
    return nvc.CBANK0[arch if arch in nvc.CBANK0 else "sm_90"]


def cbank_offset(k: cubin.Kernel, arch: str) -> int:
    """Where the parameters lie in constant bank 0: where the cubin says, else where the arch's SASS reads them."""
    return k.param_cbank.offset if k.param_cbank else cbank0(arch)["params"]


def pack(layout: Layout, args: list, address_of: Callable[[np.ndarray], int]) -> bytes:
    """The parameter block: each argument at its parameter's offset. A numpy array is passed as the address
    address_of gives it (the emulator maps it; the runtime refuses it, wanting a Buffer's address)."""
    if len(args) != len(layout.slots):
        raise LaunchError(f"kernel {layout.kernel} takes {len(layout.slots)} parameters, {len(args)} given")
    out = bytearray(layout.size)
    for i, (s, a) in enumerate(zip(layout.slots, args, strict=True)):
        out[s.offset:s.offset + s.size] = _bytes(layout.kernel, i, s, a, address_of)
    return bytes(out)


def _bytes(kernel: str, i: int, s: Slot, a, address_of) -> bytes:
    p, size = s.decl, s.size
    typed = f"{p.name}: .{p.type}{f'[{p.count}]' if p.count > 1 else ''}, " if p else ""
    what = f"parameter {i} ({typed}{size} bytes) of {kernel}"
    real = None if p is None else p.type[0] == "f"  # None: a stock cubin's parameter, of no known type
    if s.c is not None:
        argtypes.check(f"argument {i}{f' ({s.c.name})' if s.c.name else ''} of {kernel}", s.c.type, size, a)
    if isinstance(a, bytes | bytearray):
        if len(a) != size:
            raise LaunchError(f"{what} takes {size} bytes, {len(a)} given")
        return bytes(a)
    aggregate = p is not None and p.count != 1
    if isinstance(a, np.ndarray) and a.ndim:
        if size != 8 or real or aggregate:
            raise LaunchError(f"{what} is not a pointer: an array cannot be passed to it")
        return address_of(a).to_bytes(8, "little")
    if aggregate:
        raise LaunchError(f"{what} is an aggregate: pass its bytes")
    if isinstance(a, np.generic):
        kinds = "biufc" if real is None else "f" if real else "iu"
        if a.dtype.kind not in kinds or a.dtype.itemsize != size:
            raise LaunchError(f"{what}: a {a.dtype} cannot be passed to it")
        return a.tobytes()
    if isinstance(a, bool | int) and not real:
        if not -(1 << (8 * size - 1)) <= a < 1 << 8 * size:  # the signed or the unsigned range
            raise LaunchError(f"{what}: {a} does not fit in {size} bytes")
        return (int(a) & ((1 << 8 * size) - 1)).to_bytes(size, "little")
    if isinstance(a, float | int) and (real or (real is None and size in (4, 8))):
        return np.array(a, FLOATS[size]).tobytes()
    raise LaunchError(f"{what}: cannot pass a {type(a).__name__}")
