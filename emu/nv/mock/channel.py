"""A GPFIFO channel: its ring of GP entries, the pushbuffer segments they point to, and the subchannels the methods
in them go to.

The ring: `entries` 8-byte GP entries at gpfifo_va; the channel executes them from GPGet to GPPut (USERD, the
Nvc56fControl layout; it wraps at `entries`) and writes GPGet back there as it retires each. A GP entry (NVC56F_GP_
ENTRY0/1) gives a segment's address and length in dwords; a length of 0 is a control entry (NOP). The segment holds
method headers (NVC56F_DMA_*: SEC_OP INC, NON_INC, ONE_INC, IMMD, END_PB_SEGMENT, the older USE_TERT forms with a
zero dword as NOP, and the subdevice-mask ones, which a single GPU ignores) each followed by its data. The fields
are c56f's for every GPFIFO class (c86f's GP entry fields are the same bits; Blackwell's are taken as the same).

Routing: SET_OBJECT (method 0) on a subchannel binds the class of an object allocated on the channel (`bind`) to it;
a method below 0x100 is the host's (host.py) whatever its subchannel, the others go to the subchannel's object.

Stepping (emu/mock/scheduler.py): a step runs the current GP entry to its end, or up to a method that stalls (an
acquire whose value is not there yet, a launch that has not ended in its slice), which a later step executes again.
An error stops the channel for good: `error` holds it and on_error(ROBUST_CHANNEL code, message) is called once; a
kernel that passes the budget (GPUHang) leaves it stalled for good (`hang`), as a hung channel is on hardware: GPGet
stays at its entry and its releases never come.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from usergpu.autogen import nv_classes as nc
from usergpu.autogen import nv_rm_535 as rm
from usergpu.emu.memory import MemoryFault
from usergpu.emu.nv.mock.compute import Compute
from usergpu.emu.nv.mock.copy_engine import CopyEngine
from usergpu.emu.nv.mock.engine import Engine, MethodError, named
from usergpu.emu.nv.mock.host import HOST_METHODS, Host
from usergpu.emu.nv.mock.vaspace import VASpace
from usergpu.errors import Error, GPUFault, GPUHang

if TYPE_CHECKING:
    from usergpu.emu.nv.mock.gpu import MockNVGPU

ENGINES: dict[int, type[Engine]] = {cls: e for e in (Compute, CopyEngine) for cls in e.chains}
USERD = nc.struct_Nvc56fControl_struct
GP_GET, GP_PUT, REFERENCE = USERD.GPGet.offset, USERD.GPPut.offset, USERD.Reference.offset
USERD_SIZE = ctypes.sizeof(USERD)
F = nc.FIELDS
SEC = named("NVC56F_DMA_SEC_OP_", ("GRP0_USE_TERT", "INC_METHOD", "GRP2_USE_TERT", "NON_INC_METHOD",
                                   "IMMD_DATA_METHOD", "ONE_INC", "END_PB_SEGMENT"))
# how the data of a header's group land: data i at the method this many dwords after the header's
STEP: dict[str, Callable[[int], int]] = {"INC": lambda i: i, "NON_INC": lambda i: 0, "ONE_INC": lambda i: min(i, 1)}
GP_NOP = nc.NVC56F_GP_ENTRY1_OPCODE_NOP
PBDMA = rm.ROBUST_CHANNEL_PBDMA_ERROR


@functools.lru_cache(maxsize=4096)
def _header(hdr: int) -> tuple:
    """A pushbuffer header's fields: SEC_OP's name, TERT_OP, subchannel, method address, count, IMMD data, and the
    USE_TERT forms' address and count. A runtime pushes the same few headers launch after launch."""
    return (SEC.get(F["NVC56F_DMA_SEC_OP"].decode(hdr)), F["NVC56F_DMA_TERT_OP"].decode(hdr),
            F["NVC56F_DMA_METHOD_SUBCHANNEL"].decode(hdr), F["NVC56F_DMA_METHOD_ADDRESS"].decode(hdr),
            F["NVC56F_DMA_METHOD_COUNT"].decode(hdr), F["NVC56F_DMA_IMMD_DATA"].decode(hdr),
            F["NVC56F_DMA_METHOD_ADDRESS_OLD"].decode(hdr), F["NVC56F_DMA_METHOD_COUNT_OLD"].decode(hdr))


class ChannelError(Error):
    """What stopped a channel: the ROBUST_CHANNEL_* code the RM reports, why, and where in the pushbuffer."""

    def __init__(self, code: int, message: str):
        self.code = code
        super().__init__(message)


class Channel:
    """A channel of a GPU in a VA space; `token` is its work-submit token (unique on its GPU)."""

    def __init__(self, gpu: MockNVGPU, vaspace: VASpace, gpfifo_va: int, entries: int, userd: np.ndarray,
                 on_error: Callable[[int, str], None], token: int, gpfifo_class: int):
        if entries < 1:
            raise Error(f"a GPFIFO ring of {entries} entries")
        if len(userd) < USERD_SIZE:
            raise Error(f"USERD of {len(userd)} bytes: the Nvc56fControl layout needs {USERD_SIZE}")
        self.gpu, self.vaspace, self.gpfifo_va, self.entries = gpu, vaspace, gpfifo_va, entries
        self.userd, self.on_error, self.token = userd, on_error, token
        self.host = Host(self, gpfifo_class)
        self.objects: dict[int, Engine] = {}
        self.subchannels: dict[int, Engine] = {}
        self.error: Error | None = None
        self.hang: GPUHang | None = None
        self.interrupts = 0  # NON_STALL_INTERRUPTs raised
        self.gp_get = 0
        self._word(GP_GET, 0)
        self._word(GP_PUT, 0)
        self._segment: tuple[int, np.ndarray] | None = None  # (address, dwords) of the GP entry being executed
        self._pos = 0  # its next header
        self._header = 0  # the header of the group being executed
        self._group: tuple[int, list[int], list[int]] | None = None  # (subchannel, methods, data) of that header
        self._done = 0  # how many of the group's methods have executed
        self._ran = False

    @property
    def progress(self) -> tuple[int, int, int]:
        """Where the channel is (GP entry, pushbuffer position, methods done): it moved if this changed."""
        return self.gp_get, self._pos, self._done

    # ---- the RM's side ----------------------------------------------------------------------------------------
    def bind(self, class_id: int) -> None:
        """An object of a compute or copy class allocated on the channel: SET_OBJECT may now bind it."""
        if class_id not in ENGINES:
            raise Error(f"class {class_id:#06x} is not a compute or copy class the mock GPU models (it models "
                        f"{', '.join(f'{c:#06x}' for c in ENGINES)})")
        self.objects.setdefault(class_id, ENGINES[class_id](self, class_id))

    @property
    def gp_put(self) -> int:
        return self._read(GP_PUT)

    @property
    def busy(self) -> bool:
        """Work left: a GP entry under way or not yet taken (a hung channel stays busy, an errored one does not)."""
        return self.error is None and (self._segment is not None or self.gp_get != self.gp_put)

    @property
    def launching(self) -> bool:
        """A launch under way on the channel's compute object (its method stalled until the launch ends)."""
        return any(isinstance(e, Compute) and e.running is not None for e in self.objects.values())

    def _read(self, offset: int) -> int:
        return int.from_bytes(self.userd[offset:offset + 4].tobytes(), "little")

    def _word(self, offset: int, value: int) -> None:
        self.userd[offset:offset + 4] = np.frombuffer((value & 0xFFFFFFFF).to_bytes(4, "little"), np.uint8)

    def set_reference(self, value: int) -> None:
        """SET_REFERENCE: the count a runtime reads back from USERD."""
        self._word(REFERENCE, value)

    def interrupt(self) -> None:
        """A non-stall interrupt (NON_STALL_INTERRUPT, a copy's INTERRUPT_TYPE): the GPU's handlers hear of it."""
        self.interrupts += 1
        self.gpu.interrupted(self)

    # ---- execution ----------------------------------------------------------------------------------------------
    def step(self) -> bool:
        """Execute the current GP entry up to its end or a stall; whether anything was executed."""
        if self.error is not None or self.hang is not None:
            return False
        self._ran = False
        try:
            self._step()
        except GPUHang as e:
            self.hang = e
            self.gpu.hung(self, e)
        except GPUFault as e:
            self._stop(self._fault_code(e.address, e.access, e.kernel), str(e), e)
        except MemoryFault as e:
            self._stop(self._fault_code(e.address, e.access), f"MMU fault: {e}")
        except MethodError as e:
            self._stop(e.code, str(e))
        return self._ran

    def _fault_code(self, address: int, access: str, kernel: str = "") -> int:
        """An access the MMU refused: recorded for the debugger's READ_MMU_FAULT_INFO; a trap is no MMU fault."""
        if not self.gpu.fault(address, access, self, kernel):
            return rm.ROBUST_CHANNEL_GR_EXCEPTION
        return rm.ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT

    def _stop(self, code: int, why: str, fault: GPUFault | None = None) -> None:
        """The channel stops: `error` is the kernel's fault, or what the pushbuffer asked that cannot be done."""
        message = f"channel {self.token} of GPU {self.gpu.index}: {why} ({self._where()})"
        self.error = fault or ChannelError(code, message)
        self.gpu.stopped(self, code, message)
        self.on_error(code, message)

    def _where(self) -> str:
        if self._segment is None:
            return f"GP entry {self.gp_get} at {self.gpfifo_va + 8 * self.gp_get:#x}"
        where = f"GP entry {self.gp_get}: the header at pushbuffer {self._segment[0]:#x} + {4 * self._header:#x}"
        if self._group is None:
            return where
        subchannel, methods, _ = self._group
        method = methods[min(self._done, len(methods) - 1)]
        engine = self.subchannels.get(subchannel) if method >= HOST_METHODS else self.host
        return f"method {engine.table.name(method) if engine else f'{method:#x}'} on subchannel {subchannel}; {where}"

    def _step(self) -> None:
        if self._segment is None and not self._fetch():
            return
        words = self._segment[1]
        while self._group is not None or self._pos < len(words):
            if self._group is None:
                if not self._decode(words):
                    break
                if self._group is None:  # a header with no methods
                    continue
            if not self._run_group():
                return
        self._retire()

    def _fetch(self) -> bool:
        """Take the GP entry at GPGet, if GPPut is past it; a control entry retires at once."""
        put = self.gp_put
        if put == self.gp_get:
            return False
        if put >= self.entries:
            raise MethodError(PBDMA, f"GPPut {put} is past the ring's {self.entries} entries")
        entry = self.vaspace.load(self.gpfifo_va + 8 * self.gp_get, 8)
        low, high = entry & 0xFFFFFFFF, entry >> 32
        length = F["NVC56F_GP_ENTRY1_LENGTH"].decode(high)
        self._ran = True
        if not length:
            opcode = F["NVC56F_GP_ENTRY1_OPCODE"].decode(high)
            if opcode != GP_NOP:
                raise MethodError(PBDMA, f"GP entry {self.gp_get} is a control entry with opcode {opcode}, which the "
                                  "mock GPU does not model (NOP only)")
            self._retire()
            return False
        va = F["NVC56F_GP_ENTRY0_GET"].decode(low) << 2 | F["NVC56F_GP_ENTRY1_GET_HI"].decode(high) << 32
        self._segment, self._pos = (va, self.vaspace.read(va, 4 * length).view(np.uint32)), 0
        return True

    def _retire(self) -> None:
        self._segment = None
        self.gp_get = (self.gp_get + 1) % self.entries
        self._word(GP_GET, self.gp_get)

    def _decode(self, words: np.ndarray) -> bool:
        """The method group of the header at _pos (None for a header with no methods); False at END_PB_SEGMENT."""
        self._header, hdr = self._pos, int(words[self._pos])
        op, tert, subchannel, address, count, immd, address_old, count_old = _header(hdr)
        if op == "END_PB_SEGMENT":
            return False
        if op == "IMMD_DATA_METHOD":
            group = [address << 2], [immd]
            self._pos += 1
        elif op in ("GRP0_USE_TERT", "GRP2_USE_TERT"):
            if op == "GRP2_USE_TERT" and tert != nc.NVC56F_DMA_TERT_OP_GRP2_NON_INC_METHOD:
                raise MethodError(PBDMA, f"pushbuffer header {hdr:#010x}: SEC_OP GRP2_USE_TERT with TERT_OP {tert}")
            if op == "GRP0_USE_TERT" and (tert != nc.NVC56F_DMA_TERT_OP_GRP0_INC_METHOD or not count_old):
                self._pos += 1  # a NOP, or a subdevice mask (one GPU: every method is its)
                return True
            kind = "INC" if op == "GRP0_USE_TERT" else "NON_INC"
            group = self._data(words, address_old << 2, count_old, kind, hdr)
        elif op in ("INC_METHOD", "NON_INC_METHOD", "ONE_INC"):
            group = self._data(words, address << 2, count, op.removesuffix("_METHOD"), hdr)
        else:
            raise MethodError(PBDMA, f"pushbuffer header {hdr:#010x}: SEC_OP "
                              f"{F['NVC56F_DMA_SEC_OP'].decode(hdr)} is reserved")
        self._group, self._done = (subchannel, *group), 0
        return True

    def _data(self, words: np.ndarray, method: int, count: int, kind: str, hdr: int) -> tuple[list[int], list[int]]:
        if self._pos + 1 + count > len(words):
            raise MethodError(PBDMA, f"pushbuffer header {hdr:#010x} has {count} data dwords; the segment ends after "
                              f"{len(words) - self._pos - 1} (the mock GPU does not carry a method group on into the "
                              "next GP entry)")
        data = words[self._pos + 1:self._pos + 1 + count].tolist()
        self._pos += 1 + count
        return [method + 4 * STEP[kind](i) for i in range(count)], data

    def _run_group(self) -> bool:
        """The methods of the current group from where it stalled; False if one stalls again. SET_OBJECT binds the
        subchannel, a method below HOST_METHODS is the host's, the others go to the subchannel's object."""
        subchannel, methods, data = self._group
        start, host, engine = self._done, self.host, self.subchannels.get(subchannel)
        for i in range(start, len(data)):
            self._done, method = i, methods[i]  # the method being executed, for messages
            if method == nc.NVC56F_SET_OBJECT:
                done = self._set_object(subchannel, data[i])
                engine = self.subchannels.get(subchannel)
            elif method < HOST_METHODS:
                done = host.method(method, data[i])
            elif engine is None:
                raise MethodError(PBDMA, f"subchannel {subchannel} has no object (SET_OBJECT binds one)")
            else:
                done = engine.method(method, data[i])
            if not done:
                self._ran |= i > start
                return False
        self._done, self._group = len(data), None
        self._ran |= len(data) > start
        return True

    def _set_object(self, subchannel: int, value: int) -> bool:
        class_id = self.host.fields("SET_OBJECT", value)["NVCLASS"]
        if class_id == self.host.class_id:
            self.subchannels.pop(subchannel, None)
            return True
        if class_id not in self.objects:
            raise MethodError(rm.ROBUST_CHANNEL_GR_CLASS_ERROR, f"SET_OBJECT class {class_id:#06x} on subchannel "
                              f"{subchannel}: the channel has no object of that class (it has "
                              f"{', '.join(f'{c:#06x}' for c in self.objects) or 'none'})")
        self.subchannels[subchannel] = self.objects[class_id]
        return True
