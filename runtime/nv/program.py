"""NVIDIA programs: a cubin (or PTX text, assembled for the GPU's arch as the driver's JIT does) loaded into GPU memory
whole (its sections where the file has them, space for its NOBITS sections after, relocations applied), its kernels
callable with buffers and scalars. A call packs the parameters where the cubin's KPARAM_INFO puts them (typed by the
PTX and the C parameters it names where the cubin carries it: isa/nv/params.py) into constant bank 0 at the offset
the cubin gives (EIATTR_PARAM_CBANK), with the block and grid sizes where the arch's SASS reads them, builds the QMD
and launches it on the compute channel between two timestamps; the core Kernel (runtime/program.py) ends it."""

from __future__ import annotations

import re
import struct

from usergpu.errors import CodeObjectError, LaunchError
from usergpu.isa.nv import cubin, param_types, params, ptx
from usergpu.isa.nv.compile import DRIVER_FUNCTIONS, assemble_for, is_ptx
from usergpu.isa.nv.cubin import sm_number
from usergpu.isa.nv.launch_check import check_launch, find_kernel
from usergpu.runtime import program
from usergpu.runtime.buffer import Buffer
from usergpu.runtime.nv import qmd
from usergpu.runtime.nv.gpfifo import Pushbuffer

SHT_NOBITS = 8
RELOCATIONS = {"R_CUDA_64": (0, "<Q", 0), "R_CUDA_ABS32_LO_32": (4, "<I", 0), "R_CUDA_ABS32_HI_32": (4, "<I", 32)}
CBANK_ALIGN = 256
NOBITS_ALIGN = 256  # more than any section of a cubin asks
BANK_SECTION = re.compile(r"\.nv\.constant(\d+)(?:\.(.+))?$")  # a module's bank, or .<kernel>'s own
WINDOWS_AT = 0x18  # constant bank 0's driver words: the shared and local windows (SASS converts generic addresses)


def load_image(co: cubin.Cubin) -> tuple[bytearray, dict[str, int]]:
    """The cubin's bytes with room for its NOBITS sections appended, and each section's offset in them."""
    image = bytearray(co.data)
    where = {}
    for s in co.sections:
        if s.type == SHT_NOBITS and s.size:
            at = -(-len(image) // NOBITS_ALIGN) * NOBITS_ALIGN
            image.extend(bytes(at + s.size - len(image)))
            where[s.name] = at
        else:
            where[s.name] = s.offset
    return image, where


def relocate(co: cubin.Cubin, image: bytearray, where: dict[str, int], base: int, from_ptx: bool = False) -> None:
    """Apply the relocations the driver applies at load: absolute addresses of symbols in the loaded image. A call
    of a function CUDA's driver links from its own library (vprintf) is left 0 where the GPU runs the cubin's PTX
    (the mock GPU's emulator runs those functions itself); elsewhere usergpu has no code for it."""
    symbols = {s.name: s for s in co.symbols}
    for r in co.relocations:
        if r.name not in RELOCATIONS:
            raise CodeObjectError(f"relocation {r.name} ({r.type}) at {r.target}+{r.offset:#x}: usergpu applies "
                                  f"{', '.join(RELOCATIONS)}")
        sym = symbols.get(r.symbol)
        section = sym.section if sym is not None and sym.section else r.symbol
        if r.symbol in DRIVER_FUNCTIONS and section not in where:
            if not from_ptx:
                raise CodeObjectError(f"the cubin calls {r.symbol}, which CUDA's driver links from its own library: "
                                      "usergpu has no device code for it (the mock GPUs run it)")
            continue
        if section not in where:
            raise CodeObjectError(f"relocation {r.name} at {r.target}+{r.offset:#x} names {r.symbol!r}, which is "
                                  "in no section of the cubin")
        value = base + where[section] + (sym.value if sym is not None and sym.name != section else 0) + \
            (r.addend or 0)
        skip, fmt, shift = RELOCATIONS[r.name]
        struct.pack_into(fmt, image, where[r.target] + r.offset + skip, (value >> shift) & 0xFFFFFFFF
                         if fmt == "<I" else value & (1 << 64) - 1)


class NVProgram(program.Program):
    def __init__(self, dev, code_object: bytes | str):
        self.dev = dev
        self.co = cubin.parse(_cubin_of(code_object, dev))
        if sm_number(self.co.arch) != sm_number(dev.arch):
            raise CodeObjectError(f"the cubin is built for {self.co.arch}; {dev!r} runs {dev.arch} (assemble it for "
                                  f"{dev.arch})")
        module = ptx.parse(self.co.ptx) if self.co.ptx is not None else None
        c_params = param_types.read(self.co.ptx)
        layouts = {name: params.of_cubin(k, module, c_params.get(name)) for name, k in self.co.kernels.items()}
        image, where = load_image(self.co)
        self.buf = Buffer(dev, len(image), "vram")
        from_ptx = getattr(dev.hal, "kernels_from_ptx", False)
        try:
            relocate(self.co, image, where, self.buf.va, from_ptx)
        except CodeObjectError:
            self.buf.free()
            raise
        self.buf.copyin(bytes(image))
        if module is None and from_ptx:
            self.buf.free()
            raise cubin.no_ptx(f"the mock NVIDIA GPU ({dev!r}), on usergpu's PTX emulator,")
        self.kernels = {name: NVKernel(self, k, where, layouts[name]) for name, k in self.co.kernels.items()}
        dev.ensure_local_memory(max([k.min_stack_size or 0 for k in self.co.kernels.values()] +
                                    [k.frame_size or 0 for k in self.co.kernels.values()]))

    def kernel(self, name: str) -> NVKernel:
        """The kernel of that name (or the C++ name of a mangled one); LaunchError naming the kernels."""
        return self.kernels[find_kernel(self.kernels, name, "the cubin")]


class NVKernel(program.Kernel):
    default_block = (32, 1, 1)

    def __init__(self, prog: NVProgram, k: cubin.Kernel, where: dict[str, int], layout: params.Layout):
        super().__init__(prog, k.name)
        self.k, self.layout = k, layout
        self.address = prog.buf.va + where[k.text.name]
        self.params_at = params.cbank_offset(k, self.dev.arch)
        # the shared memory the hardware keeps for itself: ptxas counts it in .nv.shared from sm_90, not before
        counted = qmd.SHARED_RESERVED if sm_number(self.dev.arch) >= 90 else 0
        self.static_shared = max(0, k.shared_size - counted)  # the kernel's own
        self.qmd_shared = k.shared_size + qmd.SHARED_RESERVED - counted  # a QMD's, the dynamic aside
        self.banks = {}  # the cubin's constant banks but 0 (which each launch makes): index -> (address, size)
        for s in prog.co.sections:
            m = BANK_SECTION.match(s.name)
            if m and int(m.group(1)) and m.group(2) in (None, k.name):
                self.banks[int(m.group(1))] = (prog.buf.va + where[s.name], s.size)
        cbank0 = params.cbank0(self.dev.arch)
        self.ntid_at, self.nctaid_at = cbank0["ntid"], cbank0["nctaid"]

    def check(self, args: list) -> None:
        """The arguments against the kernel's parameters, before anything runs (LaunchError)."""
        params.pack(self.layout, _addresses(args), lambda a: 0)

    def prepare(self, args: list, grid, block, shared: int) -> tuple[tuple, tuple, int]:
        """Constant bank 0 (the parameters, the block and grid sizes, the shader windows) and the QMD in the arena;
        the QMD's address is the work. shared: dynamic shared memory bytes."""
        dev, k = self.dev, self.k
        grid, block = check_launch(self.name, grid, block, shared, dev.arch, self.static_shared, k.reqntid,
                                   k.max_threads)
        packed = params.pack(self.layout, _addresses(args), _no_arrays)
        bank = bytearray(max(len(k.constant0), self.params_at + len(packed)))
        bank[:len(k.constant0)] = k.constant0
        struct.pack_into("<3I", bank, self.ntid_at, *block)
        struct.pack_into("<3I", bank, self.nctaid_at, *grid)
        if sm_number(dev.arch) < 100:
            struct.pack_into("<QQ", bank, WINDOWS_AT, *dev.windows)
        bank[self.params_at:self.params_at + len(packed)] = packed
        size = -(-len(bank) // CBANK_ALIGN) * CBANK_ALIGN
        shared_bytes = -(-(self.qmd_shared + shared) // 128) * 128
        at = dev.arena(size + 512)
        cbank_va = -(-at // CBANK_ALIGN) * CBANK_ALIGN
        qmd_va = cbank_va + size
        desc = qmd.build(dev.arch, self.address, grid, block, shared_bytes, k.regcount or 32,
                         {0: (cbank_va, size), **self.banks}, dev.local_per_thread)
        dev.arena_view(cbank_va, len(bank))[:] = bank
        dev.arena_view(qmd_va, len(desc))[:] = desc
        return grid, block, qmd_va

    def submit(self, work: int, value: int) -> tuple[str, int]:
        """The QMD launched on the compute channel between two timestamps, the timeline signalled after."""
        times = self.dev.arena(32)
        pb = Pushbuffer().timestamp(times).memory_barrier().launch(work).timestamp(times + 16)
        self.dev.compute.submit(pb.signal(self.dev.timeline, value))
        return "compute", times


def _cubin_of(code: bytes | str, dev) -> bytes:
    """A cubin as given; PTX text assembled for the device's arch, as the driver JIT-assembles PTX that
    cuModuleLoadData is given."""
    if is_ptx(code):
        return assemble_for(code, dev.arch)
    if isinstance(code, str):
        raise CodeObjectError(f"{dev!r} loads a cubin (bytes) or PTX text; this str is not PTX (PTX begins with "
                              f".version): {code[:40]!r}")
    return bytes(code)


def _addresses(args: list) -> list:
    """A Buffer passed as its address."""
    return [a.va if isinstance(a, Buffer) else a for a in args]


def _no_arrays(a) -> int:
    raise LaunchError("a numpy array cannot be passed to a kernel on a device: pass a Buffer (usergpu.launch "
                      "copies arrays in and out)")
