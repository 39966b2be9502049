"""A mock ASMedia ASM2464PD USB–PCIe bridge running the custom firmware, as a pyusb backend: `usb.core.find(
backend=ASM24Backend(target))` finds it and drivers/amd/usb.py drives it with the same transfers as the real one.

The protocol is the firmware's documented vendor requests (bmRequestType 0x40 OUT / 0xC0 IN, device recipient):
0xE4 IN reads bridge XDATA (wValue address, wLength 1..255), 0xE5 OUT writes one XDATA byte (wValue address,
wIndex the byte), 0xF3 OUT powers the PCIe link (wValue 1 on, 0 off; the link is up while XDATA 0xB450 reads
0x78), and 0xF0 issues PCIe requests: OUT with wValue = fmt_type | byte_enable << 8, wIndex = mode and data
`<III` (address low, address high, value or dword count), then IN of 8 bytes: the completion data dword, the
completion status in bits 5..7 of byte 4 and a return status in byte 7 (nonzero: no completion). Mode 0 is one
TLP; mode 1 streams memory writes from bulk OUT 0x02, mode 2 streams memory reads to bulk IN 0x81, as many dwords
as the count says (the firmware keeps it in a 32-bit counter). Standard GET_DESCRIPTOR requests answer the device,
configuration and string descriptors (manufacturer "tiny", as the firmware's own; a product string starting
"custom", which is how tinygrad tells the custom firmware from the stock one).

Requests reach `target` (emu/amd/mock/pcie.Target) dword by dword. Memory writes are posted, so their status is
0 whatever the target says. A target that raises `Unplugged` makes this a pulled cable: every transfer from then
on fails with ENODEV, as libusb reports it, and the bridge no longer enumerates.
"""

from __future__ import annotations

import errno
import struct
from array import array
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import usb.backend
from usb.core import USBError, USBTimeoutError

from usergpu.emu.amd.mock.pci.pcie import SC, UR, CompletionError, Target, Unplugged
from usergpu.isa.amd.hw.asm24 import (
    BULK_IN,
    BULK_OUT,
    CFGRD0,
    CFGRD1,
    CFGWR0,
    CFGWR1,
    IN,
    LINK_STATUS,
    LINK_UP,
    MRD32,
    MRD64,
    MWR32,
    MWR64,
    OUT,
    POWER,
    READ_STREAM,
    SINGLE,
    TLP,
    WRITE_STREAM,
    XDATA_READ,
    XDATA_SIZE,
    XDATA_WRITE,
)

NO_COMPLETION = 1  # the return status when nothing answered (link down)
PACKET = 1024  # bytes of a SuperSpeed bulk packet: what the firmware reads from PCIe for each bulk IN packet

# libusb's errors as pyusb's libusb1 backend raises them (strerror, libusb code, errno)
NO_DEVICE = ("No such device (it may have been disconnected)", -4, errno.ENODEV)
PIPE = ("Pipe error", -9, errno.EPIPE)
NOT_FOUND = ("Entity not found", -5, errno.ENOENT)

STANDARD_IN, GET_DESCRIPTOR = 0x80, 0x06  # a standard device-to-host request (USB 3.2 spec, chapter 9)
DEVICE, CONFIGURATION, STRING = 1, 2, 3  # descriptor types
US_ENGLISH = 0x0409  # the one language of the strings
STRINGS = {1: "tiny", 2: "custom ASM2464PD", 3: "001"}  # manufacturer, product, serial number; others read empty


@dataclass
class DeviceDescriptor:
    idVendor: int
    idProduct: int
    bLength: int = 18
    bDescriptorType: int = 1
    bcdUSB: int = 0x0320
    bDeviceClass: int = 0
    bDeviceSubClass: int = 0
    bDeviceProtocol: int = 0
    bMaxPacketSize0: int = 9  # 2**9 bytes: SuperSpeed
    bcdDevice: int = 0x0100
    iManufacturer: int = 1
    iProduct: int = 2
    iSerialNumber: int = 3
    bNumConfigurations: int = 1
    bus: int = 1
    address: int = 2
    port_number: int = 1
    port_numbers: tuple = (1,)
    speed: int = 5  # libusb's LIBUSB_SPEED_SUPER_PLUS


@dataclass
class ConfigurationDescriptor:
    bLength: int = 9
    bDescriptorType: int = 2
    wTotalLength: int = 9 + 9 + 2 * 7
    bNumInterfaces: int = 1
    bConfigurationValue: int = 1
    iConfiguration: int = 0
    bmAttributes: int = 0x80
    bMaxPower: int = 112
    extra_descriptors: list = field(default_factory=list)


@dataclass
class InterfaceDescriptor:
    bLength: int = 9
    bDescriptorType: int = 4
    bInterfaceNumber: int = 0
    bAlternateSetting: int = 0
    bNumEndpoints: int = 2
    bInterfaceClass: int = 0xFF
    bInterfaceSubClass: int = 0
    bInterfaceProtocol: int = 0
    iInterface: int = 0
    extra_descriptors: list = field(default_factory=list)


@dataclass
class EndpointDescriptor:
    bEndpointAddress: int
    bLength: int = 7
    bDescriptorType: int = 5
    bmAttributes: int = 2  # bulk
    wMaxPacketSize: int = 1024
    bInterval: int = 0
    bRefresh: int = 0
    bSynchAddress: int = 0
    extra_descriptors: list = field(default_factory=list)


# descriptor -> (wire format, its fields in wire order)
LAYOUTS = {
    DeviceDescriptor: ("<BBHBBBBHHHBBBB", "bLength bDescriptorType bcdUSB bDeviceClass bDeviceSubClass bDeviceProtocol "
                       "bMaxPacketSize0 idVendor idProduct bcdDevice iManufacturer iProduct iSerialNumber "
                       "bNumConfigurations"),
    ConfigurationDescriptor: ("<BBHBBBBB", "bLength bDescriptorType wTotalLength bNumInterfaces bConfigurationValue "
                              "iConfiguration bmAttributes bMaxPower"),
    InterfaceDescriptor: ("<BBBBBBBBB", "bLength bDescriptorType bInterfaceNumber bAlternateSetting bNumEndpoints "
                          "bInterfaceClass bInterfaceSubClass bInterfaceProtocol iInterface"),
    EndpointDescriptor: ("<BBBBHB", "bLength bDescriptorType bEndpointAddress bmAttributes wMaxPacketSize bInterval"),
}


def wire(descriptor) -> bytes:
    """A descriptor's bytes as the device sends them."""
    fmt, names = LAYOUTS[type(descriptor)]
    return struct.pack(fmt, *(getattr(descriptor, n) for n in names.split()))


def string_descriptor(index: int) -> bytes:
    """String descriptor index: 0 lists the languages (US English only); the rest are UTF-16LE text."""
    text = struct.pack("<H", US_ENGLISH) if index == 0 else STRINGS.get(index, "").encode("utf-16-le")
    return bytes([2 + len(text), STRING]) + text


def completion(data: int = 0xFFFFFFFF, status: int = SC, returned: int = 0) -> bytes:
    """The 8 bytes of a 0xF0 IN: data dword, status in bits 5..7 of byte 4, return status in byte 7."""
    return struct.pack("<IBBBB", data, status << 5, 0, 0, returned)


class ASM24Backend(usb.backend.IBackend):
    """One bridge (one configuration, one interface, bulk 0x02 OUT and 0x81 IN) in front of `target`."""

    def __init__(self, target: Target, vendor: int = 0xADD1, product: int = 0x0001, port: int = 1):
        """port: the root hub port it is plugged into (its address on the bus is port + 1)."""
        super().__init__()
        self.target = target
        self.device = DeviceDescriptor(vendor, product, address=port + 1, port_number=port, port_numbers=(port,))
        self.configuration = ConfigurationDescriptor()
        self.interface = InterfaceDescriptor()
        self.endpoints = (EndpointDescriptor(BULK_OUT), EndpointDescriptor(BULK_IN))
        self.xdata = bytearray(XDATA_SIZE)
        self.active_configuration = 0
        self.unplugged = False
        self.control_transfers = self.bulk_bytes = 0
        self._reply: bytes | None = None  # what the next 0xF0 IN returns
        self._write_stream: tuple[int, int, int] | None = None  # (address, bytes left, return status so far)
        self._read_data = bytearray()  # a read stream's bytes awaiting bulk IN
        self._reading: tuple[int, int, int, int] | None = None  # a read stream's next address, dwords left, statuses
        self._requests = {(IN, XDATA_READ): self._xdata_read, (OUT, XDATA_WRITE): self._xdata_write,
                          (OUT, TLP): self._tlp_out, (IN, TLP): self._tlp_in, (OUT, POWER): self._power,
                          (STANDARD_IN, GET_DESCRIPTOR): self._get_descriptor}
        self._descriptors = {DEVICE: lambda n: wire(self.device), CONFIGURATION: self._configuration_set,
                             STRING: string_descriptor}
        self._tlps = {MRD32: self._mem_read, MRD64: self._mem_read, MWR32: self._mem_write, MWR64: self._mem_write,
                      CFGRD0: self._config_read, CFGRD1: self._config_read,
                      CFGWR0: self._config_write, CFGWR1: self._config_write}
        self.power(True)

    @property
    def link_up(self) -> bool:
        return self.xdata[LINK_STATUS] == LINK_UP

    def power(self, on: bool) -> None:
        self.xdata[LINK_STATUS] = LINK_UP if on else 0

    # Enumeration and descriptors: libusb keeps descriptors readable after a disconnect, so these never fail.

    def enumerate_devices(self) -> list[int]:
        return [] if self.unplugged else [0]

    def get_parent(self, dev: int) -> None:
        return None

    def get_device_descriptor(self, dev: int) -> DeviceDescriptor:
        return self.device

    def get_configuration_descriptor(self, dev: int, config: int) -> ConfigurationDescriptor:
        if config != 0:
            raise IndexError(f"Invalid configuration index {config}")
        return self.configuration

    def get_interface_descriptor(self, dev: int, intf: int, alt: int, config: int) -> InterfaceDescriptor:
        self.get_configuration_descriptor(dev, config)
        if intf != 0 or alt != 0:  # pyusb walks alternate settings until IndexError
            raise IndexError(f"Invalid interface {intf} alternate setting {alt}")
        return self.interface

    def get_endpoint_descriptor(self, dev: int, ep: int, intf: int, alt: int, config: int) -> EndpointDescriptor:
        self.get_interface_descriptor(dev, intf, alt, config)
        if not 0 <= ep < len(self.endpoints):
            raise IndexError(f"Invalid endpoint index {ep}")
        return self.endpoints[ep]

    # Handles and configuration

    def _alive(self) -> None:
        if self.unplugged:
            raise USBError(*NO_DEVICE)

    @contextmanager
    def _cable(self) -> Iterator[None]:
        """A transfer that reaches the target: a target that lost power is a pulled cable from then on."""
        self._alive()
        try:
            yield
        except Unplugged:
            self.unplugged = True
            raise USBError(*NO_DEVICE) from None

    def open_device(self, dev: int) -> int:
        self._alive()
        return dev

    def close_device(self, dev_handle: int) -> None:
        pass

    def set_configuration(self, dev_handle: int, config_value: int) -> None:
        self._alive()
        if config_value not in (0, self.configuration.bConfigurationValue):
            raise USBError(*NOT_FOUND)
        self.active_configuration = config_value

    def get_configuration(self, dev_handle: int) -> int:
        self._alive()
        return self.active_configuration

    def set_interface_altsetting(self, dev_handle: int, intf: int, altsetting: int) -> None:
        self.claim_interface(dev_handle, intf)
        if altsetting != 0:
            raise USBError(*NOT_FOUND)

    def claim_interface(self, dev_handle: int, intf: int) -> None:
        self._alive()
        if intf != self.interface.bInterfaceNumber:
            raise USBError(*NOT_FOUND)

    def release_interface(self, dev_handle: int, intf: int) -> None:
        self._alive()

    def clear_halt(self, dev_handle: int, ep: int) -> None:
        self._alive()

    # Transfers

    def ctrl_transfer(self, dev_handle: int, bmRequestType: int, bRequest: int, wValue: int, wIndex: int,
                      data: array, timeout: int) -> int:
        """The setup packet's fields are the widths libusb_control_transfer takes (uint8_t, uint16_t): wider values
        are cut to them, as ctypes cuts them for libusb."""
        self.control_transfers += 1
        bmRequestType, bRequest = bmRequestType & 0xFF, bRequest & 0xFF
        wValue, wIndex = wValue & 0xFFFF, wIndex & 0xFFFF
        handler = self._requests.get((bmRequestType, bRequest))
        with self._cable():
            if handler is None:
                raise USBError(*PIPE)  # the firmware stalls requests it does not know
            reply = handler(wValue, wIndex, bytes(data))
        if bmRequestType == OUT:
            return len(data)
        data[:len(reply)] = array("B", reply)
        return len(reply)

    def bulk_write(self, dev_handle: int, ep: int, intf: int, data: array, timeout: int) -> int:
        with self._cable():
            return self._stream_write(ep & 0xFF, data)

    def _stream_write(self, ep: int, data: array) -> int:
        if ep != BULK_OUT or self._write_stream is None or len(data) % 4 or len(data) > self._write_stream[1]:
            raise USBError(*PIPE)
        address, left, returned = self._write_stream
        words = struct.unpack(f"<{len(data) // 4}I", data)
        returned |= self._each_dword(address, words, lambda a, v: self._mem_write(MWR64, a, v))[2]
        self.bulk_bytes += len(data)
        left -= len(data)
        self._write_stream = (address + len(data), left, returned) if left else None
        if not left:
            self._reply = completion(0, SC, returned)
        return len(data)

    def bulk_read(self, dev_handle: int, ep: int, intf: int, buff: array, timeout: int) -> int:
        with self._cable():
            if ep & 0xFF != BULK_IN:
                raise USBError(*PIPE)
            while len(self._read_data) < len(buff) and self._reading is not None:
                self._fetch()
        if not self._read_data:
            raise USBTimeoutError("Operation timed out", -7, errno.ETIMEDOUT)  # nothing queued: the host waits
        n = min(len(buff), len(self._read_data))
        buff[:n] = array("B", self._read_data[:n])
        del self._read_data[:n]
        self.bulk_bytes += n
        return n

    # The requests the firmware serves: (wValue, wIndex, OUT data) -> IN data

    def _configuration_set(self, index: int) -> bytes:
        """GET_DESCRIPTOR(CONFIGURATION) returns the configuration with its interface and endpoints."""
        if index != 0:
            raise USBError(*PIPE)
        return b"".join(map(wire, (self.configuration, self.interface, *self.endpoints)))

    def _get_descriptor(self, value: int, index: int, data: bytes) -> bytes:
        """wValue: type << 8 | index; as much of the descriptor as wLength asks for."""
        kind = self._descriptors.get(value >> 8)
        if kind is None:
            raise USBError(*PIPE)
        return kind(value & 0xFF)[:len(data)]

    def _xdata_read(self, address: int, index: int, data: bytes) -> bytes:
        if index or not 1 <= len(data) <= 255 or address + len(data) > XDATA_SIZE:
            raise USBError(*PIPE)
        return bytes(self.xdata[address:address + len(data)])

    def _xdata_write(self, address: int, value: int, data: bytes) -> bytes:
        if value > 0xFF:
            raise USBError(*PIPE)
        self.xdata[address] = value
        return b""

    def _power(self, on: int, index: int, data: bytes) -> bytes:
        self.power(bool(on))
        return b""

    def _tlp_in(self, value: int, index: int, data: bytes) -> bytes:
        if self._reply is None or len(data) != 8:
            raise USBError(*PIPE)
        reply, self._reply = self._reply, None
        return reply

    def _tlp_out(self, value: int, mode: int, data: bytes) -> bytes:
        if len(data) != 12:
            raise USBError(*PIPE)
        low, high, word = struct.unpack("<III", data)
        # a TLP carries address bits 63..2: the firmware drops the low two, byte enables pick the bytes
        address, fmt_type, byte_enable = (high << 32 | low) & ~3, value & 0xFF, value >> 8
        stream = mode in (WRITE_STREAM, READ_STREAM) and word > 0  # word: the stream's dword count
        if not (stream or mode == SINGLE and fmt_type in self._tlps):
            raise USBError(*PIPE)
        # a new request drops what was pending
        self._reply, self._read_data, self._write_stream, self._reading = None, bytearray(), None, None
        if mode == SINGLE:
            self._reply = self._single(fmt_type, address, word, byte_enable)
        elif mode == WRITE_STREAM:
            self._write_stream = (address, 4 * word, 0)
        else:
            self._read_stream(address, word)
        return b""

    def _single(self, fmt_type: int, address: int, value: int, byte_enable: int) -> bytes:
        if not self.link_up:
            return completion(returned=NO_COMPLETION)
        try:
            return completion(self._tlps[fmt_type](fmt_type, address, value, byte_enable))
        except CompletionError as e:
            return completion(status=e.status)

    def _read_stream(self, address: int, count: int) -> None:
        """The firmware reads the first packet's dwords as the request arrives, the next ones as the host takes
        packets (bulk IN), so a stream of any length costs only what is read of it."""
        self._reading = (address, count, SC, 0)
        self._fetch()

    def _fetch(self) -> None:
        """The read stream's next packet: dword by dword until the first failure, all ones from there on (a master
        abort), the completion so far readable by 0xF0 IN."""
        address, left, status, returned = self._reading
        n = min(left, PACKET // 4)
        words: list[int] = []
        if status == SC and not returned:
            words, status, returned = self._each_dword(address, [0] * n, lambda a, _: self.target.mem_read(a))
        self._read_data += struct.pack(f"<{n}I", *words, *[0xFFFFFFFF] * (n - len(words)))
        self._reading = (address + 4 * n, left - n, status, returned) if left > n else None
        self._reply = completion(0, status, returned)

    def _each_dword(self, address: int, values: Sequence[int], access: Callable[[int, int], int]
                    ) -> tuple[list[int], int, int]:
        """access(address, value) for consecutive dwords, stopping at the first failure: (results, completion
        status, return status)."""
        if not self.link_up:
            return [], SC, NO_COMPLETION
        out = []
        for i, value in enumerate(values):
            try:
                out.append(access(address + 4 * i, value))
            except CompletionError as e:
                return out, e.status, 0
        return out, SC, 0

    # TLPs: (fmt_type, address, value, byte_enable) -> completion data; CompletionError for a failed one

    def _mem_read(self, fmt_type: int, address: int, value: int, byte_enable: int) -> int:
        return self.target.mem_read(address)

    def _mem_write(self, fmt_type: int, address: int, value: int, byte_enable: int = 0xF) -> int:
        try:
            self.target.mem_write(address, value, byte_enable)
        except CompletionError:
            pass  # a posted write has no completion: the requester never hears of it
        return 0

    @staticmethod
    def _config_address(fmt_type: int, address: int) -> tuple[int, int, int]:
        bus, devfn, offset = address >> 24 & 0xFF, address >> 16 & 0xFF, address & 0xFFC
        if (fmt_type & 1) != (bus != 0):  # type 0 stays on the bridge's own link (bus 0); type 1 goes beyond it
            raise CompletionError(UR, f"type {fmt_type & 1} config request to bus {bus}")
        return bus, devfn, offset

    def _config_read(self, fmt_type: int, address: int, value: int, byte_enable: int) -> int:
        return self.target.config_read(*self._config_address(fmt_type, address))

    def _config_write(self, fmt_type: int, address: int, value: int, byte_enable: int) -> int:
        self.target.config_write(*self._config_address(fmt_type, address), value, byte_enable)
        return 0
