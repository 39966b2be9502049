"""The mock nvidia-uvm through MockHAL with the generated UVM_*_PARAMS: initialisation and the MM descriptor, GPUs
and their RM VA spaces, channels, external ranges and the RM memory mapped into them (seen in the GPU's VA
space at the range's address, gone after UVM_FREE), each refusal answered with the rmStatus uvm.c and its
callees give."""

from __future__ import annotations

import ctypes
import errno

import numpy as np
import pytest
from rmrig import PAGE, RMRig

from usergpu.autogen import nv_rm_535 as S
from usergpu.emu.memory import MemoryFault
from usergpu.emu.nv.mock.machine import DEFAULT_RELEASE

BASE = 0x7000_0000_0000 >> 4  # a 4 KiB-aligned address in the CPU's half, as a runtime's buffers are


class UVMRig(RMRig):
    """An RMRig with a UVM descriptor initialised, a device and a FERMI_VASPACE_A per GPU."""

    def __init__(self, tmp_path, arch: str = "sm_90", count: int = 1, release: str = DEFAULT_RELEASE):
        super().__init__(tmp_path, arch, count, release)
        self.fd = self.hal.open("/dev/nvidia-uvm")
        assert self.call(self.u.UVM_INITIALIZE, flags=0) == 0
        for index in range(1, count):
            self.hal.open(f"/dev/nvidia{index}")
        self.devices = [self.open_device(i)[0] for i in range(count)]
        self.vaspaces = [self.make(d, self.rm.FERMI_VASPACE_A, self.rm.NV_VASPACE_ALLOCATION_PARAMETERS())
                         for d in self.devices]

    def call(self, nr: int, fd: int | None = None, **fields) -> int:
        """A UVM ioctl with its params; their rmStatus."""
        params = self.u.UVM_PARAMS[nr](**fields)
        self.hal.ioctl(self.fd if fd is None else fd, nr, params)
        self.last = params
        return params.rmStatus

    def register(self, index: int = 0) -> None:
        assert self.call(self.u.UVM_REGISTER_GPU, gpu_uuid=self.uuid(index), rmCtrlFd=-1) == 0
        assert self.call(self.u.UVM_REGISTER_GPU_VASPACE, gpuUuid=self.uuid(index), rmCtrlFd=self.ctl,
                         hClient=self.client, hVaSpace=self.vaspaces[index]) == 0

    def map_external(self, memory: int, base: int, length: int, offset: int = 0, count: int = 1,
                     mapping: int = 1, index: int = 0) -> int:
        params = self.u.UVM_MAP_EXTERNAL_ALLOCATION_PARAMS(base=base, length=length, offset=offset,
                                                           rmCtrlFd=self.ctl, hClient=self.client, hMemory=memory,
                                                           gpuAttributesCount=count)
        params.perGpuAttributes[0].gpuUuid = self.uuid(index)
        params.perGpuAttributes[0].gpuMappingType = mapping
        self.hal.ioctl(self.fd, self.u.UVM_MAP_EXTERNAL_ALLOCATION, params)
        return params.rmStatus

    def gpu_vaspace(self, index: int = 0):
        return self.m.resman.server.clients[self.client].get(self.vaspaces[index]).state


@pytest.fixture(params=["535.261.03", "580.142", DEFAULT_RELEASE])  # UVM_FREE without a length from 590
def uvm(tmp_path, request) -> UVMRig:
    return UVMRig(tmp_path, release=request.param)


def test_initialize(tmp_path):
    rig = RMRig(tmp_path)
    u = rig.u
    fd = rig.hal.open("/dev/nvidia-uvm")
    params = u.UVM_CREATE_EXTERNAL_RANGE_PARAMS(base=BASE, length=PAGE)
    rig.hal.ioctl(fd, u.UVM_CREATE_EXTERNAL_RANGE, params)
    assert params.rmStatus == S.NV_ERR_ILLEGAL_ACTION  # before UVM_INITIALIZE
    for flags, status in ((1 << 7, S.NV_ERR_INVALID_ARGUMENT), (0, 0), (0, 0), (u.UVM_INIT_FLAGS_DISABLE_HMM,
                                                                           S.NV_ERR_INVALID_ARGUMENT)):
        init = u.UVM_INITIALIZE_PARAMS(flags=flags)
        rig.hal.ioctl(fd, u.UVM_INITIALIZE, init)
        assert init.rmStatus == status, flags
    with pytest.raises(OSError) as e:  # a test ioctl: the module's tests are disabled
        rig.hal.ioctl(fd, 200, ctypes.c_uint64())
    assert e.value.errno == errno.EINVAL
    with pytest.raises(OSError) as e:
        rig.hal.ioctl(fd, u.UVM_INITIALIZE, 16)
    assert e.value.errno == errno.EFAULT
    rig.hal.ioctl(fd, u.UVM_DEINITIALIZE, 0)


def test_mm_initialize(uvm):
    u = uvm.u
    mm = uvm.hal.open("/dev/nvidia-uvm")
    assert uvm.call(u.UVM_MM_INITIALIZE, fd=mm, uvmFd=uvm.ctl) == S.NV_ERR_INVALID_ARGUMENT  # no UVM descriptor
    assert uvm.call(u.UVM_MM_INITIALIZE, fd=mm, uvmFd=uvm.fd) == 0
    assert uvm.call(u.UVM_MM_INITIALIZE, fd=mm, uvmFd=uvm.fd) == S.NV_ERR_IN_USE
    assert uvm.call(u.UVM_MM_INITIALIZE, fd=uvm.hal.open("/dev/nvidia-uvm"), uvmFd=uvm.fd) == \
        S.NV_ERR_INVALID_STATE  # the VA space's mm is held
    assert uvm.call(u.UVM_FREE, fd=mm, base=BASE, length=PAGE) == S.NV_ERR_ILLEGAL_ACTION
    uninitialized = uvm.hal.open("/dev/nvidia-uvm")
    assert uvm.call(u.UVM_MM_INITIALIZE, fd=uvm.hal.open("/dev/nvidia-uvm"), uvmFd=uninitialized) == \
        S.NV_ERR_INVALID_ARGUMENT


def test_register_gpu_and_vaspace(tmp_path):
    rig = UVMRig(tmp_path, count=2)
    u = rig.u
    device0, (vas0, vas1) = rig.devices[0], rig.vaspaces
    unknown = u.struct_nv_uuid(uuid=(ctypes.c_ubyte * 16)(*b"no such GPU uuid"))
    assert rig.call(u.UVM_REGISTER_GPU, gpu_uuid=unknown) == S.NV_ERR_GPU_UUID_NOT_FOUND
    assert rig.call(u.UVM_REGISTER_GPU_VASPACE, gpuUuid=rig.uuid(0), hClient=rig.client, hVaSpace=vas0) == \
        S.NV_ERR_INVALID_DEVICE  # the GPU is not registered yet
    assert rig.call(u.UVM_REGISTER_GPU, gpu_uuid=rig.uuid(0), rmCtrlFd=-1) == 0
    assert (rig.last.numaEnabled, rig.last.numaNodeId) == (0, -1)
    assert rig.call(u.UVM_REGISTER_GPU, gpu_uuid=rig.uuid(0), rmCtrlFd=-1) == S.NV_ERR_INVALID_DEVICE
    for client, handle, status in ((0x5555, vas0, S.NV_ERR_INVALID_CLIENT), (rig.client, 0xBAD,
                                   S.NV_ERR_OBJECT_NOT_FOUND), (rig.client, device0, S.NV_ERR_INVALID_OBJECT),
                                   (rig.client, vas1, S.NV_ERR_OTHER_DEVICE_FOUND), (rig.client, vas0, 0),
                                   (rig.client, vas0, S.NV_ERR_INVALID_DEVICE)):
        assert rig.call(u.UVM_REGISTER_GPU_VASPACE, gpuUuid=rig.uuid(0), rmCtrlFd=rig.ctl, hClient=client,
                        hVaSpace=handle) == status, hex(handle)
    assert rig.call(u.UVM_UNREGISTER_GPU_VASPACE, gpuUuid=rig.uuid(0)) == 0
    assert rig.call(u.UVM_UNREGISTER_GPU_VASPACE, gpuUuid=rig.uuid(0)) == S.NV_ERR_INVALID_DEVICE
    assert rig.call(u.UVM_UNREGISTER_GPU, gpu_uuid=rig.uuid(0)) == 0
    assert rig.call(u.UVM_UNREGISTER_GPU, gpu_uuid=rig.uuid(0)) == S.NV_ERR_INVALID_DEVICE


def test_external_range_map_and_free(uvm):
    u = uvm.u
    uvm.register()
    device = uvm.devices[0]
    memory = uvm.memory(device, 4 * PAGE)
    pages = uvm.m.resman.server.clients[uvm.client].get(memory).state.pages.array
    pages[PAGE:PAGE + 4] = [9, 8, 7, 6]
    for base, length in ((BASE + 8, PAGE), (BASE, PAGE + 1), (0, PAGE), (BASE, 0)):
        assert uvm.call(u.UVM_CREATE_EXTERNAL_RANGE, base=base, length=length) == S.NV_ERR_INVALID_ADDRESS
    assert uvm.call(u.UVM_CREATE_EXTERNAL_RANGE, base=BASE, length=4 * PAGE) == 0
    assert uvm.call(u.UVM_CREATE_EXTERNAL_RANGE, base=BASE + 3 * PAGE, length=4 * PAGE) == \
        S.NV_ERR_UVM_ADDRESS_IN_USE
    assert uvm.map_external(memory, BASE + 4 * PAGE, PAGE) == S.NV_ERR_INVALID_ADDRESS  # outside the range
    assert uvm.map_external(memory, BASE, 8 * PAGE) == S.NV_ERR_INVALID_ADDRESS  # past its end
    assert uvm.map_external(memory, BASE, PAGE, count=0) == S.NV_ERR_INVALID_ARGUMENT
    assert uvm.map_external(memory, BASE, PAGE, mapping=u.UvmGpuMappingTypeCount) == S.NV_ERR_INVALID_ARGUMENT
    assert uvm.map_external(0xBAD, BASE, PAGE) == S.NV_ERR_OBJECT_NOT_FOUND
    assert uvm.map_external(device, BASE, PAGE) == S.NV_ERR_INVALID_OBJECT_HANDLE
    assert uvm.map_external(memory, BASE, 2 * PAGE, offset=3 * PAGE) == S.NV_ERR_INVALID_OFFSET
    assert uvm.map_external(memory, BASE, 2 * PAGE, offset=PAGE) == 0
    vas = uvm.gpu_vaspace()
    assert list(vas.read(BASE, 4)) == [9, 8, 7, 6]  # the GPU sees the memory's pages at the range's address
    pages[PAGE] = 1
    assert vas.read(BASE, 1)[0] == 1
    assert uvm.map_external(memory, BASE, 4 * PAGE) == 0  # a new mapping over the old one replaces it
    assert vas.read(BASE + PAGE, 1)[0] == 1
    if hasattr(u.UVM_FREE_PARAMS, "length"):  # up to 580: the range's exact bounds
        assert uvm.call(u.UVM_FREE, base=BASE, length=PAGE) == S.NV_ERR_INVALID_ADDRESS  # a part of the range
        whole = {"length": 4 * PAGE}
    else:  # from 590: the range that starts at base
        assert uvm.call(u.UVM_FREE, base=BASE + PAGE) == S.NV_ERR_INVALID_ADDRESS  # inside the range
        whole = {}
    assert uvm.call(u.UVM_FREE, base=BASE, **whole) == 0
    with pytest.raises(MemoryFault):
        vas.read(BASE, 1)
    assert uvm.call(u.UVM_FREE, base=BASE, **whole) == S.NV_ERR_INVALID_ADDRESS


def test_map_needs_the_gpus_vaspace(tmp_path):
    rig = UVMRig(tmp_path)
    u = rig.u
    memory = rig.memory(rig.devices[0], PAGE)
    assert rig.call(u.UVM_CREATE_EXTERNAL_RANGE, base=BASE, length=PAGE) == 0
    assert rig.map_external(memory, BASE, PAGE) == S.NV_ERR_INVALID_DEVICE
    assert rig.call(u.UVM_REGISTER_GPU, gpu_uuid=rig.uuid(0), rmCtrlFd=-1) == 0
    assert rig.map_external(memory, BASE, PAGE) == S.NV_ERR_INVALID_DEVICE  # its VA space is not registered
    assert rig.call(u.UVM_REGISTER_GPU_VASPACE, gpuUuid=rig.uuid(0), rmCtrlFd=rig.ctl, hClient=rig.client,
                    hVaSpace=rig.vaspaces[0]) == 0
    assert rig.map_external(memory, BASE, PAGE) == 0
    high = 1 << 47  # past the lower half the CPU addresses too
    assert rig.call(u.UVM_CREATE_EXTERNAL_RANGE, base=high, length=PAGE) == 0
    assert rig.map_external(memory, high, PAGE) == S.NV_ERR_OUT_OF_RANGE


def test_register_channel(uvm):
    u, rm = uvm.u, uvm.rm
    uvm.register()
    device = uvm.devices[0]
    group = uvm.make(device, rm.KEPLER_CHANNEL_GROUP_A, rm.NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS(
        hVASpace=uvm.vaspaces[0], engineType=rm.NV2080_ENGINE_TYPE_GRAPHICS))
    userd = uvm.memory(device, 2 * PAGE)
    channels = []
    for engine in (rm.NV2080_ENGINE_TYPE_GRAPHICS, rm.NV2080_ENGINE_TYPE_COPY0):
        p = rm.NV_CHANNEL_ALLOC_PARAMS(gpFifoOffset=BASE, gpFifoEntries=8, engineType=engine)
        p.hUserdMemory[0], p.userdOffset[0] = userd, PAGE * len(channels)
        channels.append(uvm.make(group, rm.HOPPER_CHANNEL_GPFIFO_A, p))
    compute, copy = channels
    assert uvm.call(u.UVM_CREATE_EXTERNAL_RANGE, base=BASE, length=PAGE) == 0

    def register(channel, base=0x1_0000_0000, length=0x100_0000, client=None):
        return uvm.call(u.UVM_REGISTER_CHANNEL, gpuUuid=uvm.uuid(), rmCtrlFd=uvm.ctl,
                        hClient=uvm.client if client is None else client, hChannel=channel, base=base, length=length)

    assert register(compute, base=0x1_0000_0800) == S.NV_ERR_INVALID_ADDRESS
    assert register(compute, base=BASE) == S.NV_ERR_OUT_OF_RANGE  # context buffers stay below max_channel_va
    assert register(compute, client=0x5555) == S.NV_ERR_INVALID_CLIENT
    assert register(userd) == S.NV_ERR_INVALID_OBJECT_HANDLE
    assert register(compute) == 0
    assert register(compute) == S.NV_ERR_INVALID_CHANNEL
    assert register(copy, base=0x1_0000_0000) == 0  # a copy channel has no context buffers: no range
    assert uvm.call(u.UVM_CREATE_EXTERNAL_RANGE, base=0x1_0000_0000, length=PAGE) == S.NV_ERR_UVM_ADDRESS_IN_USE
    assert uvm.call(u.UVM_UNREGISTER_CHANNEL, gpuUuid=uvm.uuid(), hClient=uvm.client, hChannel=compute) == 0
    assert uvm.call(u.UVM_CREATE_EXTERNAL_RANGE, base=0x1_0000_0000, length=PAGE) == 0
    assert uvm.call(u.UVM_UNREGISTER_CHANNEL, gpuUuid=uvm.uuid(), hClient=uvm.client, hChannel=compute) == \
        S.NV_ERR_INVALID_CHANNEL


def test_a_channel_on_another_vaspace_is_refused(uvm):
    u, rm = uvm.u, uvm.rm
    uvm.register()
    device = uvm.devices[0]
    userd = uvm.memory(device, PAGE)
    p = rm.NV_CHANNEL_ALLOC_PARAMS(gpFifoOffset=BASE, gpFifoEntries=8, engineType=rm.NV2080_ENGINE_TYPE_COPY0)
    p.hUserdMemory[0] = userd
    channel = uvm.make(device, rm.HOPPER_CHANNEL_GPFIFO_A, p)  # outside a group: the device's own VA space
    assert uvm.call(u.UVM_REGISTER_CHANNEL, gpuUuid=uvm.uuid(), rmCtrlFd=uvm.ctl, hClient=uvm.client,
                    hChannel=channel) == S.NV_ERR_INVALID_CHANNEL


def test_555_abi_maps_with_its_own_struct(tmp_path):
    rig = UVMRig(tmp_path, release="555.58.02")
    assert ctypes.sizeof(rig.u.UVM_MAP_EXTERNAL_ALLOCATION_PARAMS) == 9264
    rig.register()
    memory = rig.memory(rig.devices[0], PAGE)
    rig.m.resman.server.clients[rig.client].get(memory).state.pages.array[:2] = [3, 4]
    assert rig.call(rig.u.UVM_CREATE_EXTERNAL_RANGE, base=BASE, length=PAGE) == 0
    assert rig.map_external(memory, BASE, PAGE) == 0
    assert np.array_equal(rig.gpu_vaspace().read(BASE, 2), [3, 4])
