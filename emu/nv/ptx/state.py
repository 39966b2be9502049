"""The threads of a batch of blocks as numpy arrays: registers, program counters, the special registers' values,
and the state spaces (global through Memory; shared per block; local and param per thread), every access
bounds-checked.

A batch's lanes are its blocks' threads, block after block, each block's in linear thread order (x fastest), so
lane // 32 within a block is its warp and lane % 32 its %laneid, as on the hardware.

Blocks form clusters (sm_90) of the cluster shape, (1, 1, 1) when the launch gives none and the kernel has no
.reqnctapercluster; a batch holds whole clusters, so a CTA reaches the shared memory of the others of its cluster
(a .shared::cluster address: CLUSTER_SHARED | rank << RANK_SHIFT | offset) and barrier.cluster waits for them.
"""

from __future__ import annotations

import functools

import numpy as np

from usergpu.emu.memory import Memory, MemoryFault
from usergpu.emu.nv.ptx.program import CLUSTER_SHARED, LOCAL_WINDOW, RANK_SHIFT, SHARED_WINDOW, WINDOW, Program
from usergpu.errors import LaunchError

RUN, BAR, EXIT = 0, 1, 2  # a lane's status
WARP = 32


class LaneFault(Exception):
    """A bad access by one lane (the executor adds the kernel, block, thread and line)."""

    def __init__(self, lane: int, address: int, access: str, why: str):
        self.lane, self.address, self.access, self.why = lane, address, access, why
        super().__init__(f"{access} of {address:#x}: {why}")


@functools.lru_cache(maxsize=64)
def _block_lanes(ntid: tuple[int, int, int], nb: int) -> tuple[np.ndarray, ...]:
    """Each lane's block in a batch of nb blocks of ntid, %tid, %laneid, %warpid and batch-wide warp: the same for
    every batch of that shape (read-only)."""
    per = ntid[0] * ntid[1] * ntid[2]
    linear = np.tile(np.arange(per, dtype=np.int64), nb)
    blk = np.repeat(np.arange(nb, dtype=np.int64), per)
    tid = np.stack([linear % ntid[0], linear // ntid[0] % ntid[1], linear // (ntid[0] * ntid[1])]).astype(np.uint32)
    out = (blk, tid, (linear % WARP).astype(np.uint32), (linear // WARP).astype(np.uint32),
           blk * (-(-per // WARP)) + linear // WARP)
    for a in out:
        a.flags.writeable = False
    return out


@functools.lru_cache(maxsize=256)
def _lanes(ntid: tuple[int, int, int], nctaid: tuple[int, int, int], first: int, nb: int,
           sm_count: int) -> tuple[np.ndarray, ...]:
    """Each lane's block in the batch, %tid, %ctaid, %laneid, %warpid, batch-wide warp and %smid, for the nb blocks
    from number first: they depend on the launch's shape only, so a suite's launches of one shape work them out
    once (read-only)."""
    blk, tid, laneid, warpid, warp = _block_lanes(ntid, nb)
    per = ntid[0] * ntid[1] * ntid[2]
    number = first + np.arange(nb, dtype=np.int64)
    block_ctaid = np.stack([number % nctaid[0], number // nctaid[0] % nctaid[1], number // (nctaid[0] * nctaid[1])]
                           ).astype(np.uint32)
    ctaid = np.repeat(block_ctaid, per, axis=1)
    smid = np.repeat((block_ctaid[0] + block_ctaid[1] * nctaid[0]) % sm_count, per)
    for a in (ctaid, smid):
        a.flags.writeable = False
    return blk, tid, ctaid, laneid, warpid, warp, smid


@functools.lru_cache(maxsize=256)
def _cluster_layout(kernel: str, ntid: tuple[int, int, int], nctaid: tuple[int, int, int], first: int, nb: int,
                    cluster: tuple[int, int, int]) -> tuple[np.ndarray, ...]:
    """Per lane %clusterid, %cluster_ctaid and %cluster_ctarank, per block its cluster's number among the nb blocks
    from number first, and (cluster, rank) -> the block's row: the launch's shape decides them, so they are worked
    out once per shape (read-only)."""
    blk, _, ctaid = _lanes(ntid, nctaid, first, nb, 1)[:3]
    per = ntid[0] * ntid[1] * ntid[2]
    if cluster == (1, 1, 1):  # every block its own cluster: no grouping to work out
        zeros = np.zeros((3, len(blk)), np.uint32)
        out = (ctaid, zeros, zeros[0], np.arange(nb, dtype=np.int64), np.arange(nb, dtype=np.int64)[:, None])
        for a in out:
            a.flags.writeable = False
        return out
    c = np.array(cluster, np.uint32)[:, None]
    block_ctaid = ctaid[:, ::per]
    clusterid, local = block_ctaid // c, block_ctaid % c
    rank = (local[0] + local[1] * cluster[0] + local[2] * cluster[0] * cluster[1]).astype(np.uint32)
    ncl = [n // k for n, k in zip(nctaid, cluster, strict=True)]
    cid = clusterid.astype(np.int64)
    _, number = np.unique(cid[0] + cid[1] * ncl[0] + cid[2] * ncl[0] * ncl[1], return_inverse=True)
    size = cluster[0] * cluster[1] * cluster[2]
    counts = np.bincount(number)
    if (counts != size).any():
        raise LaunchError(f"kernel {kernel}: blocks {first}..{first + nb - 1} of the grid do not hold whole clusters "
                          f"of {cluster} (a batch of blocks must)")
    rows = np.zeros((len(counts), size), np.int64)
    rows[number, rank] = np.arange(nb)
    out = (clusterid[:, blk], local[:, blk], rank[blk], number.astype(np.int64), rows)
    for a in out:
        a.flags.writeable = False
    return out


def cluster_shape(prog: Program, nctaid: tuple[int, int, int], cluster: tuple[int, int, int]) -> tuple[int, int, int]:
    """The launch's cluster shape: the one given, else the kernel's .reqnctapercluster; checked against the grid."""
    if tuple(cluster) == (1, 1, 1) and prog.kernel.directives.get("reqnctapercluster"):
        cluster = (*prog.kernel.directives["reqnctapercluster"], 1, 1)[:3]
    cluster = tuple(int(x) for x in cluster)
    if any(k < 1 or n % k for n, k in zip(nctaid, cluster, strict=True)):
        raise LaunchError(f"kernel {prog.kernel.name}: a grid of {nctaid} blocks is not whole clusters of {cluster}")
    return cluster


class State:
    def __init__(self, prog: Program, mem: Memory, first: int, nb: int, ntid: tuple[int, int, int],
                 nctaid: tuple[int, int, int], params: bytes, dynamic_shared: int, sm_count: int,
                 cluster: tuple[int, int, int] = (1, 1, 1)):
        """The nb blocks from number first (in grid order, x fastest) of a launch of nctaid blocks of ntid, in
        clusters of cluster blocks (each cluster whole among the nb)."""
        self.prog, self.mem = prog, mem
        self.ntid, self.nctaid = ntid, nctaid
        per = ntid[0] * ntid[1] * ntid[2]
        self.n = n = nb * per
        self.per_block = per
        self.blk, self.tid, self.ctaid, self.laneid, self.warpid, self.warp, self.smid = _lanes(
            ntid, nctaid, first, nb, sm_count)
        self.sm_count = sm_count
        self.R: dict[str, np.ndarray] = {}
        self.warp_cleared: frozenset[str] = frozenset()  # registers the executor clears as each warp starts
        self.native = None  # the native backend's view of the arrays (its executor's View)
        self.pc = np.zeros(n, np.int64)
        self.status = np.zeros(n, np.int8)
        self.ret = {name: np.zeros(n, np.int64) for name in prog.entry}
        self.bar_value = np.zeros(n, bool)  # bar.red's predicate, as each lane arrived
        self.bar_site = np.zeros(n, np.int64)  # the barrier instruction each waiting lane is at
        self.bar_id = np.zeros(n, np.int64)
        self.bar_count = np.zeros(n, np.int64)  # the count operand of bar.sync a, b (0: the whole block)
        self.bar_red: dict[int, tuple] = {}  # bar.red's instruction -> (its reduction, its destination)
        self.blocks = nb
        self.p = 0  # the instruction running now
        self.time_ns = 0  # %globaltimer at the launch
        self.globals: dict[str, int] = {}  # module variables' GPU addresses
        self.shared_size = (prog.dynamic_shared_at + dynamic_shared) if dynamic_shared else prog.shared_size
        self.dynamic_shared = dynamic_shared
        self.shared = np.zeros(nb * self.shared_size, np.uint8)
        self.local = np.zeros(n * prog.local_size, np.uint8)
        row = np.zeros(max(prog.param_size, 1), np.uint8)  # each thread's parameter space: the kernel's, then calls'
        row[:len(params)] = np.frombuffer(params, np.uint8)
        self.param = np.tile(row, n)
        # as the launch gives it, for renew where the program writes it (a call's arguments)
        self._param = self.param.copy() if prog.writes_param else None
        self.steps = 0
        self.lane_steps = 0
        self.issued = np.zeros(len(prog.code), np.int64)  # warp-instructions issued at each instruction (PC samples)
        self.site = {name: np.full(n, -1, np.int64) for name in prog.functions.values()}  # indirect call sites
        self.printed: list[bytes] = []  # the lines of printf calls, in the order the threads called
        self.cluster = cluster_shape(prog, nctaid, cluster)
        self.explicit_cluster = self.cluster != (1, 1, 1)
        self.cluster_size = self.cluster[0] * self.cluster[1] * self.cluster[2]
        self.cluster_phase = np.zeros(n, np.int64)  # barrier.cluster.arrive's per thread
        self._cluster_layout(first)

    def renew(self, first: int) -> None:
        """This State as the launch's next batch of as many blocks, from block number first: its arrays cleared in
        place (a new State's are fresh pages, slower to touch than these are to clear). The barrier and return
        arrays are not: a lane writes its entry before anything reads it."""
        self.blk, self.tid, self.ctaid, self.laneid, self.warpid, self.warp, self.smid = _lanes(
            self.ntid, self.nctaid, first, self.blocks, self.sm_count)
        for a in (self.pc, self.status, self.shared, self.local,
                  *(a for key, a in self.R.items() if key not in self.warp_cleared)):
            a.fill(0)
        for a in self.site.values():
            a.fill(-1)
        if self._param is not None:
            np.copyto(self.param, self._param)
        self.bar_red.clear()
        self.p = self.steps = self.lane_steps = 0
        self.issued.fill(0)
        self.printed = []
        if self.native is not None:
            self.native.renewed(self)
        self.cluster_phase = np.zeros(self.n, np.int64)  # (fresh pages: touched only by cluster barriers)
        self._cluster_layout(first)

    def _cluster_layout(self, first: int) -> None:
        (self.clusterid, self.cluster_ctaid, self.cluster_ctarank, self.cluster_of_block,
         self.cluster_rows) = _cluster_layout(self.prog.kernel.name, self.ntid, self.nctaid, first, self.blocks,
                                              self.cluster)

    # ---- registers -------------------------------------------------------------------------------------------
    def register(self, key: str, dtype: np.dtype) -> np.ndarray:
        arr = self.R.get(key)
        if arr is None:
            arr = self.R[key] = np.zeros(self.n, dtype)
        return arr

    # ---- state spaces ----------------------------------------------------------------------------------------
    def _rows(self, space: str, sel) -> tuple[np.ndarray, int, np.ndarray]:
        """(the space's bytes, its size per row, each selected lane's row)"""
        lanes = np.arange(self.n)[sel]
        if space == "shared":
            return self.shared, self.shared_size, self.blk[sel]
        if space == "local":
            return self.local, self.prog.local_size, lanes
        return self.param, max(self.prog.param_size, 1), lanes

    def _check(self, addr: np.ndarray, nbytes: int, size: int, sel, space: str, access: str, window: int) -> None:
        bad = addr + np.uint64(nbytes) > np.uint64(size)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            lane = int(np.arange(self.n)[sel][i])
            raise LaneFault(lane, int(addr[i]) + window, access,
                            f"outside the {size} bytes of {space} memory" + (" of the block" if space == "shared"
                                                                               else " of the thread"))

    def load(self, space: str, addr: np.ndarray, nbytes: int, sel) -> np.ndarray:
        """Bytes at each selected lane's address in space: shape (lanes, nbytes)."""
        addr = np.broadcast_to(np.asarray(addr, np.uint64), (_count(self.n, sel),))
        if space == "generic":
            return self._generic(addr, nbytes, sel, None)
        if space in ("global", "const"):
            return self._global(addr, nbytes, sel, "read")
        buf, size, rows = self._rows(space, sel)
        if space == "shared":
            addr, rows = self.shared_rows(addr, sel, "read")
        self._check(addr, nbytes, size, sel, space, "read", 0)
        flat = rows * size + addr.astype(np.int64)
        return buf[flat[:, None] + np.arange(nbytes)]

    def store(self, space: str, addr: np.ndarray, data: np.ndarray, sel) -> None:
        """Store data (lanes, nbytes) at each selected lane's address; later lanes win where addresses repeat."""
        addr = np.broadcast_to(np.asarray(addr, np.uint64), (_count(self.n, sel),))
        if space == "generic":
            self._generic(addr, data.shape[1], sel, data)
            return
        if space in ("global", "const"):
            try:
                self.mem.write(addr, data)
            except MemoryFault as e:
                raise self._fault(e, addr, sel) from None
            return
        buf, size, rows = self._rows(space, sel)
        if space == "shared":
            addr, rows = self.shared_rows(addr, sel, "write")
        self._check(addr, data.shape[1], size, sel, space, "write", 0)
        flat = rows * size + addr.astype(np.int64)
        buf[flat[:, None] + np.arange(data.shape[1])] = data

    def shared_rows(self, addr: np.ndarray, sel, access: str) -> tuple[np.ndarray, np.ndarray]:
        """(the offset in its CTA's shared memory, that CTA's row) of each selected lane's shared address: its own
        CTA's, or for a .shared::cluster address the CTA of that rank in its cluster."""
        rows = self.blk[sel]
        far = addr >= np.uint64(CLUSTER_SHARED)
        if not far.any():
            return addr, rows
        rank = ((addr >> np.uint64(RANK_SHIFT)) & np.uint64(0x7F)).astype(np.int64)
        out = far & (rank >= self.cluster_size)
        if out.any():
            i = int(np.flatnonzero(out)[0])
            raise LaneFault(int(np.arange(self.n)[sel][i]), int(addr[i]), access,
                            f"a .shared::cluster address of CTA rank {rank[i]}, outside the cluster of "
                            f"{self.cluster_size} CTAs")
        offset = np.where(far, addr & np.uint64((1 << RANK_SHIFT) - 1), addr)
        target = self.cluster_rows[self.cluster_of_block[rows], np.minimum(rank, self.cluster_size - 1)]
        return offset, np.where(far, target, rows)

    def atomic_key(self, space: str, addr: np.ndarray, sel) -> np.ndarray:
        """Per selected lane, a key that two lanes share exactly when their atomics reach the same byte (shared
        memory is per CTA; a .shared::cluster address names another CTA's)."""
        if space not in ("shared", "generic"):
            return addr
        base = np.uint64(SHARED_WINDOW if space == "generic" else 0)
        inside = (addr >= base) & (addr < base + np.uint64(WINDOW))
        offset, rows = self.shared_rows(np.where(inside, addr - base, np.uint64(0)), sel, "atomic")
        return np.where(inside, np.uint64(1 << 63) | (rows.astype(np.uint64) << np.uint64(33)) | offset, addr)

    def _global(self, addr: np.ndarray, nbytes: int, sel, access: str) -> np.ndarray:
        try:
            return self.mem.read(addr, nbytes)
        except MemoryFault as e:
            raise self._fault(e, addr, sel) from None

    def _fault(self, e: MemoryFault, addr: np.ndarray, sel) -> LaneFault:
        i = int(np.flatnonzero(addr == np.uint64(e.address))[0]) if (addr == np.uint64(e.address)).any() else 0
        return LaneFault(int(np.arange(self.n)[sel][i]), e.address, e.access, e.why)

    def _generic(self, addr: np.ndarray, nbytes: int, sel, data: np.ndarray | None):
        """A generic access: each address goes to the window it lies in (shared, local) or to global memory."""
        lanes = np.arange(self.n)[sel]
        out = None if data is not None else np.empty((len(lanes), nbytes), np.uint8)
        for space, base in (("shared", SHARED_WINDOW), ("local", LOCAL_WINDOW), ("global", 0)):
            inside = ((addr >= np.uint64(base)) & (addr < np.uint64(base + WINDOW))) if base else None
            if inside is None:
                inside = ~(((addr >= np.uint64(SHARED_WINDOW)) & (addr < np.uint64(SHARED_WINDOW + WINDOW)))
                           | ((addr >= np.uint64(LOCAL_WINDOW)) & (addr < np.uint64(LOCAL_WINDOW + WINDOW))))
            if not inside.any():
                continue
            sub, a = lanes[inside], addr[inside] - np.uint64(base)
            if data is None:
                out[inside] = self.load(space, a, nbytes, sub)
            else:
                self.store(space, a, data[inside], sub)
        return out


def _count(n: int, sel) -> int:
    return n if isinstance(sel, slice) else len(sel)
