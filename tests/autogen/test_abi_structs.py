"""ABI check of the generated C bindings: gcc/g++ compiled against the same headers print every struct's
sizeof and each field's offsetof (a bit field by the bytes of the struct with only that field all ones),
every constant, every ioctl number; the committed ctypes modules must agree on all of them."""

from __future__ import annotations

import ctypes
import importlib
from enum import IntEnum
from functools import partial

import pytest
from generated import module

from usergpu.autogen._support import Ioctl
from usergpu.autogen.generator import amdkernel, kdesc, modules, nvclasses, nvrm, toolchain
from usergpu.errors import ToolchainError

MASK64 = (1 << 64) - 1


def _abi(name: str) -> tuple[str, list[str], list[str], str]:
    """(language, includes, flags, preamble) to compile a probe against what module `name` was made from."""
    if name in UAPI:  # linux-source-6.12's installed uapi header the module is made from (not Debian's older ones)
        return "c", [str(toolchain.uapi_header(UAPI[name])[0])], toolchain.c_flags(), ""
    if name == "vfio":
        return "c", ["linux/vfio.h"], toolchain.c_flags(), ""
    if name in KERNEL:  # the generator's translation unit: its kernel prelude, then the amd headers
        return "c", [str(KERNEL[name].translation_unit())], toolchain.c_flags(), ""
    if name in NV:  # the generator's translation unit of NVIDIA's headers, with their tree's include folders
        unit, flags = NV[name]
        return "c", [str(unit())], [*flags(), *toolchain.c_flags()], ""
    kd, aql = kdesc.header(), modules.aql_header()
    return "c++", [str(kd), str(aql)], [*toolchain.c_flags(), *kdesc.cxx_flags()], "using namespace llvm::amdhsa;"


UAPI = {"kfd": toolchain.KFD_IOCTL, "amdgpu_drm": toolchain.AMDGPU_DRM[0]}  # amdgpu_drm.h includes the other two
KERNEL = {i.name: i for i in amdkernel.INTERFACES}  # amdgpu's in-kernel headers (linux-source-6.12)
# NVIDIA's (nvidia-open-gpu-kernel-modules and open-gpu-doc): translation unit, include flags. A module several
# releases share is checked against its first release's headers (its render proved the others bind the same).
NV = {i.name: (partial(i.translation_unit, i.releases[0]), partial(i.flags, i.releases[0])) for i in nvrm.INTERFACES}
NV["nv_classes"] = (nvclasses.translation_unit, nvclasses.include_flags)
MODULES = ["kfd", "vfio", "amdgpu_drm", "amdhsa", *KERNEL, *NV]


def records(mod, named: bool = True) -> list[type]:
    """The C records of a generated module (only those with a C name, by default)."""
    return list(dict.fromkeys(  # a typedef's alias is the same class
        v
        for v in vars(mod).values()
        if isinstance(v, type) and issubclass(v, (ctypes.Structure, ctypes.Union)) and v.__module__ == mod.__name__
        and (v._cname_ or not named)
    ))


def members(cls: type, path: str = "", base: int = 0):
    """(C member designator, ctypes offset, ctypes type, bit width or None) of every member, nested ones too."""
    anonymous = getattr(cls, "_anonymous_", ())
    for f in cls._fields_:
        name, ctype = f[0], f[1]
        desc = getattr(cls, name)
        off = base + desc.offset
        if name in anonymous:  # C reaches an anonymous member's fields directly
            yield from members(ctype, path, off)
            continue
        designator = f"{path}{name}"
        bits = f[2] if len(f) > 2 else None
        yield designator, off, ctype, bits
        inner = _record_of(ctype)
        index = "[0]" * (ctype is not inner and hasattr(ctype, "_length_"))
        if isinstance(inner, type) and issubclass(inner, (ctypes.Structure, ctypes.Union)):
            yield from members(inner, f"{designator}{index}.", off)


def _record_of(ctype: type) -> type:
    while hasattr(ctype, "_length_") and isinstance(getattr(ctype, "_type_", None), type):
        ctype = ctype._type_
    return ctype


def constants(mod) -> dict[str, int]:
    """Module-level ints (enumerators, #defines) and ioctl numbers, by C name."""
    out = {}
    for k, v in vars(mod).items():
        if k.startswith("_") or isinstance(v, type):
            continue
        if isinstance(v, Ioctl):
            out[k] = v.request
        elif isinstance(v, int) and not isinstance(v, IntEnum | bool):
            out[k] = v
    return out


def bits_set(cls: type, designator: str, bits: int) -> str:
    """The bytes (hex) of a zeroed cls with only the bit field at designator all ones (ctypes' nested views share
    the root's buffer)."""
    root = obj = cls()
    *path, last = designator.replace("[0]", ".[0]").split(".")
    for part in path:
        obj = obj[0] if part == "[0]" else getattr(obj, part)
    setattr(obj, last, (1 << bits) - 1)
    return bytes(root).hex()


def probe(name: str, lines: list[str]) -> list[str]:
    try:
        lang, includes, flags, pre = _abi(name)
    except ToolchainError as e:
        pytest.skip(str(e))
    head = ["#include <stdio.h>", "#include <stddef.h>", "#include <string.h>"]
    head += [f'#include "{i}"' if i.startswith("/") else f"#include <{i}>" for i in includes]
    src = "\n".join([*head, pre, "int main(void) {", *lines, "return 0; }"]) + "\n"
    run = toolchain.compile_and_run(src, lang, flags)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout.split()


@pytest.mark.parametrize("name", MODULES)
def test_struct_layouts_match_the_c_compiler(name):
    mod = module(name)
    recs = records(mod)
    assert recs
    lines, expect, seen = [], [], set(recs)
    for cls in recs:
        lines.append(f'printf("%zu\\n", sizeof({cls._cname_}));')
        expect.append((f"sizeof({cls._cname_})", ctypes.sizeof(cls)))
        stack = [cls]
        while stack:
            inner = {_record_of(f[1]) for f in stack.pop()._fields_} - seen
            seen |= inner
            stack += [t for t in inner if hasattr(t, "_fields_")]
        for designator, off, _, bits in members(cls):
            if bits is not None:  # no offsetof: the struct's bytes with only this field all ones
                lines.append(f"{{ {cls._cname_} x; memset(&x, 0, sizeof x); x.{designator} = -1; "
                             'for (size_t i = 0; i < sizeof x; i++) printf("%02x", ((unsigned char *)&x)[i]); '
                             'printf("\\n"); }')
                expect.append((f"{cls._cname_}.{designator} all ones", bits_set(cls, designator, bits)))
                continue
            lines.append(f'printf("%zu\\n", offsetof({cls._cname_}, {designator}));')
            expect.append((f"offsetof({cls._cname_}, {designator})", off))
    assert set(records(mod, named=False)) <= seen, "an anonymous record is reached from no named one"
    got = probe(name, lines)
    assert len(got) == len(expect)
    wrong = [(what, want, g) for (what, want), g in zip(expect, got, strict=True) if str(want) != g]
    assert not wrong, f"{len(wrong)} layout mismatches, first: {wrong[:5]}"
    nbits = sum(what.endswith(" all ones") for what, _ in expect)
    print(f"{name}: {len(recs)} records, {len(expect) - nbits} sizes/offsets, {nbits} bit fields checked against gcc")


@pytest.mark.parametrize("name", MODULES)
def test_constants_and_ioctl_numbers_match_the_c_compiler(name):
    mod = module(name)
    consts = constants(mod)
    assert consts
    lines = [f'printf("%llu\\n", (unsigned long long)({k}));' for k in consts]
    got = probe(name, lines)
    wrong = [(k, v, int(g)) for (k, v), g in zip(consts.items(), got, strict=True) if v & MASK64 != int(g)]
    assert not wrong, f"{len(wrong)} constant mismatches, first: {wrong[:5]}"


@pytest.mark.parametrize("name", ["kfd", "amdgpu_drm"])
def test_ioctl_carries_a_struct_of_the_encoded_size(name):
    mod = importlib.import_module(f"usergpu.autogen.{name}")
    ioctls = {k: v for k, v in vars(mod).items() if isinstance(v, Ioctl)}
    assert ioctls
    for k, io in ioctls.items():
        assert io.size == ctypes.sizeof(io.struct), k
        assert io.dir in (1, 2, 3), k


def test_kfd_requests_the_driver_knows():
    from usergpu.autogen import kfd

    # the numbers amdkfd has answered to since its first release: 'K' ioctls, nr 1 and 2
    assert kfd.AMDKFD_IOC_GET_VERSION.request == 0x80084B01
    assert kfd.AMDKFD_IOC_CREATE_QUEUE.struct is kfd.struct_kfd_ioctl_create_queue_args
    assert kfd.AMDKFD_IOC_CREATE_QUEUE.type == ord("K")


def test_amdgpu_drm_is_the_render_node_of_6_12():
    module("amdgpu_drm")
    from usergpu.autogen import amdgpu_drm as drm

    # libdrm 2.4.114's drm_amdgpu_info_device ends at tcc_disabled_mask (368 bytes); 6.12's goes on to the gfx11
    # shadow and CSA sizes, and its HW_IP_INFO answer carries the discovery version where libdrm's had a pad
    assert ctypes.sizeof(drm.struct_drm_amdgpu_info_device) == 440
    assert drm.struct_drm_amdgpu_info_device.csa_alignment.offset == 432  # then 4 bytes of tail padding
    assert drm.struct_drm_amdgpu_info_hw_ip.ip_discovery_version.offset == 28
    assert (drm.AMDGPU_FAMILY_GC_11_0_0, drm.AMDGPU_FAMILY_GC_12_0_0, drm.AMDGPU_HW_IP_VPE) == (145, 152, 9)
    assert drm.DRM_IOCTL_AMDGPU_INFO.request == 0x40206445  # _IOW('d', 0x40 + 5, struct drm_amdgpu_info)


@pytest.mark.parametrize("name", UAPI)
def test_uapi_modules_need_linux_source(name, tmp_path, monkeypatch):
    monkeypatch.setattr(toolchain, "CACHE", tmp_path)
    monkeypatch.setattr(toolchain, "LINUX_TARBALL", tmp_path / "absent.tar.xz")
    row = next(m for m in modules.MODULES if m.name == name)
    with pytest.raises(ToolchainError, match="linux-source-6.12"):
        row.render()


def test_vfio_requests_the_driver_uses():
    from usergpu.autogen import vfio

    # _IO(';', 100 + n): no size, no direction; the struct's argsz says its size
    assert (vfio.VFIO_GET_API_VERSION, vfio.VFIO_GROUP_GET_DEVICE_FD, vfio.VFIO_IOMMU_MAP_DMA) == (0x3B64, 0x3B6A,
                                                                                                    0x3B71)
    assert ctypes.sizeof(vfio.struct_vfio_region_info) == 32 and vfio.struct_vfio_region_info.offset.offset == 24


def test_kernel_descriptor_is_64_bytes_and_bitfields_match_the_enumerators():
    from usergpu.autogen import amdhsa

    assert ctypes.sizeof(amdhsa.kernel_descriptor_t) == 64
    assert amdhsa.kernel_descriptor_t.kernel_code_entry_byte_offset.offset == 16
    for reg, fields in amdhsa.BITFIELDS.items():
        for field, (shift, width) in fields.items():
            name = f"{reg}_{field}"
            assert getattr(amdhsa, f"{name}_SHIFT") == shift and getattr(amdhsa, f"{name}_WIDTH") == width
            assert getattr(amdhsa, name) & 0xFFFFFFFF == ((1 << width) - 1) << shift  # int32_t enumerators
    assert amdhsa.BITFIELDS["COMPUTE_PGM_RSRC2"]["ENABLE_SGPR_WORKGROUP_ID_X"] == (7, 1)


def test_aql_packets_are_64_bytes():
    from usergpu.autogen import amdhsa

    for t in (amdhsa.hsa_kernel_dispatch_packet_t, amdhsa.hsa_barrier_and_packet_t, amdhsa.hsa_barrier_or_packet_t,
              amdhsa.hsa_amd_barrier_value_packet_t, amdhsa.hsa_agent_dispatch_packet_t):
        assert ctypes.sizeof(t) == 64
    assert amdhsa.hsa_packet_type_t.HSA_PACKET_TYPE_KERNEL_DISPATCH == 2
