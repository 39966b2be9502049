"""Cases for the sm_80/sm_90 instructions that need no cluster launch: cp.async (every cp-size, src-size with its
zero fill, the ignore-src predicate, .cg, .shared::cta, L2 qualifiers, commit/wait), mapa and getctarank in the
cluster of one CTA every launch without cluster dimensions has, barrier.cluster and the cluster special registers
there; indirect calls through a function's address (mov of a function, a .global table of them, .callprototype
and .calltargets) and a call through an address no function has. tests/emu/nv/test_ptx_async_cluster.py launches
real clusters."""

from __future__ import annotations

import ptx_refs as R
from ptx_harness import Case, rng

from usergpu.errors import GPUFault

SHARED = ".shared .align 16 .b8 sm[2048];\n.reg .b32 %t<4>;\n.reg .pred %q;\n.reg .b64 %s;"
# each lane's 16 bytes of shared memory, filled with ones first so that the zero fill shows
SLOT = """mov.u32 %t0, %tid.x;
mov.u64 %s, sm;
cvt.u32.u64 %t1, %s;
mad.lo.u32 %t1, %t0, 16, %t1;
mov.u32 %t2, -1;
st.shared.v4.b32 [%t1], {%t2, %t2, %t2, %t2};"""
READ = "ld.shared.v4.b32 {%o0, %o1, %o2, %o3}, [%t1];"


def _words(data: bytes) -> tuple[int, ...]:
    return tuple(int.from_bytes(data[i:i + 4], "little") for i in range(0, 16, 4))


def _copied(mem: int, count: int, size: int) -> tuple[int, ...]:
    """What the lane's 16 shared bytes hold after cp.async of size bytes, count of them from mem."""
    src = mem.to_bytes(16, "little")
    return _words(src[:count] + bytes(size - count) + b"\xff" * (16 - size))


def _lanes(size: int, seed: str) -> list[tuple[int, int]]:
    r = rng(seed)
    return [(r.getrandbits(128), k % (size + 1)) for k in range(64)]


def copies() -> list[Case]:
    cases = []
    for size in (4, 8, 16):
        name = f"cp.async.ca.shared.global-{size}-src-size"
        body = f"""{SLOT}
            cp.async.ca.shared.global [%t1], [%ga0], {size}, %i1;
            cp.async.commit_group;
            cp.async.wait_group 0;
            {READ}"""
        cases.append(Case(name, "cp", body, ("m16", "b32"), ("b32",) * 4, _lanes(size, name),
                          lambda mem, n, size=size: (*_copied(mem, n, size), None), decls=SHARED))
    for mnem in ("cp.async.cg.shared.global", "cp.async.ca.shared::cta.global", "cp.async.cg.shared.global.L2::128B",
                 "cp.async.ca.shared.global.L2::256B"):
        body = f"""{SLOT}
            {mnem} [%t1], [%ga0], 16;
            cp.async.wait_all;
            {READ}"""
        cases.append(Case(mnem, "cp", body, ("m16",), ("b32",) * 4, [(m,) for m, _ in _lanes(16, mnem)],
                          lambda mem: (*_copied(mem, 16, 16), None), decls=SHARED))
    body = f"""{SLOT}
        setp.ne.u32 %q, %i1, 0;
        cp.async.ca.shared.global [%t1], [%ga0], 8, %q;
        cp.async.commit_group;
        cp.async.wait_all;
        {READ}"""
    cases.append(Case("cp.async.ca.shared.global-ignore-src", "cp", body, ("m16", "b32"), ("b32",) * 4,
                      [(m, k & 1) for k, (m, _) in enumerate(_lanes(8, "ignore"))],
                      lambda mem, ignore: (*_copied(mem, 0 if ignore else 8, 8), None), decls=SHARED))

    def too_many(err: GPUFault) -> None:
        assert "src-size 17 is more than its cp-size 16" in str(err) and "line" in err.where, err
    cases.append(Case("cp.async-src-size-past-cp-size", "cp", f"""{SLOT}
        cp.async.ca.shared.global [%t1], [%ga0], 16, %i1;""", ("m16", "b32"), (), [(0, 17)] * 32, too_many,
        decls=SHARED, raises=GPUFault))

    def unmapped(err: GPUFault) -> None:
        assert err.address == 0x10 and "line" in err.where, err
    cases.append(Case("cp.async-unmapped-source", "cp", f"""{SLOT}
        mov.u64 %s, 16;
        cp.async.ca.shared.global [%t1], [%s], 4;""", (), (), [()] * 32, unmapped, decls=SHARED, raises=GPUFault))
    return cases


def one_cta_cluster() -> list[Case]:
    """A launch without cluster dimensions: every CTA is the only one of its cluster (rank 0 of 1), so mapa to rank
    0 is the CTA's own shared memory, and barrier.cluster waits for the CTA's threads."""
    regs = ["%clusterid.x", "%clusterid.y", "%nclusterid.x", "%cluster_ctaid.x", "%cluster_nctaid.x",
            "%cluster_nctaid.z", "%cluster_ctarank", "%cluster_nctarank", "%is_explicit_cluster"]
    body = "\n".join(f"mov.{'pred' if r == '%is_explicit_cluster' else 'u32'} %o{i}, {r};"
                     for i, r in enumerate(regs))
    grid, block = (3, 2, 1), (32, 1, 1)
    specials = Case("cluster-special-registers", "mov", body, (), ("b32",) * (len(regs) - 1) + ("pred",), [()] * 192,
                    lambda lanes: [((g // 32) % 3, (g // 96), 3, 0, 1, 1, 0, 1, 0) for g in range(192)], whole=True,
                    block=block, grid=grid)
    mapa = Case("mapa.shared::cluster-own-cta", "mapa", f"""{SLOT}
        mapa.shared::cluster.u32 %t3, %t1, 0;
        st.shared::cluster.u32 [%t3+4], %i0;
        getctarank.shared::cluster.u32 %o1, %t3;
        ld.shared.u32 %o0, [%t1+4];""", ("b32",), ("b32",) * 2, [(v,) for v in range(7, 71)],
        lambda v: (v, 0), decls=SHARED)
    generic = Case("mapa.u64-generic-own-cta", "mapa", f"""{SLOT}
        cvta.shared.u64 %a0, sm;
        mul.wide.u32 %a1, %t0, 16;
        add.u64 %a0, %a0, %a1;
        mapa.u64 %a1, %a0, 0;
        st.u32 [%a1+8], %i0;
        getctarank.u64 %o1, %a1;
        getctarank.u64 %o2, %a0;
        ld.shared.u32 %o0, [%t1+8];""", ("b32",), ("b32",) * 3, [(v * 3,) for v in range(64)],
        lambda v: (v, 0, 0), decls=SHARED + "\n.reg .b64 %a<2>;")
    ranks = Case("getctarank-own-cta", "getctarank", f"""{SLOT}
        getctarank.shared::cluster.u32 %o0, %t1;""", (), ("b32",), [()] * 32, lambda: 0, decls=SHARED)

    def past(err: GPUFault) -> None:
        assert "CTA rank 1 of a cluster of 1 CTAs" in str(err) and "mapa" in err.where, err
    outside = Case("mapa-rank-outside-the-cluster", "mapa", f"""{SLOT}
        mapa.shared::cluster.u32 %t3, %t1, 1;""", (), (), [()] * 32, past, decls=SHARED, raises=GPUFault)
    barrier = Case("barrier.cluster-one-cta", "barrier", """
        mov.u32 %t0, %tid.x;
        mov.u64 %s, sm;
        cvt.u32.u64 %t2, %s;
        mad.lo.u32 %t1, %t0, 4, %t2;
        st.shared.u32 [%t1], %i0;
        barrier.cluster.arrive.release.aligned;
        barrier.cluster.wait.acquire.aligned;
        xor.b32 %t0, %t0, 31;
        mad.lo.u32 %t1, %t0, 4, %t2;
        ld.shared.u32 %o0, [%t1];
        barrier.cluster.arrive.relaxed;
        barrier.cluster.wait;""", ("b32",), ("b32",), [(v * 5 + 1,) for v in range(64)],
        lambda lanes: [((lanes[k ^ 31][0]),) for k in range(len(lanes))], whole=True, decls=SHARED,
        block=(64, 1, 1))
    return [specials, mapa, generic, ranks, outside, barrier]


FUNCTIONS = """
.func (.param .b32 r) twice(.param .b32 a)
{
    .reg .b32 %x;
    ld.param.b32 %x, [a];
    add.s32 %x, %x, %x;
    st.param.b32 [r], %x;
    ret;
}
.func (.param .b32 r) square(.param .b32 a)
{
    .reg .b32 %x;
    ld.param.b32 %x, [a];
    mul.lo.s32 %x, %x, %x;
    st.param.b32 [r], %x;
    ret;
}
.func (.param .b64 r) pair(.param .b32 a, .param .b32 b)
{
    .reg .b32 %x<2>;
    .reg .b64 %y;
    ld.param.b32 %x0, [a];
    ld.param.b32 %x1, [b];
    mov.b64 %y, {%x0, %x1};
    st.param.b64 [r], %y;
    ret;
}
.func bump(.param .b64 p)
{
    .reg .b64 %a;
    .reg .b32 %x;
    ld.param.b64 %a, [p];
    ld.global.u32 %x, [%a];
    add.u32 %x, %x, 1;
    st.global.u32 [%a], %x;
    ret;
}
.global .align 8 .u64 table[2] = {twice, square};
"""
CALL = """{{
    .param .b32 arg;
    st.param.b32 [arg], {value};
    .param .b32 ret;
    {label}
    call (ret), {target}, (arg), {via};
    ld.param.b32 {out}, [ret];
    }}"""
COUNTDOWN = """
.global .align 8 .u64 fp;
.func (.param .b32 r) countdown(.param .b32 a)
{
    .reg .b32 %x;
    .reg .b64 %f;
    .reg .pred %p;
    ld.param.b32 %x, [a];
    setp.eq.u32 %p, %x, 0;
    @%p bra DONE;
    sub.u32 %x, %x, 1;
    ld.global.u64 %f, [fp];
    {
    .param .b32 arg;
    st.param.b32 [arg], %x;
    .param .b32 ret;
    proto : .callprototype (.param .b32 _) _ (.param .b32 _);
    call (ret), %f, (arg), proto;
    ld.param.b32 %x, [ret];
    }
DONE:
    st.param.b32 [r], %x;
    ret;
}
"""
PROTO = "proto : .callprototype (.param .b32 _) _ (.param .b32 _);"


def indirect_calls() -> list[Case]:
    r = rng("call.indirect")
    values = [(r.getrandbits(16), k & 1) for k in range(96)]
    table = Case("call-indirect-global-table", "call", """
        mul.wide.u32 %a1, %i1, 8;
        mov.u64 %a0, table;
        add.u64 %a0, %a0, %a1;
        ld.global.u64 %a0, [%a0];
        """ + CALL.format(value="%i0", label=PROTO, target="%a0", via="proto", out="%o0"),
        ("b32", "b32"), ("b32",), values, lambda v, which: R.wrap(v * v if which else 2 * v, 32),
        decls=".reg .b64 %a<2>;", module=FUNCTIONS)
    moved = Case("call-indirect-mov-calltargets", "call", """
        mov.u64 %a0, twice;
        setp.ne.u32 %p0, %i1, 0;
        @%p0 mov.u64 %a0, square;
        """ + CALL.format(value="%i0", label="targets : .calltargets twice, square;", target="%a0",
                          via="targets", out="%o0") + """
        {
        .param .b32 x;
        .param .b32 y;
        st.param.b32 [x], %o0;
        st.param.b32 [y], %i0;
        .param .b64 r2;
        mov.u64 %a1, pair;
        p2 : .callprototype (.param .b64 _) _ (.param .b32 _, .param .b32 _);
        call (r2), %a1, (x, y), p2;
        ld.param.b64 %a1, [r2];
        }
        mov.b64 {%o1, %o2}, %a1;
        {
        .param .b64 q;
        st.param.b64 [q], %ga2;
        mov.u64 %a1, bump;
        p3 : .callprototype _ (.param .b64 _);
        call %a1, (q), p3;
        }""", ("b32", "b32", "m4"), ("b32",) * 3, [(v, which, v * 7) for v, which in values],
        lambda v, which, m: (R.wrap(v * v if which else 2 * v, 32),) * 2 + (v, m + 1),
        decls=".reg .b64 %a<2>;\n.reg .pred %p0;", module=FUNCTIONS)

    def nothing_there(err: GPUFault) -> None:
        assert err.address == 0x1234 and "no function of the module is at this address" in str(err), err
        assert "call" in str(err) and "line" in err.where, err
    stray = Case("call-indirect-no-function", "call", """
        mov.u64 %a0, 0x1234;
        """ + CALL.format(value="%gi", label=PROTO, target="%a0", via="proto", out="%t0"), (), (), [()] * 32,
        nothing_there, decls=".reg .b64 %a<2>;\n.reg .b32 %t0;", module=FUNCTIONS, raises=GPUFault)

    def recursive(err: GPUFault) -> None:
        assert "countdown is running already in this thread" in str(err) and "line" in err.where, err
    recursion = Case("call-indirect-recursion-refused", "call", """
        mov.u64 %a0, countdown;
        st.global.u64 [fp], %a0;
        {
        .param .b32 arg;
        st.param.b32 [arg], %gi;
        .param .b32 ret;
        call (ret), countdown, (arg);
        ld.param.b32 %t0, [ret];
        }""",
        (), (), [()] * 32, recursive, decls=".reg .b64 %a<2>;\n.reg .b32 %t0;", module=COUNTDOWN, raises=GPUFault)
    return [table, moved, stray, recursion]


def cases() -> list[Case]:
    return copies() + one_cta_cluster() + indirect_calls()
