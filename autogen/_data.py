"""The data file of a generated module (MODULE.msgpack beside MODULE.py): its large tables in msgpack, which loads
in milliseconds where the same tables as a Python literal take a second to compile without a bytecode cache.

msgpack keeps what the tables hold exactly: dicts with int or str keys, tuples, str, int, bool and None.
"""

from __future__ import annotations

from pathlib import Path

import msgpack


def path(module_file: str) -> Path:
    """The data file of the module at module_file."""
    return Path(module_file).with_suffix(".msgpack")


def pack(tables: dict) -> bytes:
    return msgpack.packb(tables, use_bin_type=True)


def unpack(blob: bytes) -> dict:
    return msgpack.unpackb(blob, use_list=False, strict_map_key=False, raw=False)


def load(module_file: str) -> dict:
    """The tables of the module at module_file (pass its __file__)."""
    return unpack(path(module_file).read_bytes())


def lines(blob: bytes) -> list[str]:
    """The tables as text, a line for each entry that is not itself a table (what `autogen --check` diffs):
    OPS['SOP1'][0] = ('s_mov_b32', ...)."""
    return list(_lines(unpack(blob), ""))


def _lines(table: dict, where: str):
    for key, value in table.items():
        at = f"{where}[{key!r}]" if where else str(key)
        if isinstance(value, dict) and value:
            yield from _lines(value, at)
        else:
            yield f"{at} = {value!r}"
