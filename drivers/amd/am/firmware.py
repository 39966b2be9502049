"""The firmware AM loads, as amdgpu finds it: amdgpu/<ip>_<version>_<part>.bin from `make setup`'s copy of Debian's
firmware-amd-graphics (the cache), else /lib/firmware. Each file is checked against its header before use: the
common header (sizes, the ucode array inside the file, the IP version the name promises) and, for the PSP's SOS,
the v2 table of the binaries it bundles — a file that fails says which field, expected against found."""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass
from pathlib import Path

from usergpu.autogen import amdgpu_ucode as uc
from usergpu.errors import Error


class FirmwareError(Error):
    """A firmware file that is missing or does not hold what its header and name say."""


def search_path() -> list[Path]:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "usergpu"
    return [cache / "firmware/lib/firmware/amdgpu", Path("/lib/firmware/amdgpu")]


@dataclass(frozen=True)
class Firmware:
    name: str
    data: bytes
    header: ctypes.Structure  # the common firmware header
    ip_version: tuple[int, int]
    ucode_version: int

    @property
    def ucode(self) -> bytes:
        """The microcode array the header points at."""
        h = self.header
        return self.data[h.ucode_array_offset_bytes : h.ucode_array_offset_bytes + h.ucode_size_bytes]


def load(name: str) -> Firmware:
    """amdgpu/<name>.bin, found and checked."""
    for folder in search_path():
        path = folder / f"{name}.bin"
        if path.exists():
            return parse(name, path.read_bytes())
    raise FirmwareError(f"firmware {name}.bin not found in {', '.join(map(str, search_path()))}: run `make setup` "
                        f"(it fetches Debian's firmware-amd-graphics into the cache)")


def _fail(name: str, what: str, expected, found) -> FirmwareError:
    return FirmwareError(f"firmware {name}.bin: {what}: expected {expected}, found {found}")


def parse(name: str, data: bytes) -> Firmware:
    """Check a firmware file's common header against the file and its name (<ip>_<major>_<minor>_<rev>...)."""
    size = ctypes.sizeof(uc.struct_common_firmware_header)
    if len(data) < size:
        raise _fail(name, "length", f"at least the {size}-byte common header", f"{len(data)} bytes")
    h = uc.struct_common_firmware_header.from_buffer_copy(data)
    if h.size_bytes != len(data):
        raise _fail(name, "size_bytes (the file's length)", len(data), h.size_bytes)
    end = h.ucode_array_offset_bytes + h.ucode_size_bytes
    if not h.header_size_bytes <= h.ucode_array_offset_bytes <= end <= len(data):
        raise _fail(name, "ucode array (offset + size) inside the file after the header",
                    f"{h.header_size_bytes}..{len(data)}", f"{h.ucode_array_offset_bytes}..{end}")
    version = name.split("_")[1:3]
    if all(v.isdigit() for v in version) and (h.ip_version_major, h.ip_version_minor) != tuple(map(int, version)):
        raise _fail(name, "IP version", ".".join(version), f"{h.ip_version_major}.{h.ip_version_minor}")
    fw = Firmware(name, data, h, (h.ip_version_major, h.ip_version_minor), h.ucode_version)
    if name.startswith("psp_") and name.endswith("_sos") and h.header_version_major == 2:
        sos_binaries(fw)
    return fw


def sos_binaries(fw: Firmware) -> dict[int, bytes]:
    """The binaries a PSP v2 SOS file bundles (fw_type -> bytes), each checked to lie inside the ucode array."""
    head = uc.struct_psp_firmware_header_v2_0.from_buffer_copy(fw.data)
    desc_size = ctypes.sizeof(uc.struct_psp_fw_bin_desc)
    start = ctypes.sizeof(uc.struct_psp_firmware_header_v2_0)
    if start + head.psp_fw_bin_count * desc_size > fw.header.ucode_array_offset_bytes:
        raise _fail(fw.name, "psp_fw_bin_count descriptors before the ucode array",
                    f"at most {(fw.header.ucode_array_offset_bytes - start) // desc_size}", head.psp_fw_bin_count)
    out = {}
    ucode = fw.ucode
    for i in range(head.psp_fw_bin_count):
        d = uc.struct_psp_fw_bin_desc.from_buffer_copy(fw.data, start + i * desc_size)
        if d.offset_bytes + d.size_bytes > len(ucode):
            raise _fail(fw.name, f"binary {i} (type {d.fw_type}) inside the ucode array", f"<= {len(ucode)}",
                        f"{d.offset_bytes}+{d.size_bytes}")
        out[d.fw_type] = ucode[d.offset_bytes : d.offset_bytes + d.size_bytes]
    return out
