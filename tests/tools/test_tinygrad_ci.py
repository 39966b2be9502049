"""A slice of each of tinygrad's mocked CI jobs (tools/tinygrad_ci.py), run from tinygrad's source tree through
`usergpu mock` as the job runs it: every test passes or skips for a reason tinygrad's own mock skips it too (a slow
test, a second vendor). bench/tinygrad_bench.py --suites runs the whole jobs side by side with tinygrad's own mock."""

from __future__ import annotations

import dataclasses
import re

import pytest

from usergpu.tools import tinygrad_ci

pytest.importorskip("tinygrad")
if not tinygrad_ci.TREE.is_file():
    pytest.skip(f"tinygrad's tree is not at {tinygrad_ci.TREE}", allow_module_level=True)

# (job, suite, DEV, the pytest arguments where the slice is part of the suite)
SLICE = [("testamd", "test_hcq", "MOCKKFD+AMD", None),
         ("testamd", "disk copy", "MOCKKFD+AMD:LLVM:gfx1201", None),
         ("testamd", "test_graph", "MOCKKFD+AMD::gfx950", None),
         ("testmockam", "disk copy", "MOCKPCI+AMD::gfx942", None),
         ("testmockam", "test_hcq", "MOCKPCI+AMD::gfx942",  # buffers the test writes through their GPU address
          ("test/device/test_hcq.py", "-k", "small_copies_from_host_buf or test_wait or test_signal or "
                                            "test_memory_barrier")),
         ("testnvidia", "test_tiny", "MOCK+NV", None),
         ("testnvidia", "PMA=1 test_add", "MOCK+NV", ("test/test_tiny.py", "-k", "test_plus")),  # (no torch in CI)
         ("hcq2", "test_hcq2", "MOCKKFD+AMD", None),
         ("amdasm", "test/amd", "MOCKKFD+AMD", ("test/amd/test_mockgpu_invalid.py",))]
# what tinygrad's own mock skips too: RUN_SLOW tests, a second vendor's device, an image dtype (CL only), an eighth GPU
# in another peer group (test_speed_cross_device_rdma_copy_bandwidth: tinygrad's mock has six GPUs as well), an update
# while a queue runs on its AM mock
SKIPS = re.compile(r"slow test|no NV device|no AMD device|image only supported|no multidevice|"
                   r"async update on CPU/MOCKPCI")


@pytest.fixture(scope="session")
def tree():
    return tinygrad_ci.tree()


@pytest.mark.parametrize(("job", "name", "dev", "args"), SLICE, ids=[f"{j}-{n}-{d}" for j, n, d, _ in SLICE])
def test_a_slice_of_tinygrads_ci_job(tree, tmp_path, job, name, dev, args):
    suite = next(s for s in tinygrad_ci.JOBS[job] if s.name == name and s.dev == dev)
    suite = dataclasses.replace(suite, args=args or suite.args, parallel=False)
    cachedb = tmp_path / "tinygrad.db"  # tinygrad's kernel cache of its own, as a fresh CI runner's (the bench's)
    run = tinygrad_ci.run_suite(suite, tinygrad_ci.OURS, tree, timeout=900, cachedb=cachedb)
    assert " passed" in run.counts and not run.failed and "error" not in run.counts, run.output[-6000:]
    assert cachedb.is_file()  # tinygrad compiled the slice's kernels into it
    skipped = re.findall(r"^SKIPPED \[\d+\] \S+ (.*)$", run.output, re.M)
    assert all(SKIPS.search(why) for why in skipped), skipped
