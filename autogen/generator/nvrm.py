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
              "clc561", "clc661")
RM_CONTROLS = ("ctrl0000/ctrl0000system", "ctrl0000/ctrl0000gpu", "ctrl0080/ctrl0080gpu", "ctrl2080/ctrl2080gpu",
               "ctrl2080/ctrl2080gr", "ctrl2080/ctrl2080fb", "ctrl2080/ctrl2080perf", "ctrlc36f", "ctrla06c",
               "ctrla06f", "ctrla06f/ctrla06fgpfifo", "ctrl83de/ctrl83dedebug")
RM_HEADERS = (
    (SDK, "nvstatus.h"), (SDK, "nvstatuscodes.h"), (SDK, "nvos.h"), (SDK, "nvgputypes.h"), (SDK, "nverror.h"),
    (SDK, "alloc/alloc_channel.h"), *((SDK, f"class/{c}.h") for c in RM_CLASSES), *((SDK, f"ctrl/{c}.h") for c in RM_CONTROLS),
    (UNIX, "nv_escape.h"), (UNIX, "nv-unix-nvos-params-wrappers.h"), (GENERATED, "g_allclasses.h"),
)
UVM_HEADERS = ((KERNEL_INC, "nvstatus.h"), (KERNEL_INC, "nvstatuscodes.h"), (KERNEL_INC, "nv-ioctl-numbers.h"),
               (KERNEL_INC, "nv-ioctl.h"), (UVM, "uvm_types.h"), (UVM, "uvm_ioctl.h"), (UVM, "uvm_linux_ioctl.h"))

RM_DOC = """NVIDIA RM interface of driver {release} (ABI {abi}): the NVOS* escape parameters (nvos.h) and their *_with_fd
wrappers, the allocation parameters of the classes a compute runtime allocates (root client, device, subdevice,
memory, virtual memory, debugger, VA space, context share, channel group, channel (alloc_channel.h), usermode),
the controls it calls (0000 system/gpu, 0080 gpu, 2080 gpu/gr/fb/perf, c36f, a06c, a06f gpfifo, 83de debug), the
notifier a channel's errors are written to (NvNotification, nvgputypes.h), the ROBUST_CHANNEL_* error codes
(nverror.h), the NV_ESC_RM_* escape numbers (nv_escape.h), the NV_STATUS codes, and every class id (g_allclasses.h).

Tables: NV_STATUS_NAMES (code -> (name, message), nvstatuscodes.h), CONTROL_PARAMS (each control command -> the
params struct it carries, as the FINN note of its #define says, None for none; the RM takes exactly that size),
CHIP_CLASSES (chip -> the class ids g_gpu_class_list.c lists for it)."""

UVM_DOC = """NVIDIA UVM and device-file interface of driver {release} (ABI {abi}), as nvidia-open-kernel-source ships it
(kernel-open): the UVM_* ioctl numbers and their UVM_*_PARAMS (uvm_ioctl.h, uvm_linux_ioctl.h; /dev/nvidia-uvm takes
the number itself as the request), uvm_types.h, the NV_ESC_* numbers of /dev/nvidiactl and /dev/nvidiaN
(nv-ioctl-numbers.h: NV_IOCTL_BASE + n) and their nv_ioctl_* structs (nv-ioctl.h), and the NV_STATUS codes.

Tables: NV_STATUS_NAMES (code -> (name, message)), UVM_PARAMS (each UVM_FOO -> the UVM_FOO_PARAMS it carries;
UVM copies params at its own size without a check)."""

# uvm_types.h's tools handles are opaque (declared, never defined): no layout to bind
UVM_SELECT = r"^(?!UvmTools(Session|EventQueue|Counters)$)"

STATUS_PROBE = """#include <stdio.h>
#define NV_STATUS_CODE(name, code, string) printf("%s\\t%u\\t%s\\n", #name, (unsigned)(code), string);
int main(void) {
#include "nvstatuscodes.h"
return 0; }
"""
CLASS_LIST = "g_gpu_class_list.c"
CHIP_FUNCTION = re.compile(r"gpuGetClassDescriptorList_(\w+)\s*\(.*?\{(.*?)\n\}", re.S)
CLASS_ENTRY = re.compile(r"\{\s*(\w+)\s*,\s*ENG_")


@dataclass(frozen=True)
class Interface:
    """One module: the headers of a release's tree it binds, in include order."""

    kind: str  # "rm" or "uvm"
    abi: str
    headers: tuple[tuple[str, str], ...]
    doc: str
    select: str | None = None  # cstructs' select: names to keep

    @property
    def name(self) -> str:
        return f"nv_{self.kind}_{self.abi}"

    def files(self) -> list[tuple[Path, str]]:
        """(header's path, its banner name) of each header."""
        return [toolchain.nv_file(self.abi, f"{folder}/{h}") for folder, h in self.headers]

    def flags(self) -> list[str]:
        """The include folders of the headers' tree (they include each other by these)."""
        folders = dict.fromkeys(folder for folder, _ in self.headers)
        return [f for folder in folders for f in ("-I", str(toolchain.nv_file(self.abi, folder)[0]))]

    def translation_unit(self) -> Path:
        """One header including the headers in order (the parser reads one translation unit)."""
        lines = ['#include "nvtypes.h"', *(f'#include "{path}"' for path, _ in self.files())]
        return _write(toolchain.CACHE / "include" / f"usergpu_{self.name}.h", "\n".join(lines) + "\n")

    def render(self) -> str:
        files = self.files()
        tu, flags = self.translation_unit(), tuple(self.flags())
        select = re.compile(self.select) if self.select else None
        out, records = cstructs.sections([tu, *(p for p, _ in files)], select=select, flags=flags)
        ns: dict = {}
        exec(compile(writer.module("", [], writer.imports("\n".join(out)), out), "<nv>", "exec"), ns)
        out += [_status_table(self, flags), _params_table(self, ns)]
        if self.kind == "rm":
            out.append(_class_table(self, ns))
        doc = self.doc.format(release=toolchain.NV_RELEASES[self.abi], abi=self.abi)
        text = writer.module(doc, [banner for _, banner in files], writer.imports("\n".join(out)), out)
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


def _control_rows(iface: Interface, ns: dict) -> list[str]:
    """Each control command -> the params struct FINN says it carries (None: it carries none)."""
    rows = []
    for path, _ in iface.files():
        for cmd, operand in FINN.findall(path.read_text()):
            struct = operand.removesuffix("_MESSAGE_ID") if operand.endswith("_MESSAGE_ID") else None
            if (struct is not None and not isinstance(ns.get(struct), type)) or not isinstance(ns.get(cmd), int):
                raise ToolchainError(f"{path.name}: {cmd} carries {struct}, which was not emitted")
            rows.append(f"{cmd}: {struct}")
    return rows


def _uvm_rows(iface: Interface, ns: dict) -> list[str]:
    """Each UVM ioctl number -> UVM_<name>_PARAMS, the struct uvm_ioctl.h declares after it."""
    return [f"{name}: {name}_PARAMS" for name, value in ns.items()
            if UVM_REQUEST.match(name) and isinstance(value, int) and isinstance(ns.get(f"{name}_PARAMS"), type)]


# per kind: the table of requests and the params each carries
PARAMS = {"rm": ("CONTROL_PARAMS", _control_rows), "uvm": ("UVM_PARAMS", _uvm_rows)}


def _params_table(iface: Interface, ns: dict) -> str:
    table, rows_of = PARAMS[iface.kind]
    rows = rows_of(iface, ns)
    if not rows:
        raise ToolchainError(f"{iface.name}: no request pairs with a params struct")
    return f"# request -> the params struct it carries\n{writer.table(table, rows)}"


def _class_table(iface: Interface, ns: dict) -> str:
    """chip -> the sorted class ids its gpuGetClassDescriptorList_<chip> lists (names valued by g_allclasses.h)."""
    path, _ = toolchain.nv_file(iface.abi, f"{GENERATED}/{CLASS_LIST}")
    rows = []
    for chip, body in CHIP_FUNCTION.findall(path.read_text()):
        names = CLASS_ENTRY.findall(body)
        unknown = sorted({n for n in names if not isinstance(ns.get(n), int)})
        if unknown or not names:
            raise ToolchainError(f"{CLASS_LIST}: {chip} lists {', '.join(unknown) or 'no class'}, which "
                                 "g_allclasses.h does not define")
        rows.append(f"{chip!r}: ({', '.join(f'{v:#x}' for v in sorted({ns[n] for n in names}))},)")
    return f"# chip -> the class ids it exposes ({CLASS_LIST})\n{writer.table('CHIP_CLASSES', rows)}"


INTERFACES = [
    *(Interface("rm", abi, RM_HEADERS, RM_DOC) for abi in toolchain.NV_RELEASES),
    *(Interface("uvm", abi, UVM_HEADERS, UVM_DOC, UVM_SELECT) for abi in toolchain.NV_RELEASES),
]

MODULES: list[Module] = [
    Module(i.name, f"{toolchain.NV_SOURCE} {toolchain.NV_RELEASES[i.abi]} (source)", i.render) for i in INTERFACES
]
