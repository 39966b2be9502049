"""The GPU page-table format AM writes and the mock MMU walks (hand-written, like _regs.py: amdgpu_vm.h's
AMDGPU_PTE_* / AMDGPU_PDE_* bits), and the geometry AM programs into VM_CONTEXT0_CNTL."""

VALID, SYSTEM, SNOOPED, EXECUTABLE, READABLE, WRITEABLE = 1 << 0, 1 << 1, 1 << 2, 1 << 4, 1 << 5, 1 << 6
ADDRESS = ((1 << 48) - 1) & ~0xFFF  # bits 47:12 of an entry: the next table, or the page
# a directory entry that maps a whole block itself (a huge page) instead of naming a table; gfx12 also marks every
# leaf PTE with that bit (AMDGPU_PTE_IS_PTE)
PDE_PTE = {"gfx11": 1 << 54, "gfx12": 1 << 63, "gfx94": 1 << 54, "gfx95": 1 << 54}
IS_PTE = {"gfx11": 0, "gfx12": 1 << 63, "gfx94": 0, "gfx95": 0}
# each hub's register prefix (GCVM_*/GCMC_* and MMVM_*/MMMC_* on gfx11/12; gfx9's hubs have none), by block
HUB_PREFIX = {"gfx11": {"GC": "GC", "MMHUB": "MM"}, "gfx12": {"GC": "GC", "MMHUB": "MM"},
              "gfx94": {"GC": "", "MMHUB": ""}, "gfx95": {"GC": "", "MMHUB": ""}}
PAGE_SHIFT, BLOCK_BITS = 12, 9  # 4 KiB pages, 512 entries a table (PAGE_TABLE_BLOCK_SIZE 0)
DEPTH = 3  # PAGE_TABLE_DEPTH: PDB2 -> PDB1 -> PDB0 -> PTB, 48-bit addresses
# gfx9's "translate further" (amdgpu's vm_manager.translate_further, tinygrad's AM on gfx9): PAGE_TABLE_DEPTH 2 with
# PAGE_TABLE_BLOCK_SIZE 9 walks the same four levels, a PDB0 entry being a 2 MiB page unless it has TF (a PTB then)
FURTHER_DEPTH, FURTHER_BLOCK, TF = 2, 9, 1 << 56
ENTRIES = 1 << BLOCK_BITS


def level_shift(level: int) -> int:
    """The address bit an entry of a table at that level (0: the root) starts at."""
    return PAGE_SHIFT + BLOCK_BITS * (DEPTH - level)

# the GC hub's fault status register (gfx12 split it into two dwords; the fields are in the low one)
FAULT_STATUS = {"gfx11": "GCVM_L2_PROTECTION_FAULT_STATUS", "gfx12": "GCVM_L2_PROTECTION_FAULT_STATUS_LO32",
                "gfx94": "VM_L2_PROTECTION_FAULT_STATUS", "gfx95": "VM_L2_PROTECTION_FAULT_STATUS"}
