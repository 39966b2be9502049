"""What the mock amdkfd keeps for a process (its kfd_process) and that the ioctl groups share: memory objects,
events, queues' holds on memory; the /dev/kfd mmap offsets that name the doorbell and event pages; the kernel
bounds several groups check."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from usergpu.autogen import kfd
from usergpu.hostmem import PAGE, view

# mmap offset types of /dev/kfd (kfd_priv.h: KFD_MMAP_TYPE_*, KFD_MMAP_GPU_ID)
MMAP_TYPE_SHIFT, MMAP_GPU_ID_SHIFT = 62, 46
MMAP_TYPE_DOORBELL, MMAP_TYPE_EVENTS = 3, 2
DOORBELL_PAGE = 0x2000  # one process's doorbells on one GPU: 8 KiB of 64-bit doorbells
SIGNAL_EVENT_LIMIT = 4096  # KFD_SIGNAL_EVENT_LIMIT: slots of the event page (8 bytes each)
KMALLOC_MAX_SIZE = 4 << 20  # kmalloc's largest block (MAX_PAGE_ORDER 10): a larger kernel array is ENOMEM
FAULT_PAGE = (1 << 48) - PAGE  # the page address bits a VM fault's IV entry carries


def memory_exception(gpu_id: int, address: int, access: str) -> kfd.struct_kfd_hsa_memory_exception_data:
    """What event_interrupt_wq_v11 makes of a UTCL2 fault's IV entry: the faulting page's address (the entry
    carries bits 47:12); NotPresent from its PROT_VALID bit (set: no valid PTE maps the page, the mock GPUs' only
    kind of fault); ReadOnly from its PROT_WRITE bit (set by a write, whatever the page's protection); NoExecute
    never (the v11 handler decodes no execute bit); imprecise 0 (the address is exact)."""
    data = kfd.struct_kfd_hsa_memory_exception_data(va=address & FAULT_PAGE, gpu_id=gpu_id)
    data.failure.NotPresent, data.failure.ReadOnly = 1, int(access == "write")
    return data


@dataclass
class BO:
    """A memory object: its pages (memfd-backed, or the user's for USERPTR), where they are mapped, and how many
    queue buffers hold each mapping (amdgpu's bo_va queue_refcount)."""

    handle: int
    gpu_id: int
    va: int
    size: int
    flags: int
    address: int  # the CPU address of the mock's own view of the pages
    memfd: int | None
    charge: dict[str, int] = field(default_factory=dict)  # what it counts against the memory limits
    owner: object = None  # the /dev/kfd descriptor it was made through
    mapped: set[int] = field(default_factory=set)
    queue_refs: Counter = field(default_factory=Counter)  # gpu_id -> queue buffers in this object

    def array(self) -> np.ndarray:
        return np.frombuffer(view(self.address, self.size), np.uint8)


@dataclass
class Event:
    event_id: int
    event_type: int
    auto_reset: bool
    signaled: bool = False
    data: object = None  # memory exception data (a struct_kfd_hsa_memory_exception_data) for a memory event
    owner: object = None  # the /dev/kfd descriptor it was made through

    @property
    def cpu_signaled(self) -> bool:
        """SET_EVENT and RESET_EVENT act on signal events only (event_can_be_cpu_signaled)."""
        return self.event_type == kfd.KFD_IOC_EVENT_SIGNAL


@dataclass
class Held:
    """A queue's hold on the memory objects its buffers are in, the descriptor that made it, and what amdkfd
    keeps of its properties (the CREATE_QUEUE type, percentage and control stack size)."""

    owner: object
    bos: list[BO]
    queue_type: int
    percent: int  # queue_percentage's low byte: 0 makes the queue inactive (QUEUE_IS_ACTIVE)
    ctl_stack_size: int
