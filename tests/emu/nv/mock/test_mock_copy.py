"""The mock NVIDIA GPU's copy classes (c6b5, c7b5, c8b5, cab5) driven directly: a 64 MiB linear copy checked by hash,
multi-line pitch copies, copies across adjacent mappings, constant fills and swizzles through the remap, the
semaphore releases of LAUNCH_DMA (one word, 64-bit payload, four words with a timestamp, a reduction), its
interrupt, and what a copy cannot do (fault, block-linear, physical addresses) stopping its channel alone."""

from __future__ import annotations

import hashlib
import time

import numpy as np
import pytest
from nvrig import Ring, Space, acquire, release

from usergpu.autogen import nv_classes as nc
from usergpu.autogen import nv_rm_535 as rm
from usergpu.emu.nv.mock import pushbuf
from usergpu.emu.nv.mock.gpu import MockNVGPU
from usergpu.hostmem import PAGE

# copy class -> the arch of a chip that offers it
CLASSES = {nc.AMPERE_DMA_COPY_A: "sm_80", nc.AMPERE_DMA_COPY_B: "sm_86", nc.HOPPER_DMA_COPY_A: "sm_90",
           nc.BLACKWELL_CLASSES["BLACKWELL_DMA_COPY_B"]: "sm_120"}
SUB = 4  # the subchannel the copy object is bound to
LAUNCH = nc.METHODS["NVC7B5_LAUNCH_DMA"]  # c6b5's fields at the same bits, and SEMAPHORE_PAYLOAD_SIZE
PITCH = nc.NVC6B5_LAUNCH_DMA_SRC_MEMORY_LAYOUT_PITCH


@pytest.fixture(params=CLASSES, ids=lambda c: f"{c:x}")
def rig(request):
    cls = request.param
    gpu = MockNVGPU(None, 0, CLASSES[cls])
    space = Space(gpu.new_vaspace())
    return gpu, space, Ring(gpu, space, classes=(cls,)), cls


def bind(cls: int) -> list[int]:
    return pushbuf.inc(SUB, "NVC56F_SET_OBJECT", cls)  # the host binds the subchannel


def launch(**fields) -> int:
    base = {"DATA_TRANSFER_TYPE": nc.NVC6B5_LAUNCH_DMA_DATA_TRANSFER_TYPE_NON_PIPELINED, "SRC_MEMORY_LAYOUT": PITCH,
            "DST_MEMORY_LAYOUT": PITCH, "FLUSH_ENABLE": nc.NVC6B5_LAUNCH_DMA_FLUSH_ENABLE_TRUE}
    return LAUNCH.encode(**{**base, **fields})


def copy(dst: int, src: int, length: int, **fields) -> list[int]:
    """OFFSET_IN/OUT, LINE_LENGTH_IN, LAUNCH_DMA: what a runtime pushes for a linear copy."""
    return (pushbuf.inc(SUB, "NVC6B5_OFFSET_IN_UPPER", src >> 32, src & 0xFFFFFFFF, dst >> 32, dst & 0xFFFFFFFF)
            + pushbuf.inc(SUB, "NVC6B5_LINE_LENGTH_IN", length)
            + pushbuf.inc(SUB, "NVC6B5_LAUNCH_DMA", launch(**fields)))


def semaphore(va: int, payload: int) -> list[int]:
    return pushbuf.inc(SUB, "NVC6B5_SET_SEMAPHORE_A", va >> 32, va & 0xFFFFFFFF, payload & 0xFFFFFFFF)


def test_linear_copy_64_mib_with_hash(rig):
    gpu, space, ring, cls = rig
    n = 64 << 20
    src_va, src = space.alloc(n)
    dst_va, dst = space.alloc(n)
    sem_va, sem = space.alloc(16, np.uint32)
    src[:] = np.random.default_rng(cls).integers(0, 256, n, np.uint8)
    one_word = nc.NVC6B5_LAUNCH_DMA_SEMAPHORE_TYPE_RELEASE_ONE_WORD_SEMAPHORE
    ring.submit(bind(cls) + semaphore(sem_va, 0x600D) + copy(dst_va, src_va, n, SEMAPHORE_TYPE=one_word))
    assert hashlib.sha256(dst).hexdigest() == hashlib.sha256(src).hexdigest()
    assert sem[0] == 0x600D and sem[2] == 0 and not ring.errors  # one word: no timestamp


def test_multi_line_pitch_copy(rig):
    gpu, space, ring, cls = rig
    src_va, src = space.alloc(256 * 9)
    dst_va, dst = space.alloc(384 * 9)
    src[:] = np.arange(len(src)) * 7 % 251
    dst[:] = 0xEE
    words = bind(cls) + pushbuf.inc(SUB, "NVC6B5_PITCH_IN", 256, 384, 100, 7)  # PITCH_IN/OUT, LINE_LENGTH_IN, COUNT
    words += pushbuf.inc(SUB, "NVC6B5_OFFSET_IN_UPPER", src_va >> 32, (src_va + 3) & 0xFFFFFFFF, dst_va >> 32,
                         (dst_va + 5) & 0xFFFFFFFF)
    words += pushbuf.inc(SUB, "NVC6B5_LAUNCH_DMA", launch(MULTI_LINE_ENABLE=1))
    ring.submit(words)
    want = np.full((9, 384), 0xEE, np.uint8)
    want[:7, 5:105] = src.reshape(9, 256)[:7, 3:103]
    assert np.array_equal(dst.reshape(9, 384), want) and not ring.errors


def test_copy_across_adjacent_mappings(rig):
    gpu, space, ring, cls = rig
    a, b = np.arange(4096, dtype=np.uint8), np.arange(4096, dtype=np.uint8)[::-1].copy()
    base = space.next
    space.vas.map(base, a)
    space.vas.map(base + 4096, b)  # one buffer to the GPU, two memory objects to the host
    space.next += 3 << 12
    dst_va, dst = space.alloc(8192)
    ring.submit(bind(cls) + copy(dst_va, base + 1000, 6000))
    assert np.array_equal(dst[:6000], np.concatenate([a, b])[1000:7000])


def test_remap_constant_fill_and_swizzle(rig):
    gpu, space, ring, cls = rig
    dst_va, dst = space.alloc(4096, np.uint32)
    comps = nc.METHODS["NVC6B5_SET_REMAP_COMPONENTS"]
    fill = comps.encode(DST_X=nc.NVC6B5_SET_REMAP_COMPONENTS_DST_X_CONST_A,
                        COMPONENT_SIZE=nc.NVC6B5_SET_REMAP_COMPONENTS_COMPONENT_SIZE_FOUR,
                        NUM_DST_COMPONENTS=nc.NVC6B5_SET_REMAP_COMPONENTS_NUM_DST_COMPONENTS_ONE)
    ring.submit(bind(cls) + pushbuf.inc(SUB, "NVC6B5_SET_REMAP_CONST_A", 0xDEADBEEF, 0, fill)
                + copy(dst_va + 16, 0, 1000, REMAP_ENABLE=1))  # 1000 elements of 4 bytes; no source read
    assert (dst[4:1004] == 0xDEADBEEF).all() and dst[3] == 0 and dst[1004] == 0
    src_va, src = space.alloc(64)
    src[:] = np.arange(64, dtype=np.uint8)
    swap = comps.encode(DST_X=nc.NVC6B5_SET_REMAP_COMPONENTS_DST_X_SRC_Y,
                        DST_Y=nc.NVC6B5_SET_REMAP_COMPONENTS_DST_X_SRC_X,
                        DST_Z=nc.NVC6B5_SET_REMAP_COMPONENTS_DST_X_CONST_B,
                        DST_W=nc.NVC6B5_SET_REMAP_COMPONENTS_DST_X_NO_WRITE,
                        COMPONENT_SIZE=nc.NVC6B5_SET_REMAP_COMPONENTS_COMPONENT_SIZE_TWO,
                        NUM_SRC_COMPONENTS=nc.NVC6B5_SET_REMAP_COMPONENTS_NUM_SRC_COMPONENTS_TWO,
                        NUM_DST_COMPONENTS=nc.NVC6B5_SET_REMAP_COMPONENTS_NUM_DST_COMPONENTS_FOUR)
    out_va, out = space.alloc(8 * 16, np.uint16)
    out[:] = 0x7777
    ring.submit(pushbuf.inc(SUB, "NVC6B5_SET_REMAP_CONST_A", 0, 0xABCD, swap)
                + copy(out_va, src_va, 16, REMAP_ENABLE=1))
    pairs = src.view(np.uint16).reshape(16, 2)
    want = np.stack([pairs[:, 1], pairs[:, 0], np.full(16, 0xABCD), np.full(16, 0x7777)], 1).astype(np.uint16)
    assert np.array_equal(out.reshape(16, 4), want) and not ring.errors


def test_semaphores_four_word_with_timestamp_and_64_bit(rig):
    gpu, space, ring, cls = rig
    sem_va, sem = space.alloc(64, np.uint32)
    four = nc.NVC6B5_LAUNCH_DMA_SEMAPHORE_TYPE_RELEASE_FOUR_WORD_SEMAPHORE
    no_copy = nc.NVC6B5_LAUNCH_DMA_DATA_TRANSFER_TYPE_NONE
    before = time.monotonic_ns()
    ring.submit(bind(cls) + semaphore(sem_va, 11) + copy(0, 0, 0, DATA_TRANSFER_TYPE=no_copy, SEMAPHORE_TYPE=four)
                + semaphore(sem_va + 16, 12) + copy(0, 0, 0, DATA_TRANSFER_TYPE=no_copy, SEMAPHORE_TYPE=four))
    stamps = sem.view(np.uint64)[[1, 3]]
    assert (sem[0], sem[4]) == (11, 12) and before <= stamps[0] < stamps[1] <= time.monotonic_ns()
    if cls == nc.AMPERE_DMA_COPY_A:  # c6b5 has no 64-bit payload
        return
    wide = nc.NVC7B5_LAUNCH_DMA_SEMAPHORE_PAYLOAD_SIZE_TWO_WORD
    ring.submit(semaphore(sem_va + 32, 0x55667788) + pushbuf.inc(SUB, "NVC7B5_SET_SEMAPHORE_PAYLOAD_UPPER", 0x11223344)
                + copy(0, 0, 0, DATA_TRANSFER_TYPE=no_copy, SEMAPHORE_TYPE=1, SEMAPHORE_PAYLOAD_SIZE=wide))
    assert int(sem.view(np.uint64)[4]) == 0x1122334455667788 and not ring.errors


def test_semaphore_reduction_and_interrupt(rig):
    gpu, space, ring, cls = rig
    sem_va, sem = space.alloc(16, np.uint32)
    sem[0] = 30
    add = {"SEMAPHORE_REDUCTION_ENABLE": 1, "SEMAPHORE_REDUCTION": nc.NVC6B5_LAUNCH_DMA_SEMAPHORE_REDUCTION_IADD,
           "SEMAPHORE_REDUCTION_SIGN": nc.NVC6B5_LAUNCH_DMA_SEMAPHORE_REDUCTION_SIGN_UNSIGNED}
    ring.submit(bind(cls) + semaphore(sem_va, 12) + copy(0, 0, 0, DATA_TRANSFER_TYPE=0, SEMAPHORE_TYPE=1,
                                                        INTERRUPT_TYPE=nc.NVC6B5_LAUNCH_DMA_INTERRUPT_TYPE_BLOCKING,
                                                        **add))
    assert sem[0] == 42 and ring.channel.interrupts == 1


def test_copy_waits_on_a_host_acquire(rig):
    gpu, space, ring, cls = rig
    src_va, src = space.alloc(64)
    dst_va, dst = space.alloc(64)
    flag_va, flag = space.alloc(16, np.uint32)
    src[:] = 9
    ring.submit(bind(cls) + acquire(flag_va, 1) + copy(dst_va, src_va, 64))
    assert not dst.any()
    other = Ring(gpu, space)
    other.submit(release(flag_va, 1))
    assert (dst == 9).all()


BAD = {
    "fault": (dict(), rm.ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT, "MMU fault: read of 0x6000000000"),
    "block linear": (dict(SRC_MEMORY_LAYOUT=0), rm.ROBUST_CHANNEL_CE0_ERROR, "block-linear copy is not modelled"),
    "physical": (dict(DST_TYPE=nc.NVC6B5_LAUNCH_DMA_DST_TYPE_PHYSICAL), rm.ROBUST_CHANNEL_CE0_ERROR,
                 "LAUNCH_DMA DST_TYPE = 1 is not modelled"),
    "conditional semaphore": (dict(SEMAPHORE_TYPE=3), rm.ROBUST_CHANNEL_CE0_ERROR, "SEMAPHORE_TYPE 3 is not modelled"),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_copies_stop_their_channel(rig, case):
    gpu, space, ring, cls = rig
    fields, code, why = BAD[case]
    dst_va, dst = space.alloc(64)
    src = 0x60_0000_0000 if case == "fault" else dst_va + 32
    ring.submit(bind(cls) + copy(dst_va, src, 16, **fields))
    assert ring.errors[0][0] == code and why in ring.errors[0][1] and "NVC" in ring.errors[0][1]
    assert [f.address for f in gpu.mmu_faults] == ([0x60_0000_0000] if case == "fault" else [])
    good = Ring(gpu, space, classes=(cls,))
    src_va, data = space.alloc(16)
    data[:] = 5
    good.submit(bind(cls) + copy(dst_va, src_va, 16))
    assert (dst[:16] == 5).all() and not good.errors


def test_unknown_copy_method(rig):
    gpu, space, ring, cls = rig
    ring.submit(bind(cls) + pushbuf.inc(SUB, 0x3000, 1))
    assert ring.errors[0][0] == rm.ROBUST_CHANNEL_CE0_ERROR and "no method at offset 0x3000" in ring.errors[0][1]


def test_copy_addresses_have_the_class_width(rig):
    """OFFSET_IN/OUT_UPPER hold 17 bits on Ampere's copy classes and 25 (a 57-bit address) from Hopper's on, as each
    class's header says: a source above the 49 bits Ampere addresses copies there, and faults at it truncated here."""
    gpu, space, ring, cls = rig
    width = nc.METHODS[f"NV{cls:X}_OFFSET_IN_UPPER"].fields["UPPER"].width
    src_va, src = Space(space.vas, 1 << 52 | 0x60_0000_0000).alloc(64)  # unmapped below bit 49
    dst_va, dst = space.alloc(64)
    src[:] = 7
    ring.submit(bind(cls) + copy(dst_va, src_va, 64))
    if width == 25:
        assert (dst == 7).all() and not ring.errors
    else:
        assert width == 17 and [f.address for f in gpu.mmu_faults] == [src_va & ((1 << 49) - 1)]


def test_a_copy_takes_the_boards_time_not_the_mocks(rig):
    """The GPU clock moves over a copy by its bytes at the chip's rate — within VRAM its copy rate, with system
    memory at one end its bus's — not by the host time the mock took for it; and never ahead of the host's clock."""
    gpu, space, ring, cls = rig
    n = 32 << 20
    src_va, src = space.alloc(n)
    dst_va, _ = space.alloc(n)
    host_va, host = space.next, np.zeros(n, np.uint8)
    space.vas.map(host_va, host, system=True)
    space.next += n + PAGE
    sem_va, sem = space.alloc(64, np.uint32)
    src[:] = 7

    def stamp(at: int) -> list[int]:
        four = nc.NVC6B5_LAUNCH_DMA_SEMAPHORE_TYPE_RELEASE_FOUR_WORD_SEMAPHORE
        return semaphore(sem_va + at, 1) + copy(0, 0, 0, DATA_TRANSFER_TYPE=0, SEMAPHORE_TYPE=four)
    taken, account = [], gpu.account
    gpu.account = lambda host, board: (taken.append(host), account(host, board))
    start = time.monotonic_ns()
    ring.submit(bind(cls) + stamp(0) + copy(dst_va, src_va, n) + stamp(16) + copy(host_va, src_va, n) + stamp(32))
    # the host time the submit spent outside the copies: the most the clock may move past the board's times (a
    # loaded host, CI's, can stall the mock for milliseconds between two methods)
    outside = time.monotonic_ns() - start - sum(taken) * 1e9
    t = [int(x) for x in sem.view(np.uint64)[[1, 3, 5]]]
    vram, bus = n / gpu.chip.copy_rate * 1e9, n / gpu.chip.bus_rate * 1e9
    assert len(taken) == 2 and vram <= t[1] - t[0] <= vram + outside and bus <= t[2] - t[1] <= bus + outside
    assert host[-1] == 7 and t[2] <= time.monotonic_ns() and not ring.errors
