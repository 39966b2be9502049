"""The QMD (queue meta data) a compute launch hands the GPU: V03_00 on Ampere and Ada, V04_00 on Hopper, V05_00 on
Blackwell, built from the generated layouts. Each version names its fields differently (V04/V05 shift addresses
and sizes); one table of (generic name -> the version's field and how the value is put) serves all three. A field
a layout lacks is left out: of V04_00 only the fields two public sources agree on are known (nv_facts.py), so a
Hopper QMD carries no more than those."""

from __future__ import annotations

from usergpu.autogen import nv_classes as nvc
from usergpu.isa.nv.cubin import sm_number

LAYOUTS = {3: "NVC6C0_QMDV03_00", 4: "NVCBC0_QMDV04_00", 5: "NVCDC0_QMDV05_00"}
VERSIONS = tuple(LAYOUTS)
SHIFT = {"PROGRAM": {5: 4}, "CBUF": {4: 6, 5: 6}, "SHARED": {5: 7}, "LOCAL": {5: 4}}
# generic name -> the field that holds it, per version
FIELDS: dict[str, dict[int, str]] = {
    "program_lo": {3: "PROGRAM_ADDRESS_LOWER", 4: "PROGRAM_ADDRESS_LOWER", 5: "PROGRAM_ADDRESS_LOWER_SHIFTED4"},
    "program_hi": {3: "PROGRAM_ADDRESS_UPPER", 4: "PROGRAM_ADDRESS_UPPER", 5: "PROGRAM_ADDRESS_UPPER_SHIFTED4"},
    "grid_x": {3: "CTA_RASTER_WIDTH", 4: "GRID_WIDTH", 5: "GRID_WIDTH"},
    "grid_y": {3: "CTA_RASTER_HEIGHT", 4: "GRID_HEIGHT", 5: "GRID_HEIGHT"},
    "grid_z": {3: "CTA_RASTER_DEPTH", 4: "GRID_DEPTH", 5: "GRID_DEPTH"},
    "block_x": dict.fromkeys(VERSIONS, "CTA_THREAD_DIMENSION0"),
    "block_y": dict.fromkeys(VERSIONS, "CTA_THREAD_DIMENSION1"),
    "block_z": dict.fromkeys(VERSIONS, "CTA_THREAD_DIMENSION2"),
    "shared": {3: "SHARED_MEMORY_SIZE", 4: "SHARED_MEMORY_SIZE", 5: "SHARED_MEMORY_SIZE_SHIFTED7"},
    "registers": {3: "REGISTER_COUNT_V", 4: "REGISTER_COUNT", 5: "REGISTER_COUNT"},
    "barriers": dict.fromkeys(VERSIONS, "BARRIER_COUNT"),
    "local": {3: "SHADER_LOCAL_MEMORY_HIGH_SIZE", 4: "SHADER_LOCAL_MEMORY_HIGH_SIZE",
              5: "SHADER_LOCAL_MEMORY_HIGH_SIZE_SHIFTED4"},
    "major": dict.fromkeys(VERSIONS, "QMD_MAJOR_VERSION"),
    "sass": {3: "SASS_VERSION", 5: "SASS_VERSION"},
    "caching": {3: "SM_GLOBAL_CACHING_ENABLE"},
    "group": {3: "QMD_GROUP_ID", 5: "QMD_GROUP_ID"},
    "call_limit": dict.fromkeys(VERSIONS, "API_VISIBLE_CALL_LIMIT"),
    "sampler_index": dict.fromkeys(VERSIONS, "SAMPLER_INDEX"),
    **{f"invalidate_{c}": {3: f"INVALIDATE_{c.upper()}", 5: f"INVALIDATE_{c.upper()}"}
       for c in ("texture_header_cache", "texture_sampler_cache", "texture_data_cache", "shader_data_cache",
                 "instruction_cache", "shader_constant_cache")},
}
# constant bank i's address (low, high): indexed fields, like its size and valid bit
BANK = {3: ("CONSTANT_BUFFER_ADDR_LOWER", "CONSTANT_BUFFER_ADDR_UPPER"),
        4: ("CONSTANT_BUFFER_ADDR_LOWER_SHIFTED6", "CONSTANT_BUFFER_ADDR_UPPER_SHIFTED6"),
        5: ("CONSTANT_BUFFER_ADDR_LOWER_SHIFTED6", "CONSTANT_BUFFER_ADDR_UPPER_SHIFTED6")}
SHARED_RESERVED = 0x400  # shared memory the hardware keeps for itself on sm_80+ (counted in the QMD's size)


def version(arch: str) -> int:
    """The QMD major version an sm_XY runs: 3 up to Ada, 4 on Hopper, 5 from Blackwell."""
    sm = sm_number(arch)
    return 3 if sm < 90 else 4 if sm < 100 else 5


def _split(value: int, table: str, ver: int) -> tuple[int, int]:
    """An address as a version holds it: shifted (V04/V05 drop low bits), then its low and high words."""
    value >>= SHIFT[table].get(ver, 0)
    return value & 0xFFFFFFFF, value >> 32


def build(arch: str, program: int, grid, block, shared: int, registers: int, banks: dict[int, tuple[int, int]],
          local_per_thread: int = 0, barriers: int = 1) -> bytes:
    """The QMD of a launch: program address, grid and block, shared memory bytes, registers a thread, the constant
    banks (index -> address, size: bank 0 the launch's, the others the cubin's) and local memory a thread."""
    ver = version(arch)
    layout = nvc.QMD[LAYOUTS[ver]]
    sm = sm_number(arch)
    program_lo, program_hi = _split(program, "PROGRAM", ver)
    values = {"program_lo": program_lo, "program_hi": program_hi, "grid_x": grid[0], "grid_y": grid[1],
              "grid_z": grid[2], "block_x": block[0], "block_y": block[1], "block_z": block[2],
              "shared": shared >> SHIFT["SHARED"].get(ver, 0), "registers": registers, "barriers": barriers,
              "local": local_per_thread >> SHIFT["LOCAL"].get(ver, 0), "major": ver, "sass": (sm // 10) << 4 | sm % 10,
              "caching": 1, "group": 0x3F, "call_limit": 1, "sampler_index": 1,
              **{k: 1 for k in FIELDS if k.startswith("invalidate_")}}
    fields: dict = {names[ver]: values[key] for key, names in FIELDS.items()
                    if ver in names and names[ver] in layout.fields}
    lo, hi = BANK[ver]
    count = max(banks) + 1
    fields.update({lo: [0] * count, hi: [0] * count, "CONSTANT_BUFFER_SIZE_SHIFTED4": [0] * count,
                   "CONSTANT_BUFFER_VALID": [0] * count})
    for i, (address, size) in banks.items():
        fields[lo][i], fields[hi][i] = _split(address, "CBUF", ver)
        fields["CONSTANT_BUFFER_SIZE_SHIFTED4"][i] = -(-size // 16)
        fields["CONSTANT_BUFFER_VALID"][i] = 1
    return layout.encode(**fields)
