"""The check behind every CLI bad-input table: the command, run as a user runs it (a fresh process), ends with one
`error:` line on stderr (followed, at most, by indented detail lines), the expected exit status, and no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field

ENTRY = {"usergpu": "usergpu.tools.cli", "am_smi": "usergpu.tools.am_smi", "amdflash": "usergpu.tools.amdflash"}


@dataclass
class Case:
    """One row: the command line (its first word the CLI), what the error line must contain, the exit status
    (1: an expected failure, 2: a usage error) and environment variables to set."""

    argv: list[str]
    says: str
    status: int = 1
    env: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return " ".join(self.argv)


def check(case: Case, cwd: str | os.PathLike | None = None, timeout: float = 120) -> str:
    """Run one row; its error line."""
    cli, *rest = case.argv
    env = os.environ | case.env
    code = f"import sys; from {ENTRY[cli]} import main; sys.argv[0] = {cli!r}; sys.exit(main())"
    out = subprocess.run([sys.executable, "-c", code, *rest], capture_output=True, text=True, env=env, cwd=cwd,
                         timeout=timeout, stdin=subprocess.DEVNULL)
    lines = out.stderr.strip().splitlines()
    assert "Traceback" not in out.stderr, f"{case}: a traceback\n{out.stderr}"
    assert out.returncode == case.status, f"{case}: exit {out.returncode}, expected {case.status}\n{out.stderr}"
    # one error line; what follows it, if anything, is its detail, indented (a compiler's diagnostics)
    assert lines and lines[0].startswith("error: ") and all(x.startswith("  ") for x in lines[1:]), \
        f"{case}: not one error line\n{out.stderr}"
    assert case.says in lines[0], f"{case}: {lines[0]!r} does not say {case.says!r}"
    return lines[0]
