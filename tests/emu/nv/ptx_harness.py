"""One small PTX kernel per case, run on the PTX emulator with every lane on its own inputs, each lane's outputs
compared with a host reference (ptx_refs).

A case's body is raw PTX around the instruction under test. The kernel the harness wraps it in gives it:
`%gi` (u32) the thread's linear index over the whole launch, `%i0 %i1 ...` the inputs loaded for that lane
(b16, b32, b64 or pred registers), `%o0 %o1 ...` the outputs stored after it, and `%ga0 %ga1 ...` (u64) the
global address of the lane's element of each input then output buffer (an `mN` slot is N bytes of memory a lane
owns and is not loaded into a register: the body uses its address).

Every run is differential: the launch runs on the reference (numpy) backend and on the native one, which must leave
every buffer the same byte for byte and run the same lane-instructions, or raise the same error with the same
message (`both`).
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import pytest
from ptx_refs import FMT, Expect, bits, round_to

from usergpu.emu.native import build

HEADER = ".version 8.7\n.target {arch}\n.address_size 64\n"
REG = {"b16": (2, np.uint16), "b32": (4, np.uint32), "b64": (8, np.uint64), "pred": (1, np.uint8)}
BACKENDS = ("numpy", "native")  # the reference first: its result and its error are the ones returned and raised
# a test of what only the native backend does (without clang-22 both runs are the reference's)
native_only = pytest.mark.skipif(build.compiler() is None, reason="clang-22 builds the native backend")


@dataclass
class Case:
    name: str
    opcode: str  # the base opcode the case tests
    body: str
    ins: tuple[str, ...]
    outs: tuple[str, ...]
    lanes: list[tuple[int, ...]]  # each lane's inputs (an mN slot: its bytes as a little-endian int)
    ref: Callable  # lane inputs -> one expectation per output; with whole=True, all lanes -> a list of those; with
    # raises, the error -> None (asserting what it says)
    whole: bool = False
    decls: str = ""  # declarations at the top of the kernel body
    module: str = ""  # module-level text before the kernel (device functions, .const/.global variables)
    block: tuple[int, int, int] | None = None  # with grid: the launch shape (lanes must fill it exactly)
    grid: tuple[int, int, int] = (1, 1, 1)
    shared: int = 0  # dynamic shared memory bytes
    arch: str = "sm_90"
    params: list = field(default_factory=list)  # extra kernel parameters after the buffers: (declaration, argument)
    raises: type | None = None  # the error the launch must raise instead of producing outputs


def _size(slot: str) -> int:
    return REG[slot][0] if slot in REG else int(slot[1:])


def kernel(case: Case, name: str = "k") -> str:
    """The case's kernel as PTX text (no module header)."""
    slots = [*case.ins, *case.outs]
    params = ", ".join([f".param .u64 g{i}" for i in range(len(slots))] + [decl for decl, _ in case.params])
    lines = [f".visible .entry {name}({params})", "{", "  .reg .b32 %gi, %gx<8>;", "  .reg .b16 %gh;"]
    lines += [f"  .reg .b64 %ga{i};" for i in range(len(slots))]
    lines += [f"  .reg .{slot} %i{i};" for i, slot in enumerate(case.ins) if slot in REG]
    lines += [f"  .reg .{slot} %o{i};" for i, slot in enumerate(case.outs) if slot in REG]
    lines += ["  " + line for line in case.decls.splitlines() if line.strip()]
    # %gi = ((ctaid.z * nctaid.y + ctaid.y) * nctaid.x + ctaid.x) * threads + (tid.z * ntid.y + tid.y) * ntid.x + tid.x
    lines += [
        "  mov.u32 %gx0, %ctaid.z;", "  mov.u32 %gx1, %nctaid.y;", "  mov.u32 %gx2, %ctaid.y;",
        "  mad.lo.u32 %gx0, %gx0, %gx1, %gx2;", "  mov.u32 %gx1, %nctaid.x;", "  mov.u32 %gx2, %ctaid.x;",
        "  mad.lo.u32 %gx0, %gx0, %gx1, %gx2;", "  mov.u32 %gx1, %ntid.x;", "  mov.u32 %gx2, %ntid.y;",
        "  mul.lo.u32 %gx3, %gx1, %gx2;", "  mov.u32 %gx4, %ntid.z;", "  mul.lo.u32 %gx3, %gx3, %gx4;",
        "  mov.u32 %gx5, %tid.z;", "  mov.u32 %gx6, %tid.y;", "  mad.lo.u32 %gx5, %gx5, %gx2, %gx6;",
        "  mov.u32 %gx6, %tid.x;", "  mad.lo.u32 %gx5, %gx5, %gx1, %gx6;", "  mad.lo.u32 %gi, %gx0, %gx3, %gx5;",
    ]
    for i, slot in enumerate(slots):
        lines += [f"  ld.param.u64 %ga{i}, [g{i}];", f"  cvta.to.global.u64 %ga{i}, %ga{i};",
                  f"  mad.wide.u32 %ga{i}, %gi, {_size(slot)}, %ga{i};"]
    for i, slot in enumerate(case.ins):
        if slot == "pred":
            lines += [f"  ld.global.u8 %gh, [%ga{i}];", f"  setp.ne.u16 %i{i}, %gh, 0;"]
        elif slot in REG:
            lines.append(f"  ld.global.{slot} %i{i}, [%ga{i}];")
    lines += ["  " + line.strip() if not line.strip().endswith(":") else line.strip()
              for line in case.body.splitlines() if line.strip()]
    for j, slot in enumerate(case.outs):
        at = f"%ga{len(case.ins) + j}"
        if slot == "pred":
            lines += [f"  selp.u16 %gh, 1, 0, %o{j};", f"  st.global.u8 [{at}], %gh;"]
        elif slot in REG:
            lines.append(f"  st.global.{slot} [{at}], %o{j};")
    lines += ["  ret;", "}"]
    return "\n".join(lines) + "\n"


def ptx(case: Case) -> str:
    return HEADER.format(arch=case.arch) + case.module + kernel(case)


def shape(case: Case) -> tuple[tuple, tuple, int]:
    """(grid, block, lanes launched): inputs padded with the last lane's up to whole blocks of 128 at most."""
    n = len(case.lanes)
    if case.block is not None:
        total = int(np.prod(case.block)) * int(np.prod(case.grid))
        if total != n:
            raise ValueError(f"{case.name}: {n} lanes for a launch of {total} threads")
        return case.grid, case.block, n
    block = min(128, -(-n // 32) * 32)
    blocks = -(-n // block)
    return (blocks, 1, 1), (block, 1, 1), blocks * block


def _buffer(slot: str, values: list[int]) -> np.ndarray:
    if slot in REG:
        width, dt = REG[slot]
        return np.array([v & ((1 << 8 * width) - 1) for v in values], dtype=dt)
    size = int(slot[1:])
    return np.frombuffer(b"".join(v.to_bytes(size, "little") for v in values), np.uint8).copy()


def _lane_values(slot: str, arr: np.ndarray, n: int) -> list[int]:
    if slot in REG:
        return [int(x) for x in arr[:n]]
    size = int(slot[1:])
    raw = arr.tobytes()
    return [int.from_bytes(raw[i * size:(i + 1) * size], "little") for i in range(n)]


@contextmanager
def backend(name: str) -> Iterator[None]:
    """USERGPU_EMU=name for the launches inside, restored after."""
    old = os.environ.get("USERGPU_EMU")
    os.environ["USERGPU_EMU"] = name
    try:
        yield
    finally:
        if old is None:
            del os.environ["USERGPU_EMU"]
        else:
            os.environ["USERGPU_EMU"] = old


def first_difference(ref: list[np.ndarray], got: list[np.ndarray]) -> str | None:
    """Where two launches' buffers first differ (buffer, element, both values), None where they are the same bytes."""
    for i, (a, b) in enumerate(zip(ref, got, strict=True)):
        x, y = a.reshape(-1), b.reshape(-1)
        bad = np.flatnonzero(x.view(np.uint8) != y.view(np.uint8))
        if len(bad):
            k = int(bad[0]) // a.itemsize
            return (f"buffer {i} ({a.dtype}) element {k}: reference {x[k:k + 1].tobytes().hex()} native "
                    f"{y[k:k + 1].tobytes().hex()} (little-endian bytes)")
    return None


def both(what: str, go: Callable[[dict], list[np.ndarray]], schedule_free: bool = True
         ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """go(stats) (a launch) on the reference and on the native backend: the same error (type and message), raised;
    else both backends' buffers, which must be the same bytes after the same lane-instructions, unless not
    schedule_free (contended compare-and-swap loops: how often a lane retries depends on which lanes run between
    its read and its swap, and the reference runs a batch's warps in lockstep, the native backend one warp at a
    time)."""
    runs = []
    for name in BACKENDS:
        stats: dict = {}
        with backend(name):
            try:
                runs.append((go(stats), stats, None))
            except Exception as e:  # noqa: BLE001 (compared below, then the reference's raised)
                runs.append((None, stats, e))
    (ref, ref_stats, ref_error), (got, got_stats, error) = runs
    assert type(ref_error) is type(error) and str(ref_error) == str(error), (
        f"{what}: reference raised {ref_error!r}, native {error!r}")
    if ref_error is not None:
        raise ref_error
    if schedule_free:
        assert ref_stats.get("lane_instructions") == got_stats.get("lane_instructions"), (
            f"{what}: lane-instructions: reference {ref_stats}, native {got_stats}")
        differs = first_difference(ref, got)
        assert differs is None, f"{what}: {differs}"
    return ref, got


def run(case: Case) -> list[list[int]]:
    """Each lane's outputs after the kernel (buffers of mN inputs after it too: their final memory), the same on
    both backends (`both`)."""
    from usergpu.emu.nv import launch

    grid, block, total = shape(case)
    lanes = case.lanes + [case.lanes[-1]] * (total - len(case.lanes))
    args = [_buffer(slot, [lane[i] for lane in lanes]) for i, slot in enumerate(case.ins)]
    args += [_buffer(slot, [0] * total) for slot in case.outs]
    args += [arg for _, arg in case.params]
    text = ptx(case)
    out, _ = both(case.name, lambda stats: launch(text, "k", grid, block, args, shared=case.shared, stats=stats))
    n = len(case.lanes)
    slots = [*case.ins, *case.outs]
    cols = [_lane_values(slot, arr, n) for slot, arr in zip(slots, out, strict=False)]
    return [[col[k] for col in cols] for k in range(n)]


def _matches(want, got: int, slot: str) -> bool:
    if isinstance(want, Expect):
        return want.ok(got)
    width = 8 * _size(slot) if slot != "pred" else 1
    return (int(want) & ((1 << width) - 1)) == got


def check(case: Case) -> None:
    """Runs the case and asserts every lane's outputs (and final mN input memory) match the reference. A reference
    returns one expectation per output, then optionally one per mN input (its memory after the kernel); None
    accepts anything."""
    if case.raises is not None:

        with pytest.raises(case.raises) as err:
            run(case)
        case.ref(err.value)
        return
    got = run(case)
    want = case.ref(case.lanes) if case.whole else [case.ref(*lane) for lane in case.lanes]
    slots = [*case.outs, *(s for s in case.ins if s not in REG)]
    bad = []
    for k, (lane, w) in enumerate(zip(case.lanes, want, strict=True)):
        w = w if isinstance(w, tuple | list) else (w,)
        outs = got[k][len(case.ins):] + [got[k][i] for i, s in enumerate(case.ins) if s not in REG]
        for j, (e, g, slot) in enumerate(zip(w, outs, slots, strict=False)):
            if e is not None and not _matches(e, g, slot):
                shown = e if isinstance(e, Expect) else f"{int(e) & ((1 << 8 * _size(slot)) - 1):#x}"
                bad.append(f"lane {k}: inputs ({', '.join(f'{x:#x}' for x in lane)}) -> output {j} {g:#x}, "
                           f"expected {shown}")
    lanes = len({line.split(":")[0] for line in bad})
    assert not bad, f"{case.name}: {lanes} of {len(case.lanes)} lanes differ\n" + "\n".join(bad[:12]) + \
        f"\n--- kernel ---\n{case.body}"


# ---- edge values -------------------------------------------------------------------------------------------------
def rng(seed: str) -> random.Random:
    """A generator of its own per use, so one family's values do not move when another's change."""
    return random.Random(seed)


def int_edges(width: int, extra: int = 4) -> list[int]:
    """Register bits at an integer type's edges: 0, small values, both ends of the signed and unsigned ranges,
    alternating bit patterns, and a few random ones."""
    mask = (1 << width) - 1
    top = 1 << (width - 1)
    vals = [0, 1, 2, 3, 7, width - 1, width, mask, mask - 1, top, top - 1, top + 1, 0x5555555555555555 & mask,
            0xAAAAAAAAAAAAAAAA & mask]
    r = rng(f"int{width}")
    vals += [r.getrandbits(width) for _ in range(extra)]
    return list(dict.fromkeys(vals))


def float_edges(fmt: str) -> list[int]:
    """Register bits of a float format's edges: both zeros, the smallest and largest subnormals, the smallest
    normal, one and its neighbours, the largest finite, both infinities, quiet and signalling NaNs (of both signs),
    and a few ordinary values."""
    f = FMT[fmt]
    sign = 1 << (f.width - 1)
    exp_one = ((1 << (f.width - 2 - f.mant)) - 1) << f.mant  # the bits of 1.0
    inf = ((1 << (f.width - 1 - f.mant)) - 1) << f.mant
    quiet = 1 << (f.mant - 1)
    vals = [0, sign, 1, sign | 1, quiet * 2 - 1, sign | (quiet * 2 - 1), 1 << f.mant, sign | 1 << f.mant,
            exp_one, sign | exp_one, exp_one | quiet, exp_one + 1, exp_one - 1, exp_one + (1 << f.mant),
            sign | (exp_one + (1 << f.mant)) | quiet, inf - 1, sign | (inf - 1), inf, sign | inf, inf | quiet,
            sign | inf | quiet | 1, inf | 1]
    vals += [bits(round_to(x, fmt), fmt) for x in (1 / 3, -0.1, 100.0, -1e4, 2.0 ** (f.emin + 1) * 1.25)]
    return list(dict.fromkeys(vals))


def float_randoms(fmt: str, n: int, lo: int = -6, hi: int = 6, seed: str = "") -> list[int]:
    """n random finite values of fmt with exponents in [lo, hi], of both signs."""
    r = rng(f"{fmt}{seed}")
    f = FMT[fmt]
    out = []
    for _ in range(n):
        e = r.randint(max(lo, f.emin), min(hi, f.emax))
        m = r.getrandbits(f.mant)
        x = (1 + m / 2 ** f.mant) * 2.0 ** e * r.choice((1, -1))
        out.append(bits(x, fmt))
    return out
