"""Mock AMD GPU hardware: the engines (PM4 and AQL command processors, SDMA) over a GPU VA space, whose queues
run on the mock machines' one scheduler (emu/mock/scheduler.py), shared by the machines in kfd/ (MOCKKFD+AMD), pci/
(MOCKPCI+AMD), usb/ (MOCKUSB+AMD) and flash/ (the rescue tools' board). The engines load on first use, so a
machine's device files do not pay for the emulator."""

import importlib

_LAZY = {"AQLQueue": "aql", "GPU": "gpu", "QueueError": "gpu", "PM4Queue": "pm4", "SDMAQueue": "sdma"}
__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
