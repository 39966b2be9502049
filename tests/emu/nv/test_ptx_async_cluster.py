"""sm_90 thread block clusters on the PTX emulator, a State built with the cluster shape or a launch given one: the
cluster special registers; distributed shared memory (mapa, ld/st/atom/red .shared::cluster, and
generic addresses of another CTA's shared memory); barrier.cluster waiting for every thread of the cluster that
has not exited; .reqnctapercluster; batches that are not whole clusters refused. Also cp.async groups seen by
other threads after wait_group and a barrier, and clang-22's PTX for a table of function pointers and cp.async.
Every program assembles with ptxas for sm_90."""

from __future__ import annotations

import numpy as np
import nv_corpus
import pytest

from usergpu.emu.memory import Memory
from usergpu.emu.nv import launch
from usergpu.emu.nv.ptx.executor import execute
from usergpu.emu.nv.ptx.launch import compiled, map_globals, module_of, pack_params
from usergpu.emu.nv.ptx.state import State
from usergpu.errors import GPUFault, GPUHang, LaunchError

HEADER = ".version 8.7\n.target sm_90\n.address_size 64\n"


def run(text: str, grid: tuple, block: tuple, cluster: tuple, args: list, first: int = 0,
        blocks: int | None = None) -> list[np.ndarray]:
    """The kernel k of text on blocks [first, first + blocks) of the grid, in clusters of cluster."""
    module = module_of(text)
    c = compiled(module, "k")
    mem = Memory()
    arrays: list[np.ndarray] = []

    def address_of(a: np.ndarray) -> int:
        arrays.append(np.array(a, copy=True))
        return mem.map(arrays[-1])

    params = pack_params(c.prog, list(args), address_of)
    total = grid[0] * grid[1] * grid[2]
    st = State(c.prog, mem, first, total if blocks is None else blocks, block, grid, params, 0, 132, cluster=cluster)
    st.globals = map_globals(c.prog, mem)
    with np.errstate(all="ignore"):
        execute(c, st)
    return arrays


# each thread's linear index %gi over the launch (blocks of ntid.x threads in x, y, z grid order)
INDEX = """
    mov.u32 %r0, %ctaid.z;
    mov.u32 %r1, %nctaid.y;
    mov.u32 %r2, %ctaid.y;
    mad.lo.u32 %r0, %r0, %r1, %r2;
    mov.u32 %r1, %nctaid.x;
    mov.u32 %r2, %ctaid.x;
    mad.lo.u32 %r0, %r0, %r1, %r2;
    mov.u32 %r1, %ntid.x;
    mov.u32 %r2, %tid.x;
    mad.lo.u32 %gi, %r0, %r1, %r2;
    ld.param.u64 %out, [out];
    cvta.to.global.u64 %out, %out;
"""
REGS = """
    .reg .b32 %r<8>;
    .reg .b32 %gi;
    .reg .b64 %out, %a<4>;
    .reg .pred %p<2>;
"""

SPECIALS = ["%clusterid.x", "%clusterid.y", "%clusterid.z", "%nclusterid.x", "%nclusterid.y", "%nclusterid.z",
            "%cluster_ctaid.x", "%cluster_ctaid.y", "%cluster_ctaid.z", "%cluster_nctaid.x", "%cluster_nctaid.y",
            "%cluster_nctaid.z", "%cluster_ctarank", "%cluster_nctarank"]


def _specials_kernel(directive: str = "") -> str:
    n = len(SPECIALS) + 1
    body = "".join(f"    mov.u32 %r3, {r};\n    st.global.u32 [%a0+{4 * i}], %r3;\n" for i, r in enumerate(SPECIALS))
    return HEADER + f""".visible .entry k(.param .u64 out){directive}
{{{REGS}{INDEX}
    mul.wide.u32 %a0, %gi, {4 * n};
    add.u64 %a0, %out, %a0;
{body}    mov.pred %p0, %is_explicit_cluster;
    selp.u32 %r3, 1, 0, %p0;
    st.global.u32 [%a0+{4 * (n - 1)}], %r3;
    ret;
}}
"""


def _specials_expected(grid: tuple, block: int, cluster: tuple, explicit: int) -> np.ndarray:
    rows = []
    for z in range(grid[2]):
        for y in range(grid[1]):
            for x in range(grid[0]):
                ctaid = (x, y, z)
                cid = [c // k for c, k in zip(ctaid, cluster, strict=True)]
                local = [c % k for c, k in zip(ctaid, cluster, strict=True)]
                rank = local[0] + local[1] * cluster[0] + local[2] * cluster[0] * cluster[1]
                row = [*cid, *(g // k for g, k in zip(grid, cluster, strict=True)), *local, *cluster, rank,
                       cluster[0] * cluster[1] * cluster[2], explicit]
                rows += [row] * block
    return np.array(rows, np.uint32)


def test_cluster_special_registers() -> None:
    grid, cluster = (4, 2, 2), (2, 2, 1)
    n = len(SPECIALS) + 1
    out, = run(_specials_kernel(), grid, (32, 1, 1), cluster, [np.zeros(16 * 32 * n, np.uint32)])
    np.testing.assert_array_equal(out.reshape(-1, n), _specials_expected(grid, 32, cluster, 1))


@pytest.mark.parametrize("cluster", [(3, 1, 1), (2, 2, 1), (1, 2, 2)])
def test_a_launch_in_clusters_runs_batches_of_whole_clusters(cluster) -> None:
    """Blocks of 1,024 threads: a batch holds 16 blocks at most, so a grid of 48 runs in several batches, each of
    whole clusters (runs of whole cluster spans, rows or planes)."""
    grid, n = (6, 4, 2), len(SPECIALS) + 1
    out, = launch(_specials_kernel(), "k", grid, (1024, 1, 1), [np.zeros(48 * 1024 * n, np.uint32)], cluster=cluster)
    np.testing.assert_array_equal(out.reshape(-1, n), _specials_expected(grid, 1024, cluster, 1))


@pytest.mark.parametrize(("grid", "cluster", "arch", "why"), [
    ((6, 1, 1), (4, 1, 1), "sm_90", "is not whole clusters of (4, 1, 1)"),
    ((8, 1, 1), (2, 1, 1), "sm_89", "clusters of (2, 1, 1) blocks need sm_90 or later"),
    ((32, 1, 1), (32, 1, 1), "sm_90", "is 32 blocks, more than 16"),
])
def test_a_launch_refuses_clusters_it_cannot_have(grid, cluster, arch, why) -> None:
    with pytest.raises(LaunchError, match=why.replace("(", r"\(").replace(")", r"\)")):
        launch(_specials_kernel().replace("sm_90", arch), "k", grid, (32, 1, 1), [np.zeros(32 * 32 * 16, np.uint32)],
               arch=arch, cluster=cluster)


def test_reqnctapercluster_is_the_cluster_of_a_launch_without_one() -> None:
    """A kernel compiled with cluster dimensions runs in clusters of them (cudaLaunchKernel gives none)."""
    grid, n = (4, 1, 2), len(SPECIALS) + 1
    out, = run(_specials_kernel("\n.reqnctapercluster 2, 1, 2"), grid, (32, 1, 1), (1, 1, 1),
               [np.zeros(8 * 32 * n, np.uint32)])
    np.testing.assert_array_equal(out.reshape(-1, n), _specials_expected(grid, 32, (2, 1, 2), 1))


DSMEM = HEADER + """.visible .entry k(.param .u64 out)
{
    .shared .align 4 .u32 sm[64];""" + REGS + INDEX + """
    mov.u32 %r3, %tid.x;
    mov.u32 %r4, %cluster_ctarank;
    mov.u32 %r5, %cluster_nctarank;
    mad.lo.u32 %r6, %r4, 1000, %r3;
    mov.u64 %a0, sm;
    cvt.u32.u64 %r7, %a0;
    mad.lo.u32 %r0, %r3, 4, %r7;
    st.shared.u32 [%r0], %r6;
    barrier.cluster.arrive.aligned;
    barrier.cluster.wait.aligned;
    // the next CTA's sm[63 - tid] through a .shared::cluster address
    add.u32 %r1, %r4, 1;
    rem.u32 %r1, %r1, %r5;
    xor.b32 %r2, %r3, 63;
    mad.lo.u32 %r2, %r2, 4, %r7;
    mapa.shared::cluster.u32 %r2, %r2, %r1;
    ld.shared::cluster.u32 %r6, [%r2];
    mul.wide.u32 %a1, %gi, 12;
    add.u64 %a1, %out, %a1;
    st.global.u32 [%a1], %r6;
    // the CTA two ranks on: sm[tid] through a generic address
    add.u32 %r1, %r4, 2;
    rem.u32 %r1, %r1, %r5;
    cvta.shared.u64 %a2, sm;
    mul.wide.u32 %a3, %r3, 4;
    add.u64 %a2, %a2, %a3;
    mapa.u64 %a2, %a2, %r1;
    ld.u32 %r6, [%a2];
    st.global.u32 [%a1+4], %r6;
    getctarank.u64 %r6, %a2;
    st.global.u32 [%a1+8], %r6;
    barrier.cluster.arrive;
    barrier.cluster.wait;
    ret;
}
"""


def test_distributed_shared_memory() -> None:
    grid, size = (8, 1, 1), 4
    out, = run(DSMEM, grid, (64, 1, 1), (size, 1, 1), [np.zeros(8 * 64 * 3, np.uint32)])
    got = out.reshape(8, 64, 3)
    tid = np.arange(64)
    for b in range(8):
        rank = b % size
        np.testing.assert_array_equal(got[b, :, 0], (rank + 1) % size * 1000 + (63 - tid))
        np.testing.assert_array_equal(got[b, :, 1], (rank + 2) % size * 1000 + tid)
        np.testing.assert_array_equal(got[b, :, 2], (rank + 2) % size)


ATOMICS = HEADER + """.visible .entry k(.param .u64 out)
{
    .shared .align 8 .u32 counter[2];""" + REGS + INDEX + """
    mov.u32 %r3, %tid.x;
    setp.eq.u32 %p0, %r3, 0;
    mov.u64 %a0, counter;
    cvt.u32.u64 %r7, %a0;
    @%p0 st.shared.v2.u32 [%r7], {0, 0};
    barrier.cluster.arrive;
    barrier.cluster.wait;
    mapa.shared::cluster.u32 %r0, %r7, 0;
    atom.shared::cluster.add.u32 %r1, [%r0], 1;
    red.shared::cluster.add.u32 [%r0+4], %r3;
    barrier.cluster.arrive;
    barrier.cluster.wait;
    mov.u32 %r4, %cluster_ctarank;
    setp.eq.u32 %p1, %r4, 0;
    and.pred %p0, %p0, %p1;
    mul.wide.u32 %a1, %gi, 12;
    add.u64 %a1, %out, %a1;
    st.global.u32 [%a1], %r1;
    @%p0 ld.shared.v2.u32 {%r5, %r6}, [%r7];
    @%p0 st.global.v2.u32 [%a1+4], {%r5, %r6};
    barrier.cluster.arrive;
    barrier.cluster.wait;
    ret;
}
"""


def test_cluster_atomics_reach_one_cta() -> None:
    """Every thread of a cluster of 3 adds to rank 0's counters: each atom sees a distinct old value."""
    out, = run(ATOMICS, (6, 1, 1), (32, 1, 1), (3, 1, 1), [np.zeros(6 * 32 * 3, np.uint32)])
    got = out.reshape(2, 96, 3)
    for cluster in got:
        assert sorted(cluster[:, 0]) == list(range(96))
        assert cluster[0, 1:].tolist() == [96, 3 * sum(range(32))]


SLOW = HEADER + """.visible .entry k(.param .u64 out)
{
    .shared .align 4 .u32 value;""" + REGS + INDEX + """
    mov.u32 %r4, %cluster_ctarank;
    mov.u64 %a0, value;
    cvt.u32.u64 %r7, %a0;
    setp.ne.u32 %p0, %r4, 1;
    @%p0 bra ARRIVE;
    mov.u32 %r1, 0;
LOOP:
    add.u32 %r1, %r1, 1;
    setp.lt.u32 %p1, %r1, 200;
    @%p1 bra LOOP;
    st.shared.u32 [%r7], %r1;
ARRIVE:
    barrier.cluster.arrive;
    barrier.cluster.wait;
    mapa.shared::cluster.u32 %r0, %r7, 1;
    ld.shared::cluster.u32 %r2, [%r0];
    mul.wide.u32 %a1, %gi, 4;
    add.u64 %a1, %out, %a1;
    st.global.u32 [%a1], %r2;
    barrier.cluster.arrive;
    barrier.cluster.wait;
    ret;
}
"""


def test_cluster_barrier_waits_for_the_slowest_cta() -> None:
    out, = run(SLOW, (4, 1, 1), (32, 1, 1), (2, 1, 1), [np.zeros(4 * 32, np.uint32)])
    assert (out == 200).all()


EXITS = HEADER + """.visible .entry k(.param .u64 out)
{""" + REGS + INDEX + """
    mov.u32 %r4, %cluster_ctarank;
    setp.eq.u32 %p0, %r4, 1;
    @%p0 exit;
    barrier.cluster.arrive;
    barrier.cluster.wait;
    mul.wide.u32 %a1, %gi, 4;
    add.u64 %a1, %out, %a1;
    st.global.u32 [%a1], 7;
    ret;
}
"""


def test_exited_threads_do_not_hold_the_cluster_barrier() -> None:
    out, = run(EXITS, (2, 1, 1), (32, 1, 1), (2, 1, 1), [np.zeros(64, np.uint32)])
    assert out[:32].tolist() == [7] * 32 and out[32:].tolist() == [0] * 32


STUCK = HEADER + """.visible .entry k(.param .u64 out)
{""" + REGS + INDEX + """
    mov.u32 %r4, %cluster_ctarank;
    setp.eq.u32 %p0, %r4, 1;
    @%p0 bar.sync 1, 64;
    barrier.cluster.arrive;
    barrier.cluster.wait;
    ret;
}
"""


def test_a_cluster_barrier_that_never_completes_is_a_hang() -> None:
    with pytest.raises(GPUHang, match="barrier never completes"):
        run(STUCK, (2, 1, 1), (32, 1, 1), (2, 1, 1), [np.zeros(64, np.uint32)])


FAR = HEADER + """.visible .entry k(.param .u64 out)
{
    .shared .align 4 .u32 sm[4];""" + REGS + """
    mov.u64 %a0, sm;
    cvt.u32.u64 %r7, %a0;
    mapa.shared::cluster.u32 %r0, %r7, 2;
    ld.shared::cluster.u32 %r1, [%r0];
    ret;
}
"""


def test_a_rank_outside_the_cluster_is_a_fault() -> None:
    with pytest.raises(GPUFault, match=r"mapa .*CTA rank 2 of a cluster of 2 CTAs.*line 14: mapa"):
        run(FAR, (2, 1, 1), (32, 1, 1), (2, 1, 1), [np.zeros(1, np.uint32)])


def test_clusters_must_be_whole() -> None:
    with pytest.raises(LaunchError, match=r"a grid of \(3, 1, 1\) blocks is not whole clusters of \(2, 1, 1\)"):
        run(EXITS, (3, 1, 1), (32, 1, 1), (2, 1, 1), [np.zeros(96, np.uint32)])
    with pytest.raises(LaunchError, match=r"blocks 0\.\.1 of the grid do not hold whole clusters of \(2, 2, 1\)"):
        run(EXITS, (4, 2, 1), (32, 1, 1), (2, 2, 1), [np.zeros(256, np.uint32)], blocks=2)
    run(EXITS, (4, 2, 1), (32, 1, 1), (2, 2, 1), [np.zeros(256, np.uint32)], blocks=8)


ASYNC = HEADER + """.visible .entry k(.param .u64 out, .param .u64 src)
{
    .shared .align 16 .b8 stage[1024];""" + REGS + INDEX + """
    ld.param.u64 %a0, [src];
    cvta.to.global.u64 %a0, %a0;
    mov.u32 %r3, %tid.x;
    mul.wide.u32 %a1, %gi, 8;
    add.u64 %a1, %a0, %a1;
    mov.u64 %a2, stage;
    cvt.u32.u64 %r7, %a2;
    mad.lo.u32 %r0, %r3, 8, %r7;
    cp.async.ca.shared.global [%r0], [%a1], 4;
    cp.async.commit_group;
    cp.async.ca.shared.global [%r0+4], [%a1+4], 4;
    cp.async.commit_group;
    cp.async.wait_group 1;
    cp.async.wait_group 0;
    bar.sync 0;
    xor.b32 %r1, %r3, 127;
    mad.lo.u32 %r1, %r1, 8, %r7;
    ld.shared.v2.u32 {%r4, %r5}, [%r1];
    mul.wide.u32 %a3, %gi, 8;
    add.u64 %a3, %out, %a3;
    st.global.v2.u32 [%a3], {%r4, %r5};
    ret;
}
"""


def test_cp_async_data_is_seen_by_the_block_after_wait_group_and_a_barrier() -> None:
    src = (np.arange(2 * 256, dtype=np.int64) * 2654435761 % (1 << 32)).astype(np.uint32)
    out, _ = launch(ASYNC, "k", (2, 1, 1), (128, 1, 1), [np.zeros(512, np.uint32), src])
    want = src.reshape(2, 128, 2)[:, ::-1].reshape(-1)
    np.testing.assert_array_equal(out, want)


@pytest.mark.skipif(not nv_corpus.tool("bin/ptxas"), reason="needs ptxas (PyPI nvidia-cuda-nvcc, the nv extra)")
@pytest.mark.parametrize("text", [_specials_kernel(), _specials_kernel("\n.reqnctapercluster 2, 1, 2"), DSMEM,
                                  ATOMICS, SLOW, EXITS, STUCK, FAR, ASYNC], ids=lambda t: t[60:90])
def test_ptxas_accepts(text: str) -> None:
    from usergpu import assemble_ptx

    assemble_ptx(text, "sm_90")


CUDA = r"""
__device__ __noinline__ int twice(int x) { return 2 * x; }
__device__ __noinline__ int square(int x) { return x * x; }
typedef int (*fn_t)(int);
__device__ fn_t table[2] = {twice, square};
extern "C" __global__ void apply(int *out) { int i = threadIdx.x; out[i] = table[i & 1](i); }
extern "C" __global__ void stage(const int *in, int *out) {
  __shared__ int s[128];
  unsigned dst = (unsigned)(unsigned long long)__cvta_generic_to_shared(&s[threadIdx.x]);
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"(dst), "l"(in + threadIdx.x));
  asm volatile("cp.async.commit_group;");
  asm volatile("cp.async.wait_group 0;" ::: "memory");
  __syncthreads();
  out[threadIdx.x] = s[127 - threadIdx.x];
}
"""


@pytest.mark.skipif(not nv_corpus.has_toolchain(), reason="needs clang-22 (Debian) and ptxas (PyPI nvidia-cuda-nvcc)")
def test_clang_function_pointer_table_and_cp_async_run() -> None:
    """What clang-22 makes of a __device__ table of function pointers (a .global initialised with the functions,
    a call through a .callprototype) and of cp.async in inline PTX."""
    import usergpu

    ptx = usergpu.compile_cuda(CUDA, "sm_90")
    out, = launch(ptx, "apply", (1, 1, 1), (8, 1, 1), [np.zeros(8, np.int32)])
    assert out.tolist() == [0, 1, 4, 9, 8, 25, 12, 49]
    src = np.arange(128, dtype=np.int32) * 3
    _, out = launch(ptx, "stage", (1, 1, 1), (128, 1, 1), [src, np.zeros(128, np.int32)])
    assert (out == src[::-1]).all()
