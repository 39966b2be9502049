"""Test helpers for the mock NVIDIA GPU driven directly (no RM): numpy buffers mapped into a VA space, channels with
their ring, pushbuffer and USERD in mapped memory, submitted the way a runtime submits (pushbuffer words, a GP entry,
GPPut, the doorbell), and the host-semaphore methods a runtime pushes."""

from __future__ import annotations

import numpy as np

from usergpu.autogen import nv_classes as nc
from usergpu.emu.nv.mock import pushbuf
from usergpu.emu.nv.mock.gpu import MockNVGPU
from usergpu.emu.nv.mock.vaspace import VASpace

GP_GET, GP_PUT = nc.struct_Nvc56fControl_struct.GPGet.offset, nc.struct_Nvc56fControl_struct.GPPut.offset
SEM_EXECUTE = nc.METHODS["NVC56F_SEM_EXECUTE"]
BASE = 0x20_0000_0000  # well inside the 40 bits a GP entry addresses
PAGE = 1 << 12


class Space:
    """A VA space with a bump allocator of mapped, zeroed numpy buffers (a page of unmapped gap after each)."""

    def __init__(self, vas: VASpace, base: int = BASE):
        self.vas, self.next = vas, base

    def alloc(self, nbytes: int, dtype=np.uint8) -> tuple[int, np.ndarray]:
        va = self.next
        arr = np.zeros(-(-nbytes // np.dtype(dtype).itemsize), dtype)
        self.vas.map(va, arr.view(np.uint8))
        self.next = va + -(-max(nbytes, 1) // PAGE) * PAGE + PAGE
        return va, arr


class Ring:
    """A channel of `gpu` with a ring of `entries` GP entries and a pushbuffer of its own; `errors` collects the
    (code, message) its on_error callback receives."""

    def __init__(self, gpu: MockNVGPU, space: Space, entries: int = 64, classes: tuple[int, ...] = (),
                 pushbuffer: int = 1 << 16, gpfifo_class: int | None = None):
        self.gpu, self.space = gpu, space
        self.ring_va, self.ring = space.alloc(8 * entries, np.uint64)
        self.pb_va, self.pb = space.alloc(pushbuffer, np.uint32)
        self.userd = np.zeros(512, np.uint8)
        self.errors: list[tuple[int, str]] = []
        self.channel = gpu.new_channel(space.vas, self.ring_va, entries, self.userd,
                                       lambda code, message: self.errors.append((code, message)), gpfifo_class)
        for c in classes:
            self.channel.bind(c)
        self.entries, self.put, self.pos = entries, 0, 0

    def submit(self, words: list[int], doorbell: bool = True) -> None:
        """The words as one pushbuffer segment, its GP entry at GPPut, GPPut moved on, the doorbell rung."""
        if self.pos + len(words) > len(self.pb):
            self.pos = 0
        self.pb[self.pos:self.pos + len(words)] = words
        self.entry(pushbuf.gp_entry(self.pb_va + 4 * self.pos, len(words)))
        self.pos += len(words)
        if doorbell:
            self.gpu.doorbell(self.channel.token)

    def entry(self, value: int) -> None:
        self.ring[self.put] = value
        self.put = (self.put + 1) % self.entries
        self.userd[GP_PUT:GP_PUT + 4] = np.frombuffer(self.put.to_bytes(4, "little"), np.uint8)

    @property
    def gp_get(self) -> int:
        return int(self.userd[GP_GET:GP_GET + 4].view(np.uint32)[0])


def semaphore(va: int, payload: int, operation: str, wide: bool = False, timestamp: bool = False,
              reduction: str | None = None) -> list[int]:
    """SEM_ADDR_LO/HI, SEM_PAYLOAD_LO/HI and SEM_EXECUTE in one INC group on subchannel 0."""
    fields = {"OPERATION": getattr(nc, f"NVC56F_SEM_EXECUTE_OPERATION_{operation}"), "PAYLOAD_SIZE": int(wide),
              "RELEASE_TIMESTAMP": int(timestamp)}
    if reduction:
        fields["REDUCTION"] = getattr(nc, f"NVC56F_SEM_EXECUTE_REDUCTION_{reduction}")
        fields["REDUCTION_FORMAT"] = nc.NVC56F_SEM_EXECUTE_REDUCTION_FORMAT_UNSIGNED
    return pushbuf.inc(0, "NVC56F_SEM_ADDR_LO", va & 0xFFFFFFFF, va >> 32, payload & 0xFFFFFFFF, payload >> 32,
                       SEM_EXECUTE.encode(**fields))


def release(va: int, payload: int, wide: bool = False, timestamp: bool = False) -> list[int]:
    return semaphore(va, payload, "RELEASE", wide, timestamp)


def acquire(va: int, payload: int, operation: str = "ACQ_CIRC_GEQ", wide: bool = False) -> list[int]:
    return semaphore(va, payload, operation, wide)
