"""The QMD (queue meta data) a compute launch hands the GPU: V03_00 on Ampere and Ada, V04_00 on Hopper, V05_00 on
Blackwell, built from the generated layouts (NVIDIA's open-gpu-doc QMD headers). Each version names its fields
differently (V04/V05 shift addresses and sizes); one table of (generic name -> the version's field) serves all
three, and a field its version's layout lacks is an error, never skipped.

What each generation's QMD sets (every other field 0):
  - all: the program address, grid and block, shared memory size, registers a thread, barriers, local memory a thread
    (the high size), QMD_MAJOR_VERSION, SASS_VERSION, QMD_GROUP_ID 0x3f, API_VISIBLE_CALL_LIMIT NO_CHECK,
    SAMPLER_INDEX VIA_HEADER_INDEX, CWD_MEMBAR_TYPE L1_SYSMEMBAR, the six INVALIDATE_*_CACHE bits, the SM's shared
    memory configuration (MIN/TARGET_SM_CONFIG_SHARED_MEM_SIZE: the smallest carveout holding the launch's shared
    memory; MAX: the arch's whole carveout), and each constant bank's address, size and valid bit, with
    CONSTANT_BUFFER_INVALIDATE of bank 0 (written anew for each launch);
  - V03 (CTA_RASTER_* grid, REGISTER_COUNT_V): also SM_GLOBAL_CACHING_ENABLE;
  - V04 (GRID_*, REGISTER_COUNT, constant banks >> 6) and V05 (also the program >> 4, shared memory >> 7, local
    memory >> 4): also QMD_TYPE GRID_CTA (0 would be a queue).
No release semaphore and no dependent QMD: the runtime signals after a launch with the GPFIFO's SEM_EXECUTE
(gpfifo.py).
"""

from __future__ import annotations

import functools

from usergpu.autogen import nv_classes as nvc
from usergpu.isa.nv.cubin import sm_number
from usergpu.isa.nv.launch_check import ARCHS

LAYOUTS = {3: "NVC6C0_QMDV03_00", 4: "NVCBC0_QMDV04_00", 5: "NVCDC0_QMDV05_00"}
VERSIONS = tuple(LAYOUTS)
SHIFT = {"PROGRAM": {5: 4}, "CBUF": {4: 6, 5: 6}, "SHARED": {5: 7}, "LOCAL": {5: 4}}
_ALL = dict.fromkeys
# generic name -> the field that holds it, per version
FIELDS: dict[str, dict[int, str]] = {
    "program_lo": {3: "PROGRAM_ADDRESS_LOWER", 4: "PROGRAM_ADDRESS_LOWER", 5: "PROGRAM_ADDRESS_LOWER_SHIFTED4"},
    "program_hi": {3: "PROGRAM_ADDRESS_UPPER", 4: "PROGRAM_ADDRESS_UPPER", 5: "PROGRAM_ADDRESS_UPPER_SHIFTED4"},
    "grid_x": {3: "CTA_RASTER_WIDTH", 4: "GRID_WIDTH", 5: "GRID_WIDTH"},
    "grid_y": {3: "CTA_RASTER_HEIGHT", 4: "GRID_HEIGHT", 5: "GRID_HEIGHT"},
    "grid_z": {3: "CTA_RASTER_DEPTH", 4: "GRID_DEPTH", 5: "GRID_DEPTH"},
    "block_x": _ALL(VERSIONS, "CTA_THREAD_DIMENSION0"),
    "block_y": _ALL(VERSIONS, "CTA_THREAD_DIMENSION1"),
    "block_z": _ALL(VERSIONS, "CTA_THREAD_DIMENSION2"),
    "shared": {3: "SHARED_MEMORY_SIZE", 4: "SHARED_MEMORY_SIZE", 5: "SHARED_MEMORY_SIZE_SHIFTED7"},
    "smem_min": _ALL(VERSIONS, "MIN_SM_CONFIG_SHARED_MEM_SIZE"),
    "smem_target": _ALL(VERSIONS, "TARGET_SM_CONFIG_SHARED_MEM_SIZE"),
    "smem_max": _ALL(VERSIONS, "MAX_SM_CONFIG_SHARED_MEM_SIZE"),
    "registers": {3: "REGISTER_COUNT_V", 4: "REGISTER_COUNT", 5: "REGISTER_COUNT"},
    "barriers": _ALL(VERSIONS, "BARRIER_COUNT"),
    "local": {3: "SHADER_LOCAL_MEMORY_HIGH_SIZE", 4: "SHADER_LOCAL_MEMORY_HIGH_SIZE",
              5: "SHADER_LOCAL_MEMORY_HIGH_SIZE_SHIFTED4"},
    "major": _ALL(VERSIONS, "QMD_MAJOR_VERSION"),
    "type": {4: "QMD_TYPE", 5: "QMD_TYPE"},
    "sass": _ALL(VERSIONS, "SASS_VERSION"),
    "caching": {3: "SM_GLOBAL_CACHING_ENABLE"},
    "group": _ALL(VERSIONS, "QMD_GROUP_ID"),
    "call_limit": _ALL(VERSIONS, "API_VISIBLE_CALL_LIMIT"),
    "sampler_index": _ALL(VERSIONS, "SAMPLER_INDEX"),
    "membar": _ALL(VERSIONS, "CWD_MEMBAR_TYPE"),
    **{f"invalidate_{c}": _ALL(VERSIONS, f"INVALIDATE_{c.upper()}")
       for c in ("texture_header_cache", "texture_sampler_cache", "texture_data_cache", "shader_data_cache",
                 "instruction_cache", "shader_constant_cache")},
}
# generic name -> the header's named value it takes (the version's own constant, LAYOUTS[v] + '_' + this)
NAMED = {"type": "QMD_TYPE_GRID_CTA", "call_limit": "API_VISIBLE_CALL_LIMIT_NO_CHECK",
         "sampler_index": "SAMPLER_INDEX_VIA_HEADER_INDEX", "membar": "CWD_MEMBAR_TYPE_L1_SYSMEMBAR"}
# constant bank i's address (low, high): indexed fields, like its size, valid and invalidate bits
BANK = {3: ("CONSTANT_BUFFER_ADDR_LOWER", "CONSTANT_BUFFER_ADDR_UPPER"),
        4: ("CONSTANT_BUFFER_ADDR_LOWER_SHIFTED6", "CONSTANT_BUFFER_ADDR_UPPER_SHIFTED6"),
        5: ("CONSTANT_BUFFER_ADDR_LOWER_SHIFTED6", "CONSTANT_BUFFER_ADDR_UPPER_SHIFTED6")}
SHARED_RESERVED = 0x400  # shared memory the hardware keeps for itself on sm_80+ (counted in the QMD's size)
# the shared memory an SM can be configured with (KiB; CUDA's carveouts from Ampere on, each arch up to its own)
CARVEOUTS = (8, 16, 32, 64, 100, 132, 164, 196, 228)


def version(arch: str) -> int:
    """The QMD major version an sm_XY runs: 3 up to Ada, 4 on Hopper, 5 from Blackwell."""
    sm = sm_number(arch)
    return 3 if sm < 90 else 4 if sm < 100 else 5


def _split(value: int, table: str, ver: int) -> tuple[int, int]:
    """An address as a version holds it: shifted (V04/V05 drop low bits), then its low and high words."""
    value >>= SHIFT[table].get(ver, 0)
    return value & 0xFFFFFFFF, value >> 32


def sm_config(shared: int, arch: str) -> tuple[int, int]:
    """(the smallest carveout holding `shared` bytes, the arch's whole carveout) as the SM_CONFIG_SHARED_MEM_SIZE
    fields hold a size: KiB / 4 + 1 (NVK's gv100_sm_config_smem_size)."""
    whole = (ARCHS[f"sm_{sm_number(arch)}"][1] + SHARED_RESERVED) // 1024
    target = min(next((c for c in CARVEOUTS if c * 1024 >= shared), whole), whole)
    return target // 4 + 1, whole // 4 + 1


def build(arch: str, program: int, grid, block, shared: int, registers: int, banks: dict[int, tuple[int, int]],
          local_per_thread: int = 0, barriers: int = 1) -> bytes:
    """The QMD of a launch: program address, grid and block, shared memory bytes, registers a thread, the constant
    banks (index -> address, size: bank 0 the launch's, the others the cubin's) and local memory a thread."""
    ver = version(arch)
    layout = nvc.QMD[LAYOUTS[ver]]
    lo, hi = BANK[ver]
    addresses = [(0, 0)] * (max(banks) + 1)
    for i, (address, _) in banks.items():
        addresses[i] = _split(address, "CBUF", ver)
    fixed = _fixed(arch, program, tuple(grid), tuple(block), shared, registers,
                   tuple(sorted((i, size) for i, (_, size) in banks.items())), local_per_thread, barriers)
    where = layout.encode(**{lo: [a for a, _ in addresses], hi: [a for _, a in addresses]})
    return (fixed | int.from_bytes(where, "little")).to_bytes(layout.size, "little")


@functools.lru_cache(maxsize=1024)
def _fixed(arch: str, program: int, grid: tuple, block: tuple, shared: int, registers: int,
           sizes: tuple[tuple[int, int], ...], local_per_thread: int, barriers: int) -> int:
    """The QMD but its constant banks' addresses (what a launch changes), as an integer: a kernel launched again
    with the same shape encodes nothing more. sizes: (bank, bytes) of each bank."""
    ver = version(arch)
    sm = sm_number(arch)
    program_lo, program_hi = _split(program, "PROGRAM", ver)
    smem, smem_max = sm_config(shared, arch)
    values = {"program_lo": program_lo, "program_hi": program_hi, "grid_x": grid[0], "grid_y": grid[1],
              "grid_z": grid[2], "block_x": block[0], "block_y": block[1], "block_z": block[2],
              "shared": shared >> SHIFT["SHARED"].get(ver, 0), "smem_min": smem, "smem_target": smem,
              "smem_max": smem_max, "registers": registers, "barriers": barriers,
              "local": local_per_thread >> SHIFT["LOCAL"].get(ver, 0), "major": ver, "sass": (sm // 10) << 4 | sm % 10,
              "caching": 1, "group": 0x3F,
              **{k: getattr(nvc, f"{LAYOUTS[ver]}_{v}") for k, v in NAMED.items() if ver in FIELDS[k]},
              **{k: 1 for k in FIELDS if k.startswith("invalidate_")}}
    fields: dict = {names[ver]: values[key] for key, names in FIELDS.items() if ver in names}
    count = max(i for i, _ in sizes) + 1
    fields.update({"CONSTANT_BUFFER_SIZE_SHIFTED4": [0] * count, "CONSTANT_BUFFER_VALID": [0] * count,
                   "CONSTANT_BUFFER_INVALIDATE": [1]})
    for i, size in sizes:
        fields["CONSTANT_BUFFER_SIZE_SHIFTED4"][i] = -(-size // 16)
        fields["CONSTANT_BUFFER_VALID"][i] = 1
    return int.from_bytes(nvc.QMD[LAYOUTS[ver]].encode(**fields), "little")  # FieldError for a field it lacks
