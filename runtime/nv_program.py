"""NVIDIA programs: a cubin loaded into GPU memory whole (its sections where the file has them, space for its NOBITS
sections after, relocations applied), its kernels callable with buffers and scalars. A call packs the parameters
as the kernel's PTX declares them into constant bank 0 at the offset the cubin gives (EIATTR_PARAM_CBANK), with
the block and grid sizes where the arch's SASS reads them, builds the QMD and launches it on the compute channel
between two timestamps, then signals the device's timeline."""

from __future__ import annotations

import re
import struct

from usergpu.autogen import nv_classes as nvc
from usergpu.emu.amd.codeobj.kernargs import LaunchError
from usergpu.emu.nv.codeobj import cubin
from usergpu.emu.nv.codeobj.cubin import sm_number
from usergpu.emu.nv.ptx.launch import check_launch, compiled, find_kernel, module_of, pack_params
from usergpu.errors import CodeObjectError, GPUFault, GPUHang
from usergpu.runtime import qmd
from usergpu.runtime.gpfifo import Pushbuffer
from usergpu.runtime.memory import Buffer

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


def relocate(co: cubin.Cubin, image: bytearray, where: dict[str, int], base: int) -> None:
    """Apply the relocations the driver applies at load: absolute addresses of symbols in the loaded image."""
    symbols = {s.name: s for s in co.symbols}
    for r in co.relocations:
        if r.name not in RELOCATIONS:
            raise CodeObjectError(f"relocation {r.name} ({r.type}) at {r.target}+{r.offset:#x}: usergpu applies "
                                  f"{', '.join(RELOCATIONS)}")
        sym = symbols.get(r.symbol)
        section = sym.section if sym is not None and sym.section else r.symbol
        if section not in where:
            raise CodeObjectError(f"relocation {r.name} at {r.target}+{r.offset:#x} names {r.symbol!r}, which is "
                                  "in no section of the cubin")
        value = base + where[section] + (sym.value if sym is not None and sym.name != section else 0) + \
            (r.addend or 0)
        skip, fmt, shift = RELOCATIONS[r.name]
        struct.pack_into(fmt, image, where[r.target] + r.offset + skip, (value >> shift) & 0xFFFFFFFF
                         if fmt == "<I" else value & (1 << 64) - 1)


class NVProgram:
    def __init__(self, dev, code_object: bytes):
        self.dev = dev
        self.co = cubin.parse(bytes(code_object))
        if sm_number(self.co.arch) != sm_number(dev.arch):
            raise CodeObjectError(f"the cubin is built for {self.co.arch}; {dev!r} runs {dev.arch} (assemble it for "
                                  f"{dev.arch})")
        self.module = module_of(bytes(code_object))
        image, where = load_image(self.co)
        self.buf = Buffer(dev, len(image), "vram")
        relocate(self.co, image, where, self.buf.va)
        self.buf.copyin(bytes(image))
        self.kernels = {name: NVKernel(self, k, where) for name, k in self.co.kernels.items()}
        dev.ensure_local_memory(max([k.min_stack_size or 0 for k in self.co.kernels.values()] +
                                    [k.frame_size or 0 for k in self.co.kernels.values()]))

    def kernel(self, name: str) -> NVKernel:
        """The kernel of that name (or the C++ name of a mangled one); LaunchError naming the kernels."""
        return self.kernels[find_kernel(self.module, name)]

    def free(self) -> None:
        self.buf.free()


class NVKernel:
    def __init__(self, program: NVProgram, k: cubin.Kernel, where: dict[str, int]):
        self.program, self.k, self.dev = program, k, program.dev
        self.name = k.name
        self.address = program.buf.va + where[k.text.name]
        self.prog = compiled(program.module, k.name).prog
        layout = nvc.CBANK0[self.dev.arch if self.dev.arch in nvc.CBANK0 else "sm_90"]
        self.params_at = k.param_cbank.offset if k.param_cbank else layout["params"]
        self.banks = {}  # the cubin's constant banks but 0 (which each launch makes): index -> (address, size)
        for s in program.co.sections:
            m = BANK_SECTION.match(s.name)
            if m and int(m.group(1)) and m.group(2) in (None, k.name):
                self.banks[int(m.group(1))] = (program.buf.va + where[s.name], s.size)
        self.ntid_at, self.nctaid_at = layout["ntid"], layout["nctaid"]

    def check(self, args: list) -> None:
        """The arguments against the kernel's parameters, before anything runs (LaunchError)."""
        pack_params(self.prog, [a.va if isinstance(a, Buffer) else a for a in args], lambda a: 0)

    def __call__(self, *args, grid=(1, 1, 1), block=(32, 1, 1), shared: int = 0, wait: bool = True) -> float | None:
        """Launch over grid blocks of block threads (shared: dynamic shared memory bytes); with wait, the
        kernel's time in seconds from the GPU's timestamps."""
        dev = self.dev
        grid, block = check_launch(self.prog, grid, block, shared, dev.arch)
        params = pack_params(self.prog, [a.va if isinstance(a, Buffer) else a for a in args], _no_arrays)
        bank = bytearray(max(len(self.k.constant0), self.params_at + len(params)))
        bank[:len(self.k.constant0)] = self.k.constant0
        struct.pack_into("<3I", bank, self.ntid_at, *block)
        struct.pack_into("<3I", bank, self.nctaid_at, *grid)
        if sm_number(dev.arch) < 100:
            struct.pack_into("<QQ", bank, WINDOWS_AT, *dev.windows)
        bank[self.params_at:self.params_at + len(params)] = params
        size = -(-len(bank) // CBANK_ALIGN) * CBANK_ALIGN
        reserved = 0 if sm_number(dev.arch) >= 90 else qmd.SHARED_RESERVED  # ptxas counts it in .nv.shared from sm_90
        shared_bytes = -(-(self.k.shared_size + shared + reserved) // 128) * 128
        at = dev.arena(size + 512)
        cbank_va = -(-at // CBANK_ALIGN) * CBANK_ALIGN
        qmd_va = cbank_va + size
        desc = qmd.build(dev.arch, self.address, grid, block, shared_bytes, self.k.regcount or 32,
                         {0: (cbank_va, size), **self.banks}, dev.local_per_thread)
        dev.arena_view(cbank_va, len(bank))[:] = bank
        dev.arena_view(qmd_va, len(desc))[:] = desc
        times = dev.arena(32)
        value = dev.next_timeline_value()
        pb = Pushbuffer().timestamp(times).memory_barrier().launch(qmd_va).timestamp(times + 16)
        with dev.work(value):
            try:
                dev.compute.submit(pb.signal(dev.timeline, value))
            except (GPUFault, GPUHang) as f:
                raise f.named(self.name) from None
        dev.profiled(self.name, "compute", times, {"grid": list(grid), "block": list(block)}, value)
        if not wait:
            return None
        return dev.last_span().seconds


def _no_arrays(a) -> int:
    raise LaunchError("a numpy array cannot be passed to a kernel on a device: pass a Buffer (usergpu.launch "
                      "copies arrays in and out)")
