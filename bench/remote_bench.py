"""Remote PCI over loopback (`usergpu serve --dev MOCKPCI+AMD` in another process) against the same work on a local
mock board in this process: PING round trip, MMIO register reads and (posted) writes per second, SYSMEM write and
read MB/s (against a local memory copy), AM's bring-up (partial boot) over REMOTE against direct MOCKPCI+AMD, and
`usergpu.launch` of the showcase's vadd on each (ratio: remote / local time).

    .venv/bin/python bench/remote_bench.py [repeats]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from timing import median_seconds  # bench/timing.py: run as python bench/<name>.py

from usergpu.drivers.amd.am import discovery
from usergpu.drivers.amd.am.driver import AM, amd_gpus
from usergpu.drivers.amd.am.ip import RegisterMap
from usergpu.drivers.hal import HAL
from usergpu.drivers.remote.client import Link, RemotePCIDevice
from usergpu.drivers.remote.protocol import Cmd, Request
from usergpu.emu.amd.mock.pci.machine import machine

SYSMEM = 16 << 20
MMIO_OPS = 2000


def serve(directory: str) -> tuple[subprocess.Popen, str]:
    env = os.environ | {"MOCKPCI_DIR": directory, "MOCKGPU_ARCH": "gfx1100"}
    server = subprocess.Popen([sys.executable, "-m", "usergpu.tools.cli", "serve", "--dev", "MOCKPCI+AMD", "--listen",
                               "127.0.0.1:0", "--json"], env=env, stderr=subprocess.PIPE, text=True)
    return server, json.loads(server.stderr.readline())["address"]


def row(what: str, local: float, remote: float, unit: str = "ms", scale: float = 1e3) -> None:
    print(f"{what:<34} local {local * scale:>10,.3f} {unit}   remote {remote * scale:>10,.3f} {unit}   "
          f"ratio {remote / local:>8,.1f}x")


def main(repeats: int = 5) -> None:
    with tempfile.TemporaryDirectory() as local_dir, tempfile.TemporaryDirectory() as remote_dir:
        server, address = serve(remote_dir)
        try:
            hal = machine("gfx1100", directory=local_dir)
            local = amd_gpus(hal)[0]
            regs = local.map_bar(5)
            link = Link(address)
            remote = RemotePCIDevice(link, 0)
            rregs = remote.map_bar(5)
            names = RegisterMap(discovery.read(regs, local.map_bar(0)))
            read, write = (4 * names.address("GC", r) for r in ("GRBM_STATUS", "SCRATCH_REG0"))
            ping = median_seconds(lambda: link.call(Cmd.PING), 200)
            print(f"PING round trip over loopback: {ping * 1e6:,.1f} µs")
            row(f"{MMIO_OPS} register reads", median_seconds(lambda: [regs.read32(read) for _ in range(MMIO_OPS)],
                                                              repeats),
                median_seconds(lambda: [rregs.read32(read) for _ in range(MMIO_OPS)], repeats))
            def posted():
                for i in range(MMIO_OPS):
                    rregs.write32(write, i)
                link.call(Cmd.PING)  # the writes are posted: a round trip after them waits for all

            row(f"{MMIO_OPS} register writes", median_seconds(
                lambda: [regs.write32(write, i) for i in range(MMIO_OPS)], repeats), median_seconds(posted, repeats))
            _, handle, _ = link.call(Cmd.MAP_SYSMEM, 0, 0, SYSMEM, 0)
            data = np.random.default_rng(0).integers(0, 255, SYSMEM, dtype=np.uint8).tobytes()
            buffer = bytearray(SYSMEM)

            def sysmem_write():
                link.calls([Request(Cmd.SYSMEM_WRITE, 0, handle, (0, SYSMEM, 0), data),
                            Request(Cmd.PING, 0, 0, (0, 0, 0))])

            mb = SYSMEM / 1e6
            local_copy = median_seconds(lambda: buffer.__setitem__(slice(None), data), repeats)
            sysmem = (median_seconds(sysmem_write, repeats),
                      median_seconds(lambda: link.call(Cmd.SYSMEM_READ, 0, handle, 0, SYSMEM), repeats))
            print(f"SYSMEM write {mb / sysmem[0]:,.0f} MB/s, read {mb / sysmem[1]:,.0f} MB/s; local copy "
                  f"{mb / local_copy:,.0f} MB/s (ratios {sysmem[0] / local_copy:.1f}x, {sysmem[1] / local_copy:.1f}x)")
            link.close()

            os.environ["REMOTE"] = address
            row("AM partial boot", median_seconds(lambda: AM(hal).close(), repeats),
                median_seconds(lambda: AM(HAL()).close(), repeats))
            launch(local_dir, repeats)
        finally:
            server.terminate()
            server.wait()


def launch(local_dir: str, repeats: int) -> None:
    import usergpu
    from usergpu.isa.amd.codeobj import compile_opencl
    from usergpu.tools import showcase

    os.environ.update(MOCKPCI_DIR=local_dir, MOCKGPU_ARCH="gfx1100")
    co = compile_opencl(showcase.SOURCE, "gfx1100")
    n = 1 << 16
    a, b = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
    times = {}
    for dev in ("MOCKPCI+AMD", "PCI+AMD"):
        device = usergpu.Device(dev)
        run = lambda device=device: usergpu.launch(co, "vadd", grid=(n // 256, 1, 1), block=(256, 1, 1),  # noqa: E731
                                                   args=[a, b, np.zeros(n, np.float32), n], device=device)
        assert np.array_equal(run()[2], a + b)
        times[dev] = median_seconds(run, repeats)
        device.close()
    row(f"launch vadd of {n} floats", times["MOCKPCI+AMD"], times["PCI+AMD"])


if __name__ == "__main__":
    main(*map(int, sys.argv[1:]))
