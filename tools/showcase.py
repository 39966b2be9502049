"""The demo's showcase: three kernels (vector add, LDS-tiled matmul, LDS tree reduction) compiled by clang-22 for a
device's ISA — OpenCL C for AMD, and on a CDNA GPU (gfx942, gfx950) a matmul on its matrix cores (MFMA); CUDA C,
assembled by ptxas, for NVIDIA — run on it through the runtime (usergpu.Device) and checked against numpy."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import usergpu
from usergpu.emu.amd import launch as amd_launch
from usergpu.errors import Error
from usergpu.runtime.amd.program import Program

# No device library is linked: work-item ids and barriers are clang builtins.
SOURCE = r"""
#define LID(d) __builtin_amdgcn_workitem_id_##d()
#define GRP(d) __builtin_amdgcn_workgroup_id_##d()

static inline void lds_barrier(void) {  // barrier(CLK_LOCAL_MEM_FENCE)
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}

__kernel void vadd(__global const float *a, __global const float *b, __global float *c, uint n) {
  uint i = GRP(x) * __builtin_amdgcn_workgroup_size_x() + LID(x);
  if (i < n) c[i] = a[i] + b[i];
}

// C = A B for n x n row-major matrices (n a multiple of 16): 16 x 16 tiles of A and B staged in LDS.
#define TS 16
__kernel void matmul(__global const float *A, __global const float *B, __global float *C, uint n) {
  __local float ta[TS][TS], tb[TS][TS];
  uint tx = LID(x), ty = LID(y), col = GRP(x) * TS + tx, row = GRP(y) * TS + ty;
  float acc = 0.0f;
  for (uint k0 = 0; k0 < n; k0 += TS) {
    ta[ty][tx] = A[row * n + k0 + tx];
    tb[ty][tx] = B[(k0 + ty) * n + col];
    lds_barrier();
    for (uint k = 0; k < TS; ++k) acc = __builtin_fmaf(ta[ty][k], tb[k][tx], acc);
    lds_barrier();
  }
  C[row * n + col] = acc;
}

// sums[g] = the sum of workgroup g's 256 values: a tree in LDS, a barrier between levels.
#define RB 256
__kernel void reduce_sum(__global const float *a, __global float *sums) {
  __local float buf[RB];
  uint l = LID(x);
  buf[l] = a[GRP(x) * RB + l];
  lds_barrier();
  for (uint s = RB / 2; s > 0; s >>= 1) {
    if (l < s) buf[l] += buf[l + s];
    lds_barrier();
  }
  if (l == 0) sums[GRP(x)] = buf[0];
}
"""

# C = A B (n x n, n a multiple of 32; f16 in, f32 out) on the matrix cores: a wave per 32 x 32 tile of C, eight
# columns of A and rows of B per v_mfma_f32_32x32x8f16. Lane l holds A's row l % 32 and B's column l % 32 at
# k = 4 (l / 32) + t, and gets C's row 8 (v / 4) + 4 (l / 32) + v % 4 of column l % 32 in accumulator v (CDNA3 ISA,
# the matrix instruction calculator's 32x32x8 layout).
MFMA_SOURCE = r"""
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
typedef half half4 __attribute__((ext_vector_type(4)));
typedef float float16 __attribute__((ext_vector_type(16)));
__kernel void mfma_matmul(__global const half *A, __global const half *B, __global float *C, uint n) {
  uint lane = LID(x), row0 = GRP(y) * 32, col0 = GRP(x) * 32;
  float16 acc = 0;
  for (uint k0 = 0; k0 < n; k0 += 8) {
    half4 a, b;
    for (int t = 0; t < 4; t++) {
      uint k = k0 + 4 * (lane / 32) + t;
      a[t] = A[(row0 + lane % 32) * n + k];
      b[t] = B[k * n + col0 + lane % 32];
    }
    acc = __builtin_amdgcn_mfma_f32_32x32x8f16(a, b, acc, 0, 0, 0);
  }
  for (int v = 0; v < 16; v++)
    C[(row0 + 8 * (v / 4) + 4 * (lane / 32) + v % 4) * n + col0 + lane % 32] = acc[v];
}
"""

# The same three kernels in CUDA C, for an NVIDIA GPU (extern "C": the names stay the OpenCL ones).
CUDA_SOURCE = r"""
extern "C" __global__ void vadd(const float *a, const float *b, float *c, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

#define TS 16
extern "C" __global__ void matmul(const float *A, const float *B, float *C, unsigned n) {
  __shared__ float ta[TS][TS], tb[TS][TS];
  unsigned tx = threadIdx.x, ty = threadIdx.y, col = blockIdx.x * TS + tx, row = blockIdx.y * TS + ty;
  float acc = 0.0f;
  for (unsigned k0 = 0; k0 < n; k0 += TS) {
    ta[ty][tx] = A[row * n + k0 + tx];
    tb[ty][tx] = B[(k0 + ty) * n + col];
    __syncthreads();
    for (unsigned k = 0; k < TS; ++k) acc = __fmaf_rn(ta[ty][k], tb[k][tx], acc);
    __syncthreads();
  }
  C[row * n + col] = acc;
}

#define RB 256
extern "C" __global__ void reduce_sum(const float *a, float *sums) {
  __shared__ float buf[RB];
  unsigned l = threadIdx.x;
  buf[l] = a[blockIdx.x * RB + l];
  __syncthreads();
  for (unsigned s = RB / 2; s > 0; s >>= 1) {
    if (l < s) buf[l] += buf[l + s];
    __syncthreads();
  }
  if (l == 0) sums[blockIdx.x] = buf[0];
}
"""

N = 1 << 16  # vector length and reduction input
M = 128  # matrix side


@dataclass(frozen=True)
class Case:
    """A launch of a SOURCE kernel: arguments made from a random generator (arrays and scalars), the argument that
    holds the result and its numpy reference."""

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: Callable[[np.random.Generator], list]
    out: int
    reference: Callable[[list], np.ndarray]
    rtol: float = 1e-4
    atol: float = 1e-3


def _f32(rng: np.random.Generator, shape) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


CASES = [
    Case("vadd", (N // 256, 1, 1), (256, 1, 1), lambda r: [_f32(r, N), _f32(r, N), np.zeros(N, np.float32),
                                                           np.uint32(N)], 2, lambda a: a[0] + a[1]),
    Case("matmul", (M // 16, M // 16, 1), (16, 16, 1), lambda r: [_f32(r, (M, M)), _f32(r, (M, M)),
                                                                  np.zeros((M, M), np.float32), np.uint32(M)],
         2, lambda a: a[0].astype(np.float64) @ a[1]),
    Case("reduce_sum", (N // 256, 1, 1), (256, 1, 1), lambda r: [_f32(r, N), np.zeros(N // 256, np.float32)], 1,
         lambda a: a[0].astype(np.float64).reshape(-1, 256).sum(axis=1)),
]
MFMA_CASE = Case("mfma_matmul", (M // 32, M // 32, 1), (64, 1, 1),
                 lambda r: [_f32(r, (M, M)).astype(np.float16), _f32(r, (M, M)).astype(np.float16),
                            np.zeros((M, M), np.float32), np.uint32(M)],
                 2, lambda a: a[0].astype(np.float64) @ a[1])
# family -> the matrix-core kernels its ISA has, and their cases
MATRIX = {"gfx94": (MFMA_SOURCE, [MFMA_CASE]), "gfx95": (MFMA_SOURCE, [MFMA_CASE])}


@dataclass
class Result:
    """A case's run: GPU time (seconds), lane-instructions, and the check."""

    case: Case
    ok: bool
    check: str  # "OK", or what failed
    seconds: float = 0.0
    lane_instructions: int | None = None


def run_case(dev: usergpu.Device, prog: Program, co: bytes, case: Case, seed: int = 0) -> Result:
    """Run one case on dev (buffers in, the kernel, the result out) and check it against numpy. A usergpu.Error
    (a fault, a hang, ...) is a failed check."""
    args = case.args(np.random.default_rng(seed))
    bufs = {i: dev.alloc(a.nbytes) for i, a in enumerate(args) if isinstance(a, np.ndarray)}
    try:
        for i, buf in bufs.items():
            buf.copyin(args[i])
        call = [bufs.get(i, a) for i, a in enumerate(args)]
        seconds = prog.kernels[case.kernel](*call, grid=case.grid, block=case.block, wait=True)
        want = args[case.out]
        got = call[case.out].copyout(want.dtype, want.size).reshape(want.shape)
        # the runtime path does not count instructions yet: the same launch once more on the bare emulator does
        stats: dict = {}
        bare_emulator(dev.arch)(co, case.kernel, case.grid, case.block, args, arch=dev.arch, stats=stats)
    except Error as e:
        return Result(case, False, f"FAIL: {e}")
    finally:
        for buf in bufs.values():
            buf.free()
    ref = case.reference(args)
    ok = bool(np.allclose(got, ref, rtol=case.rtol, atol=case.atol))
    check = "OK" if ok else f"FAIL: max error {float(np.max(np.abs(got - ref))):.3g}"
    return Result(case, ok, check, seconds, stats.get("lane_instructions"))


def nvidia(arch: str) -> bool:
    return arch.startswith("sm_")


def bare_emulator(arch: str):
    """The launch of the bare emulator that runs the arch's kernels."""
    from usergpu.emu import nv

    return nv.launch if nvidia(arch) else amd_launch


def code_object(arch: str, extra: str = "") -> bytes:
    """The showcase's kernels for the arch: an AMDGPU code object, or a cubin (clang-22 to PTX, ptxas)."""
    if nvidia(arch):
        return usergpu.assemble_ptx(usergpu.compile_cuda(CUDA_SOURCE, arch), arch)
    return usergpu.compile_opencl(SOURCE + extra, arch)


def run(device: str, cases: list[Case] | None = None) -> tuple[usergpu.Device, list[Result]]:
    """Compile the showcase (and the matrix-core kernels of the device's ISA) for the device, then run and check
    each case there (by default CASES, then the matrix-core ones)."""
    dev = usergpu.Device(device)  # its own: the trace shows this showcase's launches only
    extra, matrix = MATRIX.get(dev.arch[:5], ("", []))
    co = code_object(dev.arch, extra)
    prog = dev.load(co)
    return dev, [run_case(dev, prog, co, c) for c in (CASES + matrix if cases is None else cases)]
