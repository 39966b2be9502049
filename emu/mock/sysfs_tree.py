"""Read-only sysfs directories a mock machine holds in memory instead of writing them beneath its root: the large,
fixed parts of its tree (a CDNA node's thousand caches, a GPU's IP discovery table), which cost a process seconds
to write and remove as files on a slow disk. Each is mounted at a real, empty directory of the root, so the real
links above it lead there as the kernel's do (a render node's device link, the bus link); MockHAL answers every
path that resolves beneath a mount from the tree: its files read, its directories list, its links resolve. As
kernfs does for an attribute with no store, a file opened for writing is EACCES."""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass

from usergpu.emu.mock.uaccess import fail

MAX_LINKS = 40  # links followed in one lookup before ELOOP (the kernel's MAXSYMLINKS)

Tree = dict[str, "str | Tree | Link"]  # a directory: name -> a file's text, a directory, a link


@dataclass(frozen=True)
class Link:
    """A symlink; its target relative to the directory holding it (amdgpu_discovery's name links to a hw id)."""

    target: str


class StaticFile:
    """An open file of a tree: reads give its text from the offset."""

    def __init__(self, text: str):
        self.data = text.encode()

    def pread(self, length: int, offset: int) -> bytes:
        return self.data[offset : offset + length]


class StaticDir:
    """An open directory of a tree (listed by its path, as os.listdir does); reading it is EISDIR."""

    def pread(self, length: int, offset: int) -> bytes:
        raise OSError(errno.EISDIR, os.strerror(errno.EISDIR))


class Mounts:
    """The trees of one machine, each at the real path (symlinks resolved) of the directory it is mounted at."""

    def __init__(self):
        self.trees: dict[str, Tree] = {}

    def mount(self, directory: str, tree: Tree) -> None:
        os.makedirs(directory, exist_ok=True)
        self.trees[os.path.realpath(directory)] = tree

    def find(self, host_path: str, follow: bool = True) -> str | Tree | Link | None:
        """What a host path names in a tree (following its links, the last one too if follow), or None where it
        lies in no tree or names nothing there."""
        if not self.trees:
            return None
        real = os.path.realpath(host_path)
        top, rest = real, []
        while top not in self.trees:
            top, name = os.path.split(top)
            if not name:
                return None
            rest.append(name)
        return _walk(self.trees[top], rest[::-1], follow)

    def open(self, host_path: str, flags: int) -> StaticFile | StaticDir | None:
        """The file a tree serves at a host path, opened with flags: None where no tree has it, EACCES for writing,
        ENOTDIR for a file opened as a directory."""
        node = self.find(host_path)  # links followed: never a Link
        if node is None:
            return None
        if flags & os.O_ACCMODE != os.O_RDONLY:
            raise fail(errno.EACCES if isinstance(node, str) else errno.EISDIR, f"{host_path} is read-only")
        if isinstance(node, str):
            if flags & os.O_DIRECTORY:
                raise fail(errno.ENOTDIR, f"{host_path} is a file")
            return StaticFile(node)
        return StaticDir()


def _walk(tree: Tree, names: list[str], follow: bool) -> str | Tree | Link | None:
    """names looked up from tree: '..' goes up (not past the tree's top), a link is read relative to the
    directory holding it."""
    path: list[Tree] = [tree]
    links = 0
    while names:
        name, names = names[0], names[1:]
        here = path[-1]
        if name in ("", "."):
            continue
        if name == "..":
            if len(path) > 1:
                path.pop()
            continue
        node = here.get(name) if isinstance(here, dict) else None
        if isinstance(node, Link) and (names or follow):
            links += 1
            if links > MAX_LINKS:
                raise fail(errno.ELOOP, f"more than {MAX_LINKS} links")
            names = node.target.split("/") + names
            continue
        if node is None or names and not isinstance(node, dict):
            return None
        path.append(node)
    return path[-1]
