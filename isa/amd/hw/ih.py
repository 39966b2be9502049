"""Interrupt handler facts shared by AM and the mock IH (hand-written, like _regs.py): the IV ring entry's layout
(amdgpu_ih.c's decoder: 8 dwords) and the (client id, source id) pairs of the interrupts the runtime uses
(soc15_ih_clientid.h, irqsrcs_gfx_11_0_0.h)."""

ENTRY_BYTES = 32
CLIENT_GRBM_CP, CLIENT_GFX = 0x14, 0x0A  # SOC21_IH_CLIENTID_*
# the GC hub's (UTCL2's) VM faults come from client GFX, source UTCL2_1_0__SRCID__FAULT
SOURCES = {"CP_EOP_INTERRUPT": (CLIENT_GRBM_CP, 181), "SDMA_TRAP": (CLIENT_GFX, 49), "UTCL2_FAULT": (CLIENT_GFX, 0)}
FAULT_WRITE, FAULT_RETRY = 0x20, 0x80  # src_data[1] bits of a VM fault (gmc_v11_0_process_interrupt)
NAMES = {ids: name for name, ids in SOURCES.items()}


def encode(client: int, source: int, data: tuple[int, ...] = (), timestamp: int = 0, ring: int = 0) -> list[int]:
    """An IV entry's dwords: client, source and ring ids, the 48-bit timestamp, up to four source data words."""
    words = [client | source << 8 | ring << 16, timestamp & 0xFFFFFFFF, timestamp >> 32 & 0xFFFF, 0]
    return words + list(data) + [0] * (4 - len(data))


def decode(words) -> dict[str, int]:
    return {"client_id": words[0] & 0xFF, "src_id": words[0] >> 8 & 0xFF, "ring_id": words[0] >> 16 & 0xFF,
            "vmid": words[0] >> 24 & 0xF, "timestamp": words[1] | (words[2] & 0xFFFF) << 32,
            "src_data": tuple(words[4:8])}


def fault_data(address: int, write: bool) -> tuple[int, int]:
    """A VM fault's source data: the page number (bits 43:12, then 47:44 with the write bit)."""
    return address >> 12 & 0xFFFFFFFF, address >> 44 & 0xF | (FAULT_WRITE if write else 0)


def fault_address(data: tuple[int, ...]) -> tuple[int, bool]:
    """(page address, write) of a VM fault's source data."""
    return data[0] << 12 | (data[1] & 0xF) << 44, bool(data[1] & FAULT_WRITE)
