"""usergpu mock's import hook, on the PYTHONPATH of the command it runs: tinygrad's seam for mocks
(`test.mockgpu.mockgpu.MockFileIOInterface`, `test.mockgpu.usb.MockUSB3`) resolves to usergpu's mock machines, before
any `test` package on the path (tinygrad's own repository has one) is searched for them. Other modules of
`test.mockgpu` still come from that package. The interpreter's own sitecustomize, if any, runs after."""

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys

SERVED = {"test.mockgpu.mockgpu": "usergpu.emu.mock.tinygrad.fileio",
          "test.mockgpu.usb": "usergpu.emu.mock.tinygrad.usb3"}
HERE = os.path.dirname(os.path.abspath(__file__))


class _Served(importlib.abc.Loader):
    """A served name is the usergpu module itself."""

    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec):
        return importlib.import_module(self.target)

    def exec_module(self, module) -> None:
        pass


class _Package(importlib.abc.Loader):
    """A package for `test` or `test.mockgpu` where none is on the path (its other modules are searched where a
    real one lies)."""

    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:
        pass


class Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name in SERVED:
            return importlib.util.spec_from_loader(name, _Served(SERVED[name]))
        if name not in ("test", "test.mockgpu"):
            return None
        found = next((s for f in sys.meta_path if f is not self and hasattr(f, "find_spec")
                      for s in [f.find_spec(name, path, target)] if s is not None), None)
        if name == "test" and found is not None:
            return found
        spec = importlib.machinery.ModuleSpec(name, _Package(), is_package=True)
        spec.submodule_search_locations = list(found.submodule_search_locations or []) if found else []
        return spec


sys.meta_path.insert(0, Finder())
_next = importlib.machinery.PathFinder.find_spec("sitecustomize", [p for p in sys.path if os.path.abspath(p or ".")
                                                                    != HERE])
if _next is not None and _next.loader is not None:
    _next.loader.exec_module(importlib.util.module_from_spec(_next))
