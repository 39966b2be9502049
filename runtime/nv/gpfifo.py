"""NVIDIA GPFIFO queues: pushbuffers of class methods, submitted as GP entries on a channel's ring, GPPut in USERD,
then the doorbell. Methods and fields come from the generated class tables. The host methods (semaphores) are
the same on every GPFIFO class, and the compute and copy methods used here sit at the same offsets in every
class from Ampere on (clc6c0.h/clc7c0.h, clc6b5.h/clc7b5.h agree; the Hopper and Blackwell headers keep them), so
the Ampere names serve all."""

from __future__ import annotations

import functools
import time
from array import array

from usergpu.autogen import nv_classes as nvc
from usergpu.errors import Error

M, F = nvc.METHODS, nvc.FIELDS
HOST, COMPUTE, COPY = 0, 1, 4  # subchannels: the host class, the compute object, the copy object
SEM = M["NVC56F_SEM_EXECUTE"]
LAUNCH_DMA = M["NVC6B5_LAUNCH_DMA"]
INVALIDATE_ALL = M["NVC6C0_INVALIDATE_SHADER_CACHES_NO_WFI"].encode(INSTRUCTION=1, GLOBAL_DATA=1, CONSTANT=1)
COPY_CHUNK = 1 << 31  # LINE_LENGTH_IN counts bytes in 32 bits: larger copies go in chunks


@functools.lru_cache(maxsize=4096)
def header(subchannel: int, method: int, count: int) -> int:
    """An incrementing method header (SEC_OP INC_METHOD): count data dwords to method, method + 4, ..."""
    return (F["NVC56F_DMA_INCR_OPCODE"].encode(nvc.NVC56F_DMA_INCR_OPCODE_VALUE) |
            F["NVC56F_DMA_INCR_COUNT"].encode(count) | F["NVC56F_DMA_INCR_SUBCHANNEL"].encode(subchannel) |
            F["NVC56F_DMA_INCR_ADDRESS"].encode(method >> 2))


def gp_entry(va: int, dwords: int) -> int:
    """A GP entry fetching dwords of pushbuffer at va (a 40-bit address)."""
    if va >> 40 or va & 3:
        raise Error(f"pushbuffer at {va:#x}: a GP entry holds a dword-aligned 40-bit address")
    return (F["NVC56F_GP_ENTRY0_GET"].encode((va & 0xFFFFFFFF) >> 2) |
            (F["NVC56F_GP_ENTRY1_GET_HI"].encode(va >> 32) | F["NVC56F_GP_ENTRY1_LENGTH"].encode(dwords)) << 32)


def lo_hi(value: int) -> tuple[int, int]:
    return value & 0xFFFFFFFF, value >> 32


@functools.lru_cache(maxsize=64)
def _sem_execute(operation: str, timestamp: bool, wfi: bool) -> int:
    """SEM_EXECUTE's data: the operation on a 64-bit payload; a release waits for idle (wfi) and writes the
    timestamp if asked."""
    release = operation == "RELEASE"
    return SEM.encode(OPERATION=getattr(nvc, f"NVC56F_SEM_EXECUTE_OPERATION_{operation}"),
                      PAYLOAD_SIZE=nvc.NVC56F_SEM_EXECUTE_PAYLOAD_SIZE_64BIT,
                      RELEASE_WFI=int(release and wfi), RELEASE_TIMESTAMP=int(release and timestamp))


class Pushbuffer(list):
    """Method headers and data dwords, built verb by verb."""

    def method(self, subchannel: int, name: str, *data: int) -> Pushbuffer:
        self.append(header(subchannel, M[name].offset, len(data)))
        self.extend(data)
        return self

    # ---- host: semaphores on any channel ----------------------------------------------------------------------
    def semaphore(self, va: int, payload: int, operation: str, timestamp: bool = False, wfi: bool = True) -> Pushbuffer:
        """SEM_EXECUTE of a 64-bit payload at va: a release (after the channel's work, with its timestamp at
        va + 8) or an acquire (the channel waits)."""
        return self.method(HOST, "NVC56F_SEM_ADDR_LO", *lo_hi(va), *lo_hi(payload),
                           _sem_execute(operation, timestamp, wfi))

    def signal(self, signal, value: int) -> Pushbuffer:
        """Release value to a signal once the work before is done, with the GPU's timestamp."""
        return self.semaphore(signal.va, value, "RELEASE", timestamp=True)

    def wait(self, signal, value: int) -> Pushbuffer:
        """Stall the channel until the signal reaches value (ACQ_CIRC_GEQ: wrap-safe)."""
        return self.semaphore(signal.va, value, "ACQ_CIRC_GEQ")

    def timestamp(self, va: int) -> Pushbuffer:
        """The GPU's timestamp at va + 8 (a release of 0 at va) once the work before is done."""
        return self.semaphore(va, 0, "RELEASE", timestamp=True)

    # ---- compute ---------------------------------------------------------------------------------------------
    def bind(self, subchannel: int, class_id: int) -> Pushbuffer:
        """SET_OBJECT: the subchannel's methods go to this class's object on the channel."""
        return self.method(subchannel, "NVC6C0_SET_OBJECT", class_id)

    def windows(self, shared: int, local: int) -> Pushbuffer:
        """Where the generic address space shows shared and local memory."""
        self.method(COMPUTE, "NVC6C0_SET_SHADER_SHARED_MEMORY_WINDOW_A", *reversed(lo_hi(shared)))
        return self.method(COMPUTE, "NVC6C0_SET_SHADER_LOCAL_MEMORY_WINDOW_A", *reversed(lo_hi(local)))

    def local_memory(self, va: int, per_tpc: int) -> Pushbuffer:
        """The buffer local memory (stacks) lives in, and how much of it each TPC may use."""
        self.method(COMPUTE, "NVC6C0_SET_SHADER_LOCAL_MEMORY_A", *reversed(lo_hi(va)))
        return self.method(COMPUTE, "NVC6C0_SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A", *reversed(lo_hi(per_tpc)), 0xFF)

    def memory_barrier(self) -> Pushbuffer:
        """Invalidate the shader caches (instructions, data, constants) before what follows reads memory."""
        self.method(HOST, "NVC56F_WFI", 0)
        return self.method(COMPUTE, "NVC6C0_INVALIDATE_SHADER_CACHES_NO_WFI", INVALIDATE_ALL)

    def launch(self, qmd_va: int) -> Pushbuffer:
        """Schedule the QMD at qmd_va (256-byte aligned): SEND_PCAS_A, then SEND_SIGNALING_PCAS2_B's
        PREFETCH_SCHEDULE (fetch the QMD and launch it)."""
        if qmd_va & 0xFF or qmd_va >> 40:
            raise Error(f"QMD at {qmd_va:#x}: SEND_PCAS_A takes a 256-byte aligned 40-bit address")
        self.method(COMPUTE, "NVC6C0_SEND_PCAS_A", qmd_va >> 8)
        return self.method(COMPUTE, "NVC6C0_SEND_SIGNALING_PCAS2_B",
                           nvc.NVC6C0_SEND_SIGNALING_PCAS2_B_PCAS_ACTION_PREFETCH_SCHEDULE)

    # ---- copy ------------------------------------------------------------------------------------------------
    def copy(self, dst: int, src: int, size: int) -> Pushbuffer:
        """A linear copy of size bytes on the copy engine, in chunks LINE_LENGTH_IN can hold."""
        launch = LAUNCH_DMA.encode(DATA_TRANSFER_TYPE=nvc.NVC6B5_LAUNCH_DMA_DATA_TRANSFER_TYPE_NON_PIPELINED,
                                   FLUSH_ENABLE=nvc.NVC6B5_LAUNCH_DMA_FLUSH_ENABLE_TRUE,
                                   SRC_MEMORY_LAYOUT=nvc.NVC6B5_LAUNCH_DMA_SRC_MEMORY_LAYOUT_PITCH,
                                   DST_MEMORY_LAYOUT=nvc.NVC6B5_LAUNCH_DMA_DST_MEMORY_LAYOUT_PITCH)
        for off in range(0, size, COPY_CHUNK):
            self.method(COPY, "NVC6B5_OFFSET_IN_UPPER", *reversed(lo_hi(src + off)), *reversed(lo_hi(dst + off)))
            self.method(COPY, "NVC6B5_LINE_LENGTH_IN", min(COPY_CHUNK, size - off))
            self.method(COPY, "NVC6B5_LAUNCH_DMA", launch)
        return self


class GPFIFOQueue:
    """One channel's submission side: pushbuffers go to the device's arena, their GP entries to the ring."""

    def __init__(self, dev, kind: str):
        self.dev, self.kind = dev, kind

    @property
    def channel(self):
        return getattr(self.dev.channels, self.kind)

    def submit(self, pb: Pushbuffer) -> None:
        """The pushbuffer as one GP entry: wait for room in the ring, write the entry and GPPut, ring."""
        ch = self.channel
        va = self.dev.arena(4 * len(pb))
        self.dev.arena_view(va, 4 * len(pb)).cast("I")[:] = array("I", pb)
        self._wait_for_room(ch)
        ch.ring[ch.put % ch.entries] = gp_entry(va, len(pb))
        ch.put += 1
        ch.userd[nvc.struct_Nvc56fControl_struct.GPPut.offset // 4] = ch.put % ch.entries
        self.dev.driver.ring(ch)

    def _wait_for_room(self, ch) -> None:
        """Until the GPU has fetched far enough that one more entry does not reach GPGet."""
        limit = time.monotonic() + self.dev.timeout
        while (ch.put - ch.gp_get) % ch.entries >= ch.entries - 1:
            self.dev.poll()
            if time.monotonic() > limit:
                raise self.dev.hang(f"the {self.kind} channel's GPFIFO stayed full (GPGet {ch.gp_get}, GPPut "
                                    f"{ch.put % ch.entries} of {ch.entries})", self.dev.timeout)
