"""The ASM2464PD USB–PCIe bridge firmware's vendor protocol (hand-written, like _regs.py: not generated): its
request codes, stream modes, endpoints and the PCIe TLP fmt_type values it takes. Shared by the USB driver and
the mock bridge, the lowest layer both import."""

OUT, IN = 0x40, 0xC0  # bmRequestType of the vendor requests (device recipient)
XDATA_READ, XDATA_WRITE, TLP, POWER = 0xE4, 0xE5, 0xF0, 0xF3
SINGLE, WRITE_STREAM, READ_STREAM = 0, 1, 2  # TLP's wIndex: one TLP, or a stream over bulk
BULK_OUT, BULK_IN = 0x02, 0x81
MRD32, MRD64, MWR32, MWR64, CFGRD0, CFGWR0, CFGRD1, CFGWR1 = 0x00, 0x20, 0x40, 0x60, 0x04, 0x44, 0x05, 0x45
LINK_STATUS, LINK_UP = 0xB450, 0x78  # XDATA byte that reads LINK_UP while the PCIe link is up
XDATA_SIZE, STREAM_MAX = 0x10000, 0x10000  # bytes of XDATA; the bytes a stream of usergpu's driver moves at most
