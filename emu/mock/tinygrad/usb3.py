"""tinygrad's USB seam for mocks (`test.mockgpu.usb.MockUSB3`, imported in place of its USB3 whenever its DEV names
a MOCK interface): the USB devices of the machine $DEV names, reached through that machine's pyusb backend with the
calls of tinygrad's USB3 (runtime/support/usb.py). A machine without a USB bus (MOCKKFD+AMD, MOCKPCI+AMD) lists
none. A failed transfer raises what tinygrad's USB3 raises, a RuntimeError naming the libusb call and libusb's
error string (USBCallError, also a usergpu.Error). Asynchronous transfers are carried out when submitted, in the
order they are submitted (the order the device sees them in), and bulk_wait reports them as libusb's completion
callback does: a failure latches and every later wait raises it."""

from __future__ import annotations

import errno
import itertools
import struct
from collections.abc import Callable
from typing import TypeVar

import usb.core
import usb.util

from usergpu.emu.mock.tinygrad.fileio import machine
from usergpu.errors import DeviceNotFound, Error

T = TypeVar("T")

OUT, IN, BULK_OUT, BULK_IN = 0x40, 0xC0, 0x02, 0x81  # vendor requests to the device; the bulk endpoints
PRODUCTS = ("custom", "AS2462")  # how tinygrad's USB3 knows a bridge it drives: its product string starts so
# libusb_transfer_status of a transfer that failed, by the errno of the failure (others: LIBUSB_TRANSFER_ERROR)
TRANSFER_STATUS = {errno.ETIMEDOUT: 2, errno.EPIPE: 4, errno.ENODEV: 5, errno.EOVERFLOW: 6}
TRANSFER_ERROR = 1
CBW, CSW = 0x43425355, 0x53425355  # the mass-storage bulk-only wrappers' signatures (send_batch)


class USBCallError(Error, RuntimeError):
    """A USB call that failed: the call as tinygrad's USB3 names it, and libusb's reason."""


def _call(name: str, fn: Callable[..., T], *args: object) -> T:
    try:
        return fn(*args)
    except usb.core.USBError as e:
        raise USBCallError(f"{name}: {e.strerror}") from None


def _whole(what: str, done: int, wanted: int) -> None:
    """tinygrad's USB3 asserts every synchronous transfer moves all it asked for."""
    if done != wanted:
        raise USBCallError(f"{what}: {done} of {wanted} bytes")


class MockUSB3:
    @classmethod
    def list_devices(cls, vendor: int, dev: int) -> list[tuple[usb.core.Device, str]]:
        """The devices with these ids on the machine's USB bus, each with its name ("usb:<bus>-<address>")."""
        try:
            backend = machine().usb_backend()
        except DeviceNotFound:
            return []
        found = usb.core.find(find_all=True, backend=backend, idVendor=vendor, idProduct=dev)
        return [(d, f"usb:{d.bus}-{d.address}") for d in found]

    def __init__(self, dev: usb.core.Device, *args, **kwargs):
        self.dev, self._tags = dev, itertools.count(1)
        self._async_seq, self._async_err = itertools.count(1), 0
        self.product = _call("libusb_get_string_descriptor_ascii", usb.util.get_string, dev, dev.iProduct) or ""
        if not self.product.startswith(PRODUCTS):
            raise DeviceNotFound(f"usb:{dev.bus}-{dev.address}: product {self.product!r} is not a bridge tinygrad "
                                 f"drives (its product string starts {' or '.join(map(repr, PRODUCTS))})")
        _call("libusb_set_configuration", dev.set_configuration, 1)
        _call("libusb_claim_interface", usb.util.claim_interface, dev, 0)
        _call("libusb_set_interface_alt_setting", dev.set_interface_altsetting, 0, 0)

    # ---- synchronous transfers --------------------------------------------------------------------------------------
    def control_write(self, request: int, value: int = 0, index: int = 0, data: bytes = b"", timeout: int = 1000):
        n = _call("libusb_control_transfer", self.dev.ctrl_transfer, OUT, request, value, index, bytes(data), timeout)
        _whole(f"control OUT {request:#x}", n, len(data))

    def control_read(self, request: int, length: int, value: int = 0, index: int = 0, timeout: int = 1000
                     ) -> memoryview:
        data = _call("libusb_control_transfer", self.dev.ctrl_transfer, IN, request, value, index, length, timeout)
        _whole(f"control IN {request:#x}", len(data), length)
        return memoryview(bytearray(data))

    def bulk_write(self, payload: bytes, timeout: int = 1000) -> None:
        n = _call("bulk OUT 0x02 failed", self.dev.write, BULK_OUT, bytes(payload), timeout)
        _whole("bulk OUT short write", n, len(payload))

    def bulk_read(self, length: int, timeout: int = 1000) -> memoryview:
        """As much as the device sends, up to length (a short read is not an error)."""
        return memoryview(bytearray(_call("bulk IN 0x81 failed", self.dev.read, BULK_IN, length, timeout)))

    # ---- asynchronous transfers -------------------------------------------------------------------------------------
    def _submit(self, transfer: Callable[[], int], wanted: int) -> int:
        """Carry out a submitted transfer; a failure or a short transfer latches as its completion status would.
        A device that is gone fails the submission itself, as libusb_submit_transfer does."""
        tag = next(self._async_seq)
        try:
            done = transfer()
        except usb.core.USBError as e:
            if e.errno == errno.ENODEV:
                raise USBCallError(f"async submit failed: {e.strerror}") from None
            self._async_err = TRANSFER_STATUS.get(e.errno, TRANSFER_ERROR)
        else:
            if done != wanted:
                self._async_err = self._async_err or -1
        return tag

    def bulk_write_async(self, payload, timeout: int = 10000) -> int:
        data = bytes(payload)
        return self._submit(lambda: self.dev.write(BULK_OUT, data, timeout), len(data))

    def control_write_async(self, request: int, value: int = 0, index: int = 0, data: bytes = b"",
                            timeout: int = 1000) -> int:
        data = bytes(data)
        return self._submit(lambda: self.dev.ctrl_transfer(OUT, request, value, index, data, timeout), len(data))

    def control_read_async(self, request: int, length: int, value: int = 0, index: int = 0, timeout: int = 1000
                           ) -> tuple[int, memoryview]:
        """The tag and the buffer the data lands in."""
        buf = bytearray(length)

        def transfer() -> int:
            got = self.dev.ctrl_transfer(IN, request, value, index, length, timeout)
            buf[:len(got)] = bytes(got)
            return len(got)

        return self._submit(transfer, length), memoryview(buf)

    def bulk_wait(self, tag: int) -> None:
        if self._async_err:
            raise USBCallError(f"async bulk OUT failed: status={self._async_err}")

    # ---- mass-storage bulk-only commands (tinygrad keeps them for its flash tool) -----------------------------------
    def send_batch(self, cdbs: list[bytes], odata: list[bytes | None] | None = None) -> None:
        for cdb, data in zip(cdbs, odata or [None] * len(cdbs), strict=True):
            tag = next(self._tags)
            self.bulk_write(struct.pack("<IIIBBB16s", CBW, tag, len(data or b""), 0, 0, len(cdb), cdb))
            if data is not None:
                self.bulk_write(data)
            status = bytes(self.bulk_read(13, timeout=2000))
            signature, echoed, _, result = struct.unpack("<IIIB", status) if len(status) == 13 else (0, 0, 0, 0)
            if (signature, echoed, result) != (CSW, tag, 0):
                raise USBCallError(f"mass-storage command {cdb[:1].hex()}: status {status.hex() or 'missing'}")
