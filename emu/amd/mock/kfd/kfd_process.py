"""The ioctls of the mock /dev/kfd (kfd_chardev.c's) about the process as a whole: the ABI version, a GPU's VM
acquired from its render node, the GPUs' apertures, their clock counters, and the runtime's enable."""

from __future__ import annotations

import errno
import time
from typing import TYPE_CHECKING

from usergpu.autogen import kfd
from usergpu.emu.amd.mock.kfd.render import RenderFile
from usergpu.emu.mock.uaccess import copy_to_user, fail

if TYPE_CHECKING:
    from usergpu.emu.amd.mock.kfd.kfd import MockKFD


class ProcessIoctls:
    """The process-wide ioctls of a KFDFile."""

    kfd: MockKFD

    def get_version(self, a) -> None:
        a.major_version, a.minor_version = kfd.KFD_IOCTL_MAJOR_VERSION, kfd.KFD_IOCTL_MINOR_VERSION

    def acquire_vm(self, a) -> None:
        """fget(drm_fd) and amdgpu_file_to_fpriv: EINVAL unless it is an open render node (of this GPU: the mock
        also refuses another GPU's, whose VM amdkfd would take without noticing); a render node whose VM is some
        GPU's process VM already is EINVAL (amdgpu_amdkfd_gpuvm_acquire_process_vm); the one acquired before
        again is 0."""
        try:
            render = self.kfd.hal.device(a.drm_fd)
        except OSError:
            render = None
        n = self.kfd.node(a.gpu_id, "ACQUIRE_VM")
        if not isinstance(render, RenderFile) or render.kfd is not self.kfd or render.node is not n:
            raise fail(errno.EINVAL, f"ACQUIRE_VM: drm_fd {a.drm_fd} is not an open render node of gpu_id "
                                     f"{a.gpu_id:#x}")
        if self.kfd.vms.get(a.gpu_id) is render:
            return
        if render.vm is not None:
            raise fail(errno.EINVAL, f"ACQUIRE_VM: the VM of drm_fd {a.drm_fd} is already a compute VM")
        render.vm = a.gpu_id
        self.kfd.vms[a.gpu_id] = render

    def apertures(self, a) -> None:
        nodes = self.kfd.nodes
        if a.num_of_nodes == 0:
            a.num_of_nodes = len(nodes)
            return
        if a.num_of_nodes > len(nodes) + 1:  # kfd_topology_get_num_devices counts the CPU node too
            raise fail(errno.EINVAL, f"GET_PROCESS_APERTURES_NEW: {a.num_of_nodes} nodes, the topology has "
                                     f"{len(nodes) + 1}")
        out = (kfd.struct_kfd_process_device_apertures * min(a.num_of_nodes, len(nodes)))()
        for slot, n in zip(out, nodes, strict=False):
            slot.gpu_id = n.gpu_id
            slot.lds_base, slot.lds_limit = 0x1 << 48, (0x1 << 48) | 0xFFFFFFFF
            slot.scratch_base, slot.scratch_limit = 0x2 << 48, (0x2 << 48) | 0xFFFFFFFF
            slot.gpuvm_base, slot.gpuvm_limit = 0x1000000, (1 << 47) - 1
        a.num_of_nodes = len(out)
        copy_to_user(a.kfd_process_device_apertures_ptr, bytes(out), "GET_PROCESS_APERTURES_NEW")

    def clock_counters(self, a) -> None:
        """Never fails: a gpu_id the process lacks reads a GPU clock of 0 (a node without a GPU)."""
        n = next((n for n in self.kfd.nodes if n.gpu_id == a.gpu_id), None)
        a.gpu_clock_counter = n.gpu.timestamp() if n else 0
        a.cpu_clock_counter = a.system_clock_counter = time.monotonic_ns()
        a.system_clock_freq = 1_000_000_000

    def runtime_enable(self, a) -> None:
        """kfd_ioctl_runtime_enable, no debugger attached: enabling is EBUSY once enabled and EEXIST while the
        process has an active queue, else it records r_debug and the TTMP setup; without the enable bit it
        disables (always 0)."""
        what = "RUNTIME_ENABLE"
        if not a.mode_mask & kfd.KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK:
            self.kfd.runtime = kfd.struct_kfd_runtime_info()
            return
        if self.kfd.runtime.runtime_state != kfd.DEBUG_RUNTIME_STATE_DISABLED:
            raise fail(errno.EBUSY, f"{what}: the runtime is enabled already")
        if any(self.kfd.active(n, q) for n in self.kfd.nodes for q in n.queues):
            raise fail(errno.EEXIST, f"{what}: the process has active queues")
        self.kfd.runtime = kfd.struct_kfd_runtime_info(
            r_debug=a.r_debug, runtime_state=kfd.DEBUG_RUNTIME_STATE_ENABLED,
            ttmp_setup=int(bool(a.mode_mask & kfd.KFD_RUNTIME_ENABLE_MODE_TTMP_SAVE_MASK)))
