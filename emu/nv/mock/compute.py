"""The compute classes: a QMD launch on the PTX emulator, the inline-to-memory writes (I2M) and the QMD's releases.

Classes and their QMD (NVIDIA's open-gpu-doc layouts): AMPERE_COMPUTE_A c6c0 (NVC6C0_QMDV03_00), AMPERE_COMPUTE_B
c7c0 (NVC7C0_QMDV03_00), ADA_COMPUTE_A c9c0 (NVC9C0_QMDV03_00), HOPPER_COMPUTE_A cbc0 (NVCBC0_QMDV04_00),
BLACKWELL_COMPUTE_A/B cdc0/cec0 (NVCDC0_QMDV05_00, NVCEC0_QMDV05_00). Each class has its own header's methods; the
ones a launch uses (SEND_PCAS_A 0x2b4, SEND_SIGNALING_PCAS2_B 0x2c0, SET_SHADER_*, the I2M methods) sit at c6c0's
offsets in every one.

A launch: SEND_PCAS_A latches the QMD's address (>> 8), SEND_SIGNALING_PCAS2_B with a scheduling action runs it. The
QMD gives the program address, grid, block, shared memory size and constant bank 0; the program address lies in a
mapping that starts with a cubin image (the runtime loads a cubin whole at the start of its buffer), and the kernel
is the one whose .text section starts there. Its PTX (.usergpu.ptx) runs on the emulator over the VA space, with the
parameters read from constant bank 0 where the cubin's PARAM_CBANK attribute puts them (nv_classes.CBANK0 for the
arch without one) and as dynamic shared memory what the QMD gives beyond the kernel's static shared memory. Then the
QMD's enabled releases are written and a dependent QMD it schedules is launched in turn.

A launch runs LAUNCH_SLICE seconds per step of its channel: the launching method stalls (as an unmet acquire does)
until the launch and the QMDs it schedules have finished, so a kernel that never ends keeps its channel busy, as on
hardware, instead of holding whoever rang the doorbell; the GPU's worker (gpu.py) goes on with it meanwhile.

The release structure-size, reduction and dependent-action values are read by V03's names: V04's and V05's headers
give them the same values (tests/emu/nv/mock/test_mock_compute.py checks).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace

from usergpu.autogen import nv_classes as nc
from usergpu.autogen import nv_rm_535 as rm
from usergpu.emu.nv.mock import pc_sampler, ptx_text
from usergpu.emu.nv.mock.engine import Engine, MethodError, named
from usergpu.emu.nv.mock.host import reductions, release
from usergpu.emu.nv.mock.vaspace import VASpace
from usergpu.emu.nv.ptx.launch import check_launch, compiled, find_kernel, map_globals, module_of, slices
from usergpu.emu.nv.ptx.state import WARP
from usergpu.errors import CodeObjectError, Error, FieldError, GPUFault, GPUHang
from usergpu.isa import elf
from usergpu.isa.nv import cubin as cubin_format

_B = nc.BLACKWELL_CLASSES
CHAINS = {nc.AMPERE_COMPUTE_A: ("NVC6C0",), nc.AMPERE_COMPUTE_B: ("NVC7C0",), nc.ADA_COMPUTE_A: ("NVC9C0",),
          nc.HOPPER_COMPUTE_A: ("NVCBC0",), _B["BLACKWELL_COMPUTE_A"]: ("NVCDC0",),
          _B["BLACKWELL_COMPUTE_B"]: ("NVCEC0",)}

_V3 = "NVC6C0_QMDV03_00_RELEASE0_"
SIZES = named(f"{_V3}STRUCTURE_SIZE_SEMAPHORE_", ("ONE_WORD", "TWO_WORDS", "FOUR_WORDS"))
REDUCTION = reductions(f"{_V3}REDUCTION_OP_", "RED_")
SIGNED = nc.NVC6C0_QMDV03_00_RELEASE0_REDUCTION_FORMAT_SIGNED_32
SCHEDULE = nc.NVC6C0_QMDV03_00_DEPENDENT_QMD0_ACTION_QMD_SCHEDULE
_ACTION = "NVC6C0_SEND_SIGNALING_PCAS2_B_PCAS_ACTION_"
LAUNCHING = named(_ACTION, ("SCHEDULE", "INVALIDATE_COPY_SCHEDULE", "PREFETCH_SCHEDULE",
                            "INVALIDATE_PREFETCH_COPY_SCHEDULE", "INVALIDATE_PREFETCH_COPY_FORCE_REQUIRE_SCHEDULING"))
QUIET = named(_ACTION, ("NOP", "INVALIDATE", "PREFETCH"))
LAUNCH_SLICE = 0.25  # seconds a launch runs per step of its channel before the caller gets control back


@dataclass(frozen=True)
class QMDFormat:
    """Where a QMD version keeps what a launch reads. A release's or dependent QMD's field is named with {i} for
    the semaphore's (QMD's) number where each has its own, or is an indexed field."""

    name: str  # the nv_classes.QMD key
    program: tuple[str, str, int]  # address lower and upper fields, and the shift that makes them bytes
    grid: tuple[str, str, str]
    shared: tuple[str, int]  # shared memory size field and its shift
    cbank: tuple[str, str, int]  # constant buffer address lower and upper (indexed by bank) and their shift
    releases: dict[str, str]
    dependent: tuple[str, str, str]  # the dependent QMD's enable, action and pointer (>> 8)

    @property
    def layout(self):
        return nc.QMD[self.name]

    @property
    def major(self) -> int:
        return int(self.name.split("QMDV")[1][:2])


_RELEASES_V03 = {
    "enable": "RELEASE{i}_ENABLE", "lower": "RELEASE{i}_ADDRESS_LOWER", "upper": "RELEASE{i}_ADDRESS_UPPER",
    "payload_lower": "RELEASE{i}_PAYLOAD_LOWER", "payload_upper": "RELEASE{i}_PAYLOAD_UPPER",
    "size": "RELEASE{i}_STRUCTURE_SIZE", "payload64": "RELEASE{i}_PAYLOAD64B",
    "reduce": "RELEASE{i}_REDUCTION_ENABLE", "op": "RELEASE{i}_REDUCTION_OP", "format": "RELEASE{i}_REDUCTION_FORMAT"}
_RELEASES_V04 = {  # V04's and V05's
    "enable": "RELEASE_ENABLE", "lower": "RELEASE_SEMAPHORE{i}_ADDR_LOWER", "upper": "RELEASE_SEMAPHORE{i}_ADDR_UPPER",
    "payload_lower": "RELEASE_SEMAPHORE{i}_PAYLOAD_LOWER", "payload_upper": "RELEASE_SEMAPHORE{i}_PAYLOAD_UPPER",
    "size": "RELEASE_STRUCTURE_SIZE", "payload64": "RELEASE_PAYLOAD64B", "reduce": "RELEASE_REDUCTION_ENABLE",
    "op": "RELEASE_REDUCTION_OP", "format": "RELEASE_REDUCTION_FORMAT"}
_GRID = ("GRID_WIDTH", "GRID_HEIGHT", "GRID_DEPTH")
_DEPENDENT = ("DEPENDENT_QMD0_ENABLE", "DEPENDENT_QMD0_ACTION", "DEPENDENT_QMD0_POINTER")
V03 = QMDFormat("NVC7C0_QMDV03_00", ("PROGRAM_ADDRESS_LOWER", "PROGRAM_ADDRESS_UPPER", 0),
                ("CTA_RASTER_WIDTH", "CTA_RASTER_HEIGHT", "CTA_RASTER_DEPTH"), ("SHARED_MEMORY_SIZE", 0),
                ("CONSTANT_BUFFER_ADDR_LOWER", "CONSTANT_BUFFER_ADDR_UPPER", 0), _RELEASES_V03, _DEPENDENT)
_CBANK_SHIFTED6 = ("CONSTANT_BUFFER_ADDR_LOWER_SHIFTED6", "CONSTANT_BUFFER_ADDR_UPPER_SHIFTED6", 6)
V04 = QMDFormat("NVCBC0_QMDV04_00", ("PROGRAM_ADDRESS_LOWER", "PROGRAM_ADDRESS_UPPER", 0), _GRID,
                ("SHARED_MEMORY_SIZE", 0), _CBANK_SHIFTED6, _RELEASES_V04,
                ("DEPENDENT_QMD_ENABLE", "DEPENDENT_QMD_ACTION", "DEPENDENT_QMD{i}_POINTER"))
V05 = QMDFormat("NVCDC0_QMDV05_00", ("PROGRAM_ADDRESS_LOWER_SHIFTED4", "PROGRAM_ADDRESS_UPPER_SHIFTED4", 4), _GRID,
                ("SHARED_MEMORY_SIZE_SHIFTED7", 7), _CBANK_SHIFTED6, _RELEASES_V04, _DEPENDENT)
QMDS = {nc.AMPERE_COMPUTE_A: replace(V03, name="NVC6C0_QMDV03_00"), nc.AMPERE_COMPUTE_B: V03,
        nc.ADA_COMPUTE_A: replace(V03, name="NVC9C0_QMDV03_00"), nc.HOPPER_COMPUTE_A: V04,
        _B["BLACKWELL_COMPUTE_A"]: V05, _B["BLACKWELL_COMPUTE_B"]: replace(V05, name="NVCEC0_QMDV05_00")}


class QMD:
    """A QMD's bytes read through its format: a field by name ({i} filled in), element i of an indexed one."""

    def __init__(self, fmt: QMDFormat, data: bytes, va: int):
        self.fmt, self.data, self.va = fmt, data, va
        self.layout = fmt.layout
        if len(data) != self.layout.size:
            raise FieldError(f"{len(data)} bytes, the QMD has {self.layout.size}")
        self.bits = int.from_bytes(data, "little")  # once: a launch reads dozens of fields

    def get(self, name: str, i: int | None = None) -> int:
        f = self.layout.fields.get(name)
        return self.layout.value(self.bits, name, i) if f and f.stride else self.layout.value(
            self.bits, _numbered(name, i))

    def address(self, lower: str, upper: str, shift: int, i: int | None = None) -> int:
        return (self.get(lower, i) | self.get(upper, i) << 32) << shift

    def has(self, name: str, i: int | None = None) -> bool:
        return _numbered(name, i) in self.layout.fields


@functools.lru_cache(maxsize=1024)
def _numbered(name: str, i: int | None) -> str:
    """A field name with {i} filled in (a QMD's releases and dependents are numbered)."""
    return name.format(i=i)


@dataclass
class Image:
    """A cubin image the compute engine found at a mapping's start: parsed once, its .global and .const variables
    mapped once (on its first launch) for as long as the image stays mapped there."""

    cubin: cubin_format.Cubin
    kernels: dict[int, str]  # offset of a kernel's .text section in the image -> its name
    module: object = None  # the PTX module (parsed on the first launch)
    globals: dict[str, int] | None = None  # the variables' addresses

    def unload(self, memory) -> None:
        """The image's mapping is gone: so are its variables."""
        for address in (self.globals or {}).values():
            memory.unmap(address)


def image_size(data: memoryview) -> int:
    """The bytes an ELF image spans from its start: its headers' tables and its sections' data."""
    hdr = cubin_format.read_header(data)
    return max(hdr.shoff + 64 * hdr.shnum, hdr.phoff + 56 * hdr.phnum, elf.sections_end(data, hdr))


def image_at(vas: VASpace, va: int) -> tuple[int, Image]:
    """The cubin image at the start of the mapping that holds va: its base and its parsed form (kept by base and
    bytes: a cubin loaded twice has two sets of variables, one rewritten in place is parsed again)."""
    base, buf = vas.memory.mapping(va, "execute")
    last = vas.last_image.get(base)
    if last is not None and buf[:len(last[0])].tobytes() == last[0]:  # the image launched last, unchanged: its
        return base, last[1]                                          # headers lie in the bytes compared
    data = memoryview(buf)
    if bytes(data[:4]) != b"\x7fELF":
        raise CodeObjectError(f"program address {va:#x} lies in the mapping at {base:#x}, which does not start with a "
                              f"cubin (ELF) image: it starts {bytes(data[:8]).hex(' ')}")
    image = bytes(data[:image_size(data)])
    found = vas.images.get((base, image))
    if found is None:
        parsed = cubin_format.parse(image)
        found = vas.images[base, image] = Image(parsed, {k.text.offset: k.name for k in parsed.kernels.values()})
    vas.last_image[base] = (image, found)
    return base, found


class Compute(Engine):
    chains = CHAINS
    code = rm.ROBUST_CHANNEL_GR_EXCEPTION
    unmodelled = ("SET_REPORT_SEMAPHORE_D", "REPORT_SEMAPHORE_EXECUTE", "LOAD_INLINE_QMD_DATA", "CALL_MME_",
                  "LOAD_MME_", "MME_DMA_", "NOTIFY", "SET_RENDER_ENABLE_C", "PERFMON_TRANSFER")

    def __init__(self, channel, class_id: int):
        super().__init__(channel, class_id)
        self.qmd = QMDS[class_id]
        self._inline: list[int] | None = None  # [destination, bytes written] of the I2M transfer under way
        self.running: Iterator[None] | None = None  # the launch under way: a step of it runs a slice
        self._sliced = -1  # the scheduler's run in which the launch under way last ran a slice

    # ---- launch ---------------------------------------------------------------------------------------------
    def _send_signaling_pcas2_b(self, value: int) -> bool:
        action = self.field("SEND_SIGNALING_PCAS2_B", "PCAS_ACTION")
        if action in LAUNCHING:
            return self.launch(self.field("SEND_PCAS_A", "QMD_ADDRESS_SHIFTED8") << 8)
        if action not in QUIET:
            raise self.fail(f"PCAS action {action} is not modelled by the mock GPU (it launches on "
                            f"{', '.join(LAUNCHING.values())})")
        return True

    def _send_signaling_pcas_b(self, value: int) -> bool:
        if self.field("SEND_SIGNALING_PCAS_B", "SCHEDULE"):
            return self.launch(self.field("SEND_PCAS_A", "QMD_ADDRESS_SHIFTED8") << 8)
        return True

    def launch(self, va: int) -> bool:
        """Start the launch of the QMD at va (or go on with the one under way: the stalled method runs again) for a
        slice (one per run of the scheduler: a doorbell returns after it); whether it has finished. Until it has,
        the GPU's worker is told to go on with it."""
        runs = self.gpu.scheduler.runs
        if self.running is None:
            self.running = self._launches(va)
        elif self._sliced == runs:
            return False
        try:
            next(self.running)
        except StopIteration:
            self.running = None
            return True
        except BaseException:
            self.running = None
            raise
        self._sliced = runs
        self.gpu.launch_stalled()
        return False

    def _launches(self, va: int | None) -> Iterator[None]:
        """The QMD at va, then the QMDs it schedules in turn, a slice at a time."""
        while va is not None:
            qmd = QMD(self.qmd, self.vas.read(va, self.qmd.layout.size).tobytes(), va)
            try:
                yield from self._run(qmd)
            except (GPUFault, GPUHang, MethodError):
                raise
            except Error as e:
                raise self.fail(f"launch of the QMD at {va:#x}: {e}") from e
            self._releases(qmd)
            va = self._dependent(qmd)

    def _run(self, q: QMD) -> Iterator[None]:
        """The launch, a slice per step; the GPU clock moves over it by its warp-instructions at the chip's rate,
        whatever the mock took (its time between steps, the other channels', is not the launch's)."""
        fmt, gpu, start = q.fmt, self.gpu, time.perf_counter()
        if q.get("QMD_MAJOR_VERSION") != fmt.major:
            raise self.fail(f"the QMD at {q.va:#x} has QMD_MAJOR_VERSION {q.get('QMD_MAJOR_VERSION')}; class "
                            f"{self.class_id:#06x} runs version {fmt.major} ({fmt.name})")
        program = q.address(*fmt.program)
        text = ptx_text.text_at(self.vas.memory, program)
        if text is not None:  # PTX text, as tinygrad loads a program for a mock
            base, source = text
            found = ptx_text.image(self.vas, base, program, source)
            c, name, globals_ = found.compiled, found.kernel, found.globals
            params = ptx_text.params(self.vas, self._cbank0(q, name), c.prog, gpu.arch)
            static_shared = c.prog.shared_size
        else:
            c, name, globals_, params, static_shared = self._cubin(q, program)
        dynamic = max(0, (q.get(fmt.shared[0]) << fmt.shared[1]) - static_shared)
        grid = tuple(q.get(n) for n in fmt.grid)
        block = tuple(q.get(f"CTA_THREAD_DIMENSION{k}") for k in range(3))
        grid, block = check_launch(c.prog, grid, block, dynamic, gpu.arch)
        stats, taken = {}, 0.0
        try:
            for _ in slices(c, self.vas.memory, grid, block, params, dynamic, gpu.arch, gpu.budget, globals_, stats,
                            slice_s=LAUNCH_SLICE):
                taken += time.perf_counter() - start
                yield
                start = time.perf_counter()
        except GPUFault as e:
            raise e.named(name) from None
        except GPUHang as e:
            raise GPUHang(e.why, name, f"the mock GPU runs {gpu.budget} instruction steps a batch of blocks at most: "
                          "raise MOCKGPU_NV_BUDGET") from None
        gpu.account(taken + time.perf_counter() - start, -(-stats.get("lane_instructions", 0) // WARP)
                    / gpu.chip.warp_rate)
        self._sampled(program, stats.get("issued"), grid, block)

    def _sampled(self, program: int, issued, grid: tuple, block: tuple) -> None:
        """The PC samplers bound to this channel's context stream the launch's samples (pc_sampler.py)."""
        streams = [s for p in self.gpu.profilers if (s := p.sampling(self.channel.token)) is not None]
        if streams and issued is not None:
            data = pc_sampler.packets(self.gpu.chip, program, issued, grid[0] * grid[1] * grid[2],
                                      -(-block[0] * block[1] * block[2] // WARP))
            for stream in streams:
                stream.write(data)

    def _cubin(self, q: QMD, program: int) -> tuple:
        """The compiled kernel of the cubin whose code starts at program, its name, its variables, its parameters
        and its static shared memory."""
        base, image = image_at(self.vas, program)
        name = image.kernels.get(program - base)
        if name is None:
            raise CodeObjectError(f"program address {program:#x} is offset {program - base:#x} of the cubin at "
                                  f"{base:#x}, where no kernel's code starts (kernels at "
                                  f"{', '.join(f'{o:#x} {n}' for o, n in image.kernels.items())})")
        if image.module is None:
            image.module = module_of(image.cubin.data)
        c = compiled(image.module, find_kernel(image.module, name))
        if image.globals is None:
            image.globals = map_globals(c.prog, self.vas.memory)
        kernel = image.cubin.kernels[name]
        return c, name, image.globals, self._params(q, kernel, c.prog.kernel.param_size), kernel.shared_size

    def _cbank0(self, q: QMD, kernel: str) -> int:
        """Constant bank 0's address, which must be valid."""
        if not q.get("CONSTANT_BUFFER_VALID", 0):
            raise self.fail(f"the QMD at {q.va:#x} has no valid constant buffer 0, where kernel {kernel}'s "
                            "parameters are")
        return q.address(*q.fmt.cbank, 0)

    def _params(self, q: QMD, kernel, size: int) -> bytes:
        """The kernel's parameter bytes from constant bank 0."""
        if not size:
            return b""
        cb0 = self._cbank0(q, kernel.name)
        cb0_size = q.get("CONSTANT_BUFFER_SIZE_SHIFTED4", 0) << 4
        at = kernel.param_cbank.offset if kernel.param_cbank else nc.CBANK0[self.gpu.arch]["params"]
        if at + size > cb0_size:
            raise self.fail(f"kernel {kernel.name}'s parameters are {size} bytes at offset {at:#x} of constant bank "
                            f"0, which the QMD at {q.va:#x} makes {cb0_size} bytes")
        return self.vas.read(cb0 + at, size).tobytes()

    def _releases(self, q: QMD) -> None:
        r = q.fmt.releases
        i = 0
        while q.has(r["lower"], i):
            if q.get(r["enable"], i):
                size = SIZES.get(q.get(r["size"], i))
                if size is None:
                    raise self.fail(f"the QMD at {q.va:#x}: release {i} has structure size {q.get(r['size'], i)}")
                wide = size == "TWO_WORDS" or q.get(r["payload64"], i)
                payload = q.get(r["payload_lower"], i) | (q.get(r["payload_upper"], i) << 32 if wide else 0)
                reduce = REDUCTION.get(q.get(r["op"], i)) if q.get(r["reduce"], i) else None
                release(self.gpu, self.vas, q.address(r["lower"], r["upper"], 0, i), payload, 8 if wide else 4,
                        size == "FOUR_WORDS", reduce, q.get(r["format"], i) == SIGNED)
            i += 1

    def _dependent(self, q: QMD) -> int | None:
        """The QMD this one schedules when it completes (dependent QMD 0), if any."""
        enable, action, pointer = q.fmt.dependent
        if not q.get(enable, 0):
            return None
        if q.get(action, 0) != SCHEDULE:
            raise self.fail(f"the QMD at {q.va:#x}: dependent QMD action {q.get(action, 0)} is not modelled by the "
                            f"mock GPU (QMD_SCHEDULE is {SCHEDULE})")
        nxt = q.get(pointer, 0) << 8
        if nxt == q.va:
            raise GPUHang(f"the QMD at {q.va:#x} schedules itself when it completes")
        return nxt

    # ---- inline to memory -----------------------------------------------------------------------------------
    def _launch_dma(self, value: int) -> None:
        f = self.fields("LAUNCH_DMA", value)
        if f["DST_MEMORY_LAYOUT"] != nc.NVC6C0_LAUNCH_DMA_DST_MEMORY_LAYOUT_PITCH:
            raise self.fail("an inline write to a block-linear destination is not modelled by the mock GPU")
        if f["COMPLETION_TYPE"] == nc.NVC6C0_LAUNCH_DMA_COMPLETION_TYPE_RELEASE_SEMAPHORE:
            raise self.fail("an inline write's semaphore release is not modelled by the mock GPU")
        self._inline = [self.field("OFFSET_OUT_UPPER", "VALUE") << 32 | self.field("OFFSET_OUT", "VALUE"), 0]

    def _load_inline_data(self, value: int) -> None:
        """Four more bytes of the transfer: LINE_COUNT lines of LINE_LENGTH_IN bytes, PITCH_OUT apart."""
        if self._inline is None:
            raise self.fail("LOAD_INLINE_DATA with no LAUNCH_DMA before it")
        dst, pos = self._inline
        length = self.field("LINE_LENGTH_IN", "VALUE")
        data = value.to_bytes(4, "little")[:max(0, length * self.field("LINE_COUNT", "VALUE") - pos)]
        self._inline[1] += len(data)
        while data:
            line, col = divmod(pos, length)
            take = min(len(data), length - col)
            self.vas.write(dst + line * self.field("PITCH_OUT", "VALUE") + col, data[:take])
            pos, data = pos + take, data[take:]

    actions = {"SEND_SIGNALING_PCAS2_B": _send_signaling_pcas2_b, "SEND_SIGNALING_PCAS_B": _send_signaling_pcas_b,
               "LAUNCH_DMA": _launch_dma, "LOAD_INLINE_DATA": _load_inline_data}
