"""The floors of DESIGN.md, kept honest: every non-test module's imports (read with ast, at module level and inside
functions alike) must go down the one-way rule, and the vendor halves must not reach into each other.

    autogen <- isa <- emu (emulators, then mocks)        isa <- drivers <- runtime <- tools

Within emu, an emulator (amd/exec, nv/ptx, memory.py, numerics.py) never imports a mock machine. The NVIDIA half never
imports from an amd/ folder, nor the AMD half from an nv/ one, and the vendor-neutral runtime core and emu/mock name
no vendor's module. errors.py and hostmem.py are below every floor.

Three doors are named: the generator (autogen/generator, python -m usergpu.autogen) reads isa's hand-written encoding
and printer facts to learn the ISA tables; a mock machine's HAL implements the seam's interface (emu may import
drivers/hal.py, nothing else of drivers); the runtime reaches a mock machine only through the lazy factory
usergpu.emu.mock (open_hal), from inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BASE = {"usergpu", "usergpu.errors", "usergpu.hostmem"}
# floor -> the floors it may import
ALLOWED = {
    "autogen": {"autogen"},
    "isa": {"autogen", "isa"},
    "emu": {"autogen", "isa", "emu"},
    "drivers": {"autogen", "isa", "drivers"},
    "runtime": {"autogen", "isa", "drivers", "runtime"},
    "tools": {"autogen", "isa", "emu", "drivers", "runtime", "tools"},
}
# (importing module's prefix, imported module, lazy only): the named doors
DOORS = [("usergpu.autogen.generator", "usergpu.isa", False), ("usergpu.autogen.__main__", "usergpu.isa", False),
         ("usergpu.emu", "usergpu.drivers.hal", False), ("usergpu.runtime", "usergpu.emu.mock", True)]
# vendor-neutral code that names no vendor's module: the runtime's core and what every mock machine shares
NEUTRAL = ("usergpu.runtime.", "usergpu.emu.mock")
# within emu, the emulators come before the mock machines that run kernels on them
EMULATORS = ("usergpu.emu.amd.exec", "usergpu.emu.nv.ptx", "usergpu.emu.memory", "usergpu.emu.numerics")
MOCKS = ("usergpu.emu.mock", "usergpu.emu.amd.mock", "usergpu.emu.nv.mock")
VENDORS = ("amd", "nv")


def module_name(path: Path) -> str:
    name = ".".join(("usergpu", *path.relative_to(ROOT).with_suffix("").parts))
    return name.removesuffix(".__init__")


def sources() -> list[Path]:
    """Every module of the package: not the tests, the benchmarks, nor the import hook usergpu mock puts on a foreign
    command's path (tools/mock_site, which is not a package)."""
    skip = {"tests", "bench", ".venv", "build", ".git"}
    return sorted(p for p in ROOT.rglob("*.py") if p.relative_to(ROOT).parts[0] not in skip
                  and p.relative_to(ROOT).parts[:2] != ("tools", "mock_site"))


def imports(path: Path) -> list[tuple[int, str, bool]]:
    """(line, module, inside a function) of each usergpu import; `from X import y` counts as X.y where that is a
    module, else X."""
    tree = ast.parse(path.read_text(), str(path))
    found: list[tuple[int, str, bool]] = []

    def visit(node: ast.AST, lazy: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = lazy or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.Import):
                found.extend((child.lineno, a.name, lazy) for a in child.names if a.name.startswith("usergpu"))
            elif isinstance(child, ast.ImportFrom) and (child.module or "").startswith("usergpu"):
                for a in child.names:
                    sub = f"{child.module}.{a.name}"
                    found.append((child.lineno, sub if is_module(sub) else child.module, lazy))
            visit(child, inner)

    visit(tree, False)
    return sorted(set(found))


def is_module(name: str) -> bool:
    rel = Path(*name.split(".")[1:])
    return (ROOT / rel).with_suffix(".py").exists() or (ROOT / rel / "__init__.py").exists()


def floor(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in ALLOWED else None


def vendor(name: str) -> str | None:
    return next((part for part in name.split(".")[1:-1] + name.split(".")[-1:] if part in VENDORS), None)


def violation(importer: str, imported: str, lazy: bool) -> str | None:
    """The rule an import breaks, or None."""
    if imported in BASE or imported.split(".")[:2] == ["usergpu", "errors"]:
        return None
    for prefix, door, lazy_only in DOORS:
        if (importer == prefix or importer.startswith(prefix + ".")) and (imported == door or
                                                                           imported.startswith(door + ".")):
            if lazy_only and (not lazy or imported != door):
                return f"{prefix} reaches {door} only lazily (inside a function), and only that module"
            return None
    mine, theirs = floor(importer), floor(imported)
    if mine is None:
        return f"{importer} is in no floor: only {', '.join(sorted(BASE))} may be imported from it"
    if theirs not in ALLOWED[mine]:
        return f"the {mine} floor may import {', '.join(sorted(ALLOWED[mine]))} (DESIGN.md: autogen <- isa <- emu, " \
               f"isa <- drivers <- runtime <- tools), not the {theirs} floor"
    if importer.startswith(EMULATORS) and imported.startswith(MOCKS):
        return "an emulator never imports a mock machine (emu: the emulators, then the mocks)"
    a, b = vendor(importer), vendor(imported)
    if a and b and a != b:
        return f"the {a.upper()} half never imports from an {b}/ folder"
    if (importer.startswith(NEUTRAL[0]) and importer.count(".") == 2 or importer.startswith(NEUTRAL[1])) and b:
        return f"{importer} is vendor-neutral: it names no vendor's module ({imported})"
    return None


def check(path: Path) -> list[str]:
    importer = module_name(path)
    rel = path.relative_to(ROOT)
    return [f"{rel}:{line}: imports {imported}: {why}" for line, imported, lazy in imports(path)
            if (why := violation(importer, imported, lazy))]


def test_every_import_goes_down_the_floors():
    problems = [p for path in sources() for p in check(path)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(("where", "line", "rule"), [
    ("drivers/amd/kfd.py", "from usergpu.emu.amd.mock.machines import mock_hal", "not the emu floor"),
    ("isa/amd/decoder.py", "from usergpu.runtime.device import Device", "not the runtime floor"),
    ("runtime/nv/device.py", "from usergpu.runtime.amd.pm4 import Packets", "NV half never imports from an amd/"),
    ("runtime/device.py", "from usergpu.runtime.amd.device import AMDDevice", "vendor-neutral"),
    ("runtime/launch.py", "from usergpu.emu.mock import open_hal", "only lazily"),
    ("emu/nv/mock/gpu.py", "from usergpu.drivers.nv.gpu import NV", "not the drivers floor"),
    ("autogen/kfd.py", "from usergpu.isa.amd import decode", "not the isa floor"),
    ("emu/nv/ptx/launch.py", "from usergpu.emu.mock import mock_count", "an emulator never imports a mock"),
])
def test_an_import_against_the_rule_fails(tmp_path, monkeypatch, where, line, rule):
    """Each rule catches a breach, named by file, line and rule: the module with one import added."""
    path = ROOT / where
    copy = tmp_path / "copy.py"
    copy.write_text(path.read_text() + f"\n{line}\n")
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: Path.read_bytes(copy if self == path else self)
                        .decode())
    problems = check(path)
    added = len(path.read_text().splitlines())
    assert any(p.startswith(f"{where}:{added}:") and rule in p for p in problems), problems
