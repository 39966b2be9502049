"""The runtime on MOCKKFD+AMD: the kernel driver, the mock KFD, its command processor and the emulator end to end.
The whole emulator corpus runs through Device / Program / the PM4 queue and matches numpy."""

from __future__ import annotations

import copy
import importlib.util
from pathlib import Path

import numpy as np
import pytest
from interfaces import INTERFACES, interface

from usergpu.runtime.launch import launch

_spec = importlib.util.spec_from_file_location("corpus", Path(__file__).parents[1] / "kernels" / "corpus.py")
corpus = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(corpus)
CONFIGS = [(c, arch, wave) for c in corpus.cases.CASES for arch, wave in corpus.cases.runs(c)
           if arch in corpus.cases.RDNA]
CDNA_CONFIGS = [(c, arch, wave) for c in corpus.cases.CASES for arch, wave in corpus.cases.runs(c)
                if arch in corpus.cases.CDNA]
_cdna_devices: dict[tuple[str, str, str], object] = {}  # (arch, queue, interface) -> this worker's Device for it


@pytest.mark.parametrize("via", INTERFACES)
@pytest.mark.parametrize(("case", "arch", "wave"),
                         [pytest.param(c, a, w, id=f"{c.name}-{a}-w{w}") for c, a, w in CONFIGS])
def test_corpus_through_the_runtime(case, arch, wave, via, monkeypatch):
    monkeypatch.setenv("MOCKGPU_ARCH", arch)
    device = interface(via, monkeypatch)
    args = case.args(np.random.default_rng(0))
    want = case.reference(copy.deepcopy(args))
    got = launch(corpus.code_object(case.file, arch, wave), case.kernel, case.grid, case.block, args, device)
    corpus.check(got, want, case)


@pytest.mark.parametrize("via", ["MOCKKFD+AMD", "MOCKPCI+AMD"])
@pytest.mark.parametrize("queue", ["pm4", "aql"])
@pytest.mark.parametrize(("case", "arch", "wave"),
                         [pytest.param(c, a, w, id=f"{c.name}-{a}-w{w}") for c, a, w in CDNA_CONFIGS])
def test_corpus_on_the_mock_cdna_gpus(case, arch, wave, queue, via, monkeypatch):
    """The corpus on the mock MI300X and MI350X: through MOCKKFD+AMD, eight XCCs (an AQL dispatch split over the
    XCCs, a PM4 one on the first XCC: the runtime's predication); through AM's MOCKPCI+AMD, on XCC 0's queues."""
    import usergpu

    monkeypatch.setenv("MOCKGPU_ARCH", arch)
    key = (arch, queue, via)
    if key not in _cdna_devices or _cdna_devices[key].closed:
        _cdna_devices[key] = usergpu.Device(interface(via, monkeypatch), queue=queue)
    args = case.args(np.random.default_rng(0))
    want = case.reference(copy.deepcopy(args))
    got = launch(corpus.code_object(case.file, arch, wave), case.kernel, case.grid, case.block, args,
                 _cdna_devices[key])
    corpus.check(got, want, case)


ERRORS = """
__kernel void oob(__global int *a, int n) { a[__builtin_amdgcn_workitem_id_x() * n] = 1; }
__kernel void fill(__global int *a, int v) { a[__builtin_amdgcn_workitem_id_x()] = v; }
"""


def test_a_faulting_kernel_names_address_and_pc_and_the_device_keeps_working(open_device):
    import usergpu
    from usergpu.errors import GPUFault

    dev = open_device()
    prog = dev.load(usergpu.compile_opencl(ERRORS, dev.arch))
    buf = dev.alloc(4096)
    with pytest.raises(GPUFault) as e:
        prog.kernels["oob"](buf, 1 << 20, grid=(1, 1, 1), block=(32, 1, 1))
    assert e.value.kernel == "oob" and e.value.access == "write"
    # lane i writes 4 MiB * i past the buffer; the first lane whose address nothing maps is the fault (the others
    # may land in other memory objects, as on a GPU)
    lane, rest = divmod(e.value.address - buf.va, 4 << 20)
    assert 1 <= lane < 32 and rest == 0 and prog.buf.va <= e.value.pc < prog.buf.va + prog.buf.size
    seconds = prog.kernels["fill"](buf, 5, grid=(1, 1, 1), block=(64, 1, 1))
    assert seconds > 0 and list(buf.copyout(np.int32, 64)) == [5] * 64


def test_device_api_buffers_programs_and_timestamps(open_device):
    import usergpu

    dev = open_device()
    prog = dev.load(usergpu.compile_opencl(ERRORS, dev.arch))
    buf = dev.alloc(256)
    buf.copyin(np.arange(64, dtype=np.int32))
    assert list(buf.copyout(np.int32)) == list(range(64))
    prog.kernels["fill"](buf, 9, grid=(1, 1, 1), block=(32, 1, 1), wait=False)
    dev.synchronize()
    assert list(buf.copyout(np.int32)) == [9] * 32 + list(range(32, 64))


def test_64_mib_copies_through_sdma_both_ways(open_device):
    import hashlib


    dev = open_device()
    data = np.random.default_rng(1).integers(0, 256, 64 << 20, dtype=np.uint8)
    buf = dev.alloc(data.nbytes)
    buf.copyin(data)
    assert hashlib.sha256(bytes(buf.view())).digest() == hashlib.sha256(data.tobytes()).digest()
    back = buf.copyout()
    assert hashlib.sha256(back.tobytes()).digest() == hashlib.sha256(data.tobytes()).digest()
    buf.free()


SPIN = "__kernel void spin(__global volatile int *a) { while (a[0] == 0) {} }"


def test_a_kernel_that_never_ends_is_a_hang_and_the_device_keeps_working(open_device, monkeypatch):
    import usergpu
    from usergpu.errors import GPUHang

    monkeypatch.setenv("MOCKGPU_BUDGET", "20000")
    dev = open_device()
    prog = dev.load(usergpu.compile_opencl(SPIN + ERRORS, dev.arch))
    buf = dev.alloc(4096)
    with pytest.raises(GPUHang, match="spin|20000"):
        prog.kernels["spin"](buf, grid=(1, 1, 1), block=(32, 1, 1))
    prog.kernels["fill"](buf, 3, grid=(1, 1, 1), block=(32, 1, 1))
    assert list(buf.copyout(np.int32, 32)) == [3] * 32


def test_a_wait_that_is_never_satisfied_is_a_device_hang_within_the_timeout(open_device):
    import time

    import usergpu
    from usergpu.errors import GPUHang
    from usergpu.runtime.amd.pm4 import Packets

    dev = open_device(timeout=0.3)
    never = dev.signal()
    value = dev.next_timeline_value()
    dev.compute.submit(Packets().wait(never, 1).signal(dev.timeline, value, dev.event))
    start = time.monotonic()
    with pytest.raises(GPUHang, match="device hang detected"):
        dev.synchronize()
    assert time.monotonic() - start < 2
    prog = dev.load(usergpu.compile_opencl(ERRORS, dev.arch))
    buf = dev.alloc(4096)
    prog.kernels["fill"](buf, 4, grid=(1, 1, 1), block=(32, 1, 1))
    assert list(buf.copyout(np.int32, 32)) == [4] * 32


def test_a_queue_waits_for_a_signal_another_gpu_writes(monkeypatch):
    """Two mock GPUs: GPU 1's queue waits on a signal in memory mapped for both, which GPU 0's queue writes later;
    timestamps of one timeline only grow."""
    import usergpu
    from usergpu.runtime.amd.pm4 import Packets

    monkeypatch.setenv("MOCKGPU_COUNT", "2")
    dev0, dev1 = usergpu.Device("MOCKKFD+AMD:0"), usergpu.Device("MOCKKFD+AMD:1")
    shared = dev0.signal()
    dev1.driver.map(shared.mem)
    v1 = dev1.next_timeline_value()
    dev1.compute.submit(Packets().wait(shared, 7).signal(dev1.timeline, v1, dev1.event))
    assert dev1.timeline.value < v1  # stalled: nothing has written the shared signal yet
    v0 = dev0.next_timeline_value()
    dev0.compute.submit(Packets().signal(shared, 7, dev0.event).signal(dev0.timeline, v0, dev0.event))
    dev1.timeline.wait(v1, timeout=1)
    dev0.timeline.wait(v0, timeout=1)
    assert shared.value == 7 and dev1.timeline.value == v1
    before = dev0.timeline.timestamp
    prog = dev0.load(usergpu.compile_opencl(ERRORS, dev0.arch))
    buf = dev0.alloc(4096)
    prog.kernels["fill"](buf, 1, grid=(1, 1, 1), block=(32, 1, 1))
    assert dev0.timeline.timestamp > before


AQL_CASES = [c for c in corpus.cases.CASES if c.name.split(".")[0] in ("math", "lds", "wave")][:12]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in AQL_CASES])
def test_kernels_on_an_aql_queue(case, open_device):
    """The CP's AQL path: it sets each dispatch up from the kernel descriptor (user SGPRs, COMPUTE_* registers)."""
    dev = open_device(queue="aql")
    args = case.args(np.random.default_rng(0))
    want = case.reference(copy.deepcopy(args))
    prog = dev.load(corpus.code_object(case.file, dev.arch, case.waves[0]))
    arrays = [a for a in args if isinstance(a, np.ndarray) and a.ndim]
    bufs = {id(a): dev.alloc(a.nbytes) for a in arrays}
    for a in arrays:
        bufs[id(a)].copyin(a)
    seconds = prog.kernels[case.kernel](*(bufs.get(id(a), a) for a in args), grid=case.grid, block=case.block)
    assert seconds > 0
    corpus.check([bufs[id(a)].copyout(a.dtype, a.size).reshape(a.shape) for a in arrays], want, case)


def test_an_aql_barrier_holds_a_dependent_kernel_until_its_signal_is_done(open_device):
    import usergpu
    from usergpu.runtime.amd.aql import barrier_and, kernel_dispatch

    dev = open_device(queue="aql")
    prog = dev.load(usergpu.compile_opencl(ERRORS, dev.arch))
    buf = dev.alloc(4096)
    gate = dev.signal()
    gate.value = 1  # not done
    k = prog.kernels["fill"]
    args = dev.arena(64)
    dev.arena_view(args, 16)[:] = np.array([buf.va, 6], np.uint64).tobytes()
    dev.aql.submit([barrier_and([gate.va]), kernel_dispatch(k.kd_va, args, (1, 1, 1), (32, 1, 1), 0, 0, 0)])
    dev.driver.wait_events([dev.event], timeout_ms=0)  # let the GPU run: it stalls at the barrier
    assert list(np.frombuffer(buf.view()[:128], np.int32)) == [0] * 32
    gate.value = 0
    dev.driver.wait_events([dev.event], timeout_ms=0)
    assert list(np.frombuffer(buf.view()[:128], np.int32)) == [6] * 32


def test_hundreds_of_launches_wrap_the_rings_and_timestamps_only_grow(open_device):
    import usergpu

    dev = open_device()
    prog = dev.load(usergpu.compile_opencl(ERRORS, dev.arch))
    buf = dev.alloc(4096)
    for i in range(300):  # ~100 dwords each: the 64 KiB PM4 ring wraps about twice
        prog.kernels["fill"](buf, i, grid=(1, 1, 1), block=(32, 1, 1), wait=False)
    spans = dev.spans()
    assert len(spans) == 300 and list(buf.copyout(np.int32, 32)) == [299] * 32
    assert all(a.start + a.seconds <= b.start for a, b in zip(spans, spans[1:], strict=False))
    trace = usergpu.runtime.spans.document([dev])
    assert sum(e["ph"] == "X" for e in trace["traceEvents"]) == 300


def test_an_invalid_code_object_is_refused_clearly():
    import usergpu
    from usergpu.errors import CodeObjectError

    dev = usergpu.Device("MOCKKFD+AMD")
    with pytest.raises(CodeObjectError):
        dev.load(b"\x7fELF" + bytes(60))


def test_a_full_ring_waits_for_room_and_a_stuck_engine_is_a_hang(open_device):
    import usergpu
    from usergpu.errors import GPUHang
    from usergpu.runtime.amd.pm4 import Packets

    dev = open_device(timeout=0.3)
    never, stamps = dev.signal(), dev.signal()
    dev.compute.submit(Packets().wait(never, 1))  # the engine stops here: nothing after it is read
    chunk = Packets()
    for _ in range(500):
        chunk.timestamp(stamps.va + stamps.TIMESTAMP)
    with pytest.raises(GPUHang, match="ring stayed full"):
        for _ in range(8):  # 16 KiB each: the 64 KiB ring fills before the last
            dev.compute.submit(chunk)
    prog = dev.load(usergpu.compile_opencl(ERRORS, dev.arch))
    buf = dev.alloc(4096)
    prog.kernels["fill"](buf, 8, grid=(1, 1, 1), block=(32, 1, 1))
    assert list(buf.copyout(np.int32, 32)) == [8] * 32
