"""The generated modules: what each is made from and how (one row each)."""

from __future__ import annotations

import re
from pathlib import Path

from usergpu.autogen.generator import amdkernel, cstructs, hwmodules, isa, kdesc, nvclasses, nvrm, toolchain, writer
from usergpu.autogen.generator.spec import Module
from usergpu.isa.amd import encoding as isa_encodings


def _header(path: str, package: str) -> Path:
    return toolchain.require(Path(path), package)


def _kfd() -> str:
    """From linux-source-6.12's uapi header (installed): the ABI of the amdkfd the mock models (linux-libc-dev's is
    older)."""
    h, origin = toolchain.uapi_header(toolchain.KFD_IOCTL)
    return cstructs.render(
        "amdkfd ioctl interface (/dev/kfd): structs, enums, constants and AMDKFD_IOC_* requests.",
        [h],
        [origin],
        ("AMDKFD_IOC_",),
    )


def _vfio() -> str:
    h = _header("/usr/include/linux/vfio.h", "linux-libc-dev")
    return cstructs.render(
        "VFIO (/dev/vfio): container, group and device ioctls (request numbers: _IO, the struct's argsz says its "
        "size), region info, DMA mappings; structs, enums and constants.",
        [h],
        [f"linux-libc-dev: {h}"],
    )


def _amdgpu_drm() -> str:
    """From linux-source-6.12's uapi headers (installed), as _kfd: the render node of the amdgpu the mock models
    (libdrm-dev's copy is older). amdgpu_drm.h's "drm.h" is the installed one beside it."""
    files = [toolchain.uapi_header(f) for f in toolchain.AMDGPU_DRM]
    return cstructs.render(
        "amdgpu DRM render-node interface: structs, enums, constants and DRM_IOCTL_* requests (core DRM included).",
        [h for h, _ in files],
        [origin for _, origin in files],
        ("DRM_IOCTL_",),
    )


# what of the HSA runtime headers the AQL queues need: packets, their enums, amd_queue_t and amd_signal_t
AQL_SELECT = r"packet|fence_scope|^(struct_)?hsa_signal_[st]$|^(struct_)?amd_queue|^(struct_)?amd_signal|^AMD_QUEUE"
AQL_HEADERS = ("hsa.h", "hsa_ext_amd.h", "amd_hsa_queue.h", "amd_hsa_signal.h")


def aql_header() -> Path:
    """One header including the four HSA headers (the parser reads one translation unit)."""
    for n in AQL_HEADERS:
        _header(f"/usr/include/hsa/{n}", "libhsa-runtime-dev")
    path = toolchain.CACHE / "include" / "usergpu_aql.h"
    text = "".join(f"#include <hsa/{n}>\n" for n in AQL_HEADERS)
    if not path.exists() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return path


def _amdhsa() -> str:
    kd = kdesc.header()
    aql = [aql_header(), *(Path(f"/usr/include/hsa/{n}") for n in AQL_HEADERS)]
    out, records = cstructs.sections(aql, select=re.compile(AQL_SELECT))
    out = kdesc.sections() + out
    text = writer.module(
        "AMDHSA: the kernel descriptor and its rsrc bit fields (LLVM), and the AQL packets, amd_queue_t and "
        "amd_signal_t (HSA runtime headers).",
        [f"llvm-22-dev: {kd}", *(f"libhsa-runtime-dev: {h}" for h in aql[1:])],
        writer.imports("\n".join(out)),
        out,
    )
    cstructs.prove_layouts(text, records)
    return text


MODULES: list[Module] = [
    Module("kfd", toolchain.LINUX_SOURCE, _kfd),
    Module("vfio", "linux-libc-dev", _vfio),
    Module("amdgpu_drm", toolchain.LINUX_SOURCE, _amdgpu_drm),
    Module("amdhsa", "llvm-22-dev libhsa-runtime-dev", _amdhsa),
    *amdkernel.MODULES,
    *hwmodules.MODULES,
    *(Module(f"isa_{arch}", "llvm-22", lambda arch=arch: isa.render(arch)) for arch in isa_encodings.FAMILIES),
    *nvrm.MODULES,
    *nvclasses.MODULES,
]
