"""A mock USB bus as one pyusb backend: several mock devices (each a single-device backend, such as an ASM24Backend
bridge) on one root hub, device n answering as the n-th of the bus. A device that stopped enumerating (a pulled
cable) drops out of the list; its descriptors stay readable, as libusb keeps them."""

from __future__ import annotations

from collections.abc import Sequence

import usb.backend

# what a caller asks of one device (the device or its handle first): the single-device backend answers as device 0
PER_DEVICE = ("get_device_descriptor", "get_configuration_descriptor", "get_interface_descriptor",
              "get_endpoint_descriptor", "close_device", "set_configuration", "get_configuration",
              "set_interface_altsetting", "claim_interface", "release_interface", "clear_halt", "ctrl_transfer",
              "bulk_write", "bulk_read")


class USBBus(usb.backend.IBackend):
    def __init__(self, devices: Sequence[usb.backend.IBackend]):
        super().__init__()
        self.devices = list(devices)

    def enumerate_devices(self) -> list[int]:
        return [n for n, d in enumerate(self.devices) if d.enumerate_devices()]

    def get_parent(self, dev: int) -> None:
        return None

    def open_device(self, dev: int) -> int:
        self.devices[dev].open_device(0)
        return dev


def _per_device(name: str):
    def call(self: USBBus, dev: int, *args):
        return getattr(self.devices[dev], name)(0, *args)

    call.__name__ = name
    return call


for _name in PER_DEVICE:
    setattr(USBBus, _name, _per_device(_name))
