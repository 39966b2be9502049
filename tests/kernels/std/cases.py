"""The standard-OpenCL corpus: every Case names a kernel of a .cl file in this folder, written with OpenCL C's own
built-in functions (libclc's), its launch, its arguments and a numpy reference. Plain numpy, importable by path;
the Case type and the reference helpers are ../emu/cases.py's.

Approximate math is checked against the accuracy the OpenCL C specification requires (ulp bounds, full profile):
the reference is float64 rounded to float32, so rtol allows the bound plus its half ulp.
"""

import importlib.util
from pathlib import Path

import numpy as np

_spec = importlib.util.spec_from_file_location("emu_cases", Path(__file__).parents[1] / "emu" / "cases.py")
emu = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(emu)
Case, M32, blocks, fma32, i32, ints, rand_i32, rand_u32, u32 = (
    emu.Case, emu.M32, emu.blocks, emu.fma32, emu.i32, emu.ints, emu.rand_i32, emu.rand_u32, emu.u32)

ULP32, ULP64 = 2.0**-23, 2.0**-52  # the largest relative spacing of float32 and float64 values
CASES: list[Case] = []


def case(name: str, kernel: str, grid: tuple, block: tuple, args, reference, **kw) -> None:
    CASES.append(Case(name, f"{name.split('.')[0]}.cl", kernel, grid, block, args, reference, **kw))


# ---- workitem: get_global_id, get_local_id, get_group_id, sizes, offsets, work_dim -----------------------------------

def _ids_ref(a, grid, block):
    shape = tuple(g * b for g, b in zip(grid, block, strict=True))
    z, y, x = np.meshgrid(*(np.arange(n) for n in shape[::-1]), indexing="ij")  # x fastest, as the kernel's p
    (lx, ly, lz), (gx, gy, gz) = (x % block[0], y % block[1], z % block[2]), (x // block[0], y // block[1],
                                                                              z // block[2])
    dims = 3 if shape[2] > 1 else 2 if shape[1] > 1 else 1
    sizes = [block[d] | grid[d] << 16 for d in range(3)] + list(shape) + [dims, 3]
    return [u32(x | y << 8 | z << 16).ravel(), u32(lx | ly << 4 | lz << 8 | gx << 12 | gy << 16 | gz << 20).ravel(),
            np.tile(np.array(sizes, np.uint32), x.size)]


for _grid, _block in (((3, 1, 1), (64, 1, 1)), ((2, 3, 1), (8, 4, 1)), ((2, 2, 3), (4, 2, 2))):
    _n = int(np.prod(_grid) * np.prod(_block))
    case(f"workitem.ids_{len([d for d in _grid if d > 1])}d", "ids", _grid, _block,
         lambda rng, n=_n: [np.zeros(n, np.uint32), np.zeros(n, np.uint32), np.zeros(8 * n, np.uint32)],
         lambda a, g=_grid, b=_block: _ids_ref(a, g, b))


case("workitem.saxpy", "saxpy", (4, 1, 1), (256, 1, 1), emu._saxpy_args, emu._saxpy_ref)  # the builtin corpus's

# ---- math ----------------------------------------------------------------------------------------------------------


def _float_args(rng, n: int, width: int):
    x = emu.log_uniform(rng, n, 0.01, 100.0, signed=True).astype(np.float32)
    return [x, np.float32(rng.uniform(-10, 10, n)), np.zeros(n * width, np.float32)]


def _f32(values: list) -> np.ndarray:
    """Per-work-item results (each computed in float64), interleaved as the kernels store them, rounded once."""
    return np.stack(values, axis=1).astype(np.float32).ravel()


def _exact_ref(a):
    x, y = a[0], a[1]
    return [None, None, np.stack([fma32(x, y, x), np.minimum(x, y), np.maximum(x, y), np.floor(x) + np.ceil(y)],
                                 axis=1).ravel()]


def _ulp4_ref(a):
    x, y = a[0].astype(np.float64), a[1].astype(np.float64)
    ax = np.abs(x)
    return [None, None, _f32([np.sqrt(ax), np.exp(y), np.log(ax), np.sin(x), np.cos(x), 1 / np.sqrt(ax), np.exp2(y),
                              np.log2(ax), np.hypot(x, y)])]


def _ulp16_ref(a):
    x, y = a[0].astype(np.float64), a[1].astype(np.float64)
    return [None, None, _f32([np.tanh(y), np.arctan2(x, y), np.abs(x) ** y])]


case("math.float_exact", "float_exact", *blocks(512, 128), lambda rng: _float_args(rng, 512, 4), _exact_ref)
case("math.float_ulp4", "float_ulp4", *blocks(512, 128), lambda rng: _float_args(rng, 512, 9), _ulp4_ref,
     rtol=4.5 * ULP32)
case("math.float_ulp16", "float_ulp16", *blocks(512, 128), lambda rng: _float_args(rng, 512, 3), _ulp16_ref,
     rtol=16.5 * ULP32)


def _double_ref(a):
    x, y = a[0], a[1]
    return [None, None, np.stack([np.sqrt(np.abs(x)), emu.fma64(x, y, x), np.exp(y), np.log(np.abs(x)), np.sin(x),
                                  np.minimum(x, y) + np.trunc(y)], axis=1).ravel()]


case("math.double_math", "double_math", *blocks(256, 64),
     lambda rng: [emu.log_uniform(rng, 256, 1e-3, 1e3, signed=True), rng.uniform(-20, 20, 256), np.zeros(256 * 6)],
     _double_ref, rtol=5 * ULP64)  # 3 and 4 ulp (exp, log, sin) plus numpy's own rounding; sqrt and fma exact


def _int_math_args(rng):
    a, b = rand_i32(rng, 256), rand_i32(rng, 256)
    a[:6], b[:6] = [-(2**31), 2**31 - 1, 0, -1, 2**31 - 1, -(2**31)], [-1, 1, 0, 33, 2**31 - 1, 1]
    return [a, b, np.zeros(256 * 8, np.int32)]


def _int_math_ref(a):
    rows = []
    for x, y in zip(ints(a[0]), ints(a[1]), strict=True):
        ux, r = x & M32, y & 31
        rows.append([abs(x), (x * y) >> 32, min(max(x + y, -(2**31)), 2**31 - 1),
                     min(max(x - y, -(2**31)), 2**31 - 1), 32 - ux.bit_length(), ux.bit_count(),
                     (ux << r | ux >> (32 - r)) & M32, min(max(x, -1000), 1000) + (x & 0x7FF) * (y & 0x7FF) + 1])
    return [None, None, i32(rows).ravel()]


case("math.int_math", "int_math", *blocks(256, 64), _int_math_args, _int_math_ref)

# ---- lds: barrier(CLK_LOCAL_MEM_FENCE) -----------------------------------------------------------------------------

case("lds.reduce_sum", "reduce_sum", (8, 1, 1), (256, 1, 1),
     lambda rng: [rng.integers(-1000, 1000, 8 * 256).astype(np.int32), np.zeros(8, np.int32), 256 * 4],
     lambda a: [None, a[0].reshape(8, 256).sum(axis=1).astype(np.int32)])
case("lds.transpose", "transpose", (4, 2, 1), (16, 16, 1),
     lambda rng: [rng.standard_normal(32 * 64).astype(np.float32), np.zeros(32 * 64, np.float32), np.uint32(64),
                  np.uint32(32)],
     lambda a: [None, a[0].reshape(32, 64).T.ravel()])
case("lds.histogram", "histogram", (8, 1, 1), (128, 1, 1),
     lambda rng: [rand_u32(rng, 8 * 128), rand_u32(rng, 64) >> 8],
     lambda a: [None, (a[1] + np.bincount(a[0] % 64, minlength=64)).astype(np.uint32)])

# ---- atomics -------------------------------------------------------------------------------------------------------


def _counters_args(rng):
    return [rand_u32(rng, 16 * 256), rand_u32(rng, 21), np.array([2**31 - 1, -(2**31), -1, 0], np.int32)]


def _counters_ref(a):
    v, ctr, mm = a
    w = v.astype(object)
    out = [(int(ctr[k]) + sum(w[k::16])) & M32 for k in range(16)]
    out += [(int(ctr[16]) + len(v)) & M32, (int(ctr[17]) - sum(x & 0xFF for x in w)) & M32,
            int(ctr[18]) & int(np.bitwise_and.reduce(v | np.uint32(0xFFFF0000))),
            int(ctr[19]) | int(np.bitwise_or.reduce(v & np.uint32(0x0F0F0F0F))),
            int(ctr[20]) ^ int(np.bitwise_xor.reduce(v))]
    s = v.view(np.int32)
    return [None, np.array(out, np.uint32),
            i32([min(int(mm[0]), int(s.min())), max(int(mm[1]), int(s.max())), int(v.min()), int(v.max())])]


case("atomics.counters", "counters", (16, 1, 1), (256, 1, 1), _counters_args, _counters_ref)
case("atomics.tickets", "tickets", (16, 1, 1), (64, 1, 1),
     lambda rng: [np.zeros(1, np.uint32), np.zeros(16, np.uint32), np.zeros(1024, np.uint32)],
     lambda a: [np.array([1024], np.uint32), np.arange(16, dtype=np.uint32) * 64 + 1, np.ones(1024, np.uint32)])

# ---- vectors: vloadn / vstoren, swizzles, half storage -------------------------------------------------------------


def _vec_ops_ref(a):
    n = 256
    x, y = a[0].astype(np.float64), a[1].astype(np.float64)
    u, v = x.reshape(n, 4), y.reshape(n, 4)
    p, q = x[: 3 * n].reshape(n, 3), y[: 3 * n].reshape(n, 3)
    first = np.concatenate([u * v + [1, 2, 3, 4], u[:, ::-1] - v[:, [0, 0, 1, 1]]], axis=1)
    tail = np.stack([(p * q).sum(axis=1), u[:, 3] * 0.5], axis=1)
    return [None, None, np.concatenate([first.ravel(), tail.ravel()]).astype(np.float32)]


case("vectors.vec_ops", "vec_ops", *blocks(256, 64),
     lambda rng: [emu.dyadic(rng, 1024, 64, 8), emu.dyadic(rng, 1024, 64, 8), np.zeros(256 * 10, np.float32)],
     _vec_ops_ref)  # dyadic values: every product and the dot product's sum are exact in any order


def _vec_int_ref(a):
    x = a[0].astype(np.int64).reshape(-1, 8)
    lo = x[:, :2]
    add = np.concatenate([lo, lo[:, ::-1], lo * 2, lo - 1], axis=1)
    return [None, i32(x[:, ::-1] + add).ravel()]


case("vectors.vec_int", "vec_int", *blocks(128, 64),
     lambda rng: [rand_i32(rng, 1024), np.zeros(1024, np.int32)], _vec_int_ref)


def _half_ref(a):
    h = a[0].astype(np.float32).reshape(-1, 4)
    with np.errstate(over="ignore"):
        return [None, (h * np.float32(3)).astype(np.float16).ravel(), h.sum(axis=1, dtype=np.float32)]


case("vectors.half_storage", "half_storage", *blocks(256, 64),
     lambda rng: [emu.f16_bounded(rng, 1024, 1 / 16, 64), np.zeros(1024, np.float16), np.zeros(256, np.float32)],
     _half_ref)  # |h| in [2^-4, 2^6]: the sums of four (22 bits at most) and the products by 3 are exact in f32

# ---- convert: convert_<type>[_sat][_rounding], as_<type> -----------------------------------------------------------


def _float_to_int_args(rng):
    special = [np.nan, np.inf, -np.inf, 3e9, -3e9, 2147483520.0, 2**31, -(2**31), 0.5, 1.5, 2.5, -0.5, -1.5, 254.5,
               255.5, 256.0, -1.0, 32767.5, -32768.5, 40000.0, -40000.0, 1e-30, -0.0, 4294967040.0, 5e9, 0.49999997]
    f = np.concatenate([special, rng.uniform(-1e5, 1e5, 118), rng.uniform(-300, 300, 56),
                        rng.uniform(-3e9, 5e9, 56)]).astype(np.float32)
    return [f, np.zeros(256 * 8, np.int32)]


def _float_to_int_ref(a):
    x = a[0].astype(np.float64)
    nan = np.isnan(x)

    def sat(v, lo, hi):  # NaN converts to 0 under _sat
        return np.where(nan, 0, np.clip(np.where(nan, 0, v), lo, hi)).astype(np.int64)

    i_max = 2**31 - 1
    plain = np.where(nan | (np.abs(x) > 2e9), 0, np.trunc(np.where(nan, 0, x))).astype(np.int64)
    cols = [plain, sat(np.trunc(x), -(2**31), i_max), sat(np.rint(x), -(2**31), i_max),
            sat(np.ceil(x), -(2**31), i_max), sat(np.floor(x), -(2**31), i_max), sat(np.trunc(x), 0, 255),
            sat(np.rint(x), -32768, 32767), a[0].view(np.int32).astype(np.int64) ^ sat(np.trunc(x), 0, M32)]
    return [None, i32(np.stack(cols, axis=1).astype(object)).ravel()]


case("convert.float_to_int", "float_to_int", *blocks(256, 64), _float_to_int_args, _float_to_int_ref)


def _int_to_float_args(rng):
    a = rand_i32(rng, 256)
    a[:6] = [-(2**31), 2**31 - 1, 16777217, -16777219, 255, 256]
    return [a, np.zeros(512, np.float32), np.zeros(512, np.uint8)]


def _int_to_float_ref(a):
    x = a[0]
    floats = np.stack([x.astype(np.float32), x.view(np.uint32).astype(np.float32)], axis=1).ravel()
    return [None, floats, np.concatenate([np.clip(x, 0, 255), np.clip(x >> 20, 0, 255)]).astype(np.uint8)]


case("convert.int_to_float", "int_to_float", *blocks(256, 64), _int_to_float_args, _int_to_float_ref)


def _double_to_float_args(rng):
    d = rng.standard_normal(256) * 10.0 ** rng.integers(-30, 30, 256)
    g = np.float32(rng.uniform(1, 1e6, 32))
    d[:32] = (g.astype(np.float64) + np.nextafter(g, np.float32(np.inf)).astype(np.float64)) / 2  # f32 ties
    d[32:38] = [1e39, -1e39, np.inf, -np.inf, np.nan, -0.0]
    return [d, np.zeros(256 * 3, np.float32)]


def _double_to_float_ref(a):
    d = a[0]
    with np.errstate(over="ignore"):
        f = d.astype(np.float32)  # round to nearest even
    rtz = np.where(np.abs(f.astype(np.float64)) > np.abs(d), np.nextafter(f, np.float32(0)), f)
    rtp = np.where(f.astype(np.float64) < d, np.nextafter(f, np.float32(np.inf)), f)
    return [None, np.stack([f, rtz, rtp], axis=1).ravel()]


case("convert.double_to_float", "double_to_float", *blocks(256, 64), _double_to_float_args, _double_to_float_ref)
