"""The mock NVIDIA RM through MockHAL with the generated structs, as a driver reaches nvidia.ko: the ioctl transport
(nvidia_ioctl's size and pointer checks), the release check, the card list, REGISTER_FD, the object tree (handles,
parents, classes per chip, free), the controls (sizes, unknown commands, the chip's values), memory and its CPU and
GPU mappings, the usermode doorbell page and channels. Every refusal is checked against the NV_STATUS or errno the
RM source gives (named in the mock's docstrings)."""

from __future__ import annotations

import ctypes
import errno
import time

import numpy as np
import pytest
from rmrig import DMA_FIXED, OS02_OSDESC, PAGE, RMRig, address, anonymous, request

from usergpu.autogen import nv_classes
from usergpu.autogen import nv_rm_535 as S
from usergpu.emu.memory import MemoryFault
from usergpu.emu.nv.mock import chips, pushbuf
from usergpu.hostmem import view


@pytest.fixture
def rig(tmp_path) -> RMRig:
    return RMRig(tmp_path)


# ---- the transport ---------------------------------------------------------------------------------------------
def test_wrong_ioc_size_is_einval_and_the_struct_comes_back(rig):
    a = rig.rm.NVOS21_PARAMETERS(hClass=rig.rm.NV01_ROOT_CLIENT, status=0x1234)
    with pytest.raises(OSError) as e:
        rig.escape(rig.ctl, rig.rm.NV_ESC_RM_ALLOC, a, size=ctypes.sizeof(a) - 4)
    assert e.value.errno == errno.EINVAL
    assert a.status == 0x1234 and not rig.m.resman.server.clients


def test_escapes_on_the_wrong_device_file_are_einval(rig):
    with pytest.raises(OSError) as e:
        rig.escape(rig.dev, rig.rm.NV_ESC_RM_FREE, rig.rm.NVOS00_PARAMETERS())
    assert e.value.errno == errno.EINVAL
    made = rig.rm.nv_ioctl_nvos02_parameters_with_fd()
    with pytest.raises(OSError) as e:
        rig.escape(rig.ctl, rig.rm.NV_ESC_RM_ALLOC_MEMORY, made)
    assert e.value.errno == errno.EINVAL
    with pytest.raises(OSError) as e:  # a client is made on /dev/nvidiactl only
        rig.escape(rig.dev, rig.rm.NV_ESC_RM_ALLOC, rig.rm.NVOS21_PARAMETERS(hClass=rig.rm.NV01_ROOT_CLIENT))
    assert e.value.errno == errno.EINVAL


def test_unknown_escape_is_einval_and_the_type_is_not_looked_at(rig):
    with pytest.raises(OSError) as e:
        rig.hal.ioctl(rig.ctl, request(0x7F, 8), ctypes.c_uint64())
    assert e.value.errno == errno.EINVAL
    a = rig.rm.NVOS21_PARAMETERS(hClass=rig.rm.NV01_ROOT_CLIENT)
    other_type = (3 << 30) | (ctypes.sizeof(a) << 16) | (ord("G") << 8) | rig.rm.NV_ESC_RM_ALLOC
    rig.hal.ioctl(rig.ctl, other_type, a)  # nvidia_ioctl dispatches on _IOC_NR and _IOC_SIZE alone
    assert a.status == 0 and a.hObjectNew in rig.m.resman.server.clients


def test_a_struct_that_cannot_be_read_is_efault(rig):
    with pytest.raises(OSError) as e:
        rig.hal.ioctl(rig.ctl, request(rig.rm.NV_ESC_RM_ALLOC, ctypes.sizeof(rig.rm.NVOS21_PARAMETERS)), 16)
    assert e.value.errno == errno.EFAULT


def test_xfer_carries_an_escape(rig):
    u = rig.u
    a = rig.rm.NVOS21_PARAMETERS(hClass=rig.rm.NV01_ROOT_CLIENT)
    xfer = u.nv_ioctl_xfer_t(cmd=rig.rm.NV_ESC_RM_ALLOC, size=ctypes.sizeof(a), ptr=ctypes.addressof(a))
    rig.escape(rig.ctl, u.NV_ESC_IOCTL_XFER_CMD, xfer)
    assert a.status == 0 and a.hObjectNew in rig.m.resman.server.clients
    with pytest.raises(OSError) as e:
        rig.escape(rig.ctl, u.NV_ESC_IOCTL_XFER_CMD, xfer, size=8)
    assert e.value.errno == errno.EINVAL
    xfer.size = 16385  # past NV_ABSOLUTE_MAX_IOCTL_SIZE
    with pytest.raises(OSError) as e:
        rig.escape(rig.ctl, u.NV_ESC_IOCTL_XFER_CMD, xfer)
    assert e.value.errno == errno.EINVAL


# ---- the release -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("release", "rm"), [("535.261.03", "535"), ("555.58.02", "555"), ("570.86.15", "570"),
                                             ("565.57.01", "565"), ("595.45.04", "595")])
def test_check_version_query_answers_the_release(tmp_path, release, rm):
    rig = RMRig(tmp_path, release=release)
    q = rig.u.nv_ioctl_rm_api_version_t(cmd=rig.u.NV_RM_API_VERSION_CMD_QUERY)
    rig.escape(rig.ctl, rig.u.NV_ESC_CHECK_VERSION_STR, q)
    assert q.versionString.decode() == release and q.reply == rig.u.NV_RM_API_VERSION_REPLY_RECOGNIZED
    assert rig.rm.__name__.endswith(f"nv_rm_{rm}")  # a release of a bound branch speaks that branch's ABI


def test_check_version_strict_and_relaxed(tmp_path):
    rig = RMRig(tmp_path, release="535.261.03")
    u = rig.u
    same = u.nv_ioctl_rm_api_version_t(cmd=u.NV_RM_API_VERSION_CMD_STRICT, versionString=b"535.261.03")
    rig.escape(rig.ctl, u.NV_ESC_CHECK_VERSION_STR, same)
    relaxed = u.nv_ioctl_rm_api_version_t(cmd=u.NV_RM_API_VERSION_CMD_RELAXED, versionString=b"535.999")
    rig.escape(rig.ctl, u.NV_ESC_CHECK_VERSION_STR, relaxed)
    other = u.nv_ioctl_rm_api_version_t(cmd=u.NV_RM_API_VERSION_CMD_STRICT, versionString=b"535.999")
    with pytest.raises(OSError) as e:
        rig.escape(rig.ctl, u.NV_ESC_CHECK_VERSION_STR, other)
    assert e.value.errno == errno.EINVAL and other.versionString == b"535.261.03"
    with pytest.raises(OSError):  # the struct's exact size, on /dev/nvidiactl only
        rig.escape(rig.ctl, u.NV_ESC_CHECK_VERSION_STR, same, size=64)
    with pytest.raises(OSError):
        rig.escape(rig.dev, u.NV_ESC_CHECK_VERSION_STR, same)


def test_card_info_lists_the_gpus(tmp_path):
    rig = RMRig(tmp_path, "sm_86", count=2)
    cards = (rig.u.nv_ioctl_card_info_t * 4)()
    rig.escape(rig.ctl, rig.u.NV_ESC_CARD_INFO, cards)
    assert [c.valid for c in cards] == [1, 1, 0, 0]
    for i, c in enumerate(cards[:2]):
        assert (c.pci_info.bus, c.pci_info.vendor_id, c.pci_info.device_id) == (0x41 + i, 0x10DE, 0x2204)
        assert c.gpu_id == chips.gpu_id(i) == 0x4100 + (i << 8) and c.minor_number == i
    with pytest.raises(OSError) as e:  # room for fewer than the GPUs
        rig.escape(rig.ctl, rig.u.NV_ESC_CARD_INFO, (rig.u.nv_ioctl_card_info_t * 1)())
    assert e.value.errno == errno.EINVAL


def test_register_fd(rig):
    u = rig.u
    rig.escape(rig.dev, u.NV_ESC_REGISTER_FD, u.nv_ioctl_register_fd_t(ctl_fd=rig.ctl))
    with pytest.raises(OSError) as e:  # once per descriptor: NV_ERR_INVALID_STATE
        rig.escape(rig.dev, u.NV_ESC_REGISTER_FD, u.nv_ioctl_register_fd_t(ctl_fd=rig.ctl))
    assert e.value.errno == errno.EINVAL
    other = rig.hal.open("/dev/nvidia0")
    for fd in (other, 12345, rig.hal.open("/dev/nvidia-uvm")):  # no /dev/nvidiactl
        with pytest.raises(OSError):
            rig.escape(other, u.NV_ESC_REGISTER_FD, u.nv_ioctl_register_fd_t(ctl_fd=fd))
    with pytest.raises(OSError):
        rig.escape(rig.ctl, u.NV_ESC_REGISTER_FD, u.nv_ioctl_register_fd_t(ctl_fd=rig.ctl))


# ---- the object tree -------------------------------------------------------------------------------------------
def test_client_handles(rig):
    rm = rig.rm
    a = rig.alloc(0, rm.NV01_ROOT)
    assert a.status == 0 and a.hClass == rm.NV01_ROOT_CLIENT  # the escape makes every client NV01_ROOT_CLIENT
    assert a.hObjectNew & 0xFFF00000 == 0xC1D00000  # RS_CLIENT_HANDLE_BASE
    chosen = rig.alloc(0, rm.NV01_ROOT_CLIENT, client=0x1234)
    assert chosen.status == 0 and chosen.hObjectNew == 0x1234  # RS_COMPATABILITY_MODE: the caller's hRoot
    assert rig.alloc(0, rm.NV01_ROOT_CLIENT, client=0x1234).status == S.NV_ERR_INSERT_DUPLICATE_NAME


def test_allocation_refusals(rig):
    rm = rig.rm
    device, subdevice = rig.open_device()
    vas = rm.NV_VASPACE_ALLOCATION_PARAMETERS()
    assert rig.alloc(device, rm.FERMI_VASPACE_A, vas, client=0x5555).status == S.NV_ERR_INVALID_OBJECT_HANDLE
    assert rig.alloc(0xBAD, rm.FERMI_VASPACE_A, vas).status == S.NV_ERR_OBJECT_NOT_FOUND
    assert rig.alloc(rig.client, rm.FERMI_VASPACE_A, vas).status == S.NV_ERR_INVALID_OBJECT_PARENT
    assert rig.alloc(subdevice, rm.KEPLER_CHANNEL_GROUP_A,
                     rm.NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS()).status == S.NV_ERR_INVALID_OBJECT_PARENT
    assert rig.alloc(device, 0x1234, vas).status == S.NV_ERR_INVALID_CLASS
    assert rig.alloc(device, rm.FERMI_VASPACE_A).status == S.NV_ERR_INVALID_ARGUMENT  # required params
    bad = rm.NVOS21_PARAMETERS(hRoot=rig.client, hObjectParent=device, hClass=rm.FERMI_VASPACE_A, pAllocParms=16)
    assert rig.escape(rig.ctl, rm.NV_ESC_RM_ALLOC, bad).status == S.NV_ERR_INVALID_ADDRESS
    first = rig.make(device, rm.FERMI_VASPACE_A, vas, handle=0x100)
    assert first == 0x100
    assert rig.alloc(device, rm.FERMI_VASPACE_A, vas, handle=0x100).status == S.NV_ERR_INSERT_DUPLICATE_NAME
    assert rig.alloc(device, rm.FERMI_VASPACE_A, vas, handle=rig.client).status == S.NV_ERR_INVALID_OBJECT_HANDLE
    assert rig.alloc(device, rm.FERMI_VASPACE_A, vas, handle=0xC9F00010).status == S.NV_ERR_INVALID_OBJECT_HANDLE
    generated = rig.make(device, rm.FERMI_VASPACE_A, vas)
    assert generated & 0xFFF80000 == 0xCAF00000  # RS_UNIQUE_HANDLE_BASE


def test_unknown_client_status_follows_its_bucket(rig):
    rig.open_client()
    vas = rig.rm.NV_VASPACE_ALLOCATION_PARAMETERS()
    below = rig.client - 0x400  # same bucket, below a client that exists: NV_ERR_INVALID_OBJECT
    assert rig.alloc(rig.client, rig.rm.FERMI_VASPACE_A, vas, client=below).status == S.NV_ERR_INVALID_OBJECT
    assert rig.alloc(rig.client, rig.rm.FERMI_VASPACE_A, vas, client=rig.client + 1).status == \
        S.NV_ERR_INVALID_OBJECT_HANDLE


def test_device_and_subdevice_rules(tmp_path):
    rig = RMRig(tmp_path, count=2)
    rm = rig.rm
    rig.open_client()
    assert rig.alloc(rig.client, rm.NV01_DEVICE_0, rm.NV0080_ALLOC_PARAMETERS(deviceId=2)).status == \
        S.NV_ERR_INVALID_CLASS
    # /dev/nvidia1 is not open in the process: osIsGpuAccessible
    assert rig.alloc(rig.client, rm.NV01_DEVICE_0, rm.NV0080_ALLOC_PARAMETERS(deviceId=1)).status == \
        S.NV_ERR_INSUFFICIENT_PERMISSIONS
    device = rig.make(rig.client, rm.NV01_DEVICE_0, rm.NV0080_ALLOC_PARAMETERS(deviceId=0))
    assert rig.alloc(rig.client, rm.NV01_DEVICE_0, rm.NV0080_ALLOC_PARAMETERS(deviceId=0)).status == \
        S.NV_ERR_INSUFFICIENT_RESOURCES
    assert rig.alloc(device, rm.NV20_SUBDEVICE_0, rm.NV2080_ALLOC_PARAMETERS(subDeviceId=1)).status == \
        S.NV_ERR_INVALID_CLASS
    rig.make(device, rm.NV20_SUBDEVICE_0)  # optional params
    assert rig.alloc(device, rm.NV20_SUBDEVICE_0).status == S.NV_ERR_INSUFFICIENT_RESOURCES


def test_free_takes_the_children_and_the_client_takes_all(rig):
    rm = rig.rm
    device, subdevice = rig.open_device()
    memory = rig.memory(device, PAGE)
    info = rm.NV2080_CTRL_GPU_GET_NAME_STRING_PARAMS()
    assert rig.control(subdevice, rm.NV2080_CTRL_CMD_GPU_GET_NAME_STRING, info).status == 0
    assert rig.free(device) == 0
    assert rig.control(subdevice, rm.NV2080_CTRL_CMD_GPU_GET_NAME_STRING, info).status == S.NV_ERR_OBJECT_NOT_FOUND
    assert rig.free(memory) == 0  # gone already: RS_COMPATABILITY_MODE answers NV_OK
    assert rig.free(device, client=0x5555) == S.NV_ERR_INVALID_OBJECT_HANDLE
    rig.open_device()
    assert rig.free(rig.client) == 0
    assert not rig.m.resman.server.clients


def test_closing_the_control_descriptor_frees_its_clients(rig):
    rig.open_device()
    rig.hal.close(rig.ctl)
    assert not rig.m.resman.server.clients


# ---- class lists -----------------------------------------------------------------------------------------------
ROLES = {"sm_86": ("AMPERE_CHANNEL_GPFIFO_A", "AMPERE_COMPUTE_B", "AMPERE_DMA_COPY_B", "AMPERE_USERMODE_A"),
         "sm_89": ("AMPERE_CHANNEL_GPFIFO_A", "ADA_COMPUTE_A", "AMPERE_DMA_COPY_B", "AMPERE_USERMODE_A"),
         "sm_90": ("HOPPER_CHANNEL_GPFIFO_A", "HOPPER_COMPUTE_A", "HOPPER_DMA_COPY_A", "HOPPER_USERMODE_A"),
         "sm_120": ("BLACKWELL_CHANNEL_GPFIFO_B", "BLACKWELL_COMPUTE_B", "BLACKWELL_DMA_COPY_B",
                    "BLACKWELL_USERMODE_A")}


@pytest.mark.parametrize("arch", ROLES)
def test_class_list_per_arch(tmp_path, arch):
    rig = RMRig(tmp_path, arch)
    rm = rig.rm
    device, _ = rig.open_device()
    count = rm.NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS()
    assert rig.control(device, rm.NV0080_CTRL_CMD_GPU_GET_CLASSLIST, count).status == 0
    ids = (ctypes.c_uint32 * count.numClasses)()
    got = rm.NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS(numClasses=count.numClasses, classList=address(ids))
    assert rig.control(device, rm.NV0080_CTRL_CMD_GPU_GET_CLASSLIST, got).status == 0
    names = {**nv_classes.BLACKWELL_CLASSES, **{n: getattr(rm, n) for n in dir(rm) if n.endswith(("_A", "_B"))}}
    assert {names[n] for n in ROLES[arch]} <= set(ids)
    assert arch == "sm_120" or list(ids) == list(rm.CHIP_CLASSES[chips.chip(arch).chip])
    others = {names[n] for a, roles in ROLES.items() if a != arch for n in roles[1:3]} - set(ids)
    assert others  # every arch lacks another's compute or copy class
    short = rm.NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS(numClasses=2, classList=address(ids))
    assert rig.control(device, rm.NV0080_CTRL_CMD_GPU_GET_CLASSLIST, short).status == S.NV_ERR_INVALID_PARAM_STRUCT
    null = rm.NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS(numClasses=4)
    assert rig.control(device, rm.NV0080_CTRL_CMD_GPU_GET_CLASSLIST, null).status == S.NV_ERR_INVALID_ARGUMENT


# ---- controls --------------------------------------------------------------------------------------------------
def test_control_refusals(rig):
    rm = rig.rm
    device, subdevice = rig.open_device()
    name = rm.NV2080_CTRL_GPU_GET_NAME_STRING_PARAMS()
    cmd = rm.NV2080_CTRL_CMD_GPU_GET_NAME_STRING
    assert rig.control(subdevice, cmd, name, size=ctypes.sizeof(name) - 4).status == S.NV_ERR_INVALID_ARGUMENT
    assert rig.control(subdevice, cmd, None, size=ctypes.sizeof(name)).status == S.NV_ERR_INVALID_ARGUMENT
    assert rig.control(subdevice, cmd, name, client=0x5555).status == S.NV_ERR_INVALID_CLIENT
    assert rig.control(0xBAD, cmd, name).status == S.NV_ERR_OBJECT_NOT_FOUND
    assert rig.control(device, cmd, name).status == S.NV_ERR_NOT_SUPPORTED  # a subdevice's command on a device
    assert rig.control(subdevice, 0x2080FFFF, ctypes.c_uint32()).status == S.NV_ERR_NOT_SUPPORTED
    unread = rm.NVOS54_PARAMETERS(hClient=rig.client, hObject=subdevice, cmd=cmd, params=16,
                                  paramsSize=ctypes.sizeof(name))
    assert rig.escape(rig.ctl, rm.NV_ESC_RM_CONTROL, unread).status == S.NV_ERR_INVALID_ADDRESS
    assert rig.control(subdevice, 0x20800000).status == 0  # a NULL command


@pytest.mark.parametrize("arch", ["sm_86", "sm_89", "sm_90", "sm_120"])
def test_gr_info_and_names(tmp_path, arch):
    rig = RMRig(tmp_path, arch)
    rm, chip = rig.rm, chips.chip(arch)
    _, subdevice = rig.open_device()
    keys = ("SM_VERSION", "LITTER_NUM_GPCS", "LITTER_NUM_TPC_PER_GPC", "LITTER_NUM_SM_PER_TPC", "MAX_WARPS_PER_SM")
    infos = (rm.NV2080_CTRL_GR_INFO * len(keys))(*(rm.NV2080_CTRL_GR_INFO(
        index=getattr(rm, f"NV2080_CTRL_GR_INFO_INDEX_{k}")) for k in keys))
    params = rm.NV2080_CTRL_GR_GET_INFO_PARAMS(grInfoListSize=len(keys), grInfoList=address(infos))
    assert rig.control(subdevice, rm.NV2080_CTRL_CMD_GR_GET_INFO, params).status == 0
    sm = {"sm_86": rm.NV2080_CTRL_GR_INFO_SM_VERSION_8_6, "sm_89": rm.NV2080_CTRL_GR_INFO_SM_VERSION_8_9,
          "sm_90": rm.NV2080_CTRL_GR_INFO_SM_VERSION_9_0, "sm_120": 0xC00}[arch]
    assert [i.data for i in infos] == [sm, chip.gpcs, chip.tpc_per_gpc, chip.sm_per_tpc, chip.warps_per_sm]
    bad = (rm.NV2080_CTRL_GR_INFO * 1)(rm.NV2080_CTRL_GR_INFO(index=rm.NV2080_CTRL_GR_INFO_MAX_SIZE))
    params = rm.NV2080_CTRL_GR_GET_INFO_PARAMS(grInfoListSize=1, grInfoList=address(bad))
    assert rig.control(subdevice, rm.NV2080_CTRL_CMD_GR_GET_INFO, params).status == S.NV_ERR_INVALID_ARGUMENT
    empty = rm.NV2080_CTRL_GR_GET_INFO_PARAMS()
    assert rig.control(subdevice, rm.NV2080_CTRL_CMD_GR_GET_INFO, empty).status == S.NV_ERR_INVALID_ARGUMENT
    name = rm.NV2080_CTRL_GPU_GET_NAME_STRING_PARAMS()
    rig.control(subdevice, rm.NV2080_CTRL_CMD_GPU_GET_NAME_STRING, name)
    assert bytes(name.gpuNameString.ascii).split(b"\0")[0].decode() == chip.name


def test_gid_fb_id_and_build_controls(tmp_path):
    rig = RMRig(tmp_path, count=2)
    rm = rig.rm
    _, subdevice = rig.open_device()
    gid = rm.NV2080_CTRL_GPU_GET_GID_INFO_PARAMS(flags=rm.NV2080_GPU_CMD_GPU_GET_GID_FLAGS_FORMAT_BINARY)
    assert rig.control(subdevice, rm.NV2080_CTRL_CMD_GPU_GET_GID_INFO, gid).status == 0
    assert gid.length == 16 and bytes(gid.data[:16]) == chips.uuid(0) != chips.uuid(1)
    text = rm.NV2080_CTRL_GPU_GET_GID_INFO_PARAMS(flags=rm.NV2080_GPU_CMD_GPU_GET_GID_FLAGS_FORMAT_ASCII)
    rig.control(subdevice, rm.NV2080_CTRL_CMD_GPU_GET_GID_INFO, text)
    assert bytes(text.data[:text.length]) == chips.uuid_text(0).encode() + b"\0"
    sha = rm.NV2080_CTRL_GPU_GET_GID_INFO_PARAMS(flags=4)  # a _TYPE other than SHA1
    assert rig.control(subdevice, rm.NV2080_CTRL_CMD_GPU_GET_GID_INFO, sha).status == S.NV_ERR_INVALID_FLAGS
    fb = rm.NV2080_CTRL_FB_GET_INFO_V2_PARAMS(fbInfoListSize=1)
    fb.fbInfoList[0].index = rm.NV2080_CTRL_FB_INFO_INDEX_RAM_SIZE
    assert rig.control(subdevice, rm.NV2080_CTRL_CMD_FB_GET_INFO_V2, fb).status == 0
    assert fb.fbInfoList[0].data << 10 == chips.chip("sm_90").vram
    fb.fbInfoListSize = 0
    assert rig.control(subdevice, rm.NV2080_CTRL_CMD_FB_GET_INFO_V2, fb).status == S.NV_ERR_INVALID_ARGUMENT
    ident = rm.NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS(gpuId=chips.gpu_id(1))
    assert rig.control(rig.client, rm.NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2, ident).status == 0
    assert (ident.deviceInstance, ident.numaId) == (1, -1)
    ident.gpuId = 0x1234
    assert rig.control(rig.client, rm.NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2, ident).status == S.NV_ERR_INVALID_ARGUMENT
    probed = rm.NV0000_CTRL_GPU_GET_PROBED_IDS_PARAMS()
    rig.control(rig.client, rm.NV0000_CTRL_CMD_GPU_GET_PROBED_IDS, probed)
    assert list(probed.gpuIds[:3]) == [chips.gpu_id(0), chips.gpu_id(1), rm.NV0000_CTRL_GPU_INVALID_ID]
    build = rm.NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS()
    assert rig.control(rig.client, rm.NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2, build).status == 0
    assert build.driverVersionBuffer == rig.m.release.encode()


# ---- memory ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("vidmem", [True, False])
def test_memory_mapped_for_the_cpu_shares_pages_with_the_mock(rig, vidmem):
    device, _ = rig.open_device()
    size = 4 * PAGE
    params = rig.memory_params(size - 100, vidmem)
    cls = rig.rm.NV01_MEMORY_LOCAL_USER if vidmem else rig.rm.NV01_MEMORY_SYSTEM
    memory = rig.make(device, cls, params)
    assert (params.size, params.limit) == (size, size - 1)  # rounded to pages and copied back
    target = anonymous(size)  # mapped at a fixed address, as a driver maps it at its GPU VA
    fd = rig.hal.open("/dev/nvidia0" if vidmem else "/dev/nvidiactl")
    assert rig.map_memory(device, memory, size, fd).params.status == 0
    assert rig.hal.mmap(fd, size, 0, flags=0x01 | 0x10, address=target) == target
    cpu = np.frombuffer(view(target, size), np.uint8)
    cpu[:8] = np.arange(8)
    pages = rig.m.resman.server.clients[rig.client].get(memory).state.pages.array
    assert list(pages[:8]) == list(range(8))
    pages[PAGE] = 0xAB
    assert cpu[PAGE] == 0xAB


def test_map_memory_refusals(rig):
    device, _ = rig.open_device()
    vid, sys = rig.memory(device, 2 * PAGE), rig.memory(device, 2 * PAGE, vidmem=False)
    assert rig.map_memory(device, vid, PAGE, rig.hal.open("/dev/nvidiactl")).params.status == \
        S.NV_ERR_INVALID_ARGUMENT  # video memory is mapped through /dev/nvidiaN
    assert rig.map_memory(device, sys, PAGE, rig.hal.open("/dev/nvidia0")).params.status == S.NV_ERR_INVALID_ARGUMENT
    fd = rig.hal.open("/dev/nvidia0")
    assert rig.map_memory(device, vid, PAGE, fd, offset=2 * PAGE).params.status == S.NV_ERR_INVALID_BASE
    assert rig.map_memory(device, vid, 0, fd).params.status == S.NV_ERR_INVALID_LIMIT
    assert rig.map_memory(device, vid, 3 * PAGE, fd).params.status == S.NV_ERR_INVALID_LIMIT
    assert rig.map_memory(rig.client, vid, PAGE, fd).params.status == S.NV_ERR_INVALID_OBJECT_PARENT
    assert rig.map_memory(device, 0xBAD, PAGE, fd).params.status == S.NV_ERR_OBJECT_NOT_FOUND
    with pytest.raises(OSError) as e:  # no mapping context on the descriptor yet
        rig.hal.mmap(fd, PAGE)
    assert e.value.errno == errno.EINVAL
    assert rig.map_memory(device, vid, PAGE, fd).params.status == 0
    assert rig.map_memory(device, vid, PAGE, fd).params.status == S.NV_ERR_STATE_IN_USE
    for length, offset, code in ((2 * PAGE, 0, errno.ENXIO), (PAGE, PAGE, errno.EINVAL)):
        with pytest.raises(OSError) as e:
            rig.hal.mmap(fd, length, offset)
        assert e.value.errno == code


def test_memory_allocation_refusals(rig):
    rm = rig.rm
    device, _ = rig.open_device()
    cases = [(rm.NV01_MEMORY_LOCAL_USER, dict(owner=0), S.NV_ERR_INVALID_OWNER),
             (rm.NV01_MEMORY_LOCAL_USER, dict(attr=1 << 25), S.NV_ERR_INVALID_ARGUMENT),  # a PCI location
             (rm.NV01_MEMORY_SYSTEM, dict(attr=0), S.NV_ERR_INVALID_ARGUMENT),  # a VIDMEM location
             (rm.NV01_MEMORY_LOCAL_USER, dict(internalflags=1), S.NV_ERR_INVALID_ARGUMENT),
             (rm.NV01_MEMORY_LOCAL_USER, dict(size=chips.chip("sm_90").vram + PAGE), S.NV_ERR_NO_MEMORY)]
    for cls, fields, status in cases:
        params = rig.memory_params(PAGE, cls == rm.NV01_MEMORY_LOCAL_USER)
        for k, v in fields.items():
            setattr(params, k, v)
        assert rig.alloc(device, cls, params).status == status, fields


def test_os_descriptor_memory(rig):
    rm = rig.rm
    device, _ = rig.open_device()
    pointer = anonymous(2 * PAGE)

    def alloc(flags=OS02_OSDESC, at=pointer, fd=rig.dev, handle=0x700):
        made = rm.nv_ioctl_nvos02_parameters_with_fd(params=rm.NVOS02_PARAMETERS(
            hRoot=rig.client, hObjectParent=device, hObjectNew=handle, hClass=rm.NV01_MEMORY_SYSTEM_OS_DESCRIPTOR,
            flags=flags, pMemory=at, limit=2 * PAGE - 1), fd=-1)
        return rig.escape(fd, rm.NV_ESC_RM_ALLOC_MEMORY, made).params

    assert alloc(flags=1 << 12).status == S.NV_ERR_INVALID_FLAGS  # not NO_MAP
    assert alloc(at=pointer + 8).status == S.NV_ERR_NOT_SUPPORTED
    assert alloc(at=0x1000).status == S.NV_ERR_INVALID_ADDRESS
    made = alloc()
    assert made.status == 0 and made.hObjectNew == 0x700
    np.frombuffer(view(pointer, 8), np.uint8)[:] = 5
    assert rig.m.resman.server.clients[rig.client].get(0x700).state.pages.array[0] == 5
    assert alloc().status == S.NV_ERR_INSERT_DUPLICATE_NAME


def test_map_memory_dma(rig):
    rm = rig.rm
    device, _ = rig.open_device()
    virtual = rig.make(device, rm.NV01_MEMORY_VIRTUAL, rm.NV_MEMORY_VIRTUAL_ALLOCATION_PARAMS(limit=(1 << 40) - 1))
    memory = rig.memory(device, 2 * PAGE)
    pages = rig.m.resman.server.clients[rig.client].get(memory).state.pages.array
    pages[:4] = [1, 2, 3, 4]

    def dma(va, flags=DMA_FIXED, length=2 * PAGE, hdma=virtual, mem=memory):
        a = rm.NVOS46_PARAMETERS(hClient=rig.client, hDevice=device, hDma=hdma, hMemory=mem, length=length,
                                 flags=flags, dmaOffset=va)
        return rig.escape(rig.ctl, rm.NV_ESC_RM_MAP_MEMORY_DMA, a)

    assert dma(0x20_0000_0000).status == 0
    vas = rig.m.resman.server.clients[rig.client].get(device).state.vaspace  # without hVASpace: the device's own
    assert list(vas.read(0x20_0000_0000, 4)) == [1, 2, 3, 4]
    assert dma(0x20_0000_1000).status == S.NV_ERR_NO_MEMORY  # over the first
    assert dma(0x20_0000_0800).status == S.NV_ERR_INVALID_OFFSET
    assert dma(1 << 41).status == S.NV_ERR_INVALID_OFFSET  # past the virtual object's limit
    assert dma(0x30_0000_0000, length=3 * PAGE).status == S.NV_ERR_INVALID_LIMIT
    assert dma(0x30_0000_0000, hdma=memory).status == S.NV_ERR_INVALID_OBJECT
    assert dma(0x30_0000_0000, mem=virtual).status == S.NV_ERR_INVALID_OBJECT_HANDLE
    placed = dma(0, flags=0)
    assert placed.status == 0 and placed.dmaOffset % (1 << 16) == 0 and placed.dmaOffset != 0x20_0000_0000
    unmap = rm.NVOS47_PARAMETERS(hClient=rig.client, hDevice=device, hDma=virtual, hMemory=memory,
                                 dmaOffset=0x20_0000_0000)
    assert rig.escape(rig.ctl, rm.NV_ESC_RM_UNMAP_MEMORY_DMA, unmap).status == 0
    assert rig.escape(rig.ctl, rm.NV_ESC_RM_UNMAP_MEMORY_DMA, unmap).status == S.NV_ERR_INVALID_ARGUMENT
    with pytest.raises(MemoryFault):
        vas.read(0x20_0000_0000, 4)
    assert rig.free(memory) == 0  # a freed memory object leaves the VA spaces it was mapped into
    with pytest.raises(MemoryFault):
        vas.read(placed.dmaOffset, 4)


# ---- the usermode page and channels ----------------------------------------------------------------------------
class Channel:
    """A channel group with a context share on a FERMI_VASPACE_A, and a GPFIFO channel of the chip's class in it
    whose error notifier (page 0), ring (page 1) and USERD (page 2) are video memory mapped for the CPU and
    (MAP_MEMORY_DMA) the GPU."""

    def __init__(self, rig: RMRig, gpfifo: int, engine_cls: int | None = None):
        rm = rig.rm
        self.device, self.subdevice = rig.open_device()
        self.vaspace = rig.make(self.device, rm.FERMI_VASPACE_A, rm.NV_VASPACE_ALLOCATION_PARAMETERS())
        virtual = rig.make(self.device, rm.NV01_MEMORY_VIRTUAL, rm.NV_MEMORY_VIRTUAL_ALLOCATION_PARAMS(
            limit=(1 << 40) - 1, hVASpace=self.vaspace))
        self.group = rig.make(self.device, rm.KEPLER_CHANNEL_GROUP_A, rm.NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS(
            engineType=rm.NV2080_ENGINE_TYPE_GRAPHICS))
        self.share = rig.make(self.group, rm.FERMI_CONTEXT_SHARE_A, rm.NV_CTXSHARE_ALLOCATION_PARAMETERS(
            hVASpace=self.vaspace))
        self.ring_va, self.memory = 0x10_0000_0000, rig.memory(self.device, 4 * PAGE)
        a = rm.NVOS46_PARAMETERS(hClient=rig.client, hDevice=self.device, hDma=virtual, hMemory=self.memory,
                                 length=4 * PAGE, flags=DMA_FIXED, dmaOffset=self.ring_va)
        assert rig.escape(rig.ctl, rm.NV_ESC_RM_MAP_MEMORY_DMA, a).status == 0
        self.cpu = np.frombuffer(view(rig.cpu_map(self.device, self.memory, 4 * PAGE), 4 * PAGE), np.uint8)
        self.params = rm.NV_CHANNEL_ALLOC_PARAMS(gpFifoOffset=self.ring_va + PAGE, gpFifoEntries=16,
                                                 hContextShare=self.share, hObjectError=self.memory,
                                                 engineType=rm.NV2080_ENGINE_TYPE_GRAPHICS)
        self.params.hUserdMemory[0], self.params.userdOffset[0] = self.memory, 2 * PAGE
        self.handle = rig.make(self.group, gpfifo, self.params)
        if engine_cls is not None:
            self.engine = rig.make(self.handle, engine_cls)
        token = rm.NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS()
        assert rig.control(self.handle, rm.NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN, token).status == 0
        self.token = token.workSubmitToken
        self.rig = rig

    def doorbell(self):
        """The usermode page, mapped as a driver maps it (MAP_MEMORY of the usermode object, then mmio)."""
        rig, rm = self.rig, self.rig.rm
        usermode = rig.make(self.subdevice, rm.HOPPER_USERMODE_A)
        fd = rig.hal.open("/dev/nvidia0")
        assert rig.map_memory(self.subdevice, usermode, 0x10000, fd).params.status == 0
        return fd, rig.hal.mmio(fd, 0x10000, 0)


def test_channel_token_doorbell_and_error_notifier(rig):
    rm = rig.rm
    ch = Channel(rig, rm.HOPPER_CHANNEL_GPFIFO_A, rm.HOPPER_COMPUTE_A)
    gpu = rig.m.gpu(0)
    channel = rig.m.resman.server.clients[rig.client].get(ch.handle).state.channel
    assert channel in gpu.channels and channel.token == ch.token
    fd, doorbell = ch.doorbell()
    t0 = doorbell[0x80 // 4] | doorbell[0x84 // 4] << 32
    assert t0 and (doorbell[0x80 // 4] | doorbell[0x84 // 4] << 32) > t0  # NV_USERMODE_TIME_0/1
    ring = ch.cpu[PAGE:2 * PAGE].view(np.uint64)
    ring[0] = pushbuf.gp_entry(0x7_0000_0000, 4)  # a pushbuffer at an address nothing maps
    ch.cpu[2 * PAGE + 0x8C:2 * PAGE + 0x90] = np.frombuffer((1).to_bytes(4, "little"), np.uint8)  # GPPut
    doorbell[0x90 // 4] = ch.token
    assert channel.error is not None
    note = rm.NvNotification.from_buffer(ch.cpu[:16].copy())
    assert (note.info32, note.info16, note.status) == (rm.ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT,
                                                      rm.NV2080_ENGINE_TYPE_GRAPHICS, 0xFFFF)
    debugger = rig.make(ch.device, rm.GT200_DEBUGGER, rm.NV83DE_ALLOC_PARAMETERS(hClass3dObject=ch.engine))
    info = rm.NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_PARAMS()
    assert rig.control(debugger, rm.NV83DE_CTRL_CMD_DEBUG_READ_MMU_FAULT_INFO, info).status == 0
    assert info.count == 1 and info.mmuFaultInfoList[0].faultAddress == 0x7_0000_0000
    assert rig.alloc(ch.device, rm.GT200_DEBUGGER, rm.NV83DE_ALLOC_PARAMETERS(
        hClass3dObject=0xBAD)).status == S.NV_ERR_INVALID_OBJECT_PARENT
    assert rig.free(ch.group) == 0  # the group's channels go with it
    assert channel not in gpu.channels


def test_tinygrads_fault_knob_is_one_more_mmu_fault_while_set(rig, monkeypatch):
    """MOCKGPU_EMU_FAULTADDR (tinygrad's mock contract): while it is set, the debugger's context reports an MMU
    fault at that address (the SMs' error state says one stopped it); unset, nothing faulted."""
    rm = rig.rm
    ch = Channel(rig, rm.HOPPER_CHANNEL_GPFIFO_A, rm.HOPPER_COMPUTE_A)
    debugger = rig.make(ch.device, rm.GT200_DEBUGGER, rm.NV83DE_ALLOC_PARAMETERS(hClass3dObject=ch.engine))

    def faults() -> tuple[bool, list[int]]:
        sm = rm.NV83DE_CTRL_DEBUG_READ_ALL_SM_ERROR_STATES_PARAMS(numSMsToRead=1)
        assert rig.control(debugger, rm.NV83DE_CTRL_CMD_DEBUG_READ_ALL_SM_ERROR_STATES, sm).status == 0
        info = rm.NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_PARAMS()
        assert rig.control(debugger, rm.NV83DE_CTRL_CMD_DEBUG_READ_MMU_FAULT_INFO, info).status == 0
        return bool(sm.mmuFault.valid), [info.mmuFaultInfoList[i].faultAddress for i in range(info.count)]
    assert faults() == (False, [])
    monkeypatch.setenv("MOCKGPU_EMU_FAULTADDR", "0xDEADBEE1")
    assert faults() == (True, [0xDEADBEE1])
    monkeypatch.delenv("MOCKGPU_EMU_FAULTADDR")
    assert faults() == (False, [])


def test_a_doorbell_stored_through_an_mmap_of_the_usermode_page_runs_the_channel(rig):
    """tinygrad maps the usermode registers with mmap and rings with a plain store of the token; the doorbell
    agent notices (a second ring of the same token too: the channel's GP_PUT moved)."""
    rm = rig.rm
    ch = Channel(rig, rm.HOPPER_CHANNEL_GPFIFO_A, rm.HOPPER_COMPUTE_A)
    channel = rig.m.resman.server.clients[rig.client].get(ch.handle).state.channel
    fd, _ = ch.doorbell()
    registers = view(rig.hal.mmap(fd, 0x10000), 0x10000).cast("I")
    ring = ch.cpu[PAGE:2 * PAGE].view(np.uint64)
    ring[0] = pushbuf.gp_entry(0x7_0000_0000, 4)  # a pushbuffer at an address nothing maps: the channel stops
    ch.cpu[2 * PAGE + 0x8C:2 * PAGE + 0x90] = np.frombuffer((1).to_bytes(4, "little"), np.uint8)  # GPPut
    registers[0x90 // 4] = ch.token
    deadline = time.monotonic() + 10
    while channel.error is None and time.monotonic() < deadline:
        time.sleep(0.001)
    assert channel.error is not None and channel.gp_get == 0


def test_channel_refusals(rig):
    rm = rig.rm
    ch = Channel(rig, rm.HOPPER_CHANNEL_GPFIFO_A)
    p = ch.params
    p.hVASpace = ch.vaspace  # a context share and a VA space at once
    assert rig.alloc(ch.group, rm.HOPPER_CHANNEL_GPFIFO_A, p).status == S.NV_ERR_INVALID_ARGUMENT
    p.hVASpace, p.hContextShare = 0, 0  # the group's channels name context shares
    assert rig.alloc(ch.group, rm.HOPPER_CHANNEL_GPFIFO_A, p).status == S.NV_ERR_INVALID_ARGUMENT
    p.hContextShare = ch.memory
    assert rig.alloc(ch.group, rm.HOPPER_CHANNEL_GPFIFO_A, p).status == S.NV_ERR_INVALID_OBJECT_HANDLE
    other = rig.make(ch.device, rm.KEPLER_CHANNEL_GROUP_A, rm.NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS())
    p.hContextShare = ch.share  # another group's context share
    assert rig.alloc(other, rm.HOPPER_CHANNEL_GPFIFO_A, p).status == S.NV_ERR_INVALID_OBJECT_PARENT
    blackwell = nv_classes.BLACKWELL_CLASSES["BLACKWELL_CHANNEL_GPFIFO_A"]  # not a Hopper's
    assert rig.alloc(ch.group, blackwell, p).status == S.NV_ERR_INVALID_CLASS
    assert rig.alloc(ch.handle, rm.AMPERE_COMPUTE_B).status == S.NV_ERR_INVALID_CLASS
    assert rig.alloc(ch.group, rm.HOPPER_COMPUTE_A).status == S.NV_ERR_INVALID_OBJECT_PARENT
    p.userdOffset[0] = 4 * PAGE - 256  # USERD past the memory's end
    assert rig.alloc(ch.group, rm.HOPPER_CHANNEL_GPFIFO_A, p).status == S.NV_ERR_INVALID_OFFSET


def test_usermode_mapped_through_another_gpu_file_is_refused(tmp_path):
    rig = RMRig(tmp_path, "sm_86", count=2)
    rm = rig.rm
    _, subdevice = rig.open_device(0)
    usermode = rig.make(subdevice, rm.AMPERE_USERMODE_A)
    other = rig.hal.open("/dev/nvidia1")
    assert rig.map_memory(subdevice, usermode, 0x10000, other).params.status == S.NV_ERR_INVALID_ARGUMENT
    assert rig.map_memory(subdevice, usermode, 0x20000, rig.dev).params.status == S.NV_ERR_INVALID_LIMIT


def test_video_memory_is_counted_until_freed(rig):
    rm = rig.rm
    device, subdevice = rig.open_device()

    def heap_free() -> int:
        fb = rm.NV2080_CTRL_FB_GET_INFO_V2_PARAMS(fbInfoListSize=1)
        fb.fbInfoList[0].index = rm.NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE
        assert rig.control(subdevice, rm.NV2080_CTRL_CMD_FB_GET_INFO_V2, fb).status == 0
        return fb.fbInfoList[0].data << 10

    before = heap_free()
    first, second = rig.memory(device, 1 << 20), rig.memory(device, 1 << 21)
    assert heap_free() == before - (3 << 20)
    assert rig.free(first) == 0 and rig.free(second) == 0
    assert heap_free() == before


def test_os_events_sys_params_and_cpu_unmap(rig):
    rm, u = rig.rm, rig.u
    device, _ = rig.open_device()
    event = u.nv_ioctl_alloc_os_event_t(hClient=rig.client, fd=7)
    assert rig.escape(rig.dev, u.NV_ESC_ALLOC_OS_EVENT, event).Status == 0
    assert rig.escape(rig.dev, u.NV_ESC_ALLOC_OS_EVENT, event).Status == S.NV_ERR_INSUFFICIENT_RESOURCES
    gone = u.nv_ioctl_free_os_event_t(hClient=rig.client, fd=7)
    assert rig.escape(rig.ctl, u.NV_ESC_FREE_OS_EVENT, gone).Status == 0
    assert rig.escape(rig.ctl, u.NV_ESC_FREE_OS_EVENT, gone).Status == S.NV_ERR_INVALID_EVENT
    rig.escape(rig.ctl, u.NV_ESC_SYS_PARAMS, u.nv_ioctl_sys_params_t(memblock_size=1 << 27))
    with pytest.raises(OSError) as e:  # set once
        rig.escape(rig.ctl, u.NV_ESC_SYS_PARAMS, u.nv_ioctl_sys_params_t(memblock_size=1 << 28))
    assert e.value.errno == errno.EBUSY
    memory = rig.memory(device, PAGE, vidmem=False)
    mapped = rig.map_memory(device, memory, PAGE, rig.hal.open("/dev/nvidiactl")).params
    unmap = rm.NVOS34_PARAMETERS(hClient=rig.client, hDevice=device, hMemory=memory,
                                 pLinearAddress=mapped.pLinearAddress)
    assert rig.escape(rig.ctl, rm.NV_ESC_RM_UNMAP_MEMORY, unmap).status == 0
    assert rig.escape(rig.ctl, rm.NV_ESC_RM_UNMAP_MEMORY, unmap).status == S.NV_ERR_INVALID_ARGUMENT


def test_555_wait_open_complete(tmp_path):
    rig = RMRig(tmp_path, release="555.58.02")
    done = rig.u.nv_ioctl_wait_open_complete_t(rc=-1, adapterStatus=0xFF)
    rig.escape(rig.dev, rig.u.NV_ESC_WAIT_OPEN_COMPLETE, done)
    assert (done.rc, done.adapterStatus) == (0, 0)
