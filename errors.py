"""The usergpu.Error family: every expected failure is one of these, with the facts a person needs."""

from __future__ import annotations


class Error(Exception):
    """Base of every error usergpu raises on purpose."""


class ToolchainError(Error):
    """A tool or header the generator or a test needs is missing or failed (says which and how to get it)."""


class FieldError(Error, ValueError):
    """A register or packet field that does not exist, or a value it cannot hold (says which and why)."""


class DecodeError(Error):
    """Bytes that are not a legal instruction of the arch: says the arch, the offset and the bytes."""

    def __init__(self, arch: str, offset: int, data: bytes, why: str = "illegal instruction encoding"):
        self.arch, self.offset, self.data = arch, offset, bytes(data)
        super().__init__(f"{arch}: {why} at offset {offset:#x}: {self.data.hex(' ')}")


class CompileError(Error):
    """Source that a compiler, assembler or linker (clang-22, ld.lld-22, ptxas) rejected; carries their diagnostics."""

    def __init__(self, arch: str, tool: str, diagnostics: str):
        self.arch, self.tool, self.diagnostics = arch, tool, diagnostics
        super().__init__(f"{tool} failed for {arch}:\n{diagnostics.rstrip()}")


class CodeObjectError(Error):
    """A malformed code object (AMDGPU ELF, PTX module, cubin): says what is wrong and where (section, offset,
    line, kernel)."""


class LaunchError(Error):
    """A launch the kernel cannot take: wrong argument count, size or type, a grid or block out of range."""


class GPUFault(Error):
    """A kernel touched memory it may not: the faulting address, the access, the kernel, the wave and the PC.
    `registers` holds the faulting wave's register dump (scalar, vector, exec) for a person to read. `where`, when
    given, says where instead of the wave and PC (NVIDIA: the block, thread and PTX line)."""

    def __init__(self, address: int, access: str, kernel: str, wave: int, pc: int, why: str = "not mapped",
                 registers: dict | None = None, where: str = ""):
        self.address, self.access, self.kernel, self.wave, self.pc, self.why = address, access, kernel, wave, pc, why
        self.registers = registers or {}
        self.where = where
        super().__init__(f"GPU fault: {access} of {address:#x} ({why}) by kernel {kernel}, "
                         + (where or f"wave {wave}, pc {pc:#x}"))

    def named(self, kernel: str) -> GPUFault:
        """The same fault, of the kernel known by this name (the runtime knows what the GPU ran)."""
        return GPUFault(self.address, self.access, kernel, self.wave, self.pc, self.why, self.registers, self.where)


class GPUHang(Error):
    """A kernel or queue that did not finish: says what was waited for, how long (instructions or seconds), the
    kernel when known, and how to raise the limit."""

    def __init__(self, why: str, kernel: str | None = None, hint: str = ""):
        self.why, self.kernel, self.hint = why, kernel, hint
        super().__init__(f"{f'kernel {kernel}: ' if kernel else ''}{why}{f'; {hint}' if hint else ''}")

    def named(self, kernel: str) -> GPUHang:
        return GPUHang(self.why, kernel, self.hint)


class UnsupportedInstruction(Error):
    """An instruction the emulator decodes but does not execute: names it, its PC and the kernel."""

    def __init__(self, text: str, pc: int, kernel: str):
        self.text, self.pc, self.kernel = text, pc, kernel
        super().__init__(f"emulator: {text!r} at pc {pc:#x} of kernel {kernel} is not implemented")


class DeviceNotFound(Error):
    """No device answers the device string asked for: says what was looked for and what exists."""


class DriverError(Error):
    """A kernel driver (or its mock) refused a request: names the request and gives the errno."""

    def __init__(self, request: str, errno: int, detail: str = ""):
        import os

        self.request, self.errno, self.detail = request, errno, detail
        why = f"{os.strerror(errno)} (errno {errno})" if errno else ""  # 0: the driver answered, the detail says how
        super().__init__(f"{request} failed: {why}{': ' if why and detail else ''}{detail}")


class RMError(DriverError):
    """NVIDIA's resource manager refused a request: names the escape or control command and the NV_STATUS by name
    (the ioctl itself succeeded, as the RM answers in its status field)."""

    def __init__(self, request: str, status: int, name: str, message: str = ""):
        self.request, self.errno, self.status, self.status_name = request, 0, status, name
        Error.__init__(self, f"{request} failed: {name} ({status:#x}){': ' + message if message else ''}")
