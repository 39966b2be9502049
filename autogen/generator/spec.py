"""What one generated module is made from and how."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Module:
    name: str  # usergpu.autogen.<name>
    package: str  # Debian package(s) its inputs come from
    # the module's text, or its files by name (NAME.py and a data file beside it); raises ToolchainError when an
    # input is missing
    render: Callable[[], str | dict[str, str | bytes]]
