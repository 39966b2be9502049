"""tinygrad's firmware, found offline: tinygrad's AM fetches each blob it loads from one pinned linux-firmware commit
and checks it against the sha256 it pins (its runtime/autogen/am/fw.py), keeping it in its download cache. Debian's
firmware-amd-graphics (`make firmware`) carries most of those blobs byte for byte; `seed` places each such blob
where tinygrad's fetch looks first ($XDG_CACHE_HOME/tinygrad/downloads/fw/<md5 of its URL>), so that tinygrad finds
offline what it would download. A Debian blob whose sha256 differs from the pin is never placed: tinygrad would
refuse it, and a user must see it fetch (or fail to) the one it pins.

The cache path is asked of tinygrad itself: its fetch_fw is called with its fetch replaced by one that records the
URL and folder it was given, so neither the pinned commit nor the cache layout is restated here."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

from usergpu.drivers.amd.am import firmware


@dataclass
class Seeded:
    placed: list[str] = field(default_factory=list)  # blobs now in tinygrad's cache (placed or already there)
    differ: list[str] = field(default_factory=list)  # Debian has the name, not the pinned bytes
    missing: list[str] = field(default_factory=list)  # no Debian blob of that name


class _Asked(Exception):
    def __init__(self, url: str, subdir: str | None):
        self.url, self.subdir = url, subdir


def pins() -> dict[str, str]:
    """tinygrad's AM firmware pins: file name -> sha256 (empty without tinygrad in this Python)."""
    try:
        from tinygrad.runtime.autogen.am import fw
    except ImportError:
        return {}
    return dict(fw.hashes)


def cache_file(name: str, sha256: str) -> Path:
    """Where tinygrad's fetch_fw keeps amdgpu/<name> (its download cache, under this environment's
    XDG_CACHE_HOME)."""
    from tinygrad import helpers

    def asked(url: str, *args, subdir: str | None = None, **kwargs):
        raise _Asked(url, subdir)

    with mock.patch.object(helpers, "fetch", asked):
        try:
            helpers.fetch_fw("amdgpu", name, sha256)
        except _Asked as a:
            folder = Path(helpers.cache_dir) / "downloads" / (a.subdir or "")
            return folder / hashlib.md5(a.url.encode()).hexdigest()
    raise firmware.FirmwareError(f"tinygrad's fetch_fw found amdgpu/{name} without fetching it")


def seed() -> Seeded:
    """Place every Debian blob whose sha256 is tinygrad's pin in tinygrad's download cache."""
    out = Seeded()
    for name, sha256 in sorted(pins().items()):
        path = firmware.find(name.removesuffix(".bin"))
        if path is None:
            out.missing.append(name)
            continue
        data = path.read_bytes()
        if hashlib.sha256(data).hexdigest() != sha256:
            out.differ.append(name)
            continue
        target = cache_file(name, sha256)
        if not target.is_file() or hashlib.sha256(target.read_bytes()).hexdigest() != sha256:
            target.parent.mkdir(parents=True, exist_ok=True)
            temporary = target.with_name(f".{target.name}.{os.getpid()}")
            temporary.write_bytes(data)
            temporary.replace(target)  # atomic: a tinygrad fetching meanwhile sees the old file or the whole new one
        out.placed.append(name)
    return out
