"""The mock GPU's performance counters. CP_PERFMON_CNTL.PERFMON_STATE resets (0), starts (1) and stops (2) them;
each block's *_PERFCOUNTERn_SELECT.PERF_SEL picks an event (isa/amd/hw/pmc.py names them); while they run, every
dispatch adds its exact counts (profiler.py) to the counters of the instances its waves ran on, read back from
*_PERFCOUNTERn_LO/HI of the instance GRBM_GFX_INDEX selects (a block counted per shader engine has the same count
in every copy of its engine). Each XCC has its own counters, started and read by its own command processor."""

from __future__ import annotations

from usergpu.isa.amd.hw import soc
from usergpu.isa.amd.hw.pmc import BLOCKS, EVENTS, PERFMON_CNTL, PERFMON_DISABLE_AND_RESET, PERFMON_START

_KEY = {"xcc": 0, "se": 1, "wgp": 3}  # how much of an (SE, SA, WGP) instance names the block's instance


class Perfmon:
    def __init__(self, gpu):
        self.gpu, family = gpu, soc.family(gpu.arch)
        self.blocks = BLOCKS[family]
        self.control = gpu.canonical(PERFMON_CNTL[family])
        self.events = {block: {sel: name for name, (b, sel) in EVENTS[family].items() if b == block}
                       for block in self.blocks}
        self.state: dict[int, int] = {}  # XCC -> its PERFMON_STATE (each XCC's CP writes its own)
        gpu.on_write[self.control] = self.written

    @property
    def running(self) -> bool:
        """Whether the counters of the XCC the engines reach now run."""
        return self.state.get(self.gpu.xcc) == PERFMON_START

    def written(self, value: int) -> None:
        """CP_PERFMON_CNTL written: PERFMON_STATE starts, stops or resets the counters."""
        self.state[self.gpu.xcc] = value & 0xF
        if value & 0xF == PERFMON_DISABLE_AND_RESET:
            for n, prefix, wide, _ in self.blocks.values():
                for i in range(n):
                    for half in ("_LO", "_HI") if wide else ("_LO",):
                        name = self.gpu.canonical(f"{prefix}{i}{half}")
                        self.gpu.regs.pop(name, None)
                        self.gpu.instanced.pop(name, None)

    def count(self, profile) -> None:
        """Add a dispatch's counts to every counter whose select names an event."""
        if not self.running:
            return
        gpu = self.gpu
        everywhere = [where for se in range(gpu.ses) for where in gpu.engine(se)]
        counted: dict[tuple[str, str], dict[tuple, int]] = {}  # an event's counts, worked out once per dispatch
        for block, (n, prefix, wide, scope) in self.blocks.items():
            for i in range(n):
                select = f"{prefix}{i}_SELECT"
                if select not in gpu.table:
                    continue
                # a block counted once per XCC has one counter; the others one per instance
                for where in [None] if scope == "xcc" else everywhere:
                    raw = gpu.regs.get(gpu.canonical(select), 0) if where is None else gpu.instance(select, where)
                    name = self.events[block].get(gpu.table[select].decode(raw)["PERF_SEL"])
                    if name is None:
                        continue
                    if (name, scope) not in counted:
                        counted[name, scope] = profile.event(name, scope)
                    key = (profile.xcc, *(where or ())[:_KEY[scope]])
                    self._add(f"{prefix}{i}", where, counted[name, scope].get(key, 0), wide)

    def _add(self, counter: str, where, n: int, wide: bool) -> None:
        gpu = self.gpu
        store = gpu.regs if where is None else None

        def get(reg: str) -> int:
            return store.get(gpu.canonical(reg), 0) if store is not None else gpu.instance(reg, where)

        def put(reg: str, value: int) -> None:
            if store is not None:
                store[gpu.canonical(reg)] = value
            else:
                gpu.set_instances(reg, [where], value)

        total = get(f"{counter}_LO") | (get(f"{counter}_HI") << 32 if wide else 0)
        total = (total + n) & ((1 << (64 if wide else 32)) - 1)
        put(f"{counter}_LO", total & 0xFFFFFFFF)
        if wide:
            put(f"{counter}_HI", total >> 32)
