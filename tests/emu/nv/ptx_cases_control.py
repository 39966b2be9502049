"""Cases for control flow and the thread hierarchy: the special registers over a 3D launch; bra with divergence,
loops of per-lane trip counts and reconvergence; call to device functions (.param passing, early ret, nesting);
ret/exit ending some threads early; trap/brkpt; bar/barrier (sync with and without a count, red.popc/and/or);
membar/fence/nanosleep/pmevent; and the warp instructions shfl.sync (every mode, segment width and clamp),
vote.sync, match.sync, redux.sync and activemask, in whole and in divergent warps."""

from __future__ import annotations

import itertools

import ptx_refs as R
from ptx_harness import Case, rng

from usergpu.errors import GPUFault

WARP = 32


def _warps(lanes: list) -> list[list]:
    return [lanes[i:i + WARP] for i in range(0, len(lanes), WARP)]


def special_registers() -> list[Case]:
    """Every lane of a (2, 3, 2) grid of (8, 4, 2) blocks: %tid, %ntid, %ctaid, %nctaid, %laneid and the lane
    masks exactly; %warpid within %nwarpid (64 warps an SM on sm_90); %smid below %nsmid; %clock64 and
    %globaltimer not going back; %dynamic_smem_size as launched."""
    grid, block = (2, 3, 2), (8, 4, 2)
    per = block[0] * block[1] * block[2]
    n = per * grid[0] * grid[1] * grid[2]
    regs = [f"%{r}.{a}" for r in ("tid", "ntid", "ctaid", "nctaid") for a in "xyz"] + ["%laneid"]
    regs += [f"%lanemask_{m}" for m in ("eq", "lt", "le", "gt", "ge")]
    body = "\n".join(f"mov.u32 %o{i}, {r};" for i, r in enumerate(regs))
    k = len(regs)
    body += f"""
        mov.u32 %o{k}, %warpid;
        mov.u32 %o{k + 1}, %nwarpid;
        mov.u32 %t0, %smid;
        mov.u32 %t1, %nsmid;
        setp.lt.u32 %o{k + 2}, %t0, %t1;
        mov.u64 %c0, %clock64;
        mov.u64 %c2, %globaltimer;
        mov.u32 %t2, %clock;
        mov.u64 %c1, %clock64;
        mov.u64 %c3, %globaltimer;
        setp.ge.u64 %o{k + 3}, %c1, %c0;
        setp.ge.u64 %o{k + 4}, %c3, %c2;
        mov.u32 %o{k + 5}, %dynamic_smem_size;
        mov.u32 %t3, %total_smem_size;
        setp.ge.u32 %o{k + 6}, %t3, 96;"""
    outs = ("b32",) * (k + 2) + ("pred",) * 3 + ("b32", "pred")

    def ref(lanes: list) -> list:
        out = []
        for gi in range(n):
            b, t = divmod(gi, per)
            ctaid = (b % grid[0], b // grid[0] % grid[1], b // (grid[0] * grid[1]))
            tid = (t % block[0], t // block[0] % block[1], t // (block[0] * block[1]))
            lane = t % WARP
            masks = [1 << lane, (1 << lane) - 1, (2 << lane) - 1, R.wrap(~((2 << lane) - 1), 32),
                     R.wrap(~((1 << lane) - 1), 32)]
            out.append((*tid, *block, *ctaid, *grid, lane, *masks, R.OneOf(frozenset(range(64))), 64, 1, 1, 1, 96, 1))
        return out
    return [Case("special-registers", "mov", body, (), outs, [()] * n, ref, whole=True,
                 decls=".reg .b32 %t<4>;\n.reg .b64 %c<4>;", module=".extern .shared .align 16 .b8 dyn[];\n",
                 block=block,
                 grid=grid, shared=96)]


def branches() -> list[Case]:
    r = rng("bra")
    pairs = [(r.getrandbits(32), r.getrandbits(32)) for _ in range(128)]
    cases = [Case("bra-divergent", "bra", """
        setp.lt.u32 %p0, %i0, %i1;
        @%p0 bra TAKEN;
        add.u32 %o0, %i0, 100;
        bra.uni JOIN;
        TAKEN:
        sub.u32 %o0, %i1, %i0;
        JOIN:
        mul.lo.u32 %o1, %o0, 3;""", ("b32", "b32"), ("b32", "b32"), pairs,
        lambda a, b: ((b - a) % 2 ** 32, (b - a) * 3 % 2 ** 32) if a < b else ((a + 100) % 2 ** 32,
                                                                            (a + 100) * 3 % 2 ** 32),
        decls=".reg .pred %p0;")]
    counts = [(k % 41,) for k in range(128)]
    cases.append(Case("bra-loop", "bra", """
        mov.u32 %o0, 0;
        mov.u32 %o1, 0;
        and.b32 %t0, %i0, 63;
        LOOP:
        setp.eq.u32 %p0, %t0, 0;
        @%p0 bra DONE;
        add.u32 %o0, %o0, %t0;
        sub.u32 %t0, %t0, 1;
        @!%p0 add.u32 %o1, %o1, 1;
        bra LOOP;
        DONE:""", ("b32",), ("b32", "b32"), counts, lambda c: (c * (c + 1) // 2, c),
        decls=".reg .pred %p0;\n.reg .b32 %t0;"))
    cases.append(Case("bra-nested", "bra", """
        and.b32 %t0, %i0, 3;
        mov.u32 %o0, 1;
        setp.ne.u32 %p0, %t0, 0;
        @%p0 bra OUTER;
        mov.u32 %o0, 10;
        bra END;
        OUTER:
        setp.eq.u32 %p1, %t0, 1;
        @%p1 bra INNER;
        mul.lo.u32 %o0, %t0, 20;
        bra END;
        INNER:
        mov.u32 %o0, 30;
        END:
        add.u32 %o0, %o0, 1;""", ("b32",), ("b32",), [(k,) for k in range(64)],
        lambda v: {0: 11, 1: 31, 2: 41, 3: 61}[v & 3], decls=".reg .pred %p<2>;\n.reg .b32 %t0;"))
    cases.append(Case("brx.idx", "brx", """
        and.b32 %t0, %i0, 3;
        targets: .branchtargets T0, T1, T2, T3;
        brx.idx %t0, targets;
        T0:
        mov.u32 %o0, 10;
        bra.uni JOIN;
        T1:
        mov.u32 %o0, 11;
        bra.uni JOIN;
        T2:
        mov.u32 %o0, 12;
        bra.uni JOIN;
        T3:
        mov.u32 %o0, 13;
        JOIN:
        add.u32 %o0, %o0, %i0;""", ("b32",), ("b32",), [(r.getrandbits(16),) for _ in range(96)],
        lambda v: 10 + (v & 3) + v, decls=".reg .b32 %t0;"))
    for op in ("ret", "exit"):
        cases.append(Case(f"{op}-early", op, f"""
            and.b32 %t0, %i0, 1;
            setp.eq.u32 %p0, %t0, 0;
            @%p0 {op};
            mov.u32 %o0, 5;""", ("b32",), ("b32",), [(k,) for k in range(96)], lambda v: 5 if v & 1 else 0,
            decls=".reg .pred %p0;\n.reg .b32 %t0;"))
    for op in ("trap", "brkpt"):
        def fault(err: GPUFault, op=op) -> None:
            assert "trap" in str(err) or op in str(err)
            assert "thread (3, 0, 0)" in err.where and "line" in err.where, err.where
        cases.append(Case(f"{op}-faults", op, f"""
            setp.eq.u32 %p0, %gi, 3;
            @%p0 {op};""", (), (), [()] * 32, fault, decls=".reg .pred %p0;", raises=GPUFault))
    return cases


FUNCS = """
.func (.param .b32 r) madd(.param .b32 x, .param .b32 y)
{
    .reg .b32 %a<2>;
    ld.param.b32 %a0, [x];
    ld.param.b32 %a1, [y];
    mad.lo.u32 %a0, %a0, %a1, 7;
    st.param.b32 [r], %a0;
    ret;
}
.func (.param .b64 r) clamp2(.param .b64 x)
{
    .reg .b64 %a<2>;
    .reg .pred %p;
    ld.param.b64 %a0, [x];
    setp.gt.u64 %p, %a0, 1000;
    @%p bra BIG;
    shl.b64 %a0, %a0, 1;
    st.param.b64 [r], %a0;
    ret;
BIG:
    mov.u64 %a1, 99;
    st.param.b64 [r], %a1;
    ret;
}
.func (.param .b32 r) outer(.param .b32 x)
{
    .reg .b32 %a<3>;
    ld.param.b32 %a0, [x];
    {
        .param .b32 p0;
        .param .b32 p1;
        .param .b32 rv;
        st.param.b32 [p0], %a0;
        st.param.b32 [p1], %a0;
        call.uni (rv), madd, (p0, p1);
        ld.param.b32 %a1, [rv];
    }
    add.u32 %a1, %a1, 1;
    st.param.b32 [r], %a1;
    ret;
}
.func store(.param .b64 at, .param .b32 v)
{
    .reg .b64 %a;
    .reg .b32 %b;
    ld.param.b64 %a, [at];
    ld.param.b32 %b, [v];
    st.global.b32 [%a], %b;
    ret;
}
"""


def calls() -> list[Case]:
    """call of device functions: arguments and results through .param, an early ret on one path, a call inside a
    divergent branch, a function calling another, a function without a result writing memory."""
    r = rng("call")
    lanes = [(r.getrandbits(32), r.getrandbits(11)) for _ in range(96)]
    body = """
        {
            .param .b32 p0;
            .param .b32 p1;
            .param .b32 rv;
            st.param.b32 [p0], %i0;
            st.param.b32 [p1], %i1;
            call (rv), madd, (p0, p1);
            ld.param.b32 %o0, [rv];
        }
        cvt.u64.u32 %w0, %i1;
        mov.u64 %o1, 0;
        setp.lt.u32 %p0, %i1, 1500;
        @!%p0 bra SKIP;
        {
            .param .b64 q0;
            .param .b64 qr;
            st.param.b64 [q0], %w0;
            call (qr), clamp2, (q0);
            ld.param.b64 %o1, [qr];
        }
        SKIP:
        {
            .param .b32 s0;
            .param .b32 sr;
            st.param.b32 [s0], %i1;
            call (sr), outer, (s0);
            ld.param.b32 %o2, [sr];
        }
        {
            .param .b64 t0;
            .param .b32 t1;
            st.param.b64 [t0], %ga5;
            st.param.b32 [t1], %i0;
            call store, (t0, t1);
        }"""

    def ref(a: int, b: int):
        return (R.wrap(a * b + 7, 32), (99 if b > 1000 else 2 * b) if b < 1500 else 0, R.wrap(b * b + 8, 32), a)
    return [Case("call-functions", "call", body, ("b32", "b32"), ("b32", "b64", "b32", "m4"), lanes, ref,
                 decls=".reg .b64 %w0;\n.reg .pred %p0;", module=FUNCS)]


# ---- barriers and fences -----------------------------------------------------------------------------------------
BARRIER_DECLS = ".shared .align 4 .b32 sm[128];\n.reg .b32 %t<2>;\n.reg .b64 %a<3>;"


def _exchange(barrier: str) -> str:
    return f"""
        mov.u32 %t0, %tid.x;
        mov.u64 %a0, sm;
        mul.wide.u32 %a1, %t0, 4;
        add.u64 %a1, %a0, %a1;
        st.shared.b32 [%a1], %i0;
        {barrier}
        sub.u32 %t1, 127, %t0;
        mul.wide.u32 %a2, %t1, 4;
        add.u64 %a2, %a0, %a2;
        ld.shared.b32 %o0, [%a2];"""


def barriers() -> list[Case]:
    """A value written to shared memory by each thread is read by another (of another warp) after the barrier;
    bar.red gives every thread of the block the population count, and or or of the predicate."""
    r = rng("bar")
    lanes = [(r.getrandbits(32),) for _ in range(256)]

    def mirrored(ls: list) -> list:
        return [(ls[k - k % 128 + 127 - k % 128][0],) for k in range(len(ls))]
    cases = []
    for op, barrier in (("bar", "bar.sync 0;"), ("barrier", "barrier.sync 0;"), ("barrier", "barrier.sync.aligned 1;"),
                        ("bar", "bar.sync 2, 128;"), ("bar", "bar.cta.sync 3;")):
        cases.append(Case(barrier.rstrip(";"), op, _exchange(barrier), ("b32",), ("b32",), lanes, mirrored,
                          whole=True, decls=BARRIER_DECLS))
    preds = [(int(r.random() < 0.3), int(k % 128 != 77), int(k == 200)) for k in range(256)]

    def reduced(ls: list) -> list:
        out = []
        for k in range(len(ls)):
            blk = ls[k - k % 128:k - k % 128 + 128]
            out.append((sum(p[0] for p in blk), all(p[1] for p in blk), any(p[2] for p in blk)))
        return out
    for op in ("bar", "barrier"):
        cases.append(Case(f"{op}.red", op, f"""
            {op}.red.popc.u32 %o0, 0, %i0;
            {op}.red.and.pred %o1, 1, %i1;
            {op}.red.or.pred %o2, 2, %i2;""", ("pred",) * 3, ("b32", "pred", "pred"), preds, reduced, whole=True))
    cases.append(Case("bar.warp.sync", "bar", "bar.warp.sync 0xffffffff;\nmov.b32 %o0, %i0;", ("b32",), ("b32",),
                      lanes[:64], lambda v: v))
    fences = ["membar.cta;", "membar.gl;", "membar.sys;", "fence.sc.cta;", "fence.acq_rel.gpu;", "fence.sc.sys;",
              "nanosleep.u32 10;", "nanosleep.u32 %i0;", "pmevent 1;"]
    for fence in fences:
        op = fence.split(".")[0].split(" ")[0].rstrip(";")
        cases.append(Case(fence.rstrip(";").replace(" ", "-"), op, f"""
            st.global.b32 [%ga1], %i0;
            {fence}
            ld.global.b32 %o0, [%ga1];""", ("b32",), ("b32",), [(v & 0xFFF,) for (v,) in lanes[:64]],
            lambda v: v))
    return cases


# ---- warp instructions -------------------------------------------------------------------------------------------
def shuffles() -> list[Case]:
    """shfl.sync in each mode, the lane (or offset) an immediate or per lane, c as CUDA's __shfl_*_sync pass it
    for segments of 32, 16 and 8 lanes (and some odd ones), with the predicate of whether the source lane was in
    range (PTX ISA shfl.sync pseudocode)."""
    r = rng("shfl")
    cases = []
    values = [r.getrandbits(32) for _ in range(128)]
    for mode in ("up", "down", "bfly", "idx"):
        cs = [((32 - w) << 8) | (0 if mode == "up" else 0x1F) for w in (32, 16, 8)] + [0x1F, 0x0, 0x1C03, 0x0810]
        cs = list(dict.fromkeys(cs))
        for c, b in itertools.product(cs, ("1", "5", "16", "%i1")):
            lanes = [(v, r.getrandbits(6)) for v in values]
            name = f"shfl.sync.{mode}.b32-b{b.strip('%')}-c{c:#x}"

            def ref(ls: list, mode=mode, c=c, b=b) -> list:
                out = []
                for k, (_, lb) in enumerate(ls):
                    base = k - k % WARP
                    j, ok = R.shfl(mode, k % WARP, lb if b == "%i1" else int(b), c)
                    out.append((ls[base + j][0], int(ok)))
                return out
            cases.append(Case(name, "shfl", f"shfl.sync.{mode}.b32 %o0|%o1, %i0, {b}, {c:#x}, 0xffffffff;",
                              ("b32", "b32"), ("b32", "pred"), lanes, ref, whole=True))
    return cases


def votes() -> list[Case]:
    """vote.sync all/any/uni (and ballot, of the predicate and of its negation), in whole warps and in the lower
    half of warps that diverged (membermask 0xffff); activemask there; match.any/all and redux.sync likewise."""
    r = rng("vote")
    patterns = [[1] * 32, [0] * 32, [int(r.random() < 0.5) for _ in range(32)], [int(k == 7) for k in range(32)]]
    lanes = [(p,) for pat in patterns for p in pat]

    def votes_ref(ls: list) -> list:
        out = []
        for warp in _warps(ls):
            ps = [p for (p,) in warp]
            ballot = sum(p << k for k, p in enumerate(ps))
            out += [(int(all(ps)), int(any(ps)), int(len(set(ps)) == 1), ballot, R.wrap(~ballot, 32))] * WARP
        return out
    cases = [Case("vote.sync", "vote", """
        vote.sync.all.pred %o0, %i0, 0xffffffff;
        vote.sync.any.pred %o1, %i0, 0xffffffff;
        vote.sync.uni.pred %o2, %i0, 0xffffffff;
        vote.sync.ballot.b32 %o3, %i0, 0xffffffff;
        vote.sync.ballot.b32 %o4, !%i0, 0xffffffff;""", ("pred",), ("pred",) * 3 + ("b32", "b32"), lanes,
        votes_ref, whole=True)]

    def half_ref(ls: list) -> list:
        out = []
        for warp in _warps(ls):
            ps = [p for (p,) in warp[:16]]
            ballot = sum(p << k for k, p in enumerate(ps))
            out += [(ballot, int(all(ps)), 0xFFFF)] * 16 + [(0, 0, 0)] * 16
        return out
    cases.append(Case("vote.sync-divergent", "vote", """
        mov.u32 %o0, 0;
        mov.pred %o1, 0;
        mov.u32 %o2, 0;
        mov.u32 %t0, %laneid;
        setp.lt.u32 %p0, %t0, 16;
        @!%p0 bra SKIP;
        vote.sync.ballot.b32 %o0, %i0, 0x0000ffff;
        vote.sync.all.pred %o1, %i0, 0x0000ffff;
        activemask.b32 %o2;
        SKIP:""", ("pred",), ("b32", "pred", "b32"), lanes, half_ref, whole=True,
        decls=".reg .b32 %t0;\n.reg .pred %p0;"))
    cases.append(Case("activemask", "activemask", """
        mov.u32 %o0, 0;
        and.b32 %t0, %i0, 3;
        setp.eq.u32 %p0, %t0, 1;
        @!%p0 bra SKIP;
        activemask.b32 %o0;
        SKIP:""", ("b32",), ("b32",), [(r.getrandbits(8),) for _ in range(128)],
        lambda ls: [(sum(1 << j for j, (v,) in enumerate(w) if v & 3 == 1) if v & 3 == 1 else 0,)
                    for w in _warps(ls) for (v,) in w], whole=True, decls=".reg .b32 %t0;\n.reg .pred %p0;"))
    for w in (32, 64):
        small = [r.choice((5, 9, 1 << (w - 1))) for _ in range(96)] + [42] * 32
        mlanes = [(v,) for v in small]

        def match_ref(ls: list) -> list:
            out = []
            for warp in _warps(ls):
                vals = [v for (v,) in warp]
                same = len(set(vals)) == 1
                for v in vals:
                    out.append((sum(1 << j for j, x in enumerate(vals) if x == v), 0xFFFFFFFF if same else 0,
                                int(same)))
            return out
        cases.append(Case(f"match.sync.b{w}", "match", f"""
            match.any.sync.b{w} %o0, %i0, 0xffffffff;
            match.all.sync.b{w} %o1|%o2, %i0, 0xffffffff;""", (f"b{w}",), ("b32", "b32", "pred"), mlanes,
            match_ref, whole=True))
    values = [r.getrandbits(32) for _ in range(96)] + [0x80000000 + k for k in range(32)]
    reduce = {"add": lambda xs: sum(xs), "min": min, "max": max, "and": lambda xs: _fold(xs, int.__and__),
              "or": lambda xs: _fold(xs, int.__or__), "xor": lambda xs: _fold(xs, int.__xor__)}
    for op, t in [("add", "u32"), ("add", "s32"), ("min", "u32"), ("min", "s32"), ("max", "u32"), ("max", "s32"),
                  ("and", "b32"), ("or", "b32"), ("xor", "b32")]:
        def redux_ref(ls: list, op=op, t=t) -> list:
            out = []
            for warp in _warps(ls):
                vals = [R.as_value(v, t) if t != "b32" else v for (v,) in warp]
                full = R.wrap(reduce[op](vals), 32)
                half = R.wrap(reduce[op](vals[:16]), 32)
                out += [(full, half)] * 16 + [(full, 0)] * 16
            return out
        cases.append(Case(f"redux.sync.{op}.{t}", "redux", f"""
            redux.sync.{op}.{t} %o0, %i0, 0xffffffff;
            mov.u32 %o1, 0;
            mov.u32 %t0, %laneid;
            setp.lt.u32 %p0, %t0, 16;
            @%p0 redux.sync.{op}.{t} %o1, %i0, 0x0000ffff;""", ("b32",), ("b32", "b32"), [(v,) for v in values],
            redux_ref, whole=True, decls=".reg .b32 %t0;\n.reg .pred %p0;"))
    return cases


def _fold(xs: list, fn) -> int:
    acc = xs[0]
    for x in xs[1:]:
        acc = fn(acc, x)
    return acc


def cases() -> list[Case]:
    return special_registers() + branches() + calls() + barriers() + shuffles() + votes()
