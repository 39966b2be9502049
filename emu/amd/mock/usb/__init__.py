"""The USB side of the mocks: the ASM2464PD USB–PCIe bridge (a pyusb backend), the PCIe hierarchy of an enclosure,
a bus of several bridges, and the MOCKUSB+AMD machine (the PCI board behind a bridge)."""
