"""AMD programs: a code object loaded into GPU memory, its kernels callable with buffers and scalars. A call packs
the kernel arguments from the metadata (hidden ones included), then either programs the COMPUTE_* registers the
descriptor asks for and dispatches on the PM4 queue, or sends an AQL packet; the core Kernel (runtime/program.py)
ends it."""

from __future__ import annotations

import functools
import struct
from array import array

from usergpu.autogen import amdhsa as hsa
from usergpu.errors import CodeObjectError, GPUFault, GPUHang, LaunchError
from usergpu.isa.amd.codeobj import parse, printf
from usergpu.isa.amd.codeobj.kernargs import check_args, check_launch, dispatch_packet, pack_kernargs
from usergpu.isa.amd.dispatch import image, kernel_registers, user_sgpr_values
from usergpu.isa.amd.hw.soc import PM4, family, register_address
from usergpu.runtime import program
from usergpu.runtime.amd.aql import kernel_dispatch, pm4_ib
from usergpu.runtime.amd.pm4 import Packets
from usergpu.runtime.amd.signal import AMD_SIGNAL_KIND_USER
from usergpu.runtime.buffer import Buffer

START_TS = hsa.amd_signal_t.start_ts.offset  # end_ts follows it


@functools.lru_cache(maxsize=256)
def _sh_packets(arch: str, kd: bytes, kd_va: int, block: tuple, lds: int, users: int) -> tuple:
    """The SET_SH_REG packets of a kernel's COMPUTE_* registers for a launch shape, its user SGPRs' values left 0,
    with where each user SGPR's value goes in them, and COMPUTE_DISPATCH_INITIATOR (DISPATCH_DIRECT's): a kernel
    launched again fills in its user SGPRs and builds nothing else."""
    regs = kernel_registers(kd, kd_va, arch, block, [0] * users, lds_bytes=lds)
    start = PM4[family(arch)].PACKET3_SET_SH_REG_START
    sh = {register_address(arch, name) - start: value for name, value in regs.items()
          if name != "COMPUTE_DISPATCH_INITIATOR"}
    words = Packets(arch).set_sh_regs(sh)
    at, where = 0, {}
    while at < len(words):  # each packet: header (its COUNT: the registers), first offset, a value per register
        count = (words[at] >> 16) & 0x3FFF
        where.update({words[at + 1] + i: at + 2 + i for i in range(count)})
        at += 2 + count
    slots = tuple(where[register_address(arch, f"COMPUTE_USER_DATA_{i}") - start] for i in range(users))
    return tuple(words), slots, regs["COMPUTE_DISPATCH_INITIATOR"]


class Program(program.Program):
    def __init__(self, dev, code_object: bytes):
        self.dev, self.co = dev, parse(code_object)
        if self.co.arch and self.co.arch != dev.arch:
            raise CodeObjectError(f"the code object is built for {self.co.arch}; {dev!r} runs {dev.arch} (compile "
                                  f"it for {dev.arch})")
        img = image(self.co)
        self.buf = Buffer(dev, len(img), "vram")
        self.buf.copyin(img)
        self.kernels = {name: Kernel(self, k) for name, k in self.co.kernels.items()}

    def free(self) -> None:
        for k in self.kernels.values():
            if k.printf_buffer is not None:
                self.dev.on_synchronize.pop(k, None)
                k.printf_buffer.free()
        super().free()


class Kernel(program.Kernel):
    def __init__(self, prog: Program, meta):
        super().__init__(prog, meta.name)
        self.meta = meta
        self.kd_va = prog.buf.va + meta.descriptor_addr
        self.kd = bytes(prog.buf.view()[meta.descriptor_addr : meta.descriptor_addr + 64])
        # a kernel calling printf: its format table and buffer (made at its first launch), else None
        self.printf_table = printf.formats(prog.co.metadata) if printf.takes_buffer(meta) else None
        self.printf_buffer: Buffer | None = None

    def __call__(self, *args, wait: bool = True, **launch) -> float | None:
        """The launch (see runtime.program.Kernel); a kernel calling printf prints what its threads wrote once it is
        waited for (a launch not waited for prints at the device's next synchronize, or with the next launch of it
        that is waited for)."""
        try:
            seconds = super().__call__(*args, wait=wait, **launch)
        except (GPUFault, GPUHang):
            if self.printf_buffer is not None:  # a kernel the GPU stopped prints nothing
                printf.reset(self.printf_buffer.view())
            raise
        if self.printf_buffer is not None:
            if wait:
                self.dev.on_synchronize.pop(self, None)
                self._print()
            else:
                self.dev.on_synchronize[self] = self._print
        return seconds

    def _print(self) -> None:
        printf.drain(self.printf_buffer.view(), self.printf_table)

    def check(self, args: list) -> None:
        """The arguments against the kernel's metadata, before anything runs (LaunchError)."""
        check_args(self.meta, args)

    def prepare(self, args: list, grid, block, shared: int):
        """The kernel arguments, then the dispatch packet the kernel may read, in the arena. An AMD kernel's dynamic
        LDS is sized by its arguments (a local pointer's size), not by shared."""
        k = self.meta
        if shared:
            raise LaunchError(f"shared={shared}: an AMD kernel's dynamic LDS comes from its local-pointer arguments")
        grid, block = check_launch(k, grid, block)
        kernargs, lds = pack_kernargs(k, args, grid, block, lambda v: v.va if isinstance(v, Buffer) else None,
                                      self._printf_va())
        total = -(-len(kernargs) // 64) * 64 + 64
        args_va = self.dev.arena(total)
        view = self.dev.arena_view(args_va, total)
        view[: len(kernargs)] = kernargs
        view[total - 64 :] = dispatch_packet(k, grid, block, args_va, lds)
        return grid, block, (args_va, args_va + total - 64, grid, block, lds)

    def _printf_va(self) -> int | None:
        """The address of the kernel's printf buffer (allocated, header written, on its first launch); None for a
        kernel that does not call printf."""
        if self.printf_table is None:
            return None
        if self.printf_buffer is None:
            self.printf_buffer = self.dev.alloc(printf.BUFFER_BYTES, "gtt")
            self.printf_buffer.copyin(printf.header(printf.BUFFER_BYTES))
        return self.printf_buffer.va

    def submit(self, work, value: int) -> tuple[str, int]:
        args_va, packet_va, grid, block, lds = work
        if self.dev.queue_kind == "aql":
            return "aql", self._aql(args_va, grid, block, lds, value)
        return "pm4", self._pm4(args_va, packet_va, grid, block, lds, value)

    def _pm4(self, args_va: int, packet_va: int, grid, block, lds: int, value: int) -> int:
        """COMPUTE_* registers from the descriptor, DISPATCH_DIRECT, timestamps around it, the timeline after; the
        address of the (start, end) timestamps."""
        dev = self.dev
        start = dev.arena(16)
        end = start + 8
        user = user_sgpr_values(self.kd, dev.arch, {"kernarg_segment_ptr": args_va, "dispatch_ptr": packet_va})
        words, slots, initiator = _sh_packets(dev.arch, self.kd, self.kd_va, tuple(block), lds, len(user))
        sh = list(words)
        for at, dword in zip(slots, user, strict=True):
            sh[at] = dword
        p = dev.packets().memory_barrier()
        slot = dev.profiler.begin(p) if dev.profiler else None
        p.timestamp(start).exec(sh, grid, initiator).timestamp(end)
        if dev.profiler:
            dev.profiler.end(p, slot, self)
        dev.compute.submit(p.signal(dev.timeline, value, dev.event))
        return start

    def _aql(self, args_va: int, grid, block, lds: int, value: int) -> int:
        """A KERNEL_DISPATCH packet (the CP sets the kernel up from its descriptor) whose completion signal takes
        the start and end timestamps (their address is returned), then a PM4 IB that signals the timeline. With a
        profiler, PM4 IBs before and after the dispatch start and stop its traces and counters."""
        dev = self.dev
        done = dev.arena(64)  # the completion signal: an amd_signal_t of value 1
        struct.pack_into("<qq", dev.arena_view(done, 16), 0, AMD_SIGNAL_KIND_USER, 1)
        before, after = dev.packets(), dev.packets()
        slot = dev.profiler.begin(before) if dev.profiler else None
        if dev.profiler:
            dev.profiler.end(after, slot, self)
        after += dev.first_xcc(dev.packets().signal(dev.timeline, value, dev.event))  # one XCC signals, once
        dispatch = kernel_dispatch(self.kd_va, args_va, grid, block, lds, self.meta.private_segment_fixed_size, done)
        dev.aql.submit([self._ib(before)] * bool(before) + [dispatch, self._ib(after)])
        return done + START_TS

    def _ib(self, packets: Packets) -> bytes:
        """An AQL vendor packet running packets as a PM4 IB (in kernel-argument memory)."""
        ib_va = self.dev.arena(4 * len(packets))
        self.dev.arena_view(ib_va, 4 * len(packets)).cast("I")[:] = array("I", packets)
        return pm4_ib(self.dev.packets().indirect_buffer(ib_va, len(packets)))
