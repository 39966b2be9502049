"""A kernel argument checked against its parameter's C type, the same way on every vendor: the C type names
(OpenCL C, HIP, CUDA) and the numpy dtype of their elements, and the rules a value must meet for one: an array for a
pointer holds the pointee type, a by-value number is of its parameter's kind and in its range, a numpy scalar is of
exactly its type (never bit-cast). A type no table names (a struct, void*) takes what is given."""

from __future__ import annotations

import re

import numpy as np

from usergpu.errors import LaunchError

# the element types OpenCL C, HIP and CUDA name (vector types by their element: float4 -> float)
C_TYPES = {"char": np.int8, "signed char": np.int8, "uchar": np.uint8, "unsigned char": np.uint8,
           "short": np.int16, "ushort": np.uint16, "unsigned short": np.uint16, "int": np.int32,
           "uint": np.uint32, "unsigned int": np.uint32, "long": np.int64, "ulong": np.uint64,
           "unsigned long": np.uint64, "long long": np.int64, "unsigned long long": np.uint64, "size_t": np.uint64,
           "half": np.float16, "_Float16": np.float16, "__half": np.float16, "float": np.float32,
           "double": np.float64, "int8_t": np.int8, "uint8_t": np.uint8, "int16_t": np.int16, "uint16_t": np.uint16,
           "int32_t": np.int32, "uint32_t": np.uint32, "int64_t": np.int64, "uint64_t": np.uint64}
VECTOR = re.compile(r"^(.*?)(2|3|4|8|16)$")


def element_type(type_name: str | None) -> np.dtype | None:
    """The numpy dtype of a type name's elements ('float*' -> float32, 'int4' -> int32); None when the name is
    absent or not a scalar or vector type or a pointer to one (a struct, void*, float**)."""
    if not type_name:
        return None
    base = type_name.replace("const ", "").replace("volatile ", "").strip()
    base = base[:-1].rstrip() if base.endswith("*") else base
    if base not in C_TYPES and (m := VECTOR.match(base)) and m.group(1) in C_TYPES:
        base = m.group(1)
    return np.dtype(C_TYPES[base]) if base in C_TYPES else None


def is_pointer(type_name: str | None) -> bool:
    return bool(type_name) and type_name.endswith("*")


def check(what: str, type_name: str | None, size: int, v) -> None:
    """v for a parameter of type type_name (size bytes), or LaunchError '<what> is float*: expected an array of
    float32, got float64'; what names the argument ('argument 1 (x) of vadd'). bytes (an aggregate's or a value's
    own) are taken as given; so is anything for a type the table does not name. Whether an array may go to the
    parameter at all (it is a pointer) is the vendor's layout's to say."""
    want = element_type(type_name)
    if want is None or isinstance(v, bytes | bytearray):
        return
    if isinstance(v, np.ndarray) and v.ndim:
        if is_pointer(type_name) and v.dtype != want:
            raise LaunchError(f"{what} is {type_name}: expected an array of {want}, got {v.dtype}")
    elif not is_pointer(type_name):
        check_scalar(what, type_name, size, v, want)


def check_scalar(what: str, type_name: str, size: int, v, want: np.dtype) -> None:
    """A by-value scalar of type want (size bytes: a vector's lanes of it): a number of that kind, in range."""
    lanes = size // want.itemsize
    if isinstance(v, np.generic):
        if v.dtype != want:
            raise LaunchError(f"{what} is {type_name}: expected {want}, got a {v.dtype} scalar")
        return
    if lanes != 1 or isinstance(v, bool) or not isinstance(v, int | float):
        raise LaunchError(f"{what} is {type_name}: expected a {want} number, got {type(v).__name__}"
                          f"{' (pass a numpy value or bytes for a vector)' if lanes > 1 else ''}")
    if want.kind in "iu":
        if isinstance(v, float):
            raise LaunchError(f"{what} is {type_name}: expected an integer, got the float {v}")
        info = np.iinfo(want)
        if not info.min <= v <= info.max:
            raise LaunchError(f"{what} is {type_name}: {v} is outside {info.min}..{info.max}")
