"""The seam between drivers and the OS: every file, sysfs and device access of a driver goes through a HAL.

HAL is the real one. `root` re-roots its paths (a sysfs tree copied from another machine, or one a test
builds) without changing what the driver code does. Mock kernels and devices install beneath the same
calls in later layers.
"""

from __future__ import annotations

import os
from pathlib import Path


class HAL:
    def __init__(self, root: str | os.PathLike = "/"):
        self.root = Path(root)

    def _p(self, path: str) -> Path:
        return self.root / path.lstrip("/")

    def exists(self, path: str) -> bool:
        return self._p(path).exists()

    def listdir(self, path: str) -> list[str]:
        """Entries of a directory, sorted; [] if it does not exist or cannot be read."""
        try:
            return sorted(os.listdir(self._p(path)))
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return []

    def read_text(self, path: str) -> str | None:
        """A small file's text (sysfs attribute), or None when absent or unreadable."""
        try:
            return self._p(path).read_text()
        except (FileNotFoundError, PermissionError, OSError):
            return None

    def readlink_name(self, path: str) -> str | None:
        """Last component of a symlink's target (e.g. a PCI function's bound driver), or None."""
        try:
            return os.path.basename(os.readlink(self._p(path)))
        except OSError:
            return None
