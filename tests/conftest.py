"""Shared test fixtures."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from usergpu.drivers.hal import HAL

# helpers importable from every test: the kernel corpora's (tests/kernels/corpus.py, nv_corpus.py) and the
# code-object readers' (tests/isa/elf_damage.py)
for helpers in ("kernels", "isa"):
    folder = str(Path(__file__).resolve().parent / helpers)
    if folder not in sys.path:
        sys.path.insert(0, folder)

# each test process's MOCKPCI+AMD machines, apart from those of the other workers (AM allows one process per board)
# and of a developer's own processes; the first process (xdist's controller) makes the folder and removes it
if "USERGPU_TEST_MOCKPCI" not in os.environ:
    os.environ["USERGPU_TEST_MOCKPCI"] = tempfile.mkdtemp(prefix="usergpu-mockpci-test-")
    atexit.register(shutil.rmtree, os.environ["USERGPU_TEST_MOCKPCI"], ignore_errors=True)
os.environ["MOCKPCI_DIR"] = os.path.join(os.environ["USERGPU_TEST_MOCKPCI"], os.environ.get("PYTEST_XDIST_WORKER",
                                                                                             "main"))


def _make_sysfs(root, functions, kfd_nodes=()):
    """functions: (address, vendor, device, class, driver); kfd_nodes: (node, properties text)."""
    pci = root / "sys/bus/pci/devices"
    pci.mkdir(parents=True)
    drivers = root / "sys/bus/pci/drivers"
    for addr, vendor, device, cls, driver in functions:
        d = pci / addr
        d.mkdir()
        (d / "vendor").write_text(f"{vendor:#06x}\n")
        (d / "device").write_text(f"{device:#06x}\n")
        (d / "class").write_text(f"{cls:#08x}\n")
        if driver:
            (drivers / driver).mkdir(parents=True, exist_ok=True)
            os.symlink(drivers / driver, d / "driver")
    nodes = root / "sys/devices/virtual/kfd/kfd/topology/nodes"
    for node, props in kfd_nodes:
        (nodes / str(node)).mkdir(parents=True)
        (nodes / str(node) / "properties").write_text(props)
    return HAL(root)


@pytest.fixture
def sysfs(tmp_path):
    """Build a sysfs tree as the kernel lays it out under tmp_path; returns a HAL rooted there."""
    return lambda functions, kfd_nodes=(): _make_sysfs(tmp_path, functions, kfd_nodes)
