"""NVIDIA's RM and UVM bindings (nv_rm_<abi>, nv_uvm_<abi>) beyond the layouts test_abi_structs checks: their
tables against the C compiler and the headers, the release-to-release differences NV.md records, which releases
share a module, and a module's skip when its source package is absent."""

from __future__ import annotations

import ctypes
import importlib
import re

import pytest

from usergpu.autogen import __main__ as autogen
from usergpu.autogen import nv_releases
from usergpu.autogen.generator import modules, nvrm, toolchain
from usergpu.errors import ToolchainError

RM = [i for i in nvrm.INTERFACES if i.kind == "rm"]
ALL = [i.name for i in nvrm.INTERFACES]


def _tree(iface: nvrm.Interface) -> None:
    try:
        iface.translation_unit(iface.releases[0])
    except ToolchainError as e:  # only where make nvidia-sources has not run
        pytest.skip(str(e))


def _run(source: str, flags: list[str]) -> str:
    run = toolchain.compile_and_run(source, flags=[*flags, *toolchain.c_flags()])
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout


@pytest.mark.parametrize("iface", nvrm.INTERFACES, ids=ALL)
def test_status_names_are_the_headers(iface):
    """Every NV_STATUS_CODE(name, code, message) of nvstatuscodes.h, expanded into a C table of its own, is in the
    module's NV_STATUS_NAMES under its code (an alias under the first name of its code) and is a constant."""
    _tree(iface)
    mod = importlib.import_module(f"usergpu.autogen.{iface.name}")
    source = ('#include <stdio.h>\nstatic const struct { const char *name; unsigned code; const char *text; } t[] = {\n'
              '#define NV_STATUS_CODE(n, c, s) { #n, (c), s },\n#include "nvstatuscodes.h"\n};\n'
              'int main(void) { for (unsigned i = 0; i < sizeof t / sizeof t[0]; i++) '
              'printf("%s\\t%u\\t%s\\n", t[i].name, t[i].code, t[i].text); return 0; }\n')
    rows = [line.split("\t") for line in _run(source, iface.flags(iface.releases[0])).splitlines()]
    assert len(rows) > 100
    first = {}
    for name, code, text in rows:
        first.setdefault(int(code), (name, text))
        assert getattr(mod, name) == int(code), name
    assert mod.NV_STATUS_NAMES == first


@pytest.mark.parametrize("iface", RM, ids=[i.name for i in RM])
def test_control_commands_carry_their_message(iface):
    """A control command is its interface id << 8 | the message id of the params it carries (FINN's rule), and
    the table holds exactly the commands bound (RM_CONTROLS)."""
    _tree(iface)
    mod = importlib.import_module(f"usergpu.autogen.{iface.name}")
    aliases: dict[type, list[str]] = {}  # a struct's names: its class, its typedefs
    for k, v in vars(mod).items():
        if isinstance(v, type):
            aliases.setdefault(v, []).append(k)
    checked = 0
    for cmd, params in mod.CONTROL_PARAMS.items():
        if params is None:
            continue
        ids = {getattr(mod, f"{k}_MESSAGE_ID") for k in aliases[params] if hasattr(mod, f"{k}_MESSAGE_ID")}
        assert cmd & 0xFF in ids, f"{cmd:#x} carries {aliases[params]} (message ids {ids})"
        checked += 1
    assert checked > 15
    assert set(mod.CONTROL_PARAMS) == {getattr(mod, cmd) for cmd in nvrm.RM_CONTROLS}
    for cmd in ("NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2", "NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2",
                "NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2", "NV2080_CTRL_CMD_GPU_GET_GID_INFO",
                "NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN", "NVA06C_CTRL_CMD_GPFIFO_SCHEDULE"):
        assert mod.CONTROL_PARAMS[getattr(mod, cmd)] is not None, cmd


@pytest.mark.parametrize("iface", [i for i in nvrm.INTERFACES if i.kind == "uvm"],
                         ids=[i.name for i in nvrm.INTERFACES if i.kind == "uvm"])
def test_uvm_ioctls_and_params(iface):
    """Every bound UVM_* number uvm_ioctl.h defines with UVM_IOCTL_BASE (and UVM_INITIALIZE) that has a params
    struct is in UVM_PARAMS, each number once, valued as the header values it."""
    _tree(iface)
    mod = importlib.import_module(f"usergpu.autogen.{iface.name}")
    text = toolchain.nv_file(iface.releases[0], f"{toolchain.NV_UVM}/uvm_ioctl.h")[0].read_text()
    defined = dict(re.findall(r"#define\s+(UVM_\w+)\s+UVM_IOCTL_BASE\((\d+)\)", text))
    assert all(getattr(mod, n) == int(v) for n, v in defined.items() if n in nvrm.UVM_IOCTLS)
    expect = {getattr(mod, n) for n in defined if n in nvrm.UVM_IOCTLS and hasattr(mod, f"{n}_PARAMS")}
    expect |= {mod.UVM_INITIALIZE}
    assert set(mod.UVM_PARAMS) == expect
    assert mod.UVM_PARAMS[mod.UVM_INITIALIZE] is mod.UVM_INITIALIZE_PARAMS


# sizes (bytes) of what moves between the releases bound (NV.md records most of them), one per release in
# toolchain.NV_RELEASES' order: 535, 550, 555, 560, 565, 570, 575, 580, 590, 595
RELEASE_SIZES = {
    ("rm", "NV_MEMORY_ALLOCATION_PARAMS"): (120, *[128] * 9),
    ("rm", "NV_CHANNEL_ALLOC_PARAMS"): (*[360] * 5, *[368] * 5),
    ("rm", "NV_VASPACE_ALLOCATION_PARAMETERS"): (*[48] * 7, 56, 56, 56),
    ("rm", "NVOS46_PARAMETERS"): (*[56] * 7, 64, 64, 64),
    ("rm", "NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS"): (776, 776, 776, *[1032] * 7),
    ("rm", "NV2080_CTRL_GPU_GET_NAME_STRING_PARAMS"): (*[132] * 9, 68),  # 595 drops the unicode name
    ("uvm", "UVM_MAP_EXTERNAL_ALLOCATION_PARAMS"): (1200, *[9264] * 9),
    ("uvm", "nv_ioctl_rm_api_version_t"): (72,) * 10,
}


@pytest.mark.parametrize(("kind", "struct"), RELEASE_SIZES)
def test_layouts_move_between_releases_as_the_headers_say(kind, struct):
    column = ("rm", "uvm").index(kind)
    sizes = tuple(ctypes.sizeof(getattr(importlib.import_module(f"usergpu.autogen.nv_{kind}_{abis[column]}"), struct))
                  for abis in nv_releases.RELEASES.values())
    assert tuple(nv_releases.RELEASES) == toolchain.NV_RELEASES
    assert sizes == RELEASE_SIZES[(kind, struct)]


def _body(name: str) -> list[str]:
    """A module's text after its banner (which names its releases)."""
    text = importlib.import_module(f"usergpu.autogen.{name}").__file__
    return open(text).read().split('Do not edit: regenerate.\n"""', 1)[1].splitlines()


@pytest.mark.parametrize("kind", ["rm", "uvm"])
def test_releases_share_a_module_only_where_their_bindings_agree(kind):
    """Each release maps to one module; neighbouring modules differ (else they would be one ABI), and releases
    sharing a module were proven identical when it was rendered."""
    abis = {"rm": nvrm.RM_ABIS, "uvm": nvrm.UVM_ABIS}[kind]
    column = ("rm", "uvm").index(kind)
    assert {r: a[column] for r, a in nv_releases.RELEASES.items()} == {r: abi for abi, rs in abis.items() for r in rs}
    names = [f"nv_{kind}_{abi}" for abi in abis]
    for older, newer in zip(names, names[1:], strict=False):
        assert _body(older) != _body(newer), f"{older} and {newer} bind the same: one ABI"
    assert len(names) < len(toolchain.NV_RELEASES) or kind == "rm"


def _class_list_program(iface: nvrm.Interface) -> str:
    """g_gpu_class_list.c compiled as C: what it includes of the RM's internals stubbed (its engines are
    numbered 0: only the class ids are compared), and each chip's classes printed: its one list of {class, engine}
    pairs up to 575, its list of classes with no engine and its list of pairs from 580."""
    path = toolchain.nv_file(iface.releases[0], f"{toolchain.NV_GENERATED}/{nvrm.CLASS_LIST}")[0]
    text = path.read_text()
    engines = dict.fromkeys(re.findall(r"\b(ENG_\w+)(\()?", text))
    stubs = "".join(f"#define {e}{'(...)' if call else ''} 0\n" for e, call in engines)
    pairs = "for (NvU32 i = 0; i < n; i++) printf(\" %u\", l[i].classId);"
    calls = "".join(f'n = 0; l = gpuGetClassDescriptorList_{c}(0, &n); printf("{c}"); {pairs} printf("\\n");\n'
                    for c in re.findall(r"gpuGetClassDescriptorList_(\w+)\s*\(", text))
    calls += "".join(f'n = 0; ids = gpuGetNoEngClassList_{c}(0, &n); printf("{c}"); '
                     f'for (NvU32 i = 0; i < n; i++) printf(" %u", ids[i]); '
                     f'n = 0; l = gpuGetEngClassDescriptorList_{c}(0, &n); {pairs} printf("\\n");\n'
                     for c in re.findall(r"gpuGetNoEngClassList_(\w+)\s*\(", text))
    body = text.replace("#include <core/core.h>", "").replace("#include <gpu/gpu.h>", "")
    body = body.replace("#include <gpu/eng_desc.h>", "")
    return ("#include <stdio.h>\n#include \"nvtypes.h\"\n#include \"g_allclasses.h\"\n"
            "typedef struct { NvU32 classId; NvU32 engDesc; } CLASSDESCRIPTOR;\ntypedef void *POBJGPU;\n"
            "typedef struct OBJGPU OBJGPU;\n#define NV_ARRAY_ELEMENTS(a) (sizeof(a) / sizeof((a)[0]))\n"
            f"#define ct_assert(x)\n{stubs}{body}\n"
            "int main(void) { NvU32 n; const CLASSDESCRIPTOR *l; const NvU32 *ids;\n" + calls + "return 0; }\n")


@pytest.mark.parametrize("iface", RM, ids=[i.name for i in RM])
def test_chip_classes_are_the_compiled_lists(iface):
    _tree(iface)
    mod = importlib.import_module(f"usergpu.autogen.{iface.name}")
    got = {}
    for line in _run(_class_list_program(iface), iface.flags(iface.releases[0])).splitlines():
        chip, *ids = line.split()
        if chip in nvrm.CHIPS:
            got[chip] = tuple(sorted({int(i) for i in ids}))
    assert got == mod.CHIP_CLASSES
    assert {mod.HOPPER_COMPUTE_A, mod.HOPPER_CHANNEL_GPFIFO_A, mod.HOPPER_USERMODE_A} <= set(got["GH100"])
    assert mod.AMPERE_COMPUTE_A in got["GA100"] and mod.AMPERE_COMPUTE_B in got["GA102"]


@pytest.mark.parametrize("name", [*ALL, "nv_classes"])
def test_nv_modules_need_their_source_packages(name, tmp_path, monkeypatch, capsys):
    """Without the unpacked source packages a module's render is a ToolchainError naming the package, and
    autogen --check skips the module saying so."""
    monkeypatch.setattr(toolchain, "NV_SOURCES", tmp_path / "absent")
    row = next(m for m in modules.MODULES if m.name == name)
    with pytest.raises(ToolchainError, match="(nvidia-open-gpu-kernel-modules|open-gpu-doc).*make nvidia-sources"):
        row.render()
    assert autogen.main(["--check", "--only", name]) == 0
    assert f"{name}: skipped (" in capsys.readouterr().out
