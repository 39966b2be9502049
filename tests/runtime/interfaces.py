"""The interfaces the runtime's tests run on, and the environment each needs."""

from __future__ import annotations

# the kernel driver's mock; AM's register-level mock GPU through sysfs, and through VFIO (whose IOMMU maps the
# runtime's "gtt" memory from this process's pages)
INTERFACES = ("MOCKKFD+AMD", "MOCKPCI+AMD", "MOCKPCI+AMD/VFIO")


def interface(name: str, monkeypatch) -> str:
    """The device string of an INTERFACES entry, with the environment it needs."""
    device, _, via = name.partition("/")
    monkeypatch.setenv("MOCKPCI_VFIO", "1" if via == "VFIO" else "0")
    return device
