"""The firmware AM loads, as amdgpu finds it: amdgpu/<ip>_<version>_<part>.bin from `make setup`'s copy of Debian's
firmware-amd-graphics (the cache: usr/lib/firmware in the packages since trixie, lib/firmware before), else
/lib/firmware. Each file is checked against its header before use: the
common header (sizes, the ucode array inside the file, the IP version the name promises) and, for the PSP's SOS,
the v2 table of the binaries it bundles — a file that fails says which field, expected against found. `cut` gives
the part of a file amdgpu hands the PSP as one ucode (amdgpu_ucode_init_single_fw with PSP loading), `ucodes` a
GPU's whole set in amdgpu's load order."""

from __future__ import annotations

import ctypes
import functools
import os
from dataclasses import dataclass
from pathlib import Path

from usergpu.autogen import amdgpu_ucode as uc
from usergpu.drivers.amd.am.ip import UnsupportedGPU
from usergpu.errors import Error
from usergpu.isa.amd.hw import psp as _psp


class FirmwareError(Error):
    """A firmware file that is missing or does not hold what its header and name say."""


def search_path() -> list[Path]:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "usergpu"
    return [cache / "firmware/usr/lib/firmware/amdgpu", cache / "firmware/lib/firmware/amdgpu",
            Path("/lib/firmware/amdgpu")]


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


def find(name: str) -> Path | None:
    """Where amdgpu/<name>.bin is, if anywhere."""
    return next((path for folder in search_path() if (path := folder / f"{name}.bin").exists()), None)


def load(name: str) -> Firmware:
    """amdgpu/<name>.bin, found and checked."""
    if path := find(name):
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


def sos_binaries(fw: Firmware, aux: bool = False) -> dict[int, bytes]:
    """The binaries a PSP v2 SOS file bundles (fw_type -> bytes), each checked to lie inside the ucode array. A v2.1
    file (MI300X's) bundles two sets, split at psp_aux_fw_bin_index: the first for current SMU firmware, the second
    (aux) for older (amdgpu's psp_init_sos_microcode)."""
    v2_1 = fw.header.header_version_minor == 1
    struct = uc.struct_psp_firmware_header_v2_1 if v2_1 else uc.struct_psp_firmware_header_v2_0
    head = struct.from_buffer_copy(fw.data)
    desc_size = ctypes.sizeof(uc.struct_psp_fw_bin_desc)
    start = struct.psp_fw_bin.offset
    if start + head.psp_fw_bin_count * desc_size > fw.header.ucode_array_offset_bytes:
        raise _fail(fw.name, "psp_fw_bin_count descriptors before the ucode array",
                    f"at most {(fw.header.ucode_array_offset_bytes - start) // desc_size}", head.psp_fw_bin_count)
    split = head.psp_aux_fw_bin_index if v2_1 else head.psp_fw_bin_count
    if not 0 < split <= head.psp_fw_bin_count:
        raise _fail(fw.name, "psp_aux_fw_bin_index", f"1..{head.psp_fw_bin_count}", split)
    if aux and not v2_1:
        raise _fail(fw.name, "header version (for an aux set of binaries)", "2.1", "2.0")
    out = {}
    ucode = fw.ucode
    for i in range(split, head.psp_fw_bin_count) if aux else range(head.psp_fw_bin_count - split if v2_1 else split):
        d = uc.struct_psp_fw_bin_desc.from_buffer_copy(fw.data, start + i * desc_size)
        if d.offset_bytes + d.size_bytes > len(ucode):
            raise _fail(fw.name, f"binary {i} (type {d.fw_type}) inside the ucode array", f"<= {len(ucode)}",
                        f"{d.offset_bytes}+{d.size_bytes}")
        out[d.fw_type] = ucode[d.offset_bytes : d.offset_bytes + d.size_bytes]
    return out


_ARRAY = ("header.ucode_array_offset_bytes",)
_COMMON, _GFX1, _GFX2, _MES, _IMU, _SDMA2 = (uc.struct_common_firmware_header, uc.struct_gfx_firmware_header_v1_0,
                                             uc.struct_gfx_firmware_header_v2_0, uc.struct_mes_firmware_header_v1_0,
                                             uc.struct_imu_firmware_header_v1_0, uc.struct_sdma_firmware_header_v2_0)
_RLC = {minor: getattr(uc, f"struct_rlc_firmware_header_v2_{minor}") for minor in (1, 2, 3)}
# the header version each header struct needs (major, least minor); the common header fits any
HEADER_VERSION = {_GFX1: (1, 0), _GFX2: (2, 0), _MES: (1, 0), _IMU: (1, 0), _SDMA2: (2, 0),
                  **{s: (2, m) for m, s in _RLC.items()}}
# AMDGPU_UCODE_ID_<key> -> (the header struct describing it, its size, its file offset): each a field or the sum of
# fields, a field alone or (field, factor); dotted names reach into the nested common header
CUTS = {
    "SMC": (_COMMON, "ucode_size_bytes", ("ucode_array_offset_bytes",)),
    "RLC_G": (_COMMON, "ucode_size_bytes", ("ucode_array_offset_bytes",)),
    # GC 9's MEC file (gfx v1 header): the code, then its jump table (jt_offset, jt_size in dwords)
    "CP_MEC1": (_GFX1, ("header.ucode_size_bytes", ("jt_size", -4)), _ARRAY),
    "CP_MEC1_JT": (_GFX1, (("jt_size", 4),), (*_ARRAY, ("jt_offset", 4))),
    # SDMA 4.4.x (v1 header): one copy per engine of an IO die, the same image (amdgpu_sdma_init_microcode)
    **{f"SDMA{i}": (_COMMON, "ucode_size_bytes", ("ucode_array_offset_bytes",)) for i in range(4)},
    "SDMA_UCODE_TH0": (_SDMA2, "ctx_ucode_size_bytes", _ARRAY),
    "SDMA_UCODE_TH1": (_SDMA2, "ctl_ucode_size_bytes", ("ctl_ucode_offset",)),
    **{f"CP_RS64_{cp}": (_GFX2, "ucode_size_bytes", _ARRAY) for cp in ("PFP", "ME", "MEC")},
    **{f"CP_RS64_{cp}_P{i}_STACK": (_GFX2, "data_size_bytes", ("data_offset_bytes",))  # each pipe: the same stack
       for cp, pipes in (("PFP", 2), ("ME", 2), ("MEC", 4)) for i in range(pipes)},
    **{f"CP_{mes}": (_MES, "mes_ucode_size_bytes", ("mes_ucode_offset_bytes",)) for mes in ("MES", "MES1")},
    **{f"CP_{mes}_DATA": (_MES, "mes_ucode_data_size_bytes", ("mes_ucode_data_offset_bytes",))
       for mes in ("MES", "MES1")},
    "IMU_I": (_IMU, "imu_iram_ucode_size_bytes", _ARRAY),
    "IMU_D": (_IMU, "imu_dram_ucode_size_bytes", (*_ARRAY, "imu_iram_ucode_size_bytes")),
    **{f"RLC_RESTORE_LIST_{part}": (_RLC[1], f"save_restore_list_{field}_size_bytes",
                                    (f"save_restore_list_{field}_offset_bytes",))
       for part, field in (("CNTL", "cntl"), ("GPM_MEM", "gpm"), ("SRM_MEM", "srm"))},
    **{f"RLC_{ram}": (_RLC[2], f"rlc_{ram.lower()}_ucode_size_bytes", (f"rlc_{ram.lower()}_ucode_offset_bytes",))
       for ram in ("IRAM", "DRAM")},
    **{f"RLC_{p}": (_RLC[3], f"rlc{p.lower()}_ucode_size_bytes", (f"rlc{p.lower()}_ucode_offset_bytes",))
       for p in ("P", "V")},
}


def cut(fw: Firmware, ucode: str, optional: bool = False) -> bytes:
    """The part of the file amdgpu hands the PSP as AMDGPU_UCODE_ID_<ucode>, checked to lie inside the file after
    its header; optional: an empty part is b"" (amdgpu skips it), else an error."""
    struct, size_field, offset_fields = CUTS[ucode]
    h = fw.header
    major, minor = HEADER_VERSION.get(struct, (h.header_version_major, 0))
    if h.header_version_major != major or h.header_version_minor < minor:
        raise _fail(fw.name, f"header version (for {ucode})", f"{major}.{minor} or a later {major}.x",
                    f"{h.header_version_major}.{h.header_version_minor}")
    if h.header_size_bytes < ctypes.sizeof(struct):
        raise _fail(fw.name, f"header_size_bytes (a {struct.__name__})", f">= {ctypes.sizeof(struct)}",
                    h.header_size_bytes)
    head = struct.from_buffer_copy(fw.data)  # parse() checked the file holds header_size_bytes
    size, offset = _sum(head, size_field), _sum(head, offset_fields)
    if size == 0 and optional:
        return b""
    if not (size > 0 and h.header_size_bytes <= offset and offset + size <= len(fw.data)):
        raise _fail(fw.name, f"{ucode}: {_terms(size_field)} at {_terms(offset_fields)}",
                    f"a non-empty part inside {h.header_size_bytes}..{len(fw.data)}", f"{offset}..{offset + size}")
    return fw.data[offset : offset + size]


def _parts(spec) -> list[tuple[str, int]]:
    """A CUTS size or offset as (field, factor) terms."""
    return [(t, 1) if isinstance(t, str) else t for t in ((spec,) if isinstance(spec, str) else spec)]


def _sum(head, spec) -> int:
    return sum(factor * functools.reduce(getattr, f.split("."), head) for f, factor in _parts(spec))


def _terms(spec) -> str:
    return " + ".join(f if factor == 1 else f"{factor} * {f}" for f, factor in _parts(spec))


# GC 11.0.0 with PSP loading: each file and the ucodes amdgpu cuts from it (gfx_v11_0, imu_v11_0, mes_v11_0,
# amdgpu_sdma, smu_v13_0 init_microcode); {gc}_mes is {gc}_mes_2 where that file exists
FILES = {"{gc}_pfp": ("CP_RS64_PFP", "CP_RS64_PFP_P0_STACK", "CP_RS64_PFP_P1_STACK"),
         "{gc}_me": ("CP_RS64_ME", "CP_RS64_ME_P0_STACK", "CP_RS64_ME_P1_STACK"),
         "{gc}_mec": ("CP_RS64_MEC", *(f"CP_RS64_MEC_P{i}_STACK" for i in range(4))),
         "{gc}_rlc": ("RLC_G",), "{gc}_mes": ("CP_MES", "CP_MES_DATA"), "{gc}_mes1": ("CP_MES1", "CP_MES1_DATA"),
         "{gc}_imu": ("IMU_I", "IMU_D"), "{sdma}": ("SDMA_UCODE_TH0", "SDMA_UCODE_TH1"), "{smu}": ("SMC",)}
# RLC header 2.<minor> -> the parts it adds (amdgpu_gfx_rlc_init_microcode), each loaded only where not empty
RLC_PARTS = {1: ("RLC_RESTORE_LIST_CNTL", "RLC_RESTORE_LIST_GPM_MEM", "RLC_RESTORE_LIST_SRM_MEM"),
             2: ("RLC_IRAM", "RLC_DRAM"), 3: ("RLC_P", "RLC_V")}


@dataclass(frozen=True)
class Ucode:
    name: str  # AMDGPU_UCODE_ID_<name>
    fw_type: int  # GFX_FW_TYPE_*
    file: str
    payload: bytes


# GC 9.4.3 / 9.5.0 (MI300X, MI350X): gfx_v9_4_3's MEC and its jump table, the RLC, SDMA 4.4.x for one IO die's
# engines; the SMU's file carries no firmware for the PSP, only P2S tables (p2s_table below)
FILES_9_4 = {"{gc}_mec": ("CP_MEC1", "CP_MEC1_JT"), "{gc}_rlc": ("RLC_G",),
             "{sdma}": ("SDMA0", "SDMA1", "SDMA2", "SDMA3")}
# GC version -> its file set
FILE_SETS = {(11, 0, 0): FILES, (9, 4, 3): FILES_9_4, (9, 5, 0): FILES_9_4}
P2S_TABLE_X = 0x50325358  # smu_v13_0_6_ppt.c's P2S_TABLE_ID_X: the discrete parts' table (MI300X)
NO_P2S = {(13, 0, 12)}  # MP1 versions whose file carries no P2S table to load


def p2s_table(mp1: tuple[int, int, int]) -> list[Ucode]:
    """The SMU's P2S table for the PSP (smu_v13_0_6_init_microcode): the discrete parts' entry among those the SMC
    v2.1 file lists in place of power-play tables; none for MP1 13.0.12."""
    if mp1 in NO_P2S:
        return []
    name = "_".join(map(str, ("smu", *mp1)))
    fw = load(name)
    head = uc.struct_smc_firmware_header_v2_1.from_buffer_copy(fw.data)
    size = ctypes.sizeof(uc.struct_smc_soft_pptable_entry)
    for i in range(head.pptable_count):
        at = head.pptable_entry_offset + i * size
        if at + size > len(fw.data):
            raise _fail(name, f"P2S table entry {i} inside the file", f"<= {len(fw.data)}", at + size)
        entry = uc.struct_smc_soft_pptable_entry.from_buffer_copy(fw.data, at)
        end = entry.ppt_offset_bytes + entry.ppt_size_bytes
        if entry.id == P2S_TABLE_X:
            if not entry.ppt_size_bytes or end > len(fw.data):
                raise _fail(name, "the P2S table inside the file", f"a non-empty part <= {len(fw.data)}",
                            f"{entry.ppt_offset_bytes}..{end}")
            return [Ucode("P2S_TABLE", _psp.FW_TYPE["P2S_TABLE"], name, fw.data[entry.ppt_offset_bytes : end])]
    raise _fail(name, "a P2S table for the discrete parts", f"an entry with id {P2S_TABLE_X:#x}",
                f"{head.pptable_count} entries without one")


def ucodes(gc: tuple[int, int, int], sdma: tuple[int, int, int], mp1: tuple[int, int, int]) -> list[Ucode]:
    """What the PSP loads for this GC (11.0.0, Navi31; 9.4.3, MI300X; 9.5.0, MI350X) in amdgpu's order
    (AMDGPU_UCODE_ID's; a P2S table first), cut from the files of these GC, SDMA0 and MP1 versions; FirmwareError
    for a missing or corrupt file."""
    if gc not in FILE_SETS:
        raise UnsupportedGPU(f"GC {'.'.join(map(str, gc))}: AM knows the firmware sets of GC "
                             f"{', '.join('.'.join(map(str, v)) for v in FILE_SETS)}")
    prefix = {ip: "_".join(map(str, (ip, *v))) for ip, v in (("gc", gc), ("sdma", sdma), ("smu", mp1))}
    out = []
    for pattern, names in FILE_SETS[gc].items():
        name = pattern.format(**prefix)
        if name.endswith("_mes") and find(f"{name}_2"):
            name += "_2"
        fw = load(name)
        if name.endswith("_rlc"):
            major, minor = fw.header.header_version_major, fw.header.header_version_minor
            if major != 2 or minor > max(RLC_PARTS):
                raise _fail(name, "header version", f"2.0 to 2.{max(RLC_PARTS)}", f"{major}.{minor}")
            names += tuple(part for m in range(1, minor + 1) for part in RLC_PARTS[m])
        for ucode in names:
            if payload := cut(fw, ucode, optional=ucode.startswith("RLC_") and ucode != "RLC_G"):
                out.append(Ucode(ucode, _psp.FW_TYPE[ucode], name, payload))
    first = p2s_table(mp1) if gc[0] == 9 else []
    return first + sorted(out, key=lambda u: getattr(uc, f"AMDGPU_UCODE_ID_{u.name}"))
