"""The usergpu.Error family: every expected failure is one of these, with the facts a person needs."""


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


class CodeObjectError(Error):
    """A malformed AMDGPU code object: says what is wrong and where (section, offset, kernel)."""
