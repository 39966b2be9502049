"""The native mock function's sysfs files answer as pci-sysfs and kernfs do: `config` is a binary attribute of the
config space's size (reads stop at its end, writes past it are EFBIG, a page at most per call), a memory BAR's
`resource<N>` has no read or write (EIO) and maps only within the BAR (EINVAL); MockHAL's offsets and lengths get
the VFS's and do_mmap's errno."""

from __future__ import annotations

import errno

import pytest

from usergpu.emu.amd.mock.pci.machine import bus, machine
from usergpu.errors import DriverError
from usergpu.hostmem import PAGE

DEVICE = f"/sys/bus/pci/devices/{bus(0)}"


@pytest.fixture
def hal(tmp_path):
    return machine("gfx1200", directory=tmp_path)


def code(fn, *args) -> int:
    with pytest.raises(OSError) as e:
        fn(*args)
    return e.value.errno


def test_config_reads_and_writes_stop_at_the_end(hal):
    fd = hal.open(f"{DEVICE}/config")
    assert hal.pread(fd, 2, 0) == (0x1002).to_bytes(2, "little")
    assert hal.pread(fd, 8, 0xFFE) == hal.pread(fd, 2, 0xFFE) and len(hal.pread(fd, 8, 0xFFE)) == 2
    assert hal.pread(fd, 4, 0x1000) == b"" and hal.pread(fd, 4, 1 << 40) == b""
    assert len(hal.pread(fd, 1 << 31, 0)) == PAGE  # kernfs: a page per call
    assert hal.pwrite(fd, b"\xff" * 8, 0xFFC) == 4  # cut at the end
    for offset in (0x1000, 1 << 40):
        assert code(hal.pwrite, fd, b"x", offset) == errno.EFBIG
    assert code(hal.pread, fd, 4, -1) == errno.EINVAL  # rw_verify_area: a negative position
    with pytest.raises(DriverError):  # not a length at all
        hal.pread(fd, -1, 0)


def test_a_memory_bar_is_mapped_not_read(hal):
    vram, registers = hal.open(f"{DEVICE}/resource0"), hal.open(f"{DEVICE}/resource5")
    size = hal.boards[0].vram_size
    assert code(hal.pread, vram, 4, 0) == errno.EIO and code(hal.pwrite, registers, b"1234", 0) == errno.EIO
    assert hal.pread(vram, 4, size) == b""  # at the end nothing is read, before it has no read at all
    for length, offset, want in ((size + PAGE, 0, errno.EINVAL), (PAGE, size, errno.EINVAL),
                                 (PAGE, 2, errno.EINVAL), (0, 0, errno.EINVAL), (1 << 48, 0, errno.ENOMEM)):
        assert code(hal.mmap, vram, length, offset) == want
        assert code(hal.mmio, vram, length, offset) == want
    assert code(hal.mmio, registers, 2 << 20, 0) == errno.EINVAL  # BAR5 is 1 MiB
    view = hal.mmio(vram, PAGE, size - PAGE)
    view[PAGE // 4 - 1] = 0x1234_5678  # the last dword of VRAM
    assert int(hal.boards[0].vram[size - 4 : size].view("<u4")[0]) == 0x1234_5678
    address = hal.mmap(vram, PAGE, size - PAGE)
    hal.munmap(address, PAGE)
