"""A GPU in an external enclosure behind an ASMedia ASM2464PD USB4/USB3–PCIe bridge running the custom firmware:
`ASM24` speaks the firmware's vendor requests over pyusb, `USBPCIDevice` is a PCI function behind it with the
interface of drivers/pci.py (config space, BAR sizing, register blocks), so code above it runs unchanged.

The facts are the firmware's documented vendor requests (bmRequestType 0x40 OUT / 0xC0 IN, device recipient):
- 0xE4 IN reads bridge XDATA (wValue address, wLength 1..255); 0xE5 OUT writes one byte (wValue address, wIndex
  the byte). The PCIe link is up while XDATA 0xB450 reads 0x78; 0xF3 OUT powers it (wValue 1 on, 0 off).
- 0xF0 OUT issues PCIe requests: wValue = fmt_type | byte_enable << 8, wIndex = mode, data `<III` (address low,
  address high, value or dword count); then 0xF0 IN returns 8 bytes: the completion data dword, the completion
  status in bits 5..7 of byte 4 and a return status in byte 7 (nonzero: no completion came back). Mode 0 is one
  TLP; mode 1 streams memory writes from bulk OUT 0x02 and mode 2 memory reads to bulk IN 0x81 (this driver moves
  64 KiB a stream and checks each one's completion).

Failures are usergpu errors: `PCIeError` for a completion that is not Successful (named as the PCIe spec names
it), `USBTransferError` when the bridge itself stops answering (unplugged, timed out, stalled), each naming the
request in flight.
"""

from __future__ import annotations

import errno
import struct
import time
from collections.abc import Callable, Iterable
from typing import TypeVar

import usb.backend
import usb.core

from usergpu.drivers.hal import HAL
from usergpu.drivers.pci import BAR, PCIDevice, Registers
from usergpu.errors import DeviceNotFound, DriverError, Error, FieldError
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
    STREAM_MAX,
    TLP,
    WRITE_STREAM,
    XDATA_READ,
    XDATA_SIZE,
    XDATA_WRITE,
)

T = TypeVar("T")

USB_IDS = ((0xADD1, 0x0001), (0x3801, 0x0001))
XDATA_CHUNK = 255  # the most bytes one XDATA read returns
TIMEOUT_MS = 1000
CRS_TRIES, CRS_DELAY_S = 8, 0.01  # a function still initialising answers config requests with CRS for a while

# Completion status (PCIe base spec, the Cpl header's 3-bit field)
UR, CRS, CA = 1, 2, 4
COMPLETION_STATUS = {UR: "Unsupported Request", CRS: "Configuration Request Retry Status", CA: "Completer Abort"}
NO_COMPLETION = "no completion from the device (link down or device not responding)"

# What a libusb errno means for this bridge
USB_FAILURES = {
    errno.ENODEV: "the USB bridge was disconnected (cable pulled or enclosure powered off); reconnect it and check "
                  "`lsusb`",
    errno.ETIMEDOUT: "the USB bridge stopped answering (timed out); power-cycle the enclosure",
    errno.EPIPE: "the USB bridge stalled the request (a vendor request or argument its firmware does not take)",
    errno.EACCES: "no permission to open the USB device: run as root or add a udev rule giving access to it",
    errno.EBUSY: "another process or a kernel driver holds the USB interface",
}


class PCIeError(Error):
    """A PCIe request that got no Successful completion: the request, and the status as PCIe names it (status None:
    no completion came back at all)."""

    def __init__(self, request: str, status: int | None, detail: str = ""):
        self.request, self.status = request, status
        why = (NO_COMPLETION if status is None else
               f"{COMPLETION_STATUS.get(status, 'reserved status')} (completion status {status})")
        super().__init__(f"PCIe {request}: {why}{': ' + detail if detail else ''}")


class USBTransferError(DriverError):
    """A USB transfer to the bridge failed (disconnected, timed out, stalled): names the request in flight."""


class ASM24:
    """The bridge: XDATA, link power and PCIe requests (single TLPs and streams) as vendor requests."""

    def __init__(self, dev: usb.core.Device):
        self.dev = dev
        self.name = f"{dev.idVendor:04x}:{dev.idProduct:04x}"
        self._usb("USB set configuration", dev.set_configuration)

    @classmethod
    def find(cls, hal: HAL | None = None, index: int = 0) -> ASM24:
        """The index-th bridge on the HAL's USB (libusb's, or a mock's backend), by either pair of ids."""
        backend = (hal or HAL()).usb_backend()
        ids = ", ".join(f"{v:04x}:{p:04x}" for v, p in USB_IDS)
        try:
            found = list(usb.core.find(find_all=True, backend=backend,
                                       custom_match=lambda d: (d.idVendor, d.idProduct) in USB_IDS))
        except usb.core.NoBackendError:
            raise DeviceNotFound("USB: pyusb finds no libusb; install it (`apt-get install libusb-1.0-0`)") from None
        if index >= len(found):
            what = f"bridge {index} asked for, {len(found)} found" if found else "no ASM24xx USB–PCIe bridge"
            raise DeviceNotFound(f"{what} (USB ids {ids}): check the cable and the enclosure's power, and that "
                                 "`lsusb` lists one of those ids")
        return cls(found[index])

    def _usb(self, request: str, call: Callable[..., T], *args: object) -> T:
        """A pyusb call, its failure a usergpu error that names the request (a raw USBError says neither)."""
        try:
            return call(*args)
        except usb.core.USBError as e:
            code = e.errno or errno.EIO
            raise USBTransferError(f"{request} ({self.name})", code,
                                   USB_FAILURES.get(code, "the USB bridge stopped answering")) from None

    def _out(self, request: str, b_request: int, value: int, index: int = 0, data: bytes = b"") -> None:
        self._usb(request, self.dev.ctrl_transfer, OUT, b_request, value, index, data, TIMEOUT_MS)

    def _in(self, request: str, b_request: int, value: int, index: int, length: int) -> bytes:
        return self._check_length(request, self._usb(request, self.dev.ctrl_transfer, IN, b_request, value, index,
                                                     length, TIMEOUT_MS), length)

    def _check_length(self, request: str, data: Iterable[int], length: int) -> bytes:
        data = bytes(data)
        if len(data) != length:
            raise USBTransferError(f"{request} ({self.name})", errno.EIO, f"short reply: {len(data)} of {length} "
                                   "bytes")
        return data

    # XDATA and the link

    @staticmethod
    def _xdata_range(address: int, size: int) -> None:
        if not (0 <= address and address + size <= XDATA_SIZE):
            raise FieldError(f"XDATA {address:#x}+{size:#x} is outside the bridge's {XDATA_SIZE:#x} bytes")

    def xdata_read(self, address: int, size: int) -> bytes:
        self._xdata_range(address, size)
        return b"".join(self._in(f"XDATA read at {a:#06x}", XDATA_READ, a, 0, min(XDATA_CHUNK, address + size - a))
                        for a in range(address, address + size, XDATA_CHUNK))

    def xdata_write(self, address: int, data: bytes) -> None:
        self._xdata_range(address, len(data))
        for i, byte in enumerate(data):
            self._out(f"XDATA write at {address + i:#06x}", XDATA_WRITE, address + i, byte)

    def link_up(self) -> bool:
        return self.xdata_read(LINK_STATUS, 1)[0] == LINK_UP

    def power(self, on: bool) -> None:
        """Power the PCIe link (and the slot) on or off."""
        self._out(f"PCIe power {'on' if on else 'off'}", POWER, int(on))

    # PCIe requests

    def _completion(self, request: str) -> int:
        """The 0xF0 IN that ends a request: its completion data, or PCIeError."""
        data, flags, returned = struct.unpack("<IBxxB", self._in(request, TLP, 0, 0, 8))
        if returned:
            raise PCIeError(request, None)
        if flags >> 5:
            raise PCIeError(request, flags >> 5)
        return data

    def tlp(self, fmt_type: int, address: int, value: int = 0, byte_enable: int = 0xF, request: str = "") -> int:
        """One TLP (fmt_type: Fmt[2:0] << 5 | Type[4:0]); the completion's data dword (0 for a posted write)."""
        request = request or f"TLP {fmt_type:#04x} at {address:#x}"
        self._out(request, TLP, fmt_type | byte_enable << 8, SINGLE,
                  struct.pack("<III", address & 0xFFFFFFFF, address >> 32, value))
        return self._completion(request)

    @staticmethod
    def _lanes(offset: int, size: int) -> tuple[int, int]:
        """(byte enables, shift) of a size-byte access at offset within its dword."""
        if size not in (1, 2, 4) or offset % size:
            raise FieldError(f"a {size}-byte access at offset {offset:#x}: sizes are 1, 2 or 4, naturally aligned")
        return ((1 << size) - 1) << (offset & 3), 8 * (offset & 3)

    def _config(self, types: tuple[int, int], bus: int, device: int, function: int, offset: int, value: int,
                byte_enable: int, request: str) -> int:
        """A config request, type 0 on the bridge's own link (bus 0) and type 1 beyond it, retried while the
        function answers Configuration Request Retry Status."""
        address = bus << 24 | device << 19 | function << 16 | (offset & 0xFFC)
        for attempt in range(1, CRS_TRIES + 1):
            try:
                return self.tlp(types[bus != 0], address, value, byte_enable, request)
            except PCIeError as e:
                if e.status != CRS:
                    raise
                if attempt == CRS_TRIES:
                    raise PCIeError(request, CRS, f"still after {CRS_TRIES} tries; the function is not ready") from None
            time.sleep(CRS_DELAY_S)

    def config_read(self, bus: int, device: int, function: int, offset: int, size: int = 4) -> int:
        byte_enable, shift = self._lanes(offset, size)
        request = f"config read bus {bus} dev {device} fn {function} offset {offset:#x}"
        dword = self._config((CFGRD0, CFGRD1), bus, device, function, offset, 0, byte_enable, request)
        return dword >> shift & ((1 << 8 * size) - 1)

    def config_write(self, bus: int, device: int, function: int, offset: int, value: int, size: int = 4) -> None:
        byte_enable, shift = self._lanes(offset, size)
        request = f"config write bus {bus} dev {device} fn {function} offset {offset:#x}"
        self._config((CFGWR0, CFGWR1), bus, device, function, offset, value << shift, byte_enable, request)

    def mem_read32(self, address: int) -> int:
        return self.tlp(MRD64 if address >> 32 else MRD32, address, request=f"memory read at {address:#x}")

    def mem_write32(self, address: int, value: int) -> None:
        self.tlp(MWR64 if address >> 32 else MWR32, address, value, request=f"memory write at {address:#x}")

    def _stream(self, mode: int, address: int, size: int, request: str) -> None:
        if address % 4 or size % 4:
            raise FieldError(f"{request}: streams move whole dwords at dword-aligned addresses")
        self._out(request, TLP, (MRD64 if mode == READ_STREAM else MWR64) | 0xF << 8, mode,
                  struct.pack("<III", address & 0xFFFFFFFF, address >> 32, size // 4))  # the count is in dwords

    def mem_read(self, address: int, size: int) -> bytes:
        """size bytes (a multiple of 4) of memory, in read streams of at most 64 KiB."""
        out = []
        for a in range(address, address + size, STREAM_MAX):
            n = min(STREAM_MAX, address + size - a)
            request = f"memory read of {n:#x} bytes at {a:#x}"
            self._stream(READ_STREAM, a, n, request)
            out.append(self._check_length(request, self._usb(request, self.dev.read, BULK_IN, n, TIMEOUT_MS), n))
            self._completion(request)  # a failed stream's data is not to be trusted: this raises before it is used
        return b"".join(out)

    def mem_write(self, address: int, data: bytes) -> None:
        """data (a multiple of 4 bytes) to memory, in write streams of at most 64 KiB."""
        for i in range(0, len(data), STREAM_MAX):
            chunk = data[i:i + STREAM_MAX]
            request = f"memory write of {len(chunk):#x} bytes at {address + i:#x}"
            self._stream(WRITE_STREAM, address + i, len(chunk), request)
            self._usb(request, self.dev.write, BULK_OUT, chunk, TIMEOUT_MS)
            self._completion(request)


class BridgeRegisters(Registers):
    """A BAR's registers through the bridge: single TLPs for one register, streams for blocks."""

    def __init__(self, bridge: ASM24, bar: BAR, name: str):
        self.bridge, self.bar, self.name = bridge, bar, name

    def _address(self, offset: int, size: int) -> int:
        if not (0 <= offset and offset + size <= self.bar.size):
            raise FieldError(f"{self.name}: {offset:#x}+{size:#x} is outside BAR {self.bar.index} "
                             f"({self.bar.size:#x} bytes)")
        return self.bar.address + offset

    def read32(self, offset: int) -> int:
        return self.bridge.mem_read32(self._address(offset, 4))

    def write32(self, offset: int, value: int) -> None:
        self.bridge.mem_write32(self._address(offset, 4), value)

    def read(self, offset: int, size: int) -> bytes:
        return self.bridge.mem_read(self._address(offset, size), size)

    def write(self, offset: int, data: bytes) -> None:
        self.bridge.mem_write(self._address(offset, len(data)), data)


class USBPCIDevice(PCIDevice):
    """The function at bus:device.function behind the bridge (the GPU is bus 1, device 0, function 0 of an
    enclosure), with its config space through config TLPs and its BARs through memory TLPs."""

    def __init__(self, bridge: ASM24, bus: int = 1, device: int = 0, function: int = 0):
        self.bridge, self.bus, self.device, self.function = bridge, bus, device, function
        self.name = f"usb:{bus}:{device:02x}.{function}"
        if not bridge.link_up():
            raise DeviceNotFound(f"{self.name}: the PCIe link behind USB bridge {bridge.name} is down (XDATA "
                                 f"{LINK_STATUS:#x} is not {LINK_UP:#x}); check the GPU's power and seating, or "
                                 "power the link (ASM24.power(True))")

    def config_read(self, offset: int, size: int = 4) -> int:
        return self.bridge.config_read(self.bus, self.device, self.function, offset, size)

    def config_write(self, offset: int, value: int, size: int = 4) -> None:
        self.bridge.config_write(self.bus, self.device, self.function, offset, value, size)

    def bar(self, n: int) -> BAR:
        """Sized through config space: behind a bridge there is no kernel to ask."""
        return self.bar_from_config(n)

    def map_bar(self, n: int) -> Registers:
        bar = self.bar(n)
        if not bar.size or bar.io:
            raise DeviceNotFound(f"{self.name}: BAR {n} is {'an I/O BAR' if bar.io else 'not implemented'}")
        return BridgeRegisters(self.bridge, bar, self.name)
