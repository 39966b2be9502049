"""The NVIDIA hardware check: `python -m usergpu.tools.hwcheck.nv [--dev NVK+NV|MOCK+NV] [--json]`.

For a machine with an NVIDIA GPU and its kernel driver loaded (written for Hopper, runs on any GPU the driver
serves), and the same script on MOCK+NV in CI. It needs only what is copied with the project (python3, numpy, the
usergpu tree; msgpack, which its code-object readers import): the kernels are the cubins shipped in
tests/data/nv/hwcheck, never compiled here. It is safe on a
shared machine: it opens the GPU as any CUDA program does and resets nothing, changes no clock, power limit or
persistence mode. One line per check, PASS or FAIL with its figures; the exit status is 1 when any check failed.
"""

from __future__ import annotations

import hashlib
import math
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import usergpu
from usergpu.tools.common import BadArgument, Parser, guarded, input_dir, positive, seconds
from usergpu.tools.hwcheck import Measured, Mismatch, Report

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "nv" / "hwcheck"
ARCHS = ("sm_86", "sm_89", "sm_90", "sm_100", "sm_120")  # the cubins shipped: Ampere, Ada, Hopper, Blackwell
KERNELS = ("hwcheck_vadd", "hwcheck_matmul", "hwcheck_reduce", "hwcheck_empty", "hwcheck_store")
DEVICES = ("NVK+NV", "MOCK+NV", "NV")
BLOCK = 256  # threads of a vadd block and of a reduce block (hwcheck.cu's REDUCE_BLOCK)
TILE = 16  # hwcheck.cu's TILE
VADD_N = (1 << 20) + 7  # 4 MiB a vector: copied in and out through the copy engine; a partial last block
MATMUL_MNK = (136, 120, 72)  # not multiples of the tile, so the padded edges are checked too
REDUCE_N = (1 << 20) + 123
RECOVERY_N = 4099
FAULT_VA = 0x1000  # in the GPU's first page, which no driver maps
SEED = 20


def cubin_path(folder: Path, arch: str) -> Path:
    return Path(folder) / f"hwcheck-{arch}.cubin"


def device_string(text: str) -> str:
    """An NVIDIA device string: NVK+NV, MOCK+NV or NV, with an optional :index (argparse type)."""
    name, _, index = text.partition(":")
    if name.upper() not in DEVICES or not (index or "0").isdigit():
        raise BadArgument(f"{text!r}: the check runs on {', '.join(DEVICES)} (optionally :INDEX)")
    return text


def _hash(data) -> str:
    return hashlib.blake2b(memoryview(data).cast("B"), digest_size=16).hexdigest()


def _mbps(nbytes: int, secs: float) -> float:
    return nbytes / secs / 1e6 if secs > 0 else math.inf


def _us(secs: float) -> float:
    return round(secs * 1e6, 2)


def _same(what: str, got: np.ndarray, want: np.ndarray) -> None:
    """Mismatch unless got equals want exactly (every input is chosen so that the exact result is representable)."""
    if got.shape != want.shape:
        raise Mismatch(f"{what}: {got.shape} values came back, {want.shape} expected")
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    bad = np.flatnonzero(diff)
    if bad.size:
        i = bad[0]
        raise Mismatch(f"{what}: {bad.size} of {got.size} values differ from numpy's (first at [{i}]: {got.flat[i]} "
                       f"!= {want.flat[i]}; largest difference {diff.max():g})")


class NVCheck:
    def __init__(self, args):
        self.args = args
        self.rng = np.random.default_rng(SEED)

    def open(self) -> Measured:
        dev = usergpu.Device(self.args.dev, timeout=self.args.timeout)
        drv = dev.driver
        return Measured(f"{dev.name}:{dev.index}: {drv.name}, {dev.arch}, {drv.memory_size / 2**30:.1f} GiB, "
                        f"driver {drv.abi.describe()}",
                        {"interface": dev.name, "index": dev.index, "chip": drv.name, "arch": dev.arch,
                         "memory_bytes": drv.memory_size, "driver_release": drv.release,
                         "bindings": drv.abi.modules}, dev)

    def memory(self, dev) -> Measured:
        """A buffer of each kind, written and read by the CPU through its mapping."""
        figures = {}
        for kind in ("vram", "gtt"):
            buf = dev.alloc(1 << 20, kind)
            try:
                if buf.va % 4096:
                    raise Mismatch(f"{kind} buffer at {buf.va:#x}: not page aligned")
                pattern = self.rng.integers(0, 1 << 32, 1 << 18, dtype=np.uint32)
                buf.copyin(pattern)
                _same(f"{kind} buffer read back", buf.copyout(np.uint32), pattern)
                figures[f"{kind}_va"] = buf.va
            finally:
                buf.free()
        return Measured(f"vram at {figures['vram_va']:#x}, gtt at {figures['gtt_va']:#x}: 1 MiB each written and "
                        "read back through the CPU mapping", figures)

    def load(self, dev) -> Measured:
        path = cubin_path(self.args.cubins, dev.arch)
        if not path.is_file():
            built = sorted(p.stem.removeprefix("hwcheck-") for p in Path(self.args.cubins).glob("hwcheck-*.cubin"))
            raise Mismatch(f"no cubin for {dev.arch}: {path} is missing (built: {', '.join(built) or 'none'}; "
                           "tests/data/nv/hwcheck/build.py makes them)")
        data = path.read_bytes()
        prog = dev.load(data)
        kernels = {name: prog.kernel(name) for name in KERNELS}
        return Measured(f"{path.name}: {len(data)} bytes, blake2b {_hash(data)}, {len(kernels)} kernels",
                        {"cubin": str(path), "bytes": len(data), "blake2b": _hash(data)}, kernels)

    def copy(self, dev) -> Measured:
        """The big buffer host -> device -> host through the copy engine, hashed both ways."""
        n = self.args.copy_mib << 20
        data = np.frombuffer(self.rng.bytes(n), np.uint8)
        want = _hash(data)
        buf = dev.alloc(n)
        t0 = time.perf_counter()
        buf.copyin(data)
        t1 = time.perf_counter()
        back = buf.copyout(np.uint8, n)
        t2 = time.perf_counter()
        got = _hash(back)
        if got != want:
            buf.free()
            raise Mismatch(f"{n >> 20} MiB round trip: blake2b {got} came back for {want} ("
                           f"{np.count_nonzero(back != data)} bytes differ)")
        h2d, d2h = _mbps(n, t1 - t0), _mbps(n, t2 - t1)
        return Measured(f"{n >> 20} MiB host->device {h2d:.0f} MB/s, device->host {d2h:.0f} MB/s, blake2b {want}",
                        {"bytes": n, "h2d_MBps": round(h2d, 1), "d2h_MBps": round(d2h, 1), "blake2b": want},
                        (buf, want))

    def dma(self, dev, copied) -> Measured:
        """The big buffer device -> device on the copy engine, hashed."""
        src, want = copied
        dst = dev.alloc(src.size)
        try:
            t0 = time.perf_counter()
            dev.dma_copy(dst.va, src.va, src.size)
            secs = time.perf_counter() - t0
            got = _hash(dst.copyout(np.uint8, src.size))
        finally:
            dst.free()
            src.free()
        if got != want:
            raise Mismatch(f"device->device copy of {src.size >> 20} MiB: blake2b {got}, {want} expected")
        return Measured(f"{src.size >> 20} MiB device->device {_mbps(src.size, secs):.0f} MB/s, blake2b {got}",
                        {"bytes": src.size, "d2d_MBps": round(_mbps(src.size, secs), 1), "blake2b": got})

    def _vadd(self, dev, k, n: int) -> Measured:
        a = self.rng.standard_normal(n, np.float32)
        b = self.rng.standard_normal(n, np.float32)
        bufs = [dev.alloc(4 * n) for _ in range(3)]
        try:
            bufs[0].copyin(a)
            bufs[1].copyin(b)
            secs = k(*bufs, np.uint32(n), grid=(-(-n // BLOCK), 1, 1), block=(BLOCK, 1, 1))
            _same(f"vadd of {n}", bufs[2].copyout(np.float32, n), a + b)
        finally:
            for buf in bufs:
                buf.free()
        return Measured(f"n={n}: equals numpy, GPU {secs * 1e6:.1f} µs", {"n": n, "gpu_us": _us(secs)})

    def vadd(self, dev, kernels) -> Measured:
        return self._vadd(dev, kernels["hwcheck_vadd"], VADD_N)

    def matmul(self, dev, kernels) -> Measured:
        m, n, kk = MATMUL_MNK
        a = self.rng.integers(-4, 5, (m, kk)).astype(np.float32)  # small integers: every sum is exact in fp32
        b = self.rng.integers(-4, 5, (kk, n)).astype(np.float32)
        bufs = [dev.alloc(a.nbytes), dev.alloc(b.nbytes), dev.alloc(4 * m * n)]
        try:
            bufs[0].copyin(a)
            bufs[1].copyin(b)
            secs = kernels["hwcheck_matmul"](*bufs, np.uint32(m), np.uint32(n), np.uint32(kk),
                                             grid=(-(-n // TILE), -(-m // TILE), 1), block=(TILE, TILE, 1))
            _same(f"matmul {m}x{kk} @ {kk}x{n}", bufs[2].copyout(np.float32, m * n).reshape(m, n), a @ b)
        finally:
            for buf in bufs:
                buf.free()
        return Measured(f"{m}x{kk} @ {kk}x{n} (16x16 shared-memory tiles): equals numpy, GPU {secs * 1e6:.1f} µs",
                        {"m": m, "n": n, "k": kk, "gpu_us": _us(secs)})

    def reduce(self, dev, kernels) -> Measured:
        n, per_block = REDUCE_N, 2 * BLOCK
        blocks = -(-n // per_block)
        x = self.rng.integers(0, 1 << 16, n, dtype=np.uint32)
        want = np.pad(x, (0, blocks * per_block - n)).reshape(blocks, per_block).sum(axis=1, dtype=np.uint32)
        src, out = dev.alloc(x.nbytes), dev.alloc(4 * blocks)
        try:
            src.copyin(x)
            secs = kernels["hwcheck_reduce"](src, out, np.uint32(n), grid=(blocks, 1, 1), block=(BLOCK, 1, 1))
            _same(f"reduction of {n} in {blocks} blocks", out.copyout(np.uint32, blocks), want)
        finally:
            src.free()
            out.free()
        total = int(want.sum(dtype=np.uint64))
        return Measured(f"n={n} in {blocks} blocks (shared-memory tree): sum {total} equals numpy, "
                        f"GPU {secs * 1e6:.1f} µs", {"n": n, "blocks": blocks, "sum": total, "gpu_us": _us(secs)})

    def latency(self, dev, kernels) -> Measured:
        """Wall clock and GPU time of launches of an empty kernel, each waited for."""
        k = kernels["hwcheck_empty"]
        k(grid=(1, 1, 1), block=(32, 1, 1))  # the first launch may pay for what later ones find ready
        walls, gpus = [], []
        for _ in range(self.args.launches):
            t0 = time.perf_counter()
            gpus.append(k(grid=(1, 1, 1), block=(32, 1, 1)))
            walls.append(time.perf_counter() - t0)
        starts = [s.start for s in dev.spans()[-self.args.launches:]]
        if not all(math.isfinite(g) and g >= 0 for g in gpus):
            raise Mismatch(f"GPU times of empty launches are not all >= 0: {sorted(gpus)[:3]}...")
        if starts != sorted(starts):
            raise Mismatch("the GPU's start timestamps of successive launches go backwards")
        fig = {"launches": len(walls), "wall_median_us": _us(statistics.median(walls)), "wall_min_us": _us(min(walls)),
               "wall_max_us": _us(max(walls)), "gpu_median_us": _us(statistics.median(gpus))}
        return Measured(f"{len(walls)} empty launches, waited: wall median {fig['wall_median_us']} µs (min "
                        f"{fig['wall_min_us']}, max {fig['wall_max_us']}), GPU median {fig['gpu_median_us']} µs", fig)

    def fault(self, dev, kernels) -> Measured:
        """A store to an unmapped address: a GPUFault with that address and the kernel's name."""
        try:
            kernels["hwcheck_store"](FAULT_VA, np.uint32(0xDEAD), grid=(1, 1, 1), block=(32, 1, 1))
        except usergpu.GPUFault as e:
            if not FAULT_VA <= e.address < FAULT_VA + 4096 or e.kernel != "hwcheck_store":
                raise Mismatch(f"the fault reported does not name address {FAULT_VA:#x} and kernel hwcheck_store: "
                               f"{e}") from None
            return Measured(f"reported: {e}", {"address": e.address, "access": e.access, "kernel": e.kernel,
                                               "why": e.why})
        raise Mismatch(f"hwcheck_store wrote to unmapped {FAULT_VA:#x} and no GPUFault was reported")

    def recovery(self, dev, kernels) -> Measured:
        m = self._vadd(dev, kernels["hwcheck_vadd"], RECOVERY_N)
        return Measured(f"after the fault, vadd {m.detail}", m.figures)

    def close(self, dev) -> Measured:
        dev.close()
        return Measured("the device's channels and memory given back")


def parser() -> Parser:
    p = Parser(prog="python -m usergpu.tools.hwcheck.nv", description=__doc__.split("\n\n")[1])
    p.add_argument("--dev", type=device_string, default="NVK+NV", help="NVK+NV (default), MOCK+NV or NV[:INDEX]")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout instead of lines")
    p.add_argument("--copy-mib", type=positive, default=256, help="MiB copied each way and device to device")
    p.add_argument("--launches", type=positive, default=50, help="empty launches timed")
    p.add_argument("--timeout", type=seconds, default=30.0, help="seconds a wait may take before GPUHang")
    p.add_argument("--cubins", type=input_dir, default=DATA, help="folder of hwcheck-ARCH.cubin")
    p.add_argument("--debug", action="store_true", help="a traceback on stderr for an unexpected exception")
    return p


def run(args) -> int:
    nv = NVCheck(args)
    report = Report(f"usergpu {usergpu.__version__} hwcheck nv on {args.dev} (python {platform.python_version()}, "
                    f"numpy {np.__version__}, {platform.node() or 'host'})", args.json, args.debug)
    try:
        report.check("open", nv.open)
        report.check("memory", nv.memory, ("open",))
        report.check("load", nv.load, ("open",))
        report.check("copy", nv.copy, ("open",))
        report.check("copy-d2d", nv.dma, ("open", "copy"))
        for name in ("vadd", "matmul", "reduce", "latency", "fault", "recovery"):
            report.check(name, getattr(nv, name), ("open", "load"))
    finally:  # ^C too: the GPU is let go
        if "open" in report.values:
            report.check("close", nv.close, ("open",))
    return report.finish()


def main(argv: list[str] | None = None) -> int:
    """The exit status: 0 when every check passed, 1 when one did not, 2 for a usage error, 130 for ^C."""
    args = parser().parse_args(argv)
    return guarded(args, lambda: run(args))


if __name__ == "__main__":
    sys.exit(main())
