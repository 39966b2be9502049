"""GPFIFO words as a runtime writes them: pushbuffer method headers (INC, NON_INC, ONE_INC, IMMD) and GP entries,
encoded with the AMPERE_CHANNEL_GPFIFO_A fields of nv_classes (every GPFIFO class from Ampere to Blackwell keeps
them). A method is a byte offset in its class or a METHODS name ('NVC56F_SEM_ADDR_LO')."""

from __future__ import annotations

from usergpu.autogen import nv_classes as nc
from usergpu.errors import FieldError

F = nc.FIELDS
INC, NON_INC, IMMD, ONE_INC = (nc.NVC56F_DMA_SEC_OP_INC_METHOD, nc.NVC56F_DMA_SEC_OP_NON_INC_METHOD,
                               nc.NVC56F_DMA_SEC_OP_IMMD_DATA_METHOD, nc.NVC56F_DMA_SEC_OP_ONE_INC)


def offset(method: int | str) -> int:
    """A method's byte offset: itself, or the offset METHODS gives the name."""
    return nc.METHODS[method].offset if isinstance(method, str) else method


def header(sec_op: int, subchannel: int, method: int | str, count: int) -> int:
    """A method header: the operation, the subchannel, the method's dword address and the count (IMMD: the data)."""
    return (F["NVC56F_DMA_SEC_OP"].encode(sec_op) | F["NVC56F_DMA_METHOD_SUBCHANNEL"].encode(subchannel)
            | F["NVC56F_DMA_METHOD_ADDRESS"].encode(offset(method) >> 2) | F["NVC56F_DMA_METHOD_COUNT"].encode(count))


def inc(subchannel: int, method: int | str, *values: int) -> list[int]:
    """Value i to the method i dwords after `method`."""
    return [header(INC, subchannel, method, len(values)), *values]


def non_inc(subchannel: int, method: int | str, *values: int) -> list[int]:
    """Every value to `method`."""
    return [header(NON_INC, subchannel, method, len(values)), *values]


def one_inc(subchannel: int, method: int | str, *values: int) -> list[int]:
    """The first value to `method`, the others to the method after it."""
    return [header(ONE_INC, subchannel, method, len(values)), *values]


def immd(subchannel: int, method: int | str, value: int) -> list[int]:
    """One method whose (13-bit) value rides in the header."""
    return [header(IMMD, subchannel, method, value)]


def gp_entry(va: int, dwords: int, level: int = nc.NVC56F_GP_ENTRY1_LEVEL_SUBROUTINE) -> int:
    """The 64-bit GP entry of a pushbuffer segment of `dwords` dwords at GPU address va (4-byte aligned); the
    level tinygrad's runtime sets (the mock runs either level alike)."""
    if va & 3:
        raise FieldError(f"pushbuffer address {va:#x} is not 4-byte aligned")
    low = F["NVC56F_GP_ENTRY0_GET"].encode((va & 0xFFFFFFFF) >> 2)
    high = (F["NVC56F_GP_ENTRY1_GET_HI"].encode(va >> 32) | F["NVC56F_GP_ENTRY1_LENGTH"].encode(dwords)
            | F["NVC56F_GP_ENTRY1_LEVEL"].encode(level))
    return low | high << 32
