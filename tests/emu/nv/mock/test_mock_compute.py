"""The mock NVIDIA GPU's compute classes driven directly: kernels compiled by clang-22 and assembled by ptxas, loaded
as a runtime loads a cubin, launched by a QMD (V03_00 on Ampere and Ada, V04_00 on Hopper, V05_00 on Blackwell) with
the parameters in constant bank 0, its release semaphores and dependent QMD, dynamic shared memory, inline writes
(I2M); a faulting kernel (an MMU fault reported through on_error and mmu_faults, other channels running on), a
never-ending one (its channel hung), and launches the GPU cannot make, each a channel error saying why."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from functools import cache

import numpy as np
import nv_corpus  # tests/kernels, on the path by tests/conftest.py
import pytest
from nvrig import Ring, Space, acquire, release

from usergpu.autogen import nv_classes as nc
from usergpu.autogen import nv_rm_535 as rm
from usergpu.emu.nv.mock import chips, compute, pushbuf
from usergpu.emu.nv.mock.channel import ChannelError
from usergpu.emu.nv.mock.compute import image_size
from usergpu.emu.nv.mock.gpu import MockNVGPU
from usergpu.errors import GPUFault, GPUHang
from usergpu.isa.nv import assemble_ptx, compile_cuda
from usergpu.isa.nv.cubin import parse

pytestmark = pytest.mark.skipif(not nv_corpus.has_toolchain(), reason=nv_corpus.TOOLCHAIN)

SRC = r"""
extern "C" __global__ void vadd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
extern "C" __global__ void reverse(int* out, int n) {
  extern __shared__ int buf[];
  buf[threadIdx.x] = out[blockIdx.x * n + threadIdx.x] * 3;
  __syncthreads();
  out[blockIdx.x * n + threadIdx.x] = buf[n - 1 - threadIdx.x];
}
extern "C" __global__ void spin(volatile int* flag) {
  while (*flag == 0) {}
}
__device__ int total;
extern "C" __global__ void accumulate(int* out, int v) {
  if (threadIdx.x == 0) { total += v; *out = total; }
}
"""
# arch -> (compute class, QMD) of its chip
ARCHS = {"sm_80": (nc.AMPERE_COMPUTE_A, "NVC6C0_QMDV03_00"), "sm_86": (nc.AMPERE_COMPUTE_B, "NVC7C0_QMDV03_00"),
         "sm_89": (nc.ADA_COMPUTE_A, "NVC9C0_QMDV03_00"), "sm_90": (nc.HOPPER_COMPUTE_A, "NVCBC0_QMDV04_00"),
         "sm_120": (nc.BLACKWELL_CLASSES["BLACKWELL_COMPUTE_B"], "NVCEC0_QMDV05_00")}
SUB = 1
CB0_SIZE = 0x1000
ONE_WORD = nc.NVC6C0_QMDV03_00_RELEASE0_STRUCTURE_SIZE_SEMAPHORE_ONE_WORD
FOUR_WORDS = nc.NVC6C0_QMDV03_00_RELEASE0_STRUCTURE_SIZE_SEMAPHORE_FOUR_WORDS


@cache
def cubin(arch: str) -> bytes:
    return assemble_ptx(compile_cuda(SRC, arch), arch)


def qmd_fields(version: str, program: int, grid, block, cb0: int, shared: int = 0) -> dict:
    """A QMD's launch fields by the names of its version's header, as a runtime writes them."""
    lo, hi = lambda v: v & 0xFFFFFFFF, lambda v: v >> 32
    f = {f"CTA_THREAD_DIMENSION{i}": b for i, b in enumerate(block)}
    if version.endswith("V03_00"):
        return {**f, "QMD_MAJOR_VERSION": 3, "PROGRAM_ADDRESS_LOWER": lo(program), "PROGRAM_ADDRESS_UPPER": hi(program),
                "CTA_RASTER_WIDTH": grid[0], "CTA_RASTER_HEIGHT": grid[1], "CTA_RASTER_DEPTH": grid[2],
                "SHARED_MEMORY_SIZE": shared, "CONSTANT_BUFFER_VALID": [1], "CONSTANT_BUFFER_ADDR_LOWER": [lo(cb0)],
                "CONSTANT_BUFFER_ADDR_UPPER": [hi(cb0)], "CONSTANT_BUFFER_SIZE_SHIFTED4": [CB0_SIZE >> 4]}
    f |= {"GRID_WIDTH": grid[0], "GRID_HEIGHT": grid[1], "GRID_DEPTH": grid[2], "CONSTANT_BUFFER_VALID": [1],
          "CONSTANT_BUFFER_ADDR_LOWER_SHIFTED6": [lo(cb0 >> 6)], "CONSTANT_BUFFER_ADDR_UPPER_SHIFTED6": [hi(cb0 >> 6)],
          "CONSTANT_BUFFER_SIZE_SHIFTED4": [CB0_SIZE >> 4]}
    if version.endswith("V04_00"):
        return {**f, "QMD_MAJOR_VERSION": 4, "PROGRAM_ADDRESS_LOWER": lo(program),
                "PROGRAM_ADDRESS_UPPER": hi(program), "SHARED_MEMORY_SIZE": shared}
    return {**f, "QMD_MAJOR_VERSION": 5, "PROGRAM_ADDRESS_LOWER_SHIFTED4": lo(program >> 4),
            "PROGRAM_ADDRESS_UPPER_SHIFTED4": hi(program >> 4), "SHARED_MEMORY_SIZE_SHIFTED7": -(-shared // 128)}


def release_fields(version: str, i: int, va: int, payload: int, size: int) -> dict:
    if version.endswith("V03_00"):
        return {f"RELEASE{i}_ENABLE": 1, f"RELEASE{i}_ADDRESS_LOWER": va & 0xFFFFFFFF,
                f"RELEASE{i}_ADDRESS_UPPER": va >> 32, f"RELEASE{i}_PAYLOAD_LOWER": payload,
                f"RELEASE{i}_STRUCTURE_SIZE": size}
    return {"RELEASE_ENABLE": [1 if k == i else 0 for k in range(i + 1)],
            "RELEASE_STRUCTURE_SIZE": [size if k == i else 0 for k in range(i + 1)],
            f"RELEASE_SEMAPHORE{i}_ADDR_LOWER": va & 0xFFFFFFFF, f"RELEASE_SEMAPHORE{i}_ADDR_UPPER": va >> 32,
            f"RELEASE_SEMAPHORE{i}_PAYLOAD_LOWER": payload}


class Launcher:
    """A GPU of the arch, a VA space, the cubin loaded at the start of a buffer, and launches on a channel."""

    def __init__(self, arch: str, gpu: MockNVGPU | None = None):
        self.arch = arch
        self.cls, self.version = ARCHS[arch]
        self.gpu = gpu or MockNVGPU(None, 0, arch)
        self.space = Space(self.gpu.new_vaspace())
        image = cubin(arch)
        self.code_va, code = self.space.alloc(len(image) + 4096)
        code[:len(image)] = np.frombuffer(image, np.uint8)
        self.kernels = {k.name: self.code_va + k.text.offset for k in parse(image).kernels.values()}
        self.ring = self.channel()

    def channel(self) -> Ring:
        ring = Ring(self.gpu, self.space, classes=(self.cls,))
        ring.submit(pushbuf.inc(SUB, "NVC6C0_SET_OBJECT", self.cls))
        return ring

    def qmd(self, kernel: str, grid, block, params: bytes, shared: int = 0, program: int | None = None,
            **extra) -> int:
        """A QMD (256-byte aligned) and its constant bank 0 with the parameters at CBANK0's offset."""
        cb0_va, cb0 = self.space.alloc(CB0_SIZE)
        at = nc.CBANK0[self.arch]["params"]
        cb0[at:at + len(params)] = np.frombuffer(params, np.uint8)
        layout = nc.QMD[self.version]
        qmd_va, qmd = self.space.alloc(layout.size)
        program = self.kernels[kernel] if program is None else program
        fields = qmd_fields(self.version, program, (*grid, 1, 1)[:3], (*block, 1, 1)[:3], cb0_va, shared)
        qmd[:] = np.frombuffer(layout.encode(**{**fields, **extra}), np.uint8)
        return qmd_va

    def launch_words(self, qmd_va: int) -> list[int]:
        action = nc.NVC6C0_SEND_SIGNALING_PCAS2_B_PCAS_ACTION_INVALIDATE_COPY_SCHEDULE
        return pushbuf.inc(SUB, "NVC6C0_SEND_PCAS_A", qmd_va >> 8) + pushbuf.inc(SUB, "NVC6C0_SEND_SIGNALING_PCAS2_B",
                                                                               action)

    def array(self, values: np.ndarray) -> tuple[int, np.ndarray]:
        va, arr = self.space.alloc(values.nbytes, values.dtype)
        arr[:] = values
        return va, arr


def vadd_params(a: int, b: int, c: int, n: int) -> bytes:
    return a.to_bytes(8, "little") + b.to_bytes(8, "little") + c.to_bytes(8, "little") + n.to_bytes(4, "little")


@pytest.fixture(params=list(ARCHS))
def launcher(request) -> Launcher:
    return Launcher(request.param)


def test_vadd(launcher):
    n = 1000
    rng = np.random.default_rng(1)
    a_va, a = launcher.array(rng.standard_normal(n).astype(np.float32))
    b_va, b = launcher.array(rng.standard_normal(n).astype(np.float32))
    c_va, c = launcher.array(np.zeros(n, np.float32))
    done_va, done = launcher.space.alloc(16, np.uint32)
    qmd = launcher.qmd("vadd", (8,), (128,), vadd_params(a_va, b_va, c_va, n))
    launcher.ring.submit(launcher.launch_words(qmd) + release(done_va, 1))
    assert np.array_equal(c, a + b) and done[0] == 1 and not launcher.ring.errors


@pytest.mark.parametrize("arch", ARCHS)
def test_qmd_release_semaphores(arch):
    launcher = Launcher(arch)
    n = 64
    a_va, a = launcher.array(np.arange(n, dtype=np.float32))
    c_va, c = launcher.array(np.zeros(n, np.float32))
    sem_va, sem = launcher.space.alloc(64, np.uint32)
    fields = release_fields(launcher.version, 0, sem_va, 0x1234, ONE_WORD)
    fields |= release_fields(launcher.version, 1, sem_va + 16, 0x5678, FOUR_WORDS)
    if not launcher.version.endswith("V03_00"):  # the two releases share the indexed fields
        fields["RELEASE_ENABLE"], fields["RELEASE_STRUCTURE_SIZE"] = [1, 1], [ONE_WORD, FOUR_WORDS]
    qmd = launcher.qmd("vadd", (1,), (n,), vadd_params(a_va, a_va, c_va, n), **fields)
    launcher.ring.submit(launcher.launch_words(qmd))
    assert np.array_equal(c, 2 * a) and (sem[0], sem[1], sem[4]) == (0x1234, 0, 0x5678)
    assert sem.view(np.uint64)[3] > 0 and sem[2] == 0  # four words: the timestamp at +8; one word: no more


def test_dynamic_shared_memory(launcher):
    blocks, n = 3, 96
    va, out = launcher.array(np.arange(blocks * n, dtype=np.int32))
    static = parse(cubin(launcher.arch)).kernels["reverse"].shared_size
    qmd = launcher.qmd("reverse", (blocks,), (n,), va.to_bytes(8, "little") + n.to_bytes(4, "little"),
                       shared=static + 4 * n)
    launcher.ring.submit(launcher.launch_words(qmd))
    assert np.array_equal(out.reshape(blocks, n), 3 * np.arange(blocks * n).reshape(blocks, n)[:, ::-1])
    assert not launcher.ring.errors


def test_global_variables_live_as_long_as_the_image():
    launcher = Launcher("sm_86")
    out_va, out = launcher.space.alloc(16, np.int32)
    args = [out_va.to_bytes(8, "little") + v.to_bytes(4, "little") for v in (5, 7)]
    launcher.ring.submit(sum((launcher.launch_words(launcher.qmd("accumulate", (1,), (32,), a)) for a in args), []))
    assert out[0] == 12  # the second launch sees what the first left in `total`
    vas = launcher.space.vas
    image = vas.memory.mapping(launcher.code_va)[1]
    vas.unmap(launcher.code_va)  # the program is freed: its variables go with it
    assert not vas.images
    vas.map(launcher.code_va, image)  # and loaded again: `total` starts from its initializer
    launcher.ring.submit(launcher.launch_words(launcher.qmd("accumulate", (1,), (32,), args[0])))
    assert out[0] == 5 and not launcher.ring.errors


def dependent_fields(version: str, qmd_va: int) -> dict:
    """Dependent QMD 0 scheduled, by the version's names (V04's enable and action are indexed)."""
    if version.endswith("V04_00"):
        return {"DEPENDENT_QMD_ENABLE": [1], "DEPENDENT_QMD0_POINTER": qmd_va >> 8,
                "DEPENDENT_QMD_ACTION": [nc.NVCBC0_QMDV04_00_DEPENDENT_QMD_ACTION_QMD_SCHEDULE]}
    return {"DEPENDENT_QMD0_ENABLE": 1, "DEPENDENT_QMD0_POINTER": qmd_va >> 8,
            "DEPENDENT_QMD0_ACTION": getattr(nc, f"{version}_DEPENDENT_QMD0_ACTION_QMD_SCHEDULE")}


@pytest.mark.parametrize("arch", ["sm_86", "sm_90", "sm_120"])
def test_dependent_qmd_runs_after_its_parent(arch):
    launcher = Launcher(arch)
    n = 32
    a_va, a = launcher.array(np.arange(n, dtype=np.float32))
    b_va, b = launcher.array(np.zeros(n, np.float32))
    c_va, c = launcher.array(np.zeros(n, np.float32))
    second = launcher.qmd("vadd", (1,), (n,), vadd_params(b_va, b_va, c_va, n))  # reads what the first wrote
    first = launcher.qmd("vadd", (1,), (n,), vadd_params(a_va, a_va, b_va, n),
                         **dependent_fields(launcher.version, second))
    launcher.ring.submit(launcher.launch_words(first))
    assert np.array_equal(c, 4 * a) and not launcher.ring.errors


@pytest.mark.parametrize("prefix", ["NVCBC0_QMDV04_00", "NVCDC0_QMDV05_00", "NVCEC0_QMDV05_00"])
def test_newer_qmds_name_v03s_values(prefix):
    """The mock reads release and dependent-action values by V03's names: V04's and V05's headers agree."""
    v3 = "NVC6C0_QMDV03_00"
    for ours, theirs in (("RELEASE0_STRUCTURE_SIZE_SEMAPHORE_", "RELEASE_STRUCTURE_SIZE_SEMAPHORE_"),
                         ("RELEASE0_REDUCTION_OP_RED_", "RELEASE_REDUCTION_OP_RED_"),
                         ("DEPENDENT_QMD0_ACTION_QMD_", "DEPENDENT_QMD_ACTION_QMD_")):
        names = {k.removeprefix(f"{v3}_{ours}") for k in dir(nc) if k.startswith(f"{v3}_{ours}")}
        assert names and all(getattr(nc, f"{v3}_{ours}{n}") == getattr(nc, f"{prefix}_{theirs}{n}") for n in names)
    signed = getattr(nc, f"{prefix}_RELEASE_REDUCTION_FORMAT_SIGNED")
    assert nc.NVC6C0_QMDV03_00_RELEASE0_REDUCTION_FORMAT_SIGNED_32 == signed


def test_launch_waits_on_an_acquire_from_another_channel():
    launcher = Launcher("sm_90")
    n = 16
    a_va, a = launcher.array(np.ones(n, np.float32))
    c_va, c = launcher.array(np.zeros(n, np.float32))
    flag_va, flag = launcher.space.alloc(16, np.uint32)
    launcher.ring.submit(acquire(flag_va, 1) + launcher.launch_words(
        launcher.qmd("vadd", (1,), (n,), vadd_params(a_va, a_va, c_va, n))))
    assert not c.any()
    Ring(launcher.gpu, launcher.space).submit(release(flag_va, 1))
    assert (c == 2).all()


def test_inline_to_memory():
    launcher = Launcher("sm_89")
    va, mem = launcher.space.alloc(64, np.uint8)
    words = pushbuf.inc(SUB, "NVC6C0_OFFSET_OUT_UPPER", va >> 32, (va + 2) & 0xFFFFFFFF)
    words += pushbuf.inc(SUB, "NVC6C0_LINE_LENGTH_IN", 6, 2) + pushbuf.inc(SUB, "NVC6C0_PITCH_OUT", 16)
    words += pushbuf.inc(SUB, "NVC6C0_LAUNCH_DMA", nc.METHODS["NVC6C0_LAUNCH_DMA"].encode(
        DST_MEMORY_LAYOUT=nc.NVC6C0_LAUNCH_DMA_DST_MEMORY_LAYOUT_PITCH))
    words += pushbuf.non_inc(SUB, "NVC6C0_LOAD_INLINE_DATA", 0x04030201, 0x08070605, 0x0C0B0A09, 0x100F0E0D)
    launcher.ring.submit(words)
    want = np.zeros(64, np.uint8)
    want[2:8], want[18:24] = [1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11, 12]  # two lines of 6; the rest is dropped
    assert np.array_equal(mem, want) and not launcher.ring.errors


def test_faulting_kernel_stops_its_channel_alone(launcher):
    n = 256
    a_va, a = launcher.array(np.ones(n, np.float32))
    bad = 0x66_0000_0000
    launcher.ring.submit(launcher.launch_words(launcher.qmd("vadd", (2,), (128,), vadd_params(a_va, a_va, bad, n)))
                         + release(a_va, 0))
    (code, message), = launcher.ring.errors
    assert code == rm.ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT and f"write of {bad:#x}" in message
    assert "kernel vadd" in message and "NVC" in message and "SEND_SIGNALING_PCAS2_B" in message
    error = launcher.ring.channel.error
    assert isinstance(error, GPUFault) and error.kernel == "vadd" and error.address == bad
    (fault,) = launcher.gpu.mmu_faults
    assert (fault.address, fault.fault_type, fault.access_type, fault.kernel) == (bad, 2, 1, "vadd")
    assert a[0] == 1  # the release after the launch never ran
    other = launcher.channel()
    c_va, c = launcher.array(np.zeros(n, np.float32))
    other.submit(launcher.launch_words(launcher.qmd("vadd", (2,), (128,), vadd_params(a_va, a_va, c_va, n))))
    assert (c == 2).all() and not other.errors


def test_never_ending_kernel_hangs_its_channel(monkeypatch):
    monkeypatch.setenv("MOCKGPU_NV_BUDGET", "2000")
    launcher = Launcher("sm_90")
    flag_va, flag = launcher.space.alloc(16, np.uint32)
    done_va, done = launcher.space.alloc(16, np.uint32)
    ring = launcher.ring
    ring.submit(launcher.launch_words(launcher.qmd("spin", (1,), (32,), flag_va.to_bytes(8, "little")))
                + release(done_va, 1))
    assert isinstance(ring.channel.hang, GPUHang) and ring.channel.hang.kernel == "spin"
    assert "ran 2000 instruction steps" in str(ring.channel.hang) and "MOCKGPU_NV_BUDGET" in str(ring.channel.hang)
    assert launcher.gpu.hangs == [(ring.channel, ring.channel.hang)] and not ring.errors and ring.channel.error is None
    assert done[0] == 0 and ring.gp_get == 1 and ring.channel.busy  # stalled at its entry for good
    flag[0] = 1
    launcher.gpu.doorbell(ring.channel.token)
    assert done[0] == 0  # a hung channel never resumes
    Ring(launcher.gpu, launcher.space).submit(release(done_va + 4, 7))
    assert done[1] == 7


def _until(done, seconds: float = 10) -> bool:
    """Whether done() comes true within seconds (the GPU's worker runs meanwhile)."""
    limit = time.monotonic() + seconds
    while not done() and time.monotonic() < limit:
        time.sleep(0.005)
    return done()


def test_a_launch_runs_a_slice_per_doorbell_and_the_worker_goes_on_with_it(monkeypatch):
    monkeypatch.setattr(compute, "LAUNCH_SLICE", 0.02)
    launcher = Launcher("sm_90")
    flag_va, flag = launcher.space.alloc(16, np.uint32)
    done_va, done = launcher.space.alloc(16, np.uint32)
    ring = launcher.ring
    start = time.monotonic()
    ring.submit(launcher.launch_words(launcher.qmd("spin", (1,), (32,), flag_va.to_bytes(8, "little")))
                + release(done_va, 1))
    assert time.monotonic() - start < 1  # the doorbell came back after a slice
    assert launcher.gpu.launching() and ring.channel.launching and ring.channel.busy and done[0] == 0
    worker = launcher.gpu._worker
    assert worker is not None and worker.daemon and worker.is_alive()
    flag[0] = 1  # the host lets it end: the worker finishes it, then the release after it runs
    assert _until(lambda: done[0] == 1)
    assert _until(lambda: not worker.is_alive())  # nothing left to run: the thread ended
    assert not launcher.gpu.launching() and not ring.channel.busy and not ring.errors and ring.channel.hang is None


def test_a_channel_torn_down_stops_its_launch_and_the_worker(monkeypatch):
    monkeypatch.setattr(compute, "LAUNCH_SLICE", 0.02)
    launcher = Launcher("sm_90")
    flag_va, flag = launcher.space.alloc(16, np.uint32)
    ring = launcher.ring
    ring.submit(launcher.launch_words(launcher.qmd("spin", (1,), (32,), flag_va.to_bytes(8, "little"))))
    worker = launcher.gpu._worker
    assert worker is not None
    launcher.gpu.destroy_channel(ring.channel)
    assert _until(lambda: not worker.is_alive())
    assert not launcher.gpu.launching() and launcher.gpu._worker is None
    assert not [t for t in threading.enumerate() if t is worker]


def test_unmapped_program_and_qmd_are_mmu_faults():
    launcher = Launcher("sm_89")
    a_va, a = launcher.array(np.ones(32, np.float32))
    qmd = launcher.qmd("vadd", (1,), (32,), vadd_params(a_va, a_va, a_va, 32), program=0x77_0000_0000)
    launcher.ring.submit(launcher.launch_words(qmd))
    other = launcher.channel()
    other.submit(launcher.launch_words(0x78_0000_0000))
    assert [e[0] for e in launcher.ring.errors + other.errors] == [rm.ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT] * 2
    assert [(f.address, f.access_type) for f in launcher.gpu.mmu_faults] == [(0x77_0000_0000, 0), (0x78_0000_0000, 0)]


def test_image_is_found_by_its_headers():
    image = cubin("sm_86")
    buf = np.zeros(len(image) + 8192, np.uint8)
    buf[:len(image)] = np.frombuffer(image, np.uint8)
    assert image_size(memoryview(buf)) == len(image)  # the padding after the cubin is not part of it


BAD_LAUNCHES = {
    "not a kernel start": (dict(program=16), "where no kernel's code starts"),
    "no cubin": (dict(program=-1), "which does not start with a cubin (ELF) image"),
    "wrong QMD version": (dict(QMD_MAJOR_VERSION=9), "has QMD_MAJOR_VERSION 9"),
    "no constant buffer": (dict(CONSTANT_BUFFER_VALID=[0]), "has no valid constant buffer 0"),
    "constant buffer too small": (dict(CONSTANT_BUFFER_SIZE_SHIFTED4=[1]), "which the QMD at"),
    "too many threads": (dict(block=(2048,)), "at most 1024"),
}


@pytest.mark.parametrize("case", BAD_LAUNCHES)
def test_launch_errors(case):
    launcher = Launcher("sm_86")
    extra, why = dict(BAD_LAUNCHES[case][0]), BAD_LAUNCHES[case][1]
    program = extra.pop("program", None)
    if program == -1:
        program, _ = launcher.array(np.zeros(64, np.uint8))
    elif program is not None:
        program += launcher.kernels["vadd"]
    block = extra.pop("block", (32,))
    a_va, a = launcher.array(np.ones(32, np.float32))
    qmd = launcher.qmd("vadd", (1,), block, vadd_params(a_va, a_va, a_va, 32), program=program, **extra)
    launcher.ring.submit(launcher.launch_words(qmd))
    (code, message), = launcher.ring.errors
    assert code == rm.ROBUST_CHANNEL_GR_EXCEPTION and why in message and f"QMD at {qmd:#x}" in message
    assert isinstance(launcher.ring.channel.error, ChannelError) and not launcher.gpu.mmu_faults


def test_unmodelled_and_unknown_compute_methods():
    launcher = Launcher("sm_86")
    launcher.ring.submit(pushbuf.inc(SUB, "NVC6C0_SET_REPORT_SEMAPHORE_D", 0))
    assert "NVC7C0_SET_REPORT_SEMAPHORE_D is not modelled" in launcher.ring.errors[0][1]
    other = launcher.channel()
    other.submit(pushbuf.inc(SUB, "NVC6C0_SEND_SIGNALING_PCAS2_B",
                             nc.NVC6C0_SEND_SIGNALING_PCAS2_B_PCAS_ACTION_INCREMENT_PUT))
    assert "PCAS action 6 is not modelled" in other.errors[0][1]
    accepted = launcher.channel()
    accepted.submit(pushbuf.inc(SUB, "NVC6C0_SET_SHADER_LOCAL_MEMORY_A", 0, 0x1000)
                    + pushbuf.inc(SUB, "NVC6C0_SET_SHADER_SHARED_MEMORY_WINDOW_A", 0, 0x1000000)
                    + pushbuf.inc(SUB, "NVC6C0_INVALIDATE_SHADER_CACHES_NO_WFI", 0x1011))
    assert not accepted.errors


def test_a_launch_takes_its_warp_instructions_at_the_chips_rate():
    """The GPU clock moves over a launch by its warp-instructions at the chip's issue rate (four a cycle per SM),
    not by the mock's time: on a chip clocked at 20 Hz twice the blocks take twice the time, to within the host's
    time between the launches (the first launch's compile is the mock's, not the board's)."""
    slow = replace(chips.chip("sm_90"), clock_hz=20.0)
    launcher = Launcher("sm_90", MockNVGPU(None, 0, "sm_90", slow))
    n = 16 * 128
    a_va, a = launcher.array(np.arange(n, dtype=np.float32))
    c_va, c = launcher.array(np.zeros(n, np.float32))
    sem_va, sem = launcher.space.alloc(64, np.uint32)
    words = release(sem_va, 1, timestamp=True)
    for k, blocks in enumerate((8, 16)):
        qmd = launcher.qmd("vadd", (blocks,), (128,), vadd_params(a_va, a_va, c_va, n))
        words += launcher.launch_words(qmd) + release(sem_va + 16 * (k + 1), 1, timestamp=True)
    launcher.ring.submit(words)
    t = [int(x) for x in sem.view(np.uint64)[[1, 3, 5]]]
    first, second = t[1] - t[0], t[2] - t[1]
    assert first > 0.05e9 and abs(second - 2 * first) < 0.02e9, (first, second)  # ns
    assert np.array_equal(c, 2 * a) and t[2] <= time.monotonic_ns() and not launcher.ring.errors
