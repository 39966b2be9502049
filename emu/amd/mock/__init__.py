"""Mock AMD GPU hardware: the engines (PM4 and AQL command processors, SDMA) over a GPU VA space and the cooperative
scheduler that runs their queues, shared by the machines in kfd/ (MOCKKFD+AMD), pci/ (MOCKPCI+AMD), usb/
(MOCKUSB+AMD) and flash/ (the rescue tools' board); the mock side of the HAL (hal.py) and tinygrad's seam
(fileio.py, usb3.py). The engines load on first use, so the HAL does not pay for the emulator."""

import importlib

_LAZY = {"AQLQueue": "aql", "GPU": "gpu", "QueueError": "gpu", "PM4Queue": "pm4", "Scheduler": "scheduler",
         "SDMAQueue": "sdma"}
__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
