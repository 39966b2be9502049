"""Errors of code object compiling: a source the compiler or linker rejects."""

from usergpu.errors import Error


class CompileError(Error):
    """OpenCL source that clang-22 or ld.lld-22 rejected; the message carries their diagnostics."""

    def __init__(self, arch: str, tool: str, diagnostics: str):
        self.arch, self.tool, self.diagnostics = arch, tool, diagnostics
        super().__init__(f"{tool} failed for {arch}:\n{diagnostics.rstrip()}")
