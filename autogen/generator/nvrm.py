"""Bindings of NVIDIA's resource manager (RM) and UVM interfaces, one module per driver ABI (nv_rm_<abi>,
nv_uvm_<abi>): layouts move between driver releases (NV.md), so each release of Debian's source package
nvidia-open-gpu-kernel-modules is bound on its own.

A module is cstructs' bindings of one translation unit that includes the headers of an Interface in order (the
headers find each other through the include folders of their tree), and tables built from those bindings: the
NV_STATUS names and messages (the X-macro of nvstatuscodes.h expanded by the C compiler), the params struct of
each RM control (from the note NVIDIA's FINN tool leaves on each command's #define) and UVM ioctl (uvm_ioctl.h
names UVM_FOO's struct UVM_FOO_PARAMS), and which class ids each chip exposes (g_gpu_class_list.c, a table NVIDIA
generates).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from usergpu.autogen.generator import cstructs, toolchain, writer
from usergpu.autogen.generator.amdkernel import _write
from usergpu.autogen.generator.spec import Module
from usergpu.errors import ToolchainError

SDK, UNIX, GENERATED = toolchain.NV_SDK, toolchain.NV_UNIX, toolchain.NV_GENERATED
KERNEL_INC, UVM = toolchain.NV_KERNEL_INC, toolchain.NV_UVM

# what a compute runtime allocates and calls (NV.md's sequence), as (tree folder, header)
RM_CLASSES = ("cl0000", "cl0005", "cl0080", "cl2080", "cl2080_notification", "cl0070", "cl83de", "cl90f1", "cl9067", "cla06c", "clc461",
              "clc561", "clc661", "clb0cc", "clb2cc")
RM_CONTROLS = ("ctrl0000/ctrl0000system", "ctrl0000/ctrl0000gpu", "ctrl0080/ctrl0080gpu", "ctrl2080/ctrl2080gpu",
               "ctrl2080/ctrl2080gr", "ctrl2080/ctrl2080fb", "ctrl2080/ctrl2080perf", "ctrlc36f", "ctrla06c",
               "ctrla06f", "ctrla06f/ctrla06fgpfifo", "ctrl83de/ctrl83dedebug", "ctrlb0cc/ctrlb0ccbase",
               "ctrlb0cc/ctrlb0ccpower", "ctrlb0cc/ctrlb0ccprofiler")
RM_HEADERS = (
    (SDK, "nvstatus.h"), (SDK, "nvstatuscodes.h"), (SDK, "nvos.h"), (SDK, "nvgputypes.h"), (SDK, "nverror.h"),
    (SDK, "alloc/alloc_channel.h"), *((SDK, f"class/{c}.h") for c in RM_CLASSES), *((SDK, f"ctrl/{c}.h") for c in RM_CONTROLS),
    (UNIX, "nv_escape.h"), (UNIX, "nv-unix-nvos-params-wrappers.h"), (GENERATED, "g_allclasses.h"),
)
UVM_HEADERS = ((KERNEL_INC, "nvstatus.h"), (KERNEL_INC, "nvstatuscodes.h"), (KERNEL_INC, "nv-ioctl-numbers.h"),
               (KERNEL_INC, "nv-ioctl.h"), (KERNEL_INC, "nv_uvm_user_types.h"), (UVM, "uvm_types.h"),
               (UVM, "uvm_ioctl.h"), (UVM, "uvm_linux_ioctl.h"))
LATER = {"nv_uvm_user_types.h": "580"}  # header -> the branch it first appears in (uvm_types.h's enums moved there)

# What is bound of those headers: what a compute runtime (usergpu's driver, libcuda, tinygrad) and the mock's RM
# touch, so that a module changes where that ABI changes, not wherever a header grows. Each control brings its
# command, the params struct FINN names for it (and that struct's message id) and the constants listed with it.
RM_NAMES = (
    # the escapes and their params (nv_escape.h, nvos.h, the *_with_fd wrappers)
    r"NV_ESC_RM_\w+", r"NVOS(00|02|21|32|33|34|46|47|54|55|64)_\w+", r"nv_ioctl_nvos\w+",
    # status codes; channel errors and the notifier they are written to
    r"NV_STATUS", r"NV_OK", r"NV_ERR_\w+", r"NV_WARN_\w+", r"ROBUST_CHANNEL_\w+", r"NvNotification", r"NV_CHANNELGPFIFO_NOTIFICATION_\w+",
    # allocation parameters of the classes a compute runtime allocates
    r"NV0080_ALLOC_PARAMETERS", r"NV_DEVICE_ALLOCATION_\w+", r"NV2080_ALLOC_PARAMETERS", r"NV2080_ENGINE_TYPE_\w+",
    r"NV_MEMORY_(VIRTUAL_)?ALLOCATION_PARAMS", r"NV_OS_DESC_MEMORY_ALLOCATION_PARAMS", r"NV_VASPACE_ALLOCATION_\w+",
    r"NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS", r"NV_CTXSHARE_ALLOCATION_\w+", r"NV_CHANNEL_ALLOC_PARAMS",
    r"NV_CHANNELGPFIFO_ALLOCATION_PARAMETERS", r"NV_GR_ALLOCATION_PARAMETERS", r"NV_HOPPER_USERMODE_A_PARAMS",
    r"NV83DE_ALLOC_PARAMETERS", r"NVB0CC_ALLOC_PARAMETERS", r"NVB2CC_ALLOC_PARAMETERS",
)
# control command -> the constants it brings (name patterns)
RM_CONTROLS = {
    "NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2": (),
    "NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2": (r"NV0000_CTRL_NO_NUMA_NODE",),
    "NV0000_CTRL_CMD_GPU_GET_PROBED_IDS": (r"NV0000_CTRL_GPU_INVALID_ID", r"NV0000_CTRL_GPU_MAX_PROBED_GPUS"),
    "NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS": (r"NV0000_CTRL_GPU_MAX_ATTACHED_GPUS",),
    "NV0080_CTRL_CMD_GPU_GET_CLASSLIST": (),
    "NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2": (r"NV0080_CTRL_GPU_CLASSLIST_MAX_SIZE",),
    "NV2080_CTRL_CMD_GPU_GET_GID_INFO": (r"NV2080_GPU_CMD_GPU_GET_GID_FLAGS_\w+",),
    "NV2080_CTRL_CMD_GPU_GET_NAME_STRING": (r"NV2080_CTRL_GPU_GET_NAME_STRING_FLAGS_\w+",),
    "NV2080_CTRL_CMD_GR_GET_INFO": (r"NV2080_CTRL_GR_INFO\w*",),
    "NV2080_CTRL_CMD_GR_GET_TPC_MASK": (),
    "NV2080_CTRL_CMD_FB_GET_INFO_V2": (r"NV2080_CTRL_FB_INFO_\w+",),
    "NV2080_CTRL_CMD_FB_FLUSH_GPU_CACHE": (r"NV2080_CTRL_FB_FLUSH_GPU_CACHE_FLAGS_\w+",),
    "NV2080_CTRL_CMD_PERF_BOOST": (r"NV2080_CTRL_PERF_BOOST_\w+",),
    "NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN": (),
    "NVA06C_CTRL_CMD_GPFIFO_SCHEDULE": (),
    "NVA06C_CTRL_CMD_SET_TIMESLICE": (),
    "NVA06F_CTRL_CMD_GPFIFO_SCHEDULE": (),
    "NVA06F_CTRL_CMD_BIND": (),
    "NV83DE_CTRL_CMD_DEBUG_READ_MMU_FAULT_INFO": (r"NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_\w+",),
    "NV83DE_CTRL_CMD_DEBUG_READ_ALL_SM_ERROR_STATES": (r"NV83DE_CTRL_DEBUG_MAX_SMS_PER_CALL",),
    "NV83DE_CTRL_CMD_DEBUG_SET_EXCEPTION_MASK": (r"NV83DE_CTRL_DEBUG_SET_EXCEPTION_MASK_\w+",),
    # the profiler (MAXWELL_PROFILER_DEVICE): PC sampling through a PMA stream, as tinygrad's PMA=1 drives it
    "NVB0CC_CTRL_CMD_POWER_REQUEST_FEATURES": (r"NVB0CC_CTRL_POWER_FEATURE_MASK_\w+",),
    "NVB0CC_CTRL_CMD_POWER_RELEASE_FEATURES": (),
    "NVB0CC_CTRL_CMD_ALLOC_PMA_STREAM": (r"NVB0CC_AVAILABLE_BYTES_DEFAULT_VALUE", r"NVB0CC_PMA_\w+"),
    "NVB0CC_CTRL_CMD_FREE_PMA_STREAM": (),
    "NVB0CC_CTRL_CMD_RESERVE_HWPM_LEGACY": (),
    "NVB0CC_CTRL_CMD_RELEASE_HWPM_LEGACY": (),
    "NVB0CC_CTRL_CMD_RESERVE_PM_AREA_PC_SAMPLER": (),
    "NVB0CC_CTRL_CMD_RELEASE_PM_AREA_PC_SAMPLER": (),
    "NVB0CC_CTRL_CMD_BIND_PM_RESOURCES": (),
    "NVB0CC_CTRL_CMD_UNBIND_PM_RESOURCES": (),
    "NVB0CC_CTRL_CMD_SET_HS_CREDITS": (r"NVB0CC_CHIPLET_TYPE_\w+", r"NVB0CC_MAX_CREDIT_INFO_ENTRIES",
                                       r"NVB0CC_HS_CREDITS_CMD_STATUS_\w+"),
    "NVB0CC_CTRL_CMD_GET_HS_CREDITS": (),
    "NVB0CC_CTRL_CMD_EXEC_REG_OPS": (r"NVB0CC_REGOPS_\w+", r"NVB0CC_CTRL_EXEC_REG_OPS_\w+", r"NV2080_CTRL_GPU_REG_OP\w*"),
    "NVB0CC_CTRL_CMD_PMA_STREAM_UPDATE_GET_PUT": (),
}
# of the UVM and device-file headers: the device files' escapes, the status codes, the UVM ioctls a compute runtime
# makes (uvm_ioctl.h, uvm_linux_ioctl.h) and the types their params carry (uvm_types.h)
UVM_NAMES = (r"NV_ESC_\w+", r"NV_IOCTL_\w+", r"nv_ioctl_\w+", r"NV_RM_API_VERSION_\w+", r"NV_STATUS", r"NV_OK", r"NV_ERR_\w+",
             r"NV_WARN_\w+", r"UVM_INIT_FLAGS_\w+", r"UVM_MAX_GPUS\w*", r"UvmGpu\w+")
UVM_IOCTLS = ("UVM_INITIALIZE", "UVM_DEINITIALIZE", "UVM_MM_INITIALIZE", "UVM_PAGEABLE_MEM_ACCESS", "UVM_REGISTER_GPU",
              "UVM_UNREGISTER_GPU", "UVM_REGISTER_GPU_VASPACE", "UVM_UNREGISTER_GPU_VASPACE", "UVM_REGISTER_CHANNEL",
              "UVM_UNREGISTER_CHANNEL", "UVM_ENABLE_PEER_ACCESS", "UVM_DISABLE_PEER_ACCESS",
              "UVM_CREATE_EXTERNAL_RANGE", "UVM_MAP_EXTERNAL_ALLOCATION", "UVM_FREE")
# the classes the runtime, the mock and tinygrad name (g_allclasses.h), and the chips the mock models
RM_CLASS_NAMES = (
    "NV01_ROOT", "NV01_ROOT_NON_PRIV", "NV01_ROOT_CLIENT", "NV01_DEVICE_0", "NV20_SUBDEVICE_0", "NV01_EVENT",
    "NV01_EVENT_OS_EVENT", "NV01_EVENT_KERNEL_CALLBACK", "NV01_EVENT_KERNEL_CALLBACK_EX", "NV01_MEMORY_SYSTEM",
    "NV01_MEMORY_LOCAL_USER", "NV01_MEMORY_VIRTUAL", "NV01_MEMORY_SYSTEM_OS_DESCRIPTOR", "FERMI_VASPACE_A",
    "FERMI_CONTEXT_SHARE_A", "KEPLER_CHANNEL_GROUP_A", "GT200_DEBUGGER", "VOLTA_USERMODE_A", "TURING_USERMODE_A",
    "AMPERE_USERMODE_A", "HOPPER_USERMODE_A", "BLACKWELL_USERMODE_A", "VOLTA_CHANNEL_GPFIFO_A",
    "TURING_CHANNEL_GPFIFO_A", "AMPERE_CHANNEL_GPFIFO_A", "HOPPER_CHANNEL_GPFIFO_A", "BLACKWELL_CHANNEL_GPFIFO_A",
    "BLACKWELL_CHANNEL_GPFIFO_B", "AMPERE_COMPUTE_A", "AMPERE_COMPUTE_B", "ADA_COMPUTE_A", "HOPPER_COMPUTE_A",
    "BLACKWELL_COMPUTE_A", "BLACKWELL_COMPUTE_B", "AMPERE_DMA_COPY_A", "AMPERE_DMA_COPY_B", "HOPPER_DMA_COPY_A",
    "BLACKWELL_DMA_COPY_A", "BLACKWELL_DMA_COPY_B", "MAXWELL_PROFILER", "MAXWELL_PROFILER_DEVICE",
)
CHIPS = ("GA100", "GA102", "AD102", "GH100", "GB202")

RM_DOC = """NVIDIA RM interface of driver ABI {abi} (releases {releases}): what a compute runtime uses of it, which
the generator's RM_NAMES, RM_CONTROLS and RM_CLASS_NAMES list: the NVOS* escape parameters (nvos.h) and their
*_with_fd wrappers, the NV_ESC_RM_* escape numbers (nv_escape.h), the allocation parameters of the classes a compute
runtime allocates (device, subdevice, memory, virtual memory, VA space, channel group, context share, channel
(alloc_channel.h), usermode, debugger, profiler), the controls it calls with their params and constants, the notifier a
channel's errors are written to (NvNotification), the ROBUST_CHANNEL_* error codes (nverror.h), the NV_STATUS codes
and the class ids it names (g_allclasses.h).

Tables: NV_STATUS_NAMES (code -> (name, message), nvstatuscodes.h), CONTROL_PARAMS (each bound control command ->
the params struct it carries, as the FINN note of its #define says, None for none; the RM takes exactly that size),
CHIP_CLASSES (chip -> the class ids g_gpu_class_list.c lists for it, of the chips the mock models)."""

UVM_DOC = """NVIDIA UVM and device-file interface of driver ABI {abi} (releases {releases}), as the kernel modules' tree
ships it (kernel-open): the NV_ESC_* numbers of /dev/nvidiactl and /dev/nvidiaN (nv-ioctl-numbers.h: NV_IOCTL_BASE +
n) and their nv_ioctl_* structs (nv-ioctl.h), the UVM ioctls a compute runtime makes with their UVM_*_PARAMS
(uvm_ioctl.h, uvm_linux_ioctl.h; /dev/nvidia-uvm takes the number itself as the request), the uvm_types.h types
they carry, and the NV_STATUS codes.

Tables: NV_STATUS_NAMES (code -> (name, message)), UVM_PARAMS (each UVM_FOO -> the UVM_FOO_PARAMS it carries;
UVM copies params at its own size without a check)."""

STATUS_PROBE = """#include <stdio.h>
#define NV_STATUS_CODE(name, code, string) printf("%s\\t%u\\t%s\\n", #name, (unsigned)(code), string);
int main(void) {
#include "nvstatuscodes.h"
return 0; }
"""
CLASS_LIST = "g_gpu_class_list.c"
# a chip's lists: one of {class, engine} pairs up to 575; from 580 one of classes with no engine and one of pairs
CHIP_FUNCTION = re.compile(r"gpuGet(?:NoEngClass|EngClassDescriptor|ClassDescriptor)List_([A-Z]\w+)\s*\(.*?\{(.*?)\n\}", re.S)
CLASS_ID = re.compile(r"^#define\s+(\w+)\s+\((0x[0-9a-fA-F]+)\)", re.M)
CLASS_ENTRY = re.compile(r"^\s*\{?\s*([A-Z]\w+)\s*[,}]", re.M)


@dataclass(frozen=True)
class Interface:
    """One module: the headers it binds, in include order, as every release of one driver ABI has them."""

    kind: str  # "rm" or "uvm"
    abi: str  # the branch of its first release
    releases: tuple[str, ...]  # the releases it binds, oldest first; each must render to the same layouts
    headers: tuple[tuple[str, str], ...]
    doc: str
    select: Callable[[Interface, str], str]  # (itself, a release) -> cstructs' select: the names it binds

    @property
    def name(self) -> str:
        return f"nv_{self.kind}_{self.abi}"

    def files(self, release: str) -> list[tuple[Path, str]]:
        """(header's path, its banner name) of each header of a release's tree."""
        return [toolchain.nv_file(release, f"{folder}/{h}") for folder, h in self.headers
                if int(release.split(".")[0]) >= int(LATER.get(h, 0))]

    def flags(self, release: str) -> list[str]:
        """The include folders of the headers' tree (they include each other by these)."""
        folders = dict.fromkeys(folder for folder, _ in self.headers)
        return [f for folder in folders for f in ("-I", str(toolchain.nv_file(release, folder)[0]))]

    def translation_unit(self, release: str) -> Path:
        """One header including the headers in order (the parser reads one translation unit)."""
        lines = ['#include "nvtypes.h"', *(f'#include "{path}"' for path, _ in self.files(release))]
        return _write(toolchain.CACHE / "include" / f"usergpu_{self.name}_{release}.h", "\n".join(lines) + "\n")

    def sections(self, release: str) -> tuple[list[str], dict]:
        """A release's module sections (structs, constants, tables) and the records they emit."""
        files = self.files(release)
        tu, flags = self.translation_unit(release), tuple(self.flags(release))
        select = re.compile(f"^(?:{self.select(self, release)})$")
        out, records = cstructs.sections([tu, *(p for p, _ in files)], select=select, flags=flags)
        ns: dict = {}
        exec(compile(writer.module("", [], writer.imports("\n".join(out)), out), "<nv>", "exec"), ns)
        out += [_status_table(self, flags), _params_table(self, release, ns)]
        if self.kind == "rm":
            out.append(_class_table(release, ns))
        return out, records

    def render(self) -> str:
        first, *others = self.releases
        out, records = self.sections(first)
        for release in others:  # an ABI is its releases' common layouts: any difference is a new ABI
            theirs, _ = self.sections(release)
            if theirs != out:
                at = next(i for i, (a, b) in enumerate(zip(out, theirs + [""] * len(out), strict=False)) if a != b)
                raise ToolchainError(f"{self.name}: {release} binds differently from {first} (section "
                                     f"{out[at].splitlines()[0][:80]!r}): it is an ABI of its own")
        doc = self.doc.format(releases=", ".join(self.releases), abi=self.abi)
        text = writer.module(doc, [banner for _, banner in self.files(first)], writer.imports("\n".join(out)), out)
        cstructs.prove_layouts(text, records)
        return text


def _status_table(iface: Interface, flags: tuple[str, ...]) -> str:
    """code -> (name, message) of every NV_STATUS_CODE in nvstatuscodes.h, as the C compiler expands them."""
    run = toolchain.compile_and_run(STATUS_PROBE, flags=list(flags))
    if run.returncode:
        raise ToolchainError(f"{iface.name}: nvstatuscodes.h probe failed: {run.stderr[-2000:]}")
    table: dict[int, tuple[str, str]] = {}
    for row in run.stdout.splitlines():
        name, code, message = row.split("\t")
        table.setdefault(int(code), (name, message))  # an alias keeps the first name the header gives the code
    rows = [f"{writer.hexint(c)}: {v!r}" for c, v in sorted(table.items())]
    return "# NV_STATUS code -> (name, message), nvstatuscodes.h\n" + writer.table("NV_STATUS_NAMES", rows)


# NVIDIA's FINN tool notes how it valued each control command: its interface id << 8 | the message id of the params
# struct it carries (X_MESSAGE_ID), or | a literal for a command that carries none
FINN = re.compile(r'#define\s+(\w+_CTRL_CMD_\w+)\s+\(0x[0-9a-fA-F]+U?\)\s*/\*\s*finn: Evaluated from "[^"|]*\|\s*(\w+)"')
UVM_REQUEST = re.compile(r"^UVM_\w+$")


def _finn(iface: Interface, release: str) -> dict[str, tuple[str | None, Path]]:
    """Each control command of the headers -> the params struct FINN says it carries (None: none), and its header."""
    return {cmd: (operand.removesuffix("_MESSAGE_ID") if operand.endswith("_MESSAGE_ID") else None, path)
            for path, _ in iface.files(release) for cmd, operand in FINN.findall(path.read_text())}


def _rm_select(iface: Interface, release: str) -> str:
    """The names a release's RM module binds: RM_NAMES, the controls of RM_CONTROLS with their params and
    constants, the classes of RM_CLASS_NAMES."""
    finn = _finn(iface, release)
    missing = sorted(set(RM_CONTROLS) - set(finn))
    if missing:
        raise ToolchainError(f"{iface.name}: {release}'s headers define no control {', '.join(missing)}")
    params = [f"{struct}(_MESSAGE_ID)?" for struct, _ in (finn[cmd] for cmd in RM_CONTROLS) if struct]
    controls = [p for cmd, consts in RM_CONTROLS.items() for p in (cmd, *consts)]
    return "|".join((*RM_NAMES, *controls, *params, *RM_CLASS_NAMES))


def _uvm_select(iface: Interface, release: str) -> str:
    """The names a release's UVM module binds: UVM_NAMES and the ioctls of UVM_IOCTLS with their params."""
    return "|".join((*UVM_NAMES, *(f"{name}(_PARAMS)?" for name in UVM_IOCTLS)))


def _control_rows(iface: Interface, release: str, ns: dict) -> list[str]:
    """Each bound control command -> the params struct FINN says it carries (None: it carries none)."""
    rows = []
    for cmd, (struct, path) in _finn(iface, release).items():
        if cmd not in RM_CONTROLS:
            continue
        if (struct is not None and not isinstance(ns.get(struct), type)) or not isinstance(ns.get(cmd), int):
            raise ToolchainError(f"{path.name}: {cmd} carries {struct}, which was not emitted")
        rows.append(f"{cmd}: {struct}")
    return rows


def _uvm_rows(iface: Interface, release: str, ns: dict) -> list[str]:
    """Each UVM ioctl number -> UVM_<name>_PARAMS, the struct uvm_ioctl.h declares after it."""
    return [f"{name}: {name}_PARAMS" for name, value in ns.items()
            if UVM_REQUEST.match(name) and isinstance(value, int) and isinstance(ns.get(f"{name}_PARAMS"), type)]


# per kind: the table of requests and the params each carries
PARAMS = {"rm": ("CONTROL_PARAMS", _control_rows), "uvm": ("UVM_PARAMS", _uvm_rows)}


def _params_table(iface: Interface, release: str, ns: dict) -> str:
    table, rows_of = PARAMS[iface.kind]
    rows = rows_of(iface, release, ns)
    if not rows:
        raise ToolchainError(f"{iface.name}: no request pairs with a params struct")
    return f"# request -> the params struct it carries\n{writer.table(table, rows)}"


def _class_table(release: str, ns: dict) -> str:
    """chip -> the sorted class ids g_gpu_class_list.c lists for it (names valued by g_allclasses.h), of the chips
    the mock models (CHIPS)."""
    path, _ = toolchain.nv_file(release, f"{GENERATED}/{CLASS_LIST}")
    defines = toolchain.nv_file(release, f"{GENERATED}/g_allclasses.h")[0].read_text()
    allclasses = {n: int(v, 16) for n, v in CLASS_ID.findall(defines)}
    lists: dict[str, set[str]] = {}
    for chip, body in CHIP_FUNCTION.findall(path.read_text()):
        lists.setdefault(chip, set()).update(CLASS_ENTRY.findall(body))
    rows = []
    for chip in sorted(set(lists) & set(CHIPS), key=CHIPS.index):
        unknown = sorted(lists[chip] - set(allclasses))
        if unknown or not lists[chip]:
            raise ToolchainError(f"{CLASS_LIST}: {chip} lists {', '.join(unknown) or 'no class'}, which "
                                 "g_allclasses.h does not define")
        rows.append(f"{chip!r}: ({', '.join(f'{v:#x}' for v in sorted({allclasses[n] for n in lists[chip]}))},)")
    return f"# chip -> the class ids it exposes ({CLASS_LIST})\n{writer.table('CHIP_CLASSES', rows)}"


# driver ABI -> the releases whose bound headers have the same layouts, constants and tables (render() proves it;
# tests/autogen/test_abi_nv.py proves neighbouring ABIs differ); an ABI is named by its first release's branch
RM_ABIS = {r.split(".")[0]: (r,) for r in toolchain.NV_RELEASES}
UVM_ABIS = {"535": ("535.261.03",), "550": ("550.163.01",), "555": ("555.58.02",), "560": ("560.35.03", "565.77"),
            "570": ("570.211.01",), "575": ("575.64.05",), "580": ("580.142",), "590": ("590.48.01",),
            "595": ("595.45.04",)}
RELEASES_DOC = """Which generated bindings speak to each NVIDIA driver release bound: RELEASES (release -> (the ABI of its
RM module nv_rm_<abi>, the ABI of its UVM module nv_uvm_<abi>)), oldest first. Releases share a module where every
bound struct, constant and table of theirs is the same."""


def _releases() -> str:
    rm = {r: abi for abi, rs in RM_ABIS.items() for r in rs}
    uvm = {r: abi for abi, rs in UVM_ABIS.items() for r in rs}
    if set(rm) != set(toolchain.NV_RELEASES) or set(uvm) != set(toolchain.NV_RELEASES):
        raise ToolchainError("RM_ABIS and UVM_ABIS must each bind every release of toolchain.NV_RELEASES once")
    rows = [f"{r!r}: ({rm[r]!r}, {uvm[r]!r})" for r in toolchain.NV_RELEASES]
    return writer.module(RELEASES_DOC, [], [], [writer.table("RELEASES", rows)])


INTERFACES = [
    *(Interface("rm", abi, releases, RM_HEADERS, RM_DOC, _rm_select) for abi, releases in RM_ABIS.items()),
    *(Interface("uvm", abi, releases, UVM_HEADERS, UVM_DOC, _uvm_select) for abi, releases in UVM_ABIS.items()),
]

MODULES: list[Module] = [
    *(Module(i.name, ", ".join(f"{toolchain.NV_SOURCE} {r} ({toolchain.nv_source(r)})" for r in i.releases), i.render)
      for i in INTERFACES),
    Module("nv_releases", "the generator's RM_ABIS and UVM_ABIS", _releases),
]
