"""wave_instructions(): the instructions each traced wave executed, read from an SQTT trace and its program.

Instruction tracing covers one unit: on gfx11/gfx12 the SIMD (sa, wgp, simd) the LAYOUT_HEADER names, on gfx9
the CU of aqlprofile's header and the SIMDs of its mask. Its waves start (WAVESTART, or TS_DELTA_S5_W2: rocprof's
WAVE_START_EXT) at the kernel entry (the dispatch's COMPUTE_PGM_LO/HI REG tokens less base say which) and
every instruction token moves the wave's pc one instruction on, or to the branch target when an INST token
says the branch was taken (JUMP). gfx11/gfx12: VALUINST, INST, IMMEDIATE (IMMEDIATE_MASK: one per wave in the
mask) each stand for one instruction (INST ops of another SIMD's waves aside), s_delay_alu / s_wait_alu have
none, and WAVEEND is the s_endpgm. gfx9: CDNA_ISSUE marks each cycle an instruction issued (2) or an immediate
one ran (3) or the wave stalled (1); CDNA_INST tokens then confirm the issued ones in order, with their type
(JUMP / NEXT for branches).

Timing follows rocprof-trace-decoder's wave model: an instruction's time is when the wave first tried to run
it, stall the cycles it then waited, duration the stall plus the cycles it takes (its issue cost from the INST
op table, 1 for VALUINST and immediates). A wave waits from a WAVERDY naming it (gfx9: a CDNA_ISSUE stall);
an immediate instruction (s_waitcnt, s_nop, s_endpgm) from when the instruction before it was done.
"""

from __future__ import annotations

from dataclasses import dataclass

from usergpu.errors import DecodeError, FieldError
from usergpu.isa import amd as isa
from usergpu.isa.amd import codeobj
from usergpu.isa.amd.sqtt.codec import decode, layout_of
from usergpu.isa.amd.sqtt.packet import Packet, SQTTError
from usergpu.isa.amd.sqtt.tables import GFX9, inst_op

TOKENLESS = frozenset({"s_delay_alu", "s_wait_alu"})  # scheduling hints the SQ consumes without a token
_PGM_LO, _PGM_HI = 0xC, 0xD  # COMPUTE_PGM_LO/HI register offsets: the dispatch's entry address >> 8


@dataclass(frozen=True, slots=True)
class WaveInst:
    wave: int  # wave slot on its SIMD
    pc: int  # address in the code object (ELF .text sh_addr + offset)
    text: str  # the instruction as llvm-objdump prints it
    time: int  # cycle the wave first tried to run it
    duration: int  # cycles from time until it was done issuing/executing (stall included)
    stall: int  # cycles it waited before it issued
    simd: int = 0


def _isa_arch(arch: str) -> str:
    for prefix, table in (("gfx11", "gfx1100"), ("gfx12", "gfx1200"), ("gfx94", "gfx942"), ("gfx95", "gfx950")):
        if arch in isa.ARCHS or arch.startswith(prefix):
            return arch if arch in isa.ARCHS else table
    raise FieldError(f"no instruction decoder for arch {arch!r} (supported: {', '.join(isa.ARCHS)} and their kin)")


class _Program:
    """The code object's instructions by pc, decoded when first asked for."""

    def __init__(self, code_object: bytes, arch: str):
        self.co = codeobj.parse(code_object)
        text = self.co.text
        self.addr, self.data, self.arch, self.cache = text.addr, bytes(text.data), _isa_arch(arch), {}

    def at(self, pc: int, offset: int, packets: list[Packet]) -> isa.Instruction:
        inst = self.cache.get(pc)
        if inst is None:
            if not 0 <= pc - self.addr < len(self.data):
                raise SQTTError(f"a traced wave reached pc {pc:#x}, outside .text "
                                f"[{self.addr:#x}, {self.addr + len(self.data):#x})", offset, packets)
            try:
                inst = isa.decode(self.data, self.arch, pc - self.addr)
            except DecodeError as e:
                raise SQTTError(f"a traced wave reached pc {pc:#x}, which is no instruction ({e})", offset,
                                packets) from e
            self.cache[pc] = inst
        return inst

    def entry(self, va: int | None, base: int | None, offset: int, packets: list[Packet]) -> int:
        """The kernel entry a wave starts at: the dispatch's COMPUTE_PGM address when base places it, else the
        code object's only kernel."""
        entries = {k.entry: name for name, k in self.co.kernels.items()}
        if va is not None and base is not None and va - base in entries:
            return va - base
        if len(entries) == 1:
            return next(iter(entries))
        raise SQTTError(f"a wave started but which of the kernels {', '.join(entries.values())} it runs is unknown "
                        "(pass base, the code object's load address)", offset, packets)


def _branch_target(inst: isa.Instruction, pc: int) -> int | None:
    if not inst.mnemonic.startswith(("s_branch", "s_cbranch")):
        return None
    simm = inst.fields.get("simm16", 0) & 0xFFFF
    return pc + 4 + 4 * (simm - 0x10000 if simm & 0x8000 else simm)


class _Wave:
    __slots__ = ("slot", "simd", "pc", "state", "last", "end", "queue", "stall_since")

    def __init__(self, slot: int, simd: int, pc: int, time: int):
        self.slot, self.simd, self.pc = slot, simd, pc
        self.state, self.last = "idle", time  # rocprof's wave-slot state and when it last changed
        self.end: int | None = None  # when its last instruction was done
        self.queue: list[list] = []  # gfx9: issued instructions waiting for their CDNA_INST, in order
        self.stall_since: int | None = None

    def to(self, state: str, time: int) -> None:
        if time > self.last:
            self.last = time
        self.state = state


def wave_instructions(blob: bytes, code_object: bytes, arch: str, base: int | None = None,
                      itrace: bool = True) -> list[WaveInst]:
    """The instructions the waves of the traced unit executed, in trace order (waves interleave).

    base is the GPU address the code object was loaded at (ELF address 0); with it, the dispatch's entry address
    the trace records picks the kernel, else the code object must hold one kernel. itrace says whether the shader
    engine wrote instruction tokens (its SQ_THREAD_TRACE_TOKEN_MASK; a capture's `itrace`): the stream itself
    cannot tell, since a wave that ran only its s_endpgm writes none either. Without them nothing maps ([]).
    A trace that does not fit the program (a branch token on a non-branch, a pc leaving .text, an instruction-
    traced wave ending short of its s_endpgm) raises SQTTError."""
    packets = decode(blob, arch)  # a buffer cut off mid-token maps as far as its whole packets go
    program = _Program(code_object, arch)
    if not packets or packets[0].kind != "LAYOUT_HEADER":
        raise SQTTError("no LAYOUT_HEADER, so no traced unit", 0, packets)
    if not itrace:
        return []
    if layout_of(arch) is GFX9:
        return _gfx9(packets, program, base)
    return _rdna(packets, program, layout_of(arch).name, base)


def _rdna(packets: list[Packet], program: _Program, layout: str, base: int | None) -> list[WaveInst]:
    head = packets[0]
    unit = (head.sa, head.wgp, head.simd)
    waves: dict[int, _Wave] = {}
    out: list[WaveInst] = []
    pgm = [0, 0]

    def emit(w: _Wave, p: Packet, cycles: int, immediate: bool) -> None:
        inst = _tokened(program, w, p, packets)
        category = inst_op(layout, p.op)[1] if p.kind == "INST" else ""
        target = _branch_target(inst, w.pc)
        if (target is not None) != (category in ("JUMP", "NEXT")):
            raise SQTTError(f"wave {w.slot}: {p.kind} {inst_op(layout, p.op)[0] if p.kind == 'INST' else ''} token "
                            f"does not fit {inst.text!r} at pc {w.pc:#x}", p.offset, packets)
        if p.kind == "VALUINST" and not inst.family.startswith(("VOP", "VINTERP")):
            raise SQTTError(f"wave {w.slot}: VALUINST for non-VALU {inst.text!r} at pc {w.pc:#x}", p.offset, packets)
        out.append(_timed(w, w.pc, inst.text, p.time, cycles, immediate))
        w.pc = target if category == "JUMP" else w.pc + inst.size

    for p in packets:
        kind = p.kind
        if kind in ("WAVESTART", "TS_DELTA_S5_W2", "WAVEEND"):
            if (p.sa, p.wgp, p.simd) != unit:
                continue
            if kind == "WAVEEND":
                w = waves.pop(p.wave, None)
                if w is not None:  # also one with no tokens at all: its only instruction was the s_endpgm
                    inst = _tokened(program, w, p, packets)
                    if not inst.mnemonic.startswith("s_endpgm"):
                        raise SQTTError(f"wave {w.slot} ended at {inst.text!r} (pc {w.pc:#x}), not at an s_endpgm: "
                                        "the trace lost some of its instructions", p.offset, packets)
                    out.append(_timed(w, w.pc, inst.text, p.time, 1, True))  # s_endpgm has no token but this
                continue
            va = ((pgm[1] << 32) | pgm[0]) << 8 if pgm[0] or pgm[1] else None
            waves[p.wave] = _Wave(p.wave, p.simd, program.entry(va, base, p.offset, packets), p.time)
        elif kind == "REG" and p.cs and p.addr in (_PGM_LO, _PGM_HI):
            pgm[p.addr - _PGM_LO] = p.data
        elif kind == "VALUINST" or kind == "IMMEDIATE":
            if p.wave in waves:
                emit(waves[p.wave], p, 1, kind == "IMMEDIATE")
        elif kind == "INST":
            _, category, cycles = inst_op(layout, p.op)
            if p.wave in waves and not category.endswith("OTHER_SIMD"):
                emit(waves[p.wave], p, cycles, category == "IMMED")
        elif kind == "IMMEDIATE_MASK" or kind == "WAVERDY":
            for slot in range(16):
                if p.mask >> slot & 1 and slot in waves:
                    if kind == "WAVERDY":  # ready but not issuing: the wave stalls from the cycle before
                        waves[slot].to("stall", p.time - 1)
                    else:
                        emit(waves[slot], p, 1, True)
        elif kind == "TS_DELTA_S8_W3" and p.wave in waves and base is not None:
            waves[p.wave].pc = (p.pc << 2) - base  # NEW_PC: the wave jumped somewhere the code cannot tell
    return out


def _tokened(program: _Program, w: _Wave, p: Packet, packets: list[Packet]) -> isa.Instruction:
    """The wave's next instruction that has a token (or is the s_endpgm), past the hints the SQ consumes."""
    inst = program.at(w.pc, p.offset, packets)
    while inst.mnemonic in TOKENLESS:
        w.pc += inst.size
        inst = program.at(w.pc, p.offset, packets)
    return inst


def _timed(w: _Wave, pc: int, text: str, token_time: int, cycles: int, immediate: bool) -> WaveInst:
    """One instruction's (time, duration, stall) from its token time and the wave's state, as rocprof does."""
    if immediate:  # waits from where the wave's previous instruction finished
        time = token_time if w.end is None else min(token_time, w.end)
        stall = token_time - time
        w.to("wait", time)
        w.to("exec", token_time + 1)
        cycles = 1
    else:
        time, stall = token_time, 0
        if w.state == "stall" and w.last < token_time:
            stall, time = token_time - w.last, w.last
        w.to("exec", token_time)
    w.end = time + stall + cycles
    return WaveInst(w.slot, pc, text, time, stall + cycles, stall, w.simd)


def _gfx9(packets: list[Packet], program: _Program, base: int | None) -> list[WaveInst]:
    head = packets[0]
    waves: dict[tuple[int, int], _Wave] = {}
    out: list[WaveInst] = []
    pgm = [0, 0]

    def drain(w: _Wave, p: Packet) -> None:
        """Map the wave's issued instructions, oldest first, as far as their CDNA_INST has come."""
        while w.queue and w.queue[0][2] is not None:
            time, stall, category = w.queue.pop(0)
            inst = program.at(w.pc, p.offset, packets)
            target = _branch_target(inst, w.pc)
            if category in ("JUMP", "NEXT") and target is None:
                raise SQTTError(f"wave {w.simd}.{w.slot}: {category} token does not fit {inst.text!r} at pc {w.pc:#x}",
                                p.offset, packets)
            out.append(WaveInst(w.slot, w.pc, inst.text, time, stall + GFX9.scale, stall, w.simd))
            w.pc = target if category == "JUMP" else w.pc + inst.size

    for p in packets:
        kind = p.kind
        if kind in ("CDNA_WAVESTART", "CDNA_WAVEEND"):
            if p.cu != head.cu or p.sh != head.sa or not head.simd_mask >> p.simd & 1:
                continue
            key = (p.simd, p.wave)
            if kind == "CDNA_WAVEEND":
                w = waves.pop(key, None)
                if w is not None and w.queue:
                    w.queue = [entry for entry in w.queue if entry[2] is not None]  # issues never confirmed
                    drain(w, p)
                continue
            va = ((pgm[1] << 32) | pgm[0]) << 8 if pgm[0] or pgm[1] else None
            waves[key] = _Wave(p.wave, p.simd, program.entry(va, base, p.offset, packets), p.time)
        elif kind in ("CDNA_REG_CS", "CDNA_REG_CS_PRIV") and p.addr in (_PGM_LO, _PGM_HI):
            pgm[p.addr - _PGM_LO] = p.data
        elif kind == "CDNA_ISSUE":
            for slot in range(10):
                status = p.raw >> (8 + 2 * slot) & 3
                w = waves.get((p.simd, slot))
                if not status or w is None:
                    continue
                if status == 1:
                    w.stall_since = p.time if w.stall_since is None else w.stall_since
                    continue
                if w.stall_since is not None:
                    time = w.stall_since
                elif status == 3 and w.end is not None:  # an immediate waits from the previous issue on
                    time = min(p.time, w.end)
                else:
                    time = p.time
                w.stall_since, w.end = None, p.time + GFX9.scale
                w.queue.append([time, p.time - time, "IMMED" if status == 3 else None])
                drain(w, p)
        elif kind == "CDNA_INST":
            w = waves.get((p.simd, p.wave))
            category = inst_op("gfx9", p.op)[1]
            if w is None or category == "REPLAY":
                continue
            pending = next((entry for entry in w.queue if entry[2] is None), None)
            if pending is None:  # its CDNA_ISSUE was lost: the instruction issued now
                w.queue.append(pending := [p.time, 0, None])
            pending[2] = category
            drain(w, p)
    return out
