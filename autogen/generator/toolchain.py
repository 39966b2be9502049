"""Where the generator finds its real inputs: libclang 22 and its Python bindings, the C compiler,
and the headers of Debian's packages (linux-source-6.12's amd headers and the uapi headers of amdkfd and amdgpu's
DRM are extracted to a cache, the uapi ones then installed there as `make headers_install` exports them).

Every missing piece is a ToolchainError naming the Debian package that provides it.
"""

from __future__ import annotations

import fcntl
import importlib.util
import logging
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import warnings
from pathlib import Path
from types import ModuleType

from usergpu.errors import ToolchainError

LLVM = 22
LIBCLANG = Path(f"/usr/lib/x86_64-linux-gnu/libclang-{LLVM}.so.1")  # libclang1-22
CLANG_BINDINGS = Path("/usr/lib/python3/dist-packages/clang")  # python3-clang-22: bindings matching that libclang
CLANG_RESOURCE_INCLUDE = Path(f"/usr/lib/llvm-{LLVM}/lib/clang/{LLVM}/include")  # libclang-common-22-dev
LLVM_INCLUDE = Path(f"/usr/lib/llvm-{LLVM}/include")  # llvm-22-dev
LINUX_SOURCE = "linux-source-6.12"
LINUX_TARBALL = Path(f"/usr/src/{LINUX_SOURCE}.tar.xz")
AMD_DRM = "drivers/gpu/drm/amd"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "usergpu"

# register maps of the IP blocks around GC (<asic_reg folder>/<file stem>): Navi31's, Navi48's, then MI300X's
REG_BLOCKS = (
    "mmhub/mmhub_3_0_0", "nbio/nbio_4_3_0", "oss/osssys_6_0_0", "mp/mp_13_0_0", "mp/mp_13_0_2", "hdp/hdp_6_0_0",
    "smuio/smuio_13_0_6",
    "mmhub/mmhub_4_1_0", "nbif/nbif_6_3_1", "oss/osssys_7_0_0", "mp/mp_14_0_2", "hdp/hdp_7_0_0", "smuio/smuio_14_0_2",
    "mmhub/mmhub_1_8_0", "nbio/nbio_7_9_0", "oss/osssys_4_4_2", "mp/mp_13_0_6", "hdp/hdp_4_4_2", "sdma/sdma_4_4_2",
    "smuio/smuio_13_0_3",
)
# The amd files of linux-source-6.12 the generator reads (relative to drivers/gpu/drm/amd).
LINUX_AMD_FILES = (
    "amdgpu/nvd.h",
    "amdgpu/soc15d.h",
    "amdgpu/sdma_v6_0_0_pkt_open.h",
    "amdgpu/vega10_sdma_pkt_open.h",
    *(f"include/asic_reg/gc/gc_{v}_{k}.h" for v in ("11_0_0", "12_0_0", "9_4_3") for k in ("offset", "sh_mask")),
    # the AM userspace driver's inputs: IP discovery, firmware headers, the PSP and SMU interfaces, register maps
    "include/discovery.h",
    "include/soc15_hw_ip.h",
    "include/atomfirmware.h",
    "include/atomfirmwareid.h",
    "amdgpu/amdgpu_discovery.h",
    "amdgpu/amdgpu_ucode.h",
    "amdgpu/amdgpu_socbb.h",
    "amdgpu/psp_gfx_if.h",
    *(f"pm/swsmu/inc/pmfw_if/{h}" for h in (
        "smu_v13_0_0_ppsmc.h", "smu13_driver_if_v13_0_0.h", "smu_v14_0_2_ppsmc.h", "smu14_driver_if_v14_0.h",
        "smu_v13_0_6_ppsmc.h", "smu_v13_0_6_pmfw.h", "smu13_driver_if_v13_0_6.h",
    )),
    "pm/inc/smu_v13_0_0_pptable.h",
    "pm/swsmu/inc/smu_v14_0_2_pptable.h",
    *(f"include/asic_reg/{b}_{k}.h" for b in REG_BLOCKS for k in ("offset", "sh_mask")),
)
UAPI = "include/uapi"
KFD_IOCTL = f"{UAPI}/linux/kfd_ioctl.h"  # amdkfd's ABI as 6.12 answers it (linux-libc-dev's may be older)
# the render node's ABI as 6.12 answers it (libdrm-dev's copy is older); amdgpu_drm.h first, it includes "drm.h"
AMDGPU_DRM = tuple(f"{UAPI}/drm/{h}" for h in ("amdgpu_drm.h", "drm.h", "drm_mode.h"))
HEADERS_INSTALL_SH = "scripts/headers_install.sh"  # what headers_install() does (tests/autogen runs its sed)
# every file of linux-source-6.12 the generator reads, relative to the tree's root
LINUX_FILES = (*(f"{AMD_DRM}/{f}" for f in LINUX_AMD_FILES), KFD_IOCTL, *AMDGPU_DRM, HEADERS_INSTALL_SH)
INSTALLED = f"{LINUX_SOURCE}-headers"  # the cache's folder of installed uapi headers (uapi_include)


def require(path: Path, package: str) -> Path:
    if not path.exists():
        raise ToolchainError(f"{path} not found: install the Debian package {package} (make test does)")
    return path


def cindex() -> ModuleType:
    """clang.cindex from python3-clang-22, bound to libclang 22 (PyPI's 'clang' wheel lags behind it)."""
    if getattr(sys.modules.get("clang"), "__file__", None) != str(CLANG_BINDINGS / "__init__.py"):
        require(CLANG_BINDINGS / "cindex.py", "python3-clang-22")
        require(LIBCLANG, "libclang1-22")
        for name in [m for m in sys.modules if m == "clang" or m.startswith("clang.")]:
            del sys.modules[name]
        spec = importlib.util.spec_from_file_location(
            "clang", CLANG_BINDINGS / "__init__.py", submodule_search_locations=[str(CLANG_BINDINGS)]
        )
        module = importlib.util.module_from_spec(spec)
        sys.modules["clang"] = module
        spec.loader.exec_module(module)
        import clang.cindex

        clang.cindex.Config.set_library_file(str(LIBCLANG))
    import clang.cindex

    return clang.cindex


def ctypeslib() -> tuple[ModuleType, ModuleType]:
    """ctypeslib2's clang parser and type descriptions, on the libclang of cindex()."""
    cindex()
    with warnings.catch_warnings():  # ctypeslib looks for a libclang of its own at import; ours is already set
        warnings.simplefilter("ignore")
        from ctypeslib.codegen import clangparser, typedesc
    for name in ("clangparser", "cursorhandler", "handler", "typehandler"):  # its notes on skipped cursors
        logging.getLogger(name).setLevel(logging.ERROR)
    return clangparser, typedesc


def shim_include() -> Path:
    """A folder whose drm/ is linux-source-6.12's installed uapi drm (uapi_include), for the <drm/drm.h> of
    kfd_ioctl.h: the drm.h amdgpu_drm's bindings come from (Debian's are libdrm-dev's older copy). The link dangles
    until uapi_include() installs the headers; only headers of that tree include <drm/...>."""
    shim = CACHE / "include"
    link, target = shim / "drm", CACHE / INSTALLED / "drm"
    if not link.is_symlink() or link.readlink() != target:  # also replaces an older cache's link to libdrm
        shim.mkdir(parents=True, exist_ok=True)
        tmp = shim / f".drm.{os.getpid()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(target)
        tmp.replace(link)
    return shim


def c_flags() -> list[str]:
    """Include flags shared by libclang and the C compiler."""
    return ["-I", str(shim_include()), "-I", "/usr/include/x86_64-linux-gnu", "-I", "/usr/include"]


def clang_flags() -> list[str]:
    return [*c_flags(), "-I", str(require(CLANG_RESOURCE_INCLUDE, "libclang-common-22-dev"))]


def linux_tree() -> Path:
    """linux-source-6.12's tree holding LINUX_FILES, extracted once into the cache."""
    root = CACHE / LINUX_SOURCE
    if all((root / f).exists() for f in LINUX_FILES):
        return root
    require(LINUX_TARBALL, LINUX_SOURCE)
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f"{LINUX_SOURCE}.lock", "w") as lock:  # parallel test workers extract once
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not all((root / f).exists() for f in LINUX_FILES):
            wanted = {f"{LINUX_SOURCE}/{f}" for f in LINUX_FILES}
            with tempfile.TemporaryDirectory(dir=CACHE) as tmp, tarfile.open(LINUX_TARBALL) as tar:
                members = [m for m in tar if m.name in wanted]
                tar.extractall(tmp, members=members, filter="data")
                for m in members:
                    dest = CACHE / m.name
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    os.replace(Path(tmp) / m.name, dest)
    missing = [f for f in LINUX_FILES if not (root / f).exists()]
    if missing:
        raise ToolchainError(f"{LINUX_TARBALL} lacks {', '.join(missing)}")
    return root


# scripts/headers_install.sh's sed, in order: what `make headers_install` rewrites in a uapi header for userspace
# ([[:space:]] is a blank within the line sed holds). Its unifdef -U__KERNEL__ is what a userspace parse does anyway
# (nothing defines __KERNEL__).
_S = r" \t\r\f\v"
HEADERS_INSTALL = (
    (rf"([{_S}(])(__user|__force|__iomem)[{_S}]", r"\1"),
    (rf"__attribute_const__([{_S}]|$)", r"\1"),
    (r"^#include <linux/compiler(|_types).h>", ""),
    (r"(^|[^a-zA-Z0-9])__packed([^a-zA-Z0-9_]|$)", r"\1__attribute__((packed))\2"),
    (rf"(^|[{_S}(])(inline|asm|volatile)([{_S}(]|$)", r"\1__\2__\3"),
    (rf"#(ifndef|define|endif[{_S}]*/[*])[{_S}]*_UAPI", r"#\1 "),
)


def headers_install(text: str) -> str:
    """A uapi header as headers_install.sh exports it (sed works line by line; so does each pattern here)."""
    for pattern, replacement in HEADERS_INSTALL:
        text = re.sub(pattern, replacement, text, flags=re.MULTILINE)
    return text


def uapi_include() -> Path:
    """The uapi headers of LINUX_FILES installed (headers_install) in the cache's INSTALLED folder, each path less
    include/uapi (drm/drm.h, linux/kfd_ioctl.h); written again where the cache's copy differs."""
    tree, root = linux_tree(), CACHE / INSTALLED
    for rel in LINUX_FILES:
        if rel.startswith(f"{UAPI}/"):
            dest = root / rel.removeprefix(f"{UAPI}/")
            text = headers_install((tree / rel).read_text())
            if not dest.exists() or dest.read_text() != text:
                dest.parent.mkdir(parents=True, exist_ok=True)
                tmp = dest.with_name(f".{dest.name}.{os.getpid()}")
                tmp.write_text(text)
                tmp.replace(dest)  # parallel test workers may install at once
    return root


def uapi_header(rel: str) -> tuple[Path, str]:
    """A uapi header of LINUX_FILES (relative to the tree's root) as installed, and how a banner names it (its file
    in the tarball)."""
    return uapi_include() / rel.removeprefix(f"{UAPI}/"), linux_file(rel)[1]


def linux_amd() -> Path:
    """drivers/gpu/drm/amd of the extracted tree (holding LINUX_AMD_FILES)."""
    return linux_tree() / AMD_DRM


def linux_file(rel: str) -> tuple[Path, str]:
    """A file of linux-source-6.12 (relative to its root, one of LINUX_FILES), and how a banner names it (no cache
    path)."""
    return linux_tree() / rel, f"{LINUX_SOURCE}: {LINUX_TARBALL}: {rel}"


def linux_header(rel: str) -> tuple[Path, str]:
    """A header under drivers/gpu/drm/amd of linux-source-6.12, and how a banner names it."""
    return linux_file(f"{AMD_DRM}/{rel}")


def compile_and_run(source: str, lang: str = "c", flags: list[str] | None = None) -> subprocess.CompletedProcess:
    """Build a probe program with the system compiler (gcc/g++) and run it; returns the finished run."""
    compiler = {"c": "gcc", "c++": "g++"}[lang]
    suffix = {"c": ".c", "c++": ".cpp"}[lang]
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / f"probe{suffix}"
        src.write_text(source)
        exe = Path(tmp) / "probe"
        cmd = [compiler, "-w", "-O0", "-ftrack-macro-expansion=0", *(flags or []), str(src), "-o", str(exe)]
        build = subprocess.run(cmd, capture_output=True, text=True)
        if build.returncode:
            return build
        return subprocess.run([str(exe)], capture_output=True, text=True)


# NVIDIA's headers (NV.md), one tree per driver release, unpacked into the cache by `make nvidia-sources`, which
# keeps only the folders named here (the Makefile's NV_TREE): Debian's source package where its mirror has the
# release, otherwise NVIDIA's release tree (the Makefile's NV_HEADERS); and open-gpu-doc's class headers (NV_DOC)
NV_SOURCE = "nvidia-open-gpu-kernel-modules"
NV_DEBIAN = ("535.261.03", "555.58.02")  # the Makefile's NV_DEBIAN; the other releases are its NV_UPSTREAM
NV_RELEASES = ("535.261.03", "550.163.01", "555.58.02", "560.35.03", "565.77", "570.211.01", "575.64.05", "580.142",
               "590.48.01", "595.45.04")
NV_SOURCES = CACHE / "nvidia-sources"
NV_SDK = "src/common/sdk/nvidia/inc"  # the RM SDK: nvos.h, class/, ctrl/, alloc/, nvstatuscodes.h
NV_UNIX = "src/nvidia/arch/nvalloc/unix/include"  # nv_escape.h, nv-unix-nvos-params-wrappers.h, nv-ioctl*.h
NV_GENERATED = "src/nvidia/generated"  # g_allclasses.h, g_gpu_class_list.c
NV_KERNEL_INC = "kernel-open/common/inc"  # what nvidia-open-kernel-source ships: nv-ioctl*.h, nvtypes.h, nvstatus.h
NV_UVM = "kernel-open/nvidia-uvm"  # uvm_ioctl.h, uvm_linux_ioctl.h, uvm_types.h
NV_DOC = "open-gpu-doc-c8607fe"  # NVIDIA's open-gpu-doc at that commit: classes/ (host, copy, compute, QMDs)


def _nv_missing(path: Path, what: str) -> ToolchainError:
    return ToolchainError(f"{path} not found: {what} is unpacked there by make nvidia-sources (make test does; "
                          "NV_HEADERS names the folder of NVIDIA's release trees, ../shared/nvidia by default)")


def nv_source(release: str) -> str:
    """Where a release's tree comes from, as a banner says it."""
    return "Debian source" if release in NV_DEBIAN else "NVIDIA's release tree"


def nv_file(release: str, rel: str) -> tuple[Path, str]:
    """A file of nvidia-open-gpu-kernel-modules' release (relative to its tree), and how a banner names it."""
    path = NV_SOURCES / f"{NV_SOURCE}-{release}" / rel
    if not path.exists():
        raise _nv_missing(path, f"{NV_SOURCE} {release}")
    return path, f"{NV_SOURCE} {release} ({nv_source(release)}): {rel}"


def doc_file(rel: str) -> tuple[Path, str]:
    """A file of open-gpu-doc (relative to its tree), and how a banner names it."""
    path = NV_SOURCES / NV_DOC / rel
    if not path.exists():
        raise _nv_missing(path, NV_DOC)
    return path, f"{NV_DOC}: {rel}"
