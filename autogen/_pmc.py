"""The performance-counter events the profiler offers by name, per GC generation (hand-written, like _regs.py):
name -> (block, event selector). Selectors are those Mesa's RADV programs (radv_perfcounter.c: its GFX10 values
serve gfx11, GFX12 has its own). Blocks and their instances: GRBM one per GPU; SQG one per shader engine (64-bit
SQG_PERFCOUNTERn_LO/HI); SQ, on gfx12 the per-WGP SQ_WGP block (32-bit SQ_PERFCOUNTERn_LO). Shared by the runtime
(which programs them) and the mock GPU (which counts them)."""

EVENTS: dict[str, dict[str, tuple[str, int]]] = {
    "gfx11": {"GRBM_GUI_ACTIVE": ("GRBM", 0x2), "SQ_WAVES": ("SQG", 0x4), "SQ_INSTS": ("SQG", 0x31),
              "SQ_INSTS_LDS": ("SQG", 0x3B), "SQ_INSTS_SALU": ("SQG", 0x3C), "SQ_INSTS_SMEM": ("SQG", 0x3D),
              "SQ_INSTS_VALU": ("SQG", 0x40), "SQ_INSTS_VMEM_RD": ("SQG", 0x45), "SQ_INSTS_VMEM_WR": ("SQG", 0x46),
              "SQ_INST_CYCLES_VALU": ("SQG", 0x75)},
    "gfx12": {"GRBM_GUI_ACTIVE": ("GRBM", 0x2), "SQ_WAVES": ("SQG", 0x13), "SQ_INSTS_LDS": ("SQ", 0x2D),
              "SQ_INSTS_SALU": ("SQ", 0x2E), "SQ_INSTS_SMEM": ("SQ", 0x2F), "SQ_INSTS_VALU": ("SQ", 0x32),
              "SQ_INSTS_VMEM_RD": ("SQ", 0x36), "SQ_INSTS_VMEM_WR": ("SQ", 0x37)},
}
# block -> (counters it has, its registers' prefix, 64-bit values); SQ has 16 selects but 8 readable counters
BLOCKS: dict[str, tuple[int, str, bool]] = {"GRBM": (2, "GRBM_PERFCOUNTER", True), "SQG": (8, "SQG_PERFCOUNTER", True),
                                            "SQ": (8, "SQ_PERFCOUNTER", False)}
PERFMON_CNTL = {"gfx11": "CP_PERFMON_CNTL", "gfx12": "CP_PERFMON_CNTL_1"}  # one register, named per header
PERFMON_DISABLE_AND_RESET, PERFMON_START, PERFMON_STOP = 0, 1, 2  # CP_PERFMON_CNTL.PERFMON_STATE
