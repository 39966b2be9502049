"""What a loaded program and its kernels are on either vendor: a Program holds the code in GPU memory and its
kernels by name; a Kernel's call packs its arguments and builds the work (the vendor's `prepare` and `submit`), and
ends the same way on every GPU: the work submitted at the timeline's next value, a fault or a hang the GPU reports
named after the kernel, its span kept, and with wait, its time from the GPU's timestamps."""

from __future__ import annotations

import abc
from typing import Any

from usergpu.errors import GPUFault, GPUHang, LaunchError


class Program:
    """A code object in GPU memory (buf); kernels by name."""

    dev: Any
    buf: Any
    kernels: dict[str, Kernel]

    def kernel(self, name: str) -> Kernel:
        """The kernel of that name; LaunchError naming the kernels the program has."""
        if name not in self.kernels:
            raise LaunchError(f"no kernel {name!r} in the code object (kernels: {', '.join(self.kernels)})")
        return self.kernels[name]

    def free(self) -> None:
        """Give the program's GPU memory back; its kernels can no longer be launched."""
        self.buf.free()


class Kernel(abc.ABC):
    """A kernel of a Program, callable: kernel(*args, grid=, block=, shared=, wait=)."""

    default_block: tuple[int, int, int] = (64, 1, 1)

    def __init__(self, program: Program, name: str):
        self.program, self.dev, self.name = program, program.dev, name

    @abc.abstractmethod
    def check(self, args: list) -> None:
        """The arguments against the kernel's parameters, before anything runs (LaunchError)."""

    @abc.abstractmethod
    def prepare(self, args: list, grid, block, shared: int) -> tuple[tuple, tuple, Any]:
        """(grid, block, what submit needs): the launch checked and its arguments in GPU memory."""

    @abc.abstractmethod
    def submit(self, work: Any, value: int) -> tuple[str, int]:
        """The prepared launch submitted, the timeline signalled with value after it: (the queue it went to, the
        address of its start and end timestamps)."""

    def __call__(self, *args, grid=(1, 1, 1), block=None, shared: int = 0, wait: bool = True) -> float | None:
        """Launch over grid workgroups (blocks) of block work-items (threads); with wait, the kernel's time in
        seconds from the GPU's timestamps."""
        dev = self.dev
        grid, block, work = self.prepare(list(args), grid, self.default_block if block is None else block, shared)
        value = dev.next_timeline_value()
        with dev.work(value):
            try:
                queue, times = self.submit(work, value)
            except (GPUFault, GPUHang) as f:  # the kernel faulted or hung: name it
                raise f.named(self.name) from None
        dev.profiled(self.name, queue, times, {"grid": list(grid), "block": list(block)}, value)
        if not wait:
            return None
        return dev.last_span().seconds
