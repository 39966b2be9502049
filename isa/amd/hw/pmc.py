"""The performance-counter events the profiler offers by name, per GC generation (hand-written, like _regs.py):
name -> (block, event selector). gfx11/gfx12: the selectors Mesa's RADV programs (radv_perfcounter.c: its GFX10
values serve gfx11, GFX12 has its own). gfx942/gfx950 (families gfx94, gfx95): rocprofiler-sdk's counter_defs.yaml
(block and event per architecture). Shared by the runtime (which programs them) and the mock GPU (which counts them).

BLOCKS: each block's counters, register prefix, whether they are 64-bit (*_LO/_HI), and the instances they are
read per: "xcc" one per XCC (GRBM), "se" one per shader engine (gfx11/gfx12's SQG; gfx9's SQ, which aggregates the
SE's SIMDs), "wgp" one per WGP (gfx12's SQ_WGP block, 32-bit SQ_PERFCOUNTERn_LO)."""

# name -> (gfx942's event, gfx950's event), all of the SQ block
_CDNA_SQ = {"SQ_WAVES": (4, 4), "SQ_BUSY_CYCLES": (3, 3), "SQ_INSTS": (25, 25), "SQ_INSTS_VALU": (26, 26),
            "SQ_INSTS_MFMA": (56, 58), "SQ_INSTS_VMEM_WR": (57, 59), "SQ_INSTS_VMEM_RD": (58, 60),
            "SQ_INSTS_VMEM": (59, 61), "SQ_INSTS_SALU": (60, 62), "SQ_INSTS_SMEM": (61, 63), "SQ_INSTS_FLAT": (62, 64),
            "SQ_INSTS_LDS": (65, 67), "SQ_INSTS_BRANCH": (69, 71), "SQ_INSTS_SENDMSG": (70, 72),
            "SQ_WAVE_CYCLES": (79, 95)}
EVENTS: dict[str, dict[str, tuple[str, int]]] = {
    "gfx11": {"GRBM_GUI_ACTIVE": ("GRBM", 0x2), "SQ_WAVES": ("SQG", 0x4), "SQ_INSTS": ("SQG", 0x31),
              "SQ_INSTS_LDS": ("SQG", 0x3B), "SQ_INSTS_SALU": ("SQG", 0x3C), "SQ_INSTS_SMEM": ("SQG", 0x3D),
              "SQ_INSTS_VALU": ("SQG", 0x40), "SQ_INSTS_VMEM_RD": ("SQG", 0x45), "SQ_INSTS_VMEM_WR": ("SQG", 0x46),
              "SQ_INST_CYCLES_VALU": ("SQG", 0x75)},
    "gfx12": {"GRBM_GUI_ACTIVE": ("GRBM", 0x2), "SQ_WAVES": ("SQG", 0x13), "SQ_INSTS_LDS": ("SQ", 0x2D),
              "SQ_INSTS_SALU": ("SQ", 0x2E), "SQ_INSTS_SMEM": ("SQ", 0x2F), "SQ_INSTS_VALU": ("SQ", 0x32),
              "SQ_INSTS_VMEM_RD": ("SQ", 0x36), "SQ_INSTS_VMEM_WR": ("SQ", 0x37)},
    **{family: {"GRBM_GUI_ACTIVE": ("GRBM", 0x2)} | {name: ("SQ", events[i]) for name, events in _CDNA_SQ.items()}
       for i, family in enumerate(("gfx94", "gfx95"))},
}
_RDNA = {"GRBM": (2, "GRBM_PERFCOUNTER", True, "xcc"), "SQG": (8, "SQG_PERFCOUNTER", True, "se"),
         "SQ": (8, "SQ_PERFCOUNTER", False, "wgp")}  # SQ has 16 selects but 8 readable counters
# gfx9: aqlprofile's gfx9_block_info.h, 16 SQ counters (SQ_PERFCOUNTER0..15_LO/HI in gc_9_4_3_offset.h)
_CDNA = {"GRBM": (2, "GRBM_PERFCOUNTER", True, "xcc"), "SQ": (16, "SQ_PERFCOUNTER", True, "se")}
BLOCKS: dict[str, dict[str, tuple[int, str, bool, str]]] = {"gfx11": _RDNA, "gfx12": _RDNA, "gfx94": _CDNA,
                                                            "gfx95": _CDNA}
PERFMON_CNTL = {"gfx11": "CP_PERFMON_CNTL", "gfx12": "CP_PERFMON_CNTL_1", "gfx94": "CP_PERFMON_CNTL",
                "gfx95": "CP_PERFMON_CNTL"}  # one register, named per header
PERFMON_DISABLE_AND_RESET, PERFMON_START, PERFMON_STOP = 0, 1, 2  # CP_PERFMON_CNTL.PERFMON_STATE
