"""The state a mock AMD GPU's engines share: the GPU VA space, the registers they reach (GC's, and NBIO's HDP flush
pair: hdp.py), a clock, interrupts, and the ring-queue loop every engine (PM4, SDMA, AQL) runs.

XCCs: a CDNA GPU (or compute partition) has several, each a GC with its own command processor and registers. A
compute queue is mapped on every XCC (amdkfd's init_mqd_v9_4_3 writes one MQD per XCC), so each XCC's CP runs it
with a context of its own (XCCContext: where it is in the queue, the dispatch it runs, what an IB stall left); the
registers a packet writes are the executing XCC's (GPU.xcc, GPU.on_xcc), the blocks outside GC (attach) are shared. A
dispatch's workgroups go to the XCCs as the MQD's compute_current_logic_xcc_id and compute_tg_chunk_size say: chunks
of tg_chunk_size workgroups (in dispatch order, x fastest) round-robin over the XCCs by logical id; a chunk size of 0
(what amdkfd sets for a PM4 queue, whose XCCs all have logical id 0) splits nothing, and every XCC dispatches the
whole grid. The queue's read pointer reports what every XCC has taken (the least of their positions).

The clock is a deterministic 100 MHz counter (`timestamp()`): every packet an engine executes advances it by
PACKET_TICKS, every wave-instruction a dispatch executes by one tick, and every byte an SDMA engine moves (a copy, a
fill, a write) by its share of the board's copy rate (COPY_RATE), so kernels take nonzero time, two timestamps a
queue takes in order are strictly increasing, and the bandwidth a runtime computes from a copy's timestamps is the
board's.

Ring pointers: every queue reads its read and write pointers as 64-bit little-endian counters at the addresses
KFD's CREATE_QUEUE gives (read_pointer_address, write_pointer_address), counts them monotonically (they do not
wrap with the ring; the ring slot is the counter modulo the ring size) and writes the read pointer back there.
"""

from __future__ import annotations

import contextlib
import operator
import os
import time
from collections.abc import Callable, Iterator

import numpy as np

from usergpu.emu.amd.exec import dispatch as executor
from usergpu.emu.amd.mock.hdp import FlushRequests
from usergpu.emu.amd.mock.perfmon import Perfmon
from usergpu.emu.amd.mock.profiler import TOPOLOGY, DispatchProfile
from usergpu.emu.amd.mock.thread_trace import ThreadTrace
from usergpu.emu.memory import Memory, MemoryFault
from usergpu.errors import Error, GPUFault
from usergpu.hostmem import copy_file
from usergpu.isa.amd.encoding import isa_arch
from usergpu.isa.amd.hw.soc import GC_BASES, GC_REGS, TIMESTAMP_HZ

PACKET_TICKS = 1  # clock ticks per executed packet
# arch -> the bytes a second one SDMA engine moves, as the mock states it: half the board's peak VRAM bandwidth (a copy
# reads and writes each byte; GDDR6 at 20 Gbps a pin: 384 bits on Navi31, 256 on Navi48, as the mock KFD's boards
# report them) on the RDNA cards; on the CDNA parts one SDMA 4.4 engine, not their HBM (5.3 and 8 TB/s), bounds it
COPY_RATE = {"gfx1100": 480e9, "gfx1200": 320e9, "gfx1201": 320e9, "gfx942": 200e9, "gfx950": 200e9}
# arch -> the bytes a second its bus carries, where a copy's source or destination is system memory or another GPU's
# VRAM: PCIe 4.0 x16 on Navi31, PCIe 5.0 x16 on RDNA4, and on the CDNA parts PCIe 5.0 x16 to the host or one xGMI
# link to a peer (64 GB/s each way)
BUS_RATE = {"gfx1100": 32e9, "gfx1200": 64e9, "gfx1201": 64e9, "gfx942": 64e9, "gfx950": 64e9}
DISPATCH_SLICE = 0.5  # seconds a dispatch runs per step of its queue before the caller gets control back
NOT_WATCHED = contextlib.nullcontext()  # the engines' busy time when no board's SMU watches it
INSTANCED = ("SQ_PERFCOUNTER", "SQG_PERFCOUNTER", "SQ_THREAD_TRACE_")  # each SE (SA, WGP) has its own copy

# interrupt sources, as the IH source ids are named (irqsrcs_gfx_11_0_0.h, irqsrcs_sdma0_5_0.h)
CP_EOP_INTERRUPT = "CP_EOP_INTERRUPT"
SDMA_TRAP = "SDMA_TRAP"

# WAIT_REG_MEM / POLL_REGMEM FUNCTION: how (value & mask) compares with the reference
COMPARE: dict[int, Callable[[int, int], bool]] = {
    0: lambda v, r: True, 1: operator.lt, 2: operator.le, 3: operator.eq, 4: operator.ne, 5: operator.ge,
    6: operator.gt}


class QueueError(Error):
    """A packet a queue cannot execute (unknown, truncated, malformed or faulting): the queue stops there.
    Says the queue, the packet (name and opcode) and its offset in bytes in the ring or IB it was read from."""

    def __init__(self, queue: str, packet: str, where: str, offset: int, why: str):
        self.queue, self.packet, self.where, self.offset, self.why = queue, packet, where, offset, why
        super().__init__(f"{queue}: {why}: packet {packet} at {where} offset {offset:#x} bytes")


class GPU:
    """One mock GPU (or compute partition): its arch, its memory (the GPU VA space), its XCCs' GC registers by name,
    its clock."""

    def __init__(self, arch: str = "gfx1100", mem: Memory | None = None, xccs: int = 1):
        family = arch[:5]
        if family not in GC_REGS:
            raise Error(f"no mock GPU for {arch}: the mock engines model {', '.join(GC_REGS)}")
        self.arch, self.mem, self.xccs = arch, mem if mem is not None else Memory(), xccs
        self.isa = isa_arch(arch)  # the instruction set its waves run
        self.bases = GC_BASES[family]
        self.table = GC_REGS[family]
        self._names: dict[int, str] = {}
        for name, reg in self.table.items():
            if reg.base_idx is not None:
                self._names.setdefault(reg.address(self.bases), name)
        self._instanced_names = {name for name in self._names.values() if name.startswith(INSTANCED)}
        self._attached: dict[str, int] = {}  # registers of other blocks (see attach)
        self.on_write: dict[str, Callable[[int], None]] = {}  # register name -> the model a write to it runs
        self.xcc = 0  # the XCC whose registers the engines reach now (the one whose CP runs a queue's step)
        self._regs: list[dict[str, int]] = [{} for _ in range(xccs)]
        # per (SE, SA, WGP) copies of each XCC's instanced registers; see read_reg
        self._instanced: list[dict[str, dict[tuple[int, int, int], int]]] = [{} for _ in range(xccs)]
        self.shared: dict[str, int] = {}  # the attached registers of other blocks: one copy whichever XCC reaches it
        self.ses, self.sas, self.wgps = TOPOLOGY[family]  # per XCC; the units are CUs on gfx9
        index = self.table["GRBM_GFX_INDEX"].fields
        self._array = "SH" if "SH_INDEX" in index else "SA"  # gfx9 calls the shader arrays SH
        self.perfmon = Perfmon(self)
        self.thread_trace = ThreadTrace(self)
        self.ticks = 0
        self.interrupt_handlers: list[Callable[[str, int], None]] = []
        self.activity = None  # a board's Activity (activity.py): engines record their busy time for its SMU
        self.fault_handlers: list[Callable[[int, str], None]] = []  # (address, access) of each VM fault
        self.hang_handlers: list[Callable[[Error], None]] = []  # what stopped a queue, where it was no VM fault
        self.hdp = FlushRequests(self)
        # what a machine that knows its memory says of it: whether an address is reached over the GPU's bus, and the
        # file (and offset) behind a range of addresses
        self.over_bus: Callable[[int], bool] = lambda address: False
        self.backing: Callable[[int, int], tuple[int, int] | None] = lambda address, size: None

    # ---- registers -------------------------------------------------------------------------------------
    @property
    def regs(self) -> dict[str, int]:
        """The GC registers of the XCC the engines reach now."""
        return self._regs[self.xcc]

    @property
    def instanced(self) -> dict[str, dict[tuple[int, int, int], int]]:
        return self._instanced[self.xcc]

    @contextlib.contextmanager
    def on_xcc(self, xcc: int) -> Iterator[None]:
        """Register accesses reach that XCC's GC (what a queue's step does for each XCC's command processor)."""
        before, self.xcc = self.xcc, xcc
        try:
            yield
        finally:
            self.xcc = before

    def reg_name(self, address: int) -> str:
        """The register at a dword address; a hex string for an address no register of the arch has."""
        name = self._names.get(address)
        return f"{address:#x}" if name is None else name

    def reg_address(self, name: str) -> int:
        """A register's dword address (the MMIO byte address is 4x)."""
        return self._attached[name] if name in self._attached else self.table[name].address(self.bases)

    def attach(self, name: str, address: int) -> None:
        """A register of another block than GC that the engines reach (NBIO's HDP flush pair), at a dword address."""
        self._names[address], self._attached[name] = name, address

    def selected(self) -> list[tuple[int, int, int]]:
        """The (SE, SA, WGP) instances GRBM_GFX_INDEX selects: an index, or all of them where it broadcasts."""
        f = self.table["GRBM_GFX_INDEX"].decode(self.regs.get("GRBM_GFX_INDEX", 0))
        ses = range(self.ses) if f["SE_BROADCAST_WRITES"] else [f["SE_INDEX"]]
        sas = range(self.sas) if f[f"{self._array}_BROADCAST_WRITES"] else [f[f"{self._array}_INDEX"]]
        wgps = range(self.wgps) if f["INSTANCE_BROADCAST_WRITES"] else [f["INSTANCE_INDEX"]]
        return [(se, sa, wgp) for se in ses for sa in sas for wgp in wgps]

    def read_reg(self, address: int) -> int:
        """A register; one that each SE (SA, WGP) has its own copy of reads the copy GRBM_GFX_INDEX selects."""
        name = self.reg_name(address)
        if name in self._instanced_names:
            return self.instanced.get(name, {}).get(self.selected()[0], 0)
        return (self.shared if name in self._attached else self.regs).get(name, 0)

    def write_reg(self, address: int, value: int) -> None:
        self.write_regs(address, (value,))

    def write_regs(self, address: int, values) -> None:
        """Registers at consecutive dword addresses from address written in order (SET_SH_REG's), each reaching
        the model a write to it runs (on_write)."""
        regs, hooks = self._regs[self.xcc], self.on_write
        for i, value in enumerate(values):
            name, value = self.reg_name(address + i), value & 0xFFFFFFFF
            if name in self._instanced_names:
                copies = self.instanced.setdefault(name, {})
                for where in self.selected():
                    copies[where] = value
            else:
                (self.shared if name in self._attached else regs)[name] = value
            hook = hooks.get(name)
            if hook is not None:
                hook(value)

    def canonical(self, name: str) -> str:
        """The name the GPU files a register under (headers give some addresses several names)."""
        return self.reg_name(self.reg_address(name))

    def instance(self, name: str, where: tuple[int, int, int]) -> int:
        return self.instanced.get(self.canonical(name), {}).get(where, 0)

    def set_instances(self, name: str, wheres, value: int) -> None:
        """The copies of a register at those (SE, SA, WGP) instances, as the hardware updates them."""
        copies = self.instanced.setdefault(self.canonical(name), {})
        for where in wheres:
            copies[where] = value

    def engine(self, se: int) -> list[tuple[int, int, int]]:
        """Every (SE, SA, WGP) instance of a shader engine: where a per-SE register's copies are."""
        return [(se, sa, wgp) for sa in range(self.sas) for wgp in range(self.wgps)]

    def event(self, event_type: int) -> None:
        """An EVENT_WRITE the CP passes on (thread-trace and counter events)."""
        self.thread_trace.event(event_type)

    # ---- memory ----------------------------------------------------------------------------------------
    def load(self, address: int, size: int) -> int:
        """An unsigned little-endian integer of size bytes."""
        return int.from_bytes(self.mem.read_bytes(address, size), "little")

    def store(self, address: int, size: int, value: int) -> None:
        self.mem.write_bytes(address, (value & ((1 << 8 * size) - 1)).to_bytes(size, "little"))

    # ---- clock, work, interrupts ----------------------------------------------------------------------
    def timestamp(self) -> int:
        """The GPU clock: ticks of TIMESTAMP_HZ."""
        return self.ticks

    def packet_done(self) -> None:
        self.ticks += PACKET_TICKS

    def copy(self, dst: int, src: int, n: int) -> None:
        """n bytes from src to dst, as an engine copies: between the files behind both where the machine knows them
        (the kernel copies, without the GIL, sparsely: a copy of pages nothing wrote makes none), else through the
        memory's views. Faults as the views would."""
        ends = self.backing(src, n), self.backing(dst, n)
        if None in ends or ends[0][0] == ends[1][0] and abs(ends[0][1] - ends[1][1]) < n:  # a file overlapping itself
            self.mem.copy(dst, src, n)
            return
        done = copy_file(*ends[0], *ends[1], n)
        if done < n:  # a kernel without it for these files: the rest through the views
            self.mem.copy(dst + done, src + done, n - done)

    @contextlib.contextmanager
    def moving(self, nbytes: int, *addresses: int) -> Iterator[None]:
        """An SDMA engine moves nbytes from or to these addresses (the body moves them): the clock advances by the
        time that takes at the board's COPY_RATE, or its BUS_RATE where one of them is reached over the bus, and the
        body takes no less wall time than that, so that the GPU's clock never runs ahead of the host's (a runtime
        checks that the time between a copy's timestamps is within the time it waited)."""
        start = time.perf_counter()
        yield
        rate = BUS_RATE if any(self.over_bus(a) for a in addresses) else COPY_RATE
        ticks = -(-nbytes * TIMESTAMP_HZ // int(rate[self.arch]))
        self.ticks += ticks
        left = ticks / TIMESTAMP_HZ - (time.perf_counter() - start)
        if left > 0:
            time.sleep(left)

    def dispatch(self, regs: dict[str, int], grid: tuple[int, int, int],
                 workgroups: np.ndarray | None = None) -> Iterator[None]:
        """Run a dispatch of grid workgroups with these COMPUTE_* registers, DISPATCH_SLICE seconds per step of the
        iterator (a kernel that never ends keeps its queue busy, as on hardware, instead of holding whoever rang
        the doorbell); the clock advances a tick per wave-instruction. workgroups: the dispatch-order numbers of
        the workgroups this XCC runs (None: all of them). While counters run or a thread trace is on, the SQs
        watch it (profiler.py)."""
        pgm = (regs.get("COMPUTE_PGM_LO", 0) | regs.get("COMPUTE_PGM_HI", 0) << 32) << 8
        stats: dict = {}
        budget = int(os.environ.get("MOCKGPU_BUDGET", executor.DEFAULT_BUDGET))  # instructions a wave may run
        profile = None
        if self.perfmon.running or self.thread_trace.on:
            field = {n: self.table[n].decode(regs.get(n, 0)) for n in ("COMPUTE_NUM_THREAD_X", "COMPUTE_NUM_THREAD_Y",
                                                                       "COMPUTE_NUM_THREAD_Z",
                                                                       "COMPUTE_DISPATCH_INITIATOR")}
            lanes = 32 if field["COMPUTE_DISPATCH_INITIATOR"].get("CS_W32_EN") else 64  # gfx9: wave64 only
            threads = np.prod([field[f"COMPUTE_NUM_THREAD_{a}"]["NUM_THREAD_FULL"] for a in "XYZ"])
            per_group = -(-int(threads) // lanes)
            groups = int(np.prod(grid)) if workgroups is None else len(workgroups)
            profile = DispatchProfile(self.arch[:5], per_group * groups, per_group, lanes == 64,
                                      self.thread_trace.traced, threads=int(threads), xcc=self.xcc)
        steps = executor.dispatch_slices(self.mem, regs, grid, self.isa, budget, stats, kernel=f"kernel@{pgm:#x}",
                                         observer=profile.observe if profile else None, slice_s=DISPATCH_SLICE,
                                         workgroups=workgroups)
        while True:
            with self.busy("gfx"):
                try:
                    if next(steps, True):
                        break
                except GPUFault as e:
                    if e.access in ("read", "write"):  # a memory access (not an instruction the wave could not run)
                        self.fault(e.address, e.access)
                    raise
            yield
        self.ticks += stats.get("instructions", 0)
        if profile:
            self.perfmon.count(profile)
            self.thread_trace.record(profile, pgm)

    def busy(self, engine: str) -> contextlib.AbstractContextManager:
        """Work on an engine (gfx, memory): its time counts as the engine's activity (a board's SMU reads it)."""
        return NOT_WATCHED if self.activity is None else _Busy(self.activity, engine)

    def fault(self, address: int, access: str) -> None:
        """A VM fault: the hub's handlers (a board's fault status and interrupt) hear of it."""
        for handler in self.fault_handlers:
            handler(address, access)

    def interrupt(self, source: str, context_id: int) -> None:
        """Raise an interrupt: every subscribed handler (the KFD's event layer) gets (source, context_id)."""
        for handler in self.interrupt_handlers:
            handler(source, context_id)


class _Busy:
    """An engine's busy time, begun and ended around work (a class: cheaper than a generator per dispatch slice)."""

    __slots__ = ("activity", "engine")

    def __init__(self, activity, engine: str):
        self.activity, self.engine = activity, engine

    def __enter__(self) -> None:
        self.activity.begin(self.engine)

    def __exit__(self, *exc) -> None:
        self.activity.end(self.engine)


class XCCContext:
    """One XCC's command processor on a queue (an SDMA queue has one, on no XCC): where it is in the queue, the
    dispatch it runs, the write-then-wait it has done, where IBs it stalled in stand, and the MQD's split of a
    dispatch (logical XCC id and chunk of workgroups, see the module doc)."""

    def __init__(self, xcc: int = 0, xccs: int = 1, logical: int = 0, chunk: int = 0):
        self.xcc, self.xccs, self.logical, self.chunk = xcc, xccs, logical, chunk
        self.pos: int | None = None  # the pointer value of its next packet (the queue's read pointer at first)
        self.running: Iterator[None] | None = None  # the dispatch its packet started, while it runs
        self.wrote = False  # the write of the write-then-wait packet it is stalled on is done
        self.resume: dict[int, int] = {}  # IB depth -> dword position of the PM4 packet a stall left there

    def share(self, grid: tuple[int, int, int]) -> np.ndarray | None:
        """The dispatch-order numbers of the workgroups of grid this XCC runs; None for all of them."""
        if self.xccs == 1 or not self.chunk:
            return None
        chunks = np.arange(int(np.prod(grid))) // self.chunk
        return np.flatnonzero(chunks % self.xccs == self.logical)


class RingQueue:
    """A queue of packets in a ring in GPU memory, with its read/write pointers (see the module doc) in `unit`
    bytes per count, executed by each of its contexts (`contexts`: the XCCs it is mapped on; `ctx` is the one
    executing). Subclasses execute one packet at a time (`_packet`); a stall (a wait whose condition is false, an
    AQL slot not yet valid) leaves the packet in place for a later step. A QueueError stops the queue: `error`
    holds it and later steps do nothing."""

    unit = 4  # bytes per pointer count
    kind = "queue"  # the default name

    def __init__(self, gpu: GPU, ring: int, size: int, rptr_address: int, wptr_address: int, name: str | None = None,
                 contexts: list[XCCContext] | None = None):
        self.gpu, self.ring, self.size, self.name = gpu, ring, size, name or self.kind
        self.rptr_address, self.wptr_address = rptr_address, wptr_address
        self.error: Error | None = None
        self._packet_name, self._where, self._offset = "?", "ring", 0
        self.contexts = contexts or [XCCContext()]
        self.ctx = self.contexts[0]
        self._cells: tuple | None = None  # see _pointers
        # whether the queue's pipe sends end-of-pipe interrupts (its CP_ME<m>_PIPE<p>_INT_CNTL.TIME_STAMP_INT_ENABLE:
        # amdgpu sets it for the pipes it hands amdkfd, kgd_gfx_v9_init_interrupts; a board's driver may not)
        self.eop_enabled: Callable[[], bool] = lambda: True

    def end_of_pipe_interrupt(self, context_id: int) -> None:
        """RELEASE_MEM's INT_SEL, an AQL signal's event: an EOP interrupt, where the pipe's enable lets it out."""
        if self.eop_enabled():
            self.gpu.interrupt(CP_EOP_INTERRUPT, context_id)

    def run_dispatch(self, regs: dict[str, int], grid: tuple[int, int, int]) -> bool:
        """Start the executing XCC's share of a dispatch (or go on with it) for a time slice; whether it has
        finished. Until it has, its packet stalls, and the queue makes no progress a caller waits on."""
        ctx = self.ctx
        if ctx.running is None:
            ctx.running = self.gpu.dispatch(regs, grid, ctx.share(grid))
        try:
            next(ctx.running)
        except StopIteration:
            ctx.running = None
            return True
        except BaseException:
            ctx.running = None
            raise
        return False

    def write_then_wait(self, address: int, value: int, done: Callable[[], bool]) -> bool:
        """A packet that writes a register, then waits (WAIT_REG_MEM's WR_WAIT_WR_REG, SDMA's HDP-flush POLL_REGMEM):
        the write happens once, when the packet first runs, not again while it stalls; whether done() holds. The
        write is work (it advances the clock): another queue may be waiting for it."""
        ctx = self.ctx
        if not ctx.wrote:
            self.gpu.write_reg(address, value)
            self.gpu.packet_done()
            ctx.wrote = True
        ctx.wrote = not done()
        return not ctx.wrote

    def _pointers(self) -> tuple[np.ndarray, np.ndarray]:
        """The read and write pointers' words in GPU memory, found again only when the mappings change (an idle
        queue's step is a look at its write pointer)."""
        mem = self.gpu.mem
        if self._cells is None or self._cells[0] is not mem.derived:
            self._cells = (mem.derived, mem.word(self.rptr_address, 8), mem.word(self.wptr_address, 8))
        return self._cells[1], self._cells[2]

    @property
    def rptr(self) -> int:
        return int(self._pointers()[0][0])

    @property
    def wptr(self) -> int:
        return int(self._pointers()[1][0])

    @property
    def taken(self) -> int:
        """The read pointer the queue reports: the packets every XCC has taken."""
        contexts = self.contexts
        return contexts[0].pos if len(contexts) == 1 else min(ctx.pos for ctx in contexts)

    @property
    def busy(self) -> bool:
        """Work left: the queue is stalled (or not yet stepped) short of its write pointer."""
        started = self.contexts[0].pos is not None
        return self.error is None and (self.taken if started else self.rptr) < self.wptr

    def step(self) -> bool:
        """Execute packets up to the write pointer on each XCC in turn, from where it is (the read pointer at first),
        writing the read pointer back as they are taken; whether anything was executed."""
        if self.error is not None:
            return False
        gpu, contexts = self.gpu, self.contexts
        ticks = gpu.ticks
        before = gpu.xcc
        try:
            if contexts[0].pos is None:
                for ctx in contexts:
                    ctx.pos = self.rptr
            wptr = self.wptr  # (pointers the queue's memory does not map: a fault of the queue, as any access)
            taken = self.taken
            if taken >= wptr:  # idle: every XCC is at the write pointer (a stalled packet holds its XCC short of it)
                return False
            try:
                for ctx in contexts:
                    self.ctx, gpu.xcc = ctx, ctx.xcc
                    while ctx.pos < wptr and (nxt := self._packet(ctx.pos, wptr)) is not None:
                        ctx.pos = nxt
            finally:
                gpu.xcc = before
                if self.taken != taken:
                    self._pointers()[0][0] = self.taken
        except MemoryFault as e:
            gpu.fault(e.address, e.access)
            self.error = self.fail(f"GPU memory fault: {e}")
        except Error as e:
            self.error = e
            if not (isinstance(e, GPUFault) and e.access in ("read", "write")):  # a dispatch's VM fault went out
                for handler in gpu.hang_handlers:  # an illegal instruction, a trap, a bad packet: the queue hangs
                    handler(e)
        if self.error is not None:
            raise self.error
        return gpu.ticks != ticks

    def at(self, packet: str, where: str, offset: int) -> None:
        """Name the packet being executed, for errors."""
        self._packet_name, self._where, self._offset = packet, where, offset

    def fail(self, why: str) -> QueueError:
        return QueueError(self.name, self._packet_name, self._where, self._offset, why)

    def read_ring(self, count: int, n: int) -> bytes:
        """n bytes of the ring from pointer value count, wrapping at the ring's end."""
        start = count * self.unit % self.size
        first = min(n, self.size - start)
        data = self.gpu.mem.read_bytes(self.ring + start, first)
        return data + self.gpu.mem.read_bytes(self.ring, n - first) if n > first else data

    def _packet(self, rptr: int, wptr: int) -> int | None:
        """Execute the packet at rptr; the pointer past it, or None to stall there."""
        raise NotImplementedError
