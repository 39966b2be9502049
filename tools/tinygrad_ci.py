"""tinygrad's mocked CI jobs as usergpu runs them (the bench's side-by-side table, CI's slice of each job): the
steps of tinygrad's jobs testamd, testmockam, testnvidia, its hcq2 job and its AMD assembler job's tests, each a pytest
run in tinygrad's source tree (../shared/tinygrad, unpacked once into the cache) with the job's DEV and environment,
either on tinygrad's own mock (DEV=... MOCKGPU=1) or through `usergpu mock`. Each side keeps its own defaults (GPU
count, arch): the environment's MOCKGPU_* shape knobs are dropped. Both load llvm-22's libLLVM (LLVM_PATH, as `usergpu
mock` sets it): tinygrad's own search takes Debian's libLLVM-15, whose typed pointers its CPU renderer cannot use."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from usergpu.tools.mock import LIBLLVM

# the tarball of tinygrad's tree, beside the checkout (../shared, where CI has it too)
TREE = Path(__file__).resolve().parents[2] / "shared" / "tinygrad" / "tinygrad-a9069c17.tar.xz"
OWN, OURS = "tinygrad's mock", "usergpu mock"


@dataclass(frozen=True)
class Suite:
    """One step of a tinygrad CI job: pytest's arguments in tinygrad's tree, DEV and the environment it sets."""

    name: str
    dev: str
    args: tuple[str, ...]
    env: dict = field(default_factory=dict)
    torch: bool = False  # it checks tinygrad against torch
    own_why: str = ""  # why tinygrad's own mock cannot run it here (empty: it can)
    parallel: bool = True
    torch_free: bool = False  # the files of its folders that import torch left out (they fail to collect without it)

    @property
    def own(self) -> bool:
        return not self.own_why


DISK_COPY = ("test/unit/test_disk_tensor.py", "-k", "copy_from_disk")
TRANSCENDENTAL = tuple(f"test/backend/test_ops.py::TestOps::test_{op}" for op in ("sin", "cos", "tan", "exp", "log"))
NO_OCELOT = "tinygrad's NV mock needs gpuocelot (not packaged)"
NO_FIRMWARE = "tinygrad's AM mocks fetch firmware (its pins of smu_13_0_0 and gc_12_0_* are not Debian's)"


def _testamd(dev: str) -> list[Suite]:
    """The testamd job's steps on one DEV (FORWARD_ONLY=1, as the job sets it)."""
    env = {"FORWARD_ONLY": "1"}
    plain = [(n, (f"test/backend/{n}.py",)) for n in ("test_dtype_alu", "test_linearizer", "test_jit", "test_graph",
                                                       "test_multitensor")]
    return [Suite("test_ops", dev, ("test/backend/test_ops.py",), env, torch=True),
            Suite("test_dtype", dev, ("test/backend/test_dtype.py",), env, torch=True),
            Suite("test_randomness", dev, ("test/backend/test_randomness.py",), env, torch=True),
            *(Suite(n, dev, args, env) for n, args in plain),
            Suite("test_hcq", dev, ("test/device/test_hcq.py",), env),
            Suite("external_test_am", dev, ("test/external/external_test_am.py",), env, parallel=False),
            Suite("TestAsmGEMM", dev, ("test/backend/test_asm_gemm.py::TestAsmGEMM",), env),
            Suite("disk copy", dev, DISK_COPY, env),
            Suite("TRANSCENDENTAL=2", dev, TRANSCENDENTAL, {**env, "TRANSCENDENTAL": "2"}, torch=True)]


def _testmockam(dev: str) -> list[Suite]:
    """The testmockam job's steps on one board (through tinygrad's own AM driver; one driver a board at a time)."""
    return [Suite(name, dev, args, own_why=NO_FIRMWARE, parallel=False)
            for name, args in (("test_tiny", ("test/test_tiny.py",)), ("test_hcq", ("test/device/test_hcq.py",)),
                               ("disk copy", DISK_COPY))]


def _testnvidia() -> list[Suite]:
    env = {"FORWARD_ONLY": "1", "SKIP_SLOW_TEST": "1"}
    pma = {**env, "PMA": "1", "PROFILE": "1"}  # ops_nv samples PCs through the PMA only while it profiles
    backend = ("test/backend", "--ignore=test/backend/test_multitensor.py")
    return [Suite("test_tiny", "MOCK+NV", ("test/test_tiny.py",), env, own_why=NO_OCELOT),
            Suite("test/backend", "MOCK+NV", backend, env, torch=True, own_why=NO_OCELOT),
            Suite("test/backend (no torch)", "MOCK+NV", backend, env, own_why=NO_OCELOT, torch_free=True),
            Suite("PMA=1 test_add", "MOCK+NV", ("test/backend/test_ops.py::TestOps::test_add",), pma, torch=True,
                  own_why=NO_OCELOT)]


# job -> its steps; testamd on each GPU tinygrad tests it with (Navi31, Navi48, MI350X), both renderers
JOBS = {
    "testamd": [s for arch in ("", "gfx1201", "gfx950") for ren in ("", "LLVM")
                for s in _testamd("MOCKKFD+AMD" + (f":{ren}:{arch}" if arch else f":{ren}" if ren else ""))],
    "testmockam": _testmockam("MOCKPCI+AMD::gfx942") + _testmockam("MOCKUSB+AMD"),
    "testnvidia": _testnvidia(),
    "hcq2": [Suite("test_hcq2", "MOCKKFD+AMD", ("test/device/test_hcq2.py",), {"HCQ_RUNTIME_DEV": "PYTHON",
                                                                                "HCQ2": "1"})],
    "amdasm": [Suite("test/amd", "MOCKKFD+AMD", ("test/amd",))],
}


def tree() -> Path:
    """tinygrad's source tree, unpacked from TREE into the cache the first time."""
    import tarfile

    from usergpu.emu.amd.exec.native.build import cache_dir

    root = cache_dir().parent / "tinygrad"
    out = root / TREE.name.removesuffix(".tar.xz")
    if not (out / "tinygrad").is_dir():
        root.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(dir=root))
        with tarfile.open(TREE) as tar:
            tar.extractall(scratch, filter="data")
        try:  # atomic: a process unpacking it meanwhile finds its copy or this one, whole
            (scratch / out.name).rename(out)
        except OSError:
            if not (out / "tinygrad").is_dir():
                raise
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return out


def counts(output: str) -> str:
    """pytest's closing counts ('47 passed, 13 skipped')."""
    found = re.findall(r"(\d+ (?:passed|failed|skipped|errors?|xfailed|xpassed))", output.splitlines()[-1]
                       if output.strip() else "")
    return ", ".join(found) or "no summary"


@dataclass
class Run:
    """What one suite did on one side."""

    wall: float  # seconds
    counts: str  # pytest's closing counts
    failed: list[str]  # the failed tests' names
    output: str  # pytest's output (its stderr after it)

    def __str__(self) -> str:
        more = f" and {len(self.failed) - 3} more" if len(self.failed) > 3 else ""
        return self.counts + (f" (failed: {' '.join(self.failed[:3])}{more})" if self.failed else "")


def run_suite(suite: Suite, side: str, where: Path, timeout: float | None = None, cachedb: Path | None = None) -> Run:
    """One suite on one side, as its job runs it; cachedb: tinygrad's kernel cache for it (default: tinygrad's own)."""
    path = os.pathsep.join([str(where), *filter(None, [os.environ.get("PYTHONPATH")])])  # torch's, where it is apart
    env = {**os.environ, "PYTHONPATH": path, "CC": "clang-22", "DEV": suite.dev, "LLVM_PATH": LIBLLVM, **suite.env}
    if cachedb is not None:
        env["CACHEDB"] = str(cachedb)
    for knob in ("MOCKGPU_ARCH", "MOCKGPU_COUNT", "MOCKGPU_NV_ARCH"):  # each side's own defaults
        env.pop(knob, None)
    prefix = [] if side == OWN else [str(Path(sys.executable).parent / "usergpu"), "mock", "--"]
    if side == OWN:
        env["MOCKGPU"] = "1"
    workers = ["-n", "2" if suite.parallel else "1"]  # one worker: a test that kills its process is one failure
    if suite.torch_free:
        workers += [f"--ignore={f.relative_to(where)}" for a in suite.args if (where / a).is_dir()
                    for f in sorted((where / a).glob("test_*.py")) if "import torch" in f.read_text()]
    start = time.perf_counter()
    done = subprocess.run([*prefix, sys.executable, "-m", "pytest", *workers, "-q", "-rfs", "-p", "no:cacheprovider",
                           *suite.args], cwd=where, env=env, capture_output=True, text=True, timeout=timeout)
    failed = [f.rpartition("::")[2] for f in re.findall(r"^FAILED (\S+)", done.stdout, re.M)]
    return Run(time.perf_counter() - start, counts(done.stdout), failed, done.stdout + done.stderr)


