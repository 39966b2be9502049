"""The runtime on the mock NVIDIA GPU (MOCK+NV): the same driver (drivers/nv) and runtime code that drive a real
GPU through the RM ioctls, against the mock RM, UVM and GPU. Kernels are CUDA C compiled by clang-22 and assembled
by ptxas (the cubin carries its PTX, which the mock GPU runs)."""

from __future__ import annotations

import copy
import hashlib
import time

import numpy as np
import nv_corpus  # tests/kernels, on the path by tests/conftest.py
import pytest

import usergpu
from usergpu.emu.nv.mock.machine import mock_nv_hal
from usergpu.errors import CodeObjectError, CompileError, DriverError, GPUFault, GPUHang, LaunchError, RMError
from usergpu.isa.nv.releases import BRANCHES

pytestmark = pytest.mark.skipif(not nv_corpus.has_toolchain(), reason=nv_corpus.TOOLCHAIN)

ARCHS = ("sm_86", "sm_89", "sm_90")
KERNELS = r"""
extern "C" __global__ void fill(unsigned *out, unsigned value) { out[threadIdx.x] = value + threadIdx.x; }
extern "C" __global__ void vadd(const float *a, const float *b, float *c, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
extern "C" __global__ void store(unsigned long long address) { *(volatile unsigned *)address = 1; }
extern "C" __global__ void spin(volatile unsigned *flag) { while (*flag == 0) { } }
extern "C" __global__ void empty() {}
"""


def cubin(arch: str, src: str = KERNELS) -> bytes:
    return usergpu.assemble_ptx(usergpu.compile_cuda(src, arch), arch)


@pytest.fixture
def nv(monkeypatch):
    """Devices of a mock NVIDIA machine (MOCKGPU_NV_ARCH sm_90 unless a test sets it), closed after the test."""
    monkeypatch.setenv("MOCKGPU_NV_ARCH", "sm_90")
    opened = []

    def open_(index: int = 0, **kw):
        opened.append(usergpu.Device(f"MOCK+NV:{index}", **kw))
        return opened[-1]
    yield open_
    for dev in opened:
        dev.close()


CORPUS = [pytest.param(c, a, id=f"{c.name}-{a}") for c in nv_corpus.cases.CASES for a in ARCHS]


@pytest.mark.parametrize(("case", "arch"), CORPUS)
def test_the_cuda_corpus_runs_through_the_runtime_on_mock_nv(case, arch, monkeypatch):
    monkeypatch.setenv("MOCKGPU_NV_ARCH", arch)
    args = case.args(np.random.default_rng(0))
    want = case.reference(copy.deepcopy(args))
    got = usergpu.launch(nv_corpus.cubin(case.file, arch, case.options), case.kernel, case.grid, case.block, args,
                         device="MOCK+NV", shared=case.shared)
    nv_corpus.check(got, want, case)


@pytest.mark.parametrize(("arch", "compute", "gpfifo"), [("sm_86", 0xC7C0, 0xC56F), ("sm_89", 0xC9C0, 0xC56F),
                                                         ("sm_90", 0xCBC0, 0xC86F), ("sm_120", 0xCEC0, 0xCA6F)])
def test_the_driver_opens_the_chip_picks_its_classes_and_runs_a_kernel(arch, compute, gpfifo, nv, monkeypatch):
    monkeypatch.setenv("MOCKGPU_NV_ARCH", arch)
    dev = nv()
    assert dev.arch == arch and dev.driver.release == "595.45.04"
    assert (dev.driver.class_ids["compute"], dev.driver.class_ids["gpfifo"]) == (compute, gpfifo)
    assert dev.driver.memory_size > 1 << 30 and dev.driver.name.startswith("NVIDIA")
    n = 1000
    a, b = np.arange(n, dtype=np.float32), np.full(n, 0.5, np.float32)
    _, _, c = usergpu.launch(cubin(arch), "vadd", (4, 1, 1), (256, 1, 1), [a, b, np.zeros(n, np.float32),
                                                                           np.uint32(n)], device=dev)
    assert (c == a + b).all()  # QMD V03 (Ampere, Ada), V04 (Hopper), V05 (Blackwell)


@pytest.mark.parametrize("release", [*BRANCHES.values(), "570.86.15", "580.65.06"])
def test_each_release_drives_the_mock_in_its_own_layouts(release, nv, monkeypatch):
    """The driver reads the release, speaks its ABI (a release of a bound branch its branch's) and runs the same
    sequence: a kernel, the copy engine, a fault and the recovery after it."""
    monkeypatch.setenv("MOCKGPU_NV_RELEASE", release)
    dev = nv()
    abi = dev.driver.abi
    assert dev.driver.release == release and abi.bound == BRANCHES[release.split(".")[0]]
    assert dev.driver.client.rm is abi.rm and (abi.note == "") == (release == abi.bound)
    n = 1000
    a, b = np.arange(n, dtype=np.float32), np.full(n, 0.5, np.float32)
    _, _, c = usergpu.launch(cubin(dev.arch), "vadd", (4, 1, 1), (256, 1, 1), [a, b, np.zeros(n, np.float32),
                                                                                np.uint32(n)], device=dev)
    assert (c == a + b).all()
    buf = dev.alloc(1 << 20)
    data = np.random.default_rng(1).integers(0, 1 << 32, 1 << 18, dtype=np.uint32)
    buf.copyin(data)  # through the copy engine's channel
    assert (buf.copyout(np.uint32) == data).all()
    prog = dev.load(cubin(dev.arch))
    with pytest.raises(GPUFault):
        prog.kernel("store")(0x1000, grid=(1, 1, 1), block=(1, 1, 1))
    prog.kernel("fill")(buf, np.uint32(5), grid=(1, 1, 1), block=(32, 1, 1))
    assert (buf.copyout(np.uint32, 32) == 5 + np.arange(32)).all()


def test_a_release_of_an_unbound_branch_is_refused_naming_the_bound_ones(nv, monkeypatch):
    monkeypatch.setenv("MOCKGPU_NV_RELEASE", "595.45.04")
    hal = mock_nv_hal()
    monkeypatch.setattr(hal.nv, "release", "610.43.02")  # a driver newer than any bindings
    with pytest.raises(DriverError, match=r"610\.43\.02, of a branch usergpu has no bind.*535 \(535\.261\.03\)"):
        nv()


def test_a_queue_waits_on_a_signal_the_other_channel_releases_later(nv):
    dev = nv()
    sig = dev.signal()
    v = dev.next_timeline_value()
    dev.compute.submit(dev.packets().wait(sig, 3).signal(dev.timeline, v))
    assert dev.timeline.value < v  # stalled on the acquire
    dev.copy.submit(dev.packets().signal(sig, 3))
    dev.timeline.wait(v, timeout=2)
    assert sig.value == 3 and dev.timeline.value == v


def test_a_channel_waits_for_a_signal_another_gpu_writes(nv, monkeypatch):
    monkeypatch.setenv("MOCKGPU_COUNT", "2")
    dev0, dev1 = nv(0), nv(1)
    shared = dev0.signal()
    dev1.driver.map(shared.mem)
    v1 = dev1.next_timeline_value()
    dev1.compute.submit(dev1.packets().wait(shared, 7).signal(dev1.timeline, v1))
    assert dev1.timeline.value < v1
    v0 = dev0.next_timeline_value()
    dev0.compute.submit(dev0.packets().signal(shared, 7).signal(dev0.timeline, v0))
    dev1.timeline.wait(v1, timeout=2)
    dev0.timeline.wait(v0, timeout=2)
    assert shared.value == 7


def test_timeline_values_grow_and_timestamps_only_increase(nv):
    dev = nv()
    k = dev.load(cubin(dev.arch)).kernel("fill")
    buf = dev.alloc(4096)
    stamps = []
    for value in range(5):
        k(buf, np.uint32(value), grid=(1, 1, 1), block=(32, 1, 1))
        stamps.append(dev.timeline.timestamp)
        assert dev.timeline.value == dev.timeline_value
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    spans = dev.spans()
    assert [s.name for s in spans[-5:]] == ["fill"] * 5
    assert all(s.seconds > 0 for s in spans[-5:])
    assert all(a.start + a.seconds <= b.start for a, b in zip(spans[-5:], spans[-4:], strict=False))


def test_300_launches_wrap_the_gpfifo_ring(nv):
    dev = nv(gpfifo_entries=64)
    k = dev.load(cubin(dev.arch)).kernel("fill")
    buf = dev.alloc(4096)
    for i in range(300):
        k(buf, np.uint32(i), grid=(1, 1, 1), block=(32, 1, 1), wait=False)
    dev.synchronize()
    assert dev.channels.compute.put > 300 and dev.channels.compute.put % 64 == dev.channels.compute.gp_get
    assert (buf.copyout(np.uint32, 32) == 299 + np.arange(32)).all()


def test_64_mib_copies_both_ways_keep_every_byte(nv):
    dev = nv()
    data = np.random.default_rng(1).integers(0, 256, 64 << 20, dtype=np.uint8)
    buf = dev.alloc(data.nbytes)
    buf.copyin(data)
    other = dev.alloc(data.nbytes)
    dev.dma_copy(other.va, buf.va, data.nbytes)
    for b in (buf, other):
        assert hashlib.blake2b(b.copyout().tobytes()).digest() == hashlib.blake2b(data.tobytes()).digest()


def test_kernels_compute_through_the_runtime(nv):
    dev = nv()
    k = dev.load(cubin(dev.arch)).kernel("vadd")
    n = 1000
    a, b = (np.random.default_rng(s).standard_normal(n).astype(np.float32) for s in (2, 3))
    bufs = [dev.alloc(4 * n) for _ in range(3)]
    bufs[0].copyin(a)
    bufs[1].copyin(b)
    seconds = k(*bufs, np.uint32(n), grid=(4, 1, 1), block=(256, 1, 1))
    assert seconds > 0 and (bufs[2].copyout(np.float32, n) == a + b).all()


def test_a_cubin_for_another_arch_and_a_malformed_one_are_refused(nv):
    dev = nv()
    with pytest.raises(CodeObjectError, match="sm_86"):
        dev.load(cubin("sm_86"))
    with pytest.raises(CodeObjectError):
        dev.load(b"\x7fELF" + bytes(60))


def test_a_faulting_kernel_is_a_gpu_fault_and_the_device_goes_on(nv):
    dev = nv()
    prog = dev.load(cubin(dev.arch))
    with pytest.raises(GPUFault, match="store") as e:
        prog.kernel("store")(0x1000, grid=(1, 1, 1), block=(1, 1, 1))
    assert e.value.address == 0x1000 and e.value.kernel == "store" and e.value.access == "write"
    buf = dev.alloc(4096)
    prog.kernel("fill")(buf, np.uint32(5), grid=(1, 1, 1), block=(32, 1, 1))
    assert (buf.copyout(np.uint32, 32) == 5 + np.arange(32)).all()


def test_a_kernel_that_never_ends_is_a_gpu_hang_and_the_device_goes_on(nv, monkeypatch):
    monkeypatch.setenv("MOCKGPU_NV_BUDGET", "100000")
    dev = nv(timeout=0.5)
    prog = dev.load(cubin(dev.arch))
    flag = dev.alloc(4096)
    start = time.monotonic()
    with pytest.raises(GPUHang, match="spin"):
        prog.kernel("spin")(flag, grid=(1, 1, 1), block=(1, 1, 1))
    assert time.monotonic() - start < 10
    buf = dev.alloc(4096)
    prog.kernel("fill")(buf, np.uint32(9), grid=(1, 1, 1), block=(32, 1, 1))
    assert (buf.copyout(np.uint32, 32) == 9 + np.arange(32)).all()


def test_a_control_with_the_wrong_params_size_is_an_rm_error_naming_it(nv):
    dev = nv()
    rm = dev.driver.rm_module
    with pytest.raises(RMError, match="NV2080_CTRL_CMD_GR_GET_INFO.*NV_ERR_INVALID_ARGUMENT"):
        dev.driver.client.control(dev.driver.subdevice, rm.NV2080_CTRL_CMD_GR_GET_INFO,
                                  rm.NV2080_CTRL_GPU_GET_NAME_STRING_PARAMS())


def test_usergpu_launch_runs_a_cubin_on_mock_nv(nv):
    n = 300
    a, b = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
    _, _, c = usergpu.launch(cubin("sm_90"), "vadd", (2, 1, 1), (256, 1, 1), [a, b, np.zeros(n, np.float32),
                                                                                np.uint32(n)], device="MOCK+NV")
    assert (c == a + 1).all()


def test_a_kernel_with_a_stack_gets_local_memory_that_outlives_a_channel_reset(nv):
    dev = nv()
    case = next(c for c in nv_corpus.cases.CASES if c.name == "local.local_lookup")
    co = nv_corpus.cubin(case.file, dev.arch, case.options)
    dev.load(co)
    assert dev.local_per_thread >= 128  # the cubin's EIATTR_MIN_STACK_SIZE, rounded to 32
    sizes = dev.driver.gr
    assert dev._local.size >= dev.local_per_thread * 32 * sizes["MAX_WARPS_PER_SM"] * sizes["LITTER_NUM_SM_PER_TPC"]
    dev.reset_queues()
    args = case.args(np.random.default_rng(0))
    want = case.reference(copy.deepcopy(args))
    nv_corpus.check(usergpu.launch(co, case.kernel, case.grid, case.block, args, device=dev), want, case)


def test_a_copy_from_an_unmapped_address_is_a_gpu_fault_and_the_copy_channel_goes_on(nv):
    dev = nv()
    buf = dev.alloc(4096)
    with pytest.raises(GPUFault, match="copy channel") as e:
        dev.dma_copy(buf.va, 0x10000, 4096)
    assert e.value.address == 0x10000 and e.value.access == "read"
    data = np.arange(1 << 20, dtype=np.uint32)
    big = dev.alloc(data.nbytes)
    big.copyin(data)  # 4 MiB: through the copy engine
    assert (big.copyout(np.uint32) == data).all()


def test_a_closed_device_gives_everything_back_and_its_buffers_refuse_use(nv):
    from usergpu.runtime.buffer import BufferError

    dev = nv()
    buf = dev.alloc(4096)
    clients = dev.hal.nv.resman.server.clients
    assert dev.driver.client.root in clients
    dev.close()
    dev.close()
    with pytest.raises(BufferError, match="closed"):
        buf.copyout()
    assert dev.driver.client.root not in clients  # the RM client and every object under it freed


# ---- the kernel's C parameter types (issue 31) and PTX loaded as the driver's JIT loads it -----------------------
@pytest.mark.parametrize(("index", "value", "says"), [
    (0, np.zeros(300), r"argument 0 \(a\) of vadd is float\*: expected an array of float32, got float64"),
    (3, 300.0, r"argument 3 \(n\) of vadd is unsigned int: expected an integer, got the float 300.0"),
    (3, -1, r"argument 3 \(n\) of vadd is unsigned int: -1 is outside 0..4294967295"),
    (3, np.int32(300), r"argument 3 \(n\) of vadd is unsigned int: expected uint32, got a int32 scalar"),
])
def test_usergpu_launch_on_mock_nv_refuses_what_the_kernels_c_types_cannot_take(index, value, says, nv):
    dev = nv()
    args = [np.arange(300, dtype=np.float32), np.ones(300, np.float32), np.zeros(300, np.float32), 300]
    args[index] = value
    with pytest.raises(LaunchError, match=says):
        usergpu.launch(cubin("sm_90"), "vadd", (2, 1, 1), (256, 1, 1), args, device=dev)
    with pytest.raises(LaunchError, match=says):  # a Buffer-free check on the kernel itself, as Kernel.check does
        dev.load(cubin("sm_90")).kernel("vadd").check(args)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_ptx_loads_assembled_for_the_gpus_arch_as_the_drivers_jit_does(arch, nv):
    dev = nv()
    text = usergpu.compile_cuda(KERNELS, arch)
    prog = dev.load(text.decode())  # a str of PTX as well as its bytes
    assert prog.co.arch == "sm_90" and prog.co.ptx == text.decode()
    buf = dev.alloc(4096)
    prog.kernel("fill")(buf, np.uint32(7), grid=(1, 1, 1), block=(32, 1, 1))
    assert (buf.copyout(np.uint32, 32) == 7 + np.arange(32)).all()
    n = 300
    a = np.arange(n, dtype=np.float32)
    _, _, c = usergpu.launch(text, "vadd", (2, 1, 1), (256, 1, 1), [a, a, np.zeros(n, np.float32), n], device=dev)
    assert (c == 2 * a).all()
    with pytest.raises(LaunchError, match=r"argument 0 \(a\) of vadd is float\*: expected an array of float32"):
        usergpu.launch(text, "vadd", (2, 1, 1), (256, 1, 1), [a.astype(np.float64), a, a, n], device=dev)


def test_ptx_the_gpu_cannot_run_and_text_that_is_not_ptx_are_refused(nv, monkeypatch):
    monkeypatch.setenv("MOCKGPU_NV_ARCH", "sm_86")
    dev = nv()
    with pytest.raises(CodeObjectError, match="the PTX targets sm_90; the GPU is sm_86, which is older"):
        dev.load(usergpu.compile_cuda(KERNELS, "sm_90"))
    with pytest.raises(CodeObjectError, match="the PTX targets sm_80a; the GPU is sm_86, which lacks its arch-spec"):
        dev.load(usergpu.compile_cuda(KERNELS, "sm_80").replace(b".target sm_80", b".target sm_80a"))
    with pytest.raises(CodeObjectError, match="this str is not PTX"):
        dev.load('extern "C" __global__ void k() {}')
    with pytest.raises(CompileError, match="ptxas"):
        dev.load(b".version 8.7\n.target sm_86\n.address_size 64\n.visible .entry k() { bogus; }\n")
