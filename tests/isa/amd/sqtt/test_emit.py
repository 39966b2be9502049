"""wave_tokens(): the tokens an SQ writes for waves, the inverse of wave_instructions. The waves of a real gfx950
capture, written again from their instructions, decode to the same instructions at the same times; the CDNA_INST
type of every instruction in them is the one the hardware wrote; on every format a wave written from a program's
instructions maps back onto them."""

from __future__ import annotations

import collections

import pytest

from usergpu.isa import amd as isa
from usergpu.isa.amd import codeobj
from usergpu.isa.amd.sqtt import Ran, Wave, decode, dispatch_tokens, encode, wave_instructions, wave_tokens
from usergpu.isa.amd.sqtt.emit import gfx9_op
from usergpu.isa.amd.sqtt.waves import TOKENLESS

REAL = "gfx950/gemm_run_0/kern0_se0_0"  # the real gfx950 buffer with instruction tokens


def _real_waves(blob) -> tuple[list, list[Wave], list[tuple[Ran, int | None]]]:
    """A real gfx9 buffer's packets; the waves of its traced CU, from their tokens and decoded instructions; and
    each instruction with the CDNA_INST type the hardware wrote for it (None: an immediate, which has none)."""
    packets = decode(blob.data, blob.arch)
    head = packets[0]
    co = codeobj.parse(blob.code_object)
    text = bytes(co.text.data)
    runs = collections.defaultdict(list)  # (simd, slot) -> each of its waves' instructions, in order
    for i in wave_instructions(blob.data, blob.code_object, blob.arch, blob.base):
        if not runs[i.simd, i.wave] or runs[i.simd, i.wave][-1][-1].text == "s_endpgm":
            runs[i.simd, i.wave].append([])
        runs[i.simd, i.wave][-1].append(i)
    issues = collections.defaultdict(list)  # (simd, slot) -> [status, type] of each issue, in order
    ends = collections.defaultdict(list)
    for p in packets:
        if p.kind == "CDNA_ISSUE":
            for slot in range(10):
                if p.raw >> (8 + 2 * slot) & 3 in (2, 3):
                    issues[p.simd, slot].append([p.raw >> (8 + 2 * slot) & 3, None])
        elif p.kind == "CDNA_INST":
            pending = next(e for e in issues[p.simd, p.wave] if e[0] == 2 and e[1] is None)
            pending[1] = p.op
        elif p.kind == "CDNA_WAVEEND" and (p.cu, p.sh) == (head.cu, head.sa):
            ends[p.simd, p.wave].append(p.time)
    waves, taken = [], collections.Counter()
    for p in packets:
        if p.kind == "CDNA_WAVESTART" and (p.cu, p.sh) == (head.cu, head.sa):
            key = (p.simd, p.wave)
            run, end = runs[key][taken[key]], ends[key][taken[key]]
            taken[key] += 1
            ran = []
            for a, b in zip(run, [*run[1:], None], strict=True):
                size = isa.decode(text, blob.arch, a.pc - co.text.addr).size
                ran.append(Ran(a.pc, a.text, size, a.time + a.stall, a.stall, b is not None and b.pc != a.pc + size))
            waves.append(Wave(p.sh, p.cu, p.simd, p.wave, p.time, end, p.fields["count"], tuple(ran)))
    types = [(r, op) for key in runs for r, (_, op) in zip(
        [r for w in waves if (w.simd, w.slot) == key for r in w.ran], issues[key], strict=True)]
    return packets, waves, types


def test_real_gfx950_waves_write_back_to_themselves(captures):
    blob = captures[REAL]
    packets, waves, _ = _real_waves(blob)
    entry = [(p.kind, p.fields, p.time) for p in packets if p.kind == "CDNA_REG_CS_PRIV" and p.addr in (0xC, 0xD)]
    again = encode([("LAYOUT_HEADER", packets[0].fields), *entry[:2], *wave_tokens(blob.arch, waves)], blob.arch)
    key = lambda i: (i.simd, i.wave, i.pc, i.time, i.stall, i.text)  # noqa: E731
    real = wave_instructions(blob.data, blob.code_object, blob.arch, blob.base)
    mapped = wave_instructions(again, blob.code_object, blob.arch, blob.base)
    assert len(waves) == 4 and len(real) > 200  # a wave on each SIMD of CU 0
    for simd, slot in {(i.simd, i.wave) for i in real} | {(i.simd, i.wave) for i in mapped}:  # each slot's, in order
        assert [key(i) for i in mapped if (i.simd, i.wave) == (simd, slot)] == [
            key(i) for i in real if (i.simd, i.wave) == (simd, slot)]


def test_gfx9_instruction_types_are_the_hardwares(captures):
    """Every instruction of the real gfx950 trace: gfx9_op gives the CDNA_INST type the hardware wrote for it."""
    _, _, types = _real_waves(captures[REAL])
    assert [(r.text, gfx9_op(r.text, r.size, r.taken)) for r, _ in types] == [(r.text, op) for r, op in types]
    assert {op for _, op in types} >= {0, 1, 4, 5, 6, 13, 14, 15, 18, None}  # SMEM, SALU, FLAT, VALU, LDS, NEXT, ...


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200", "gfx942", "gfx950"])
def test_a_wave_written_from_its_instructions_maps_back(captures, arch):
    """Waves in two slots run the real gemm kernel from entry to s_endpgm, jumping at every branch, each instruction
    right after the one before, waits waiting 12 cycles; what wave_tokens writes decodes to those instructions at
    those times."""
    source = {"gfx942": "gfx950"}.get(arch, arch)
    blob = captures[f"{source}/gemm_run_0/kern0_se0_0"]
    co = codeobj.parse(blob.code_object)
    (kernel,) = co.kernels.values()
    text, gfx9 = bytes(co.text.data), arch.startswith("gfx9")
    cycle = 4 if gfx9 else 1  # what an instruction takes, as the decoder counts it (an issue slot on gfx9)
    waves = []
    for slot in (0, 3):
        pc, t, ran = kernel.entry, 100 * (slot + 1), []
        while True:
            inst = isa.decode(text, source, pc - co.text.addr)
            simm = inst.fields.get("simm16", 0)
            branch = inst.mnemonic.startswith(("s_cbranch", "s_branch"))
            if inst.mnemonic not in TOKENLESS:
                stall = 12 if inst.mnemonic.startswith(("s_waitcnt", "s_wait_")) else 0
                ran.append(Ran(pc, inst.text, inst.size, t + stall, stall, branch))
                t += stall + cycle
            if inst.mnemonic == "s_endpgm":
                break
            pc += inst.size + (4 * (simm - 0x10000 if simm & 0x8000 else simm) if branch else 0)
        waves.append(Wave(0, 0, 0, slot, 100 * (slot + 1), t, 64, tuple(ran)))
    head = ("LAYOUT_HEADER", {"simd_mask": 1} if gfx9 else {"layout": 3 + arch.startswith("gfx12")})
    tokens = [head, *dispatch_tokens(arch, blob.base + kernel.entry, 0), *wave_tokens(arch, waves)]
    mapped = wave_instructions(encode(tokens, arch), blob.code_object, arch, blob.base)
    for w in waves:
        got = [i for i in mapped if i.wave == w.slot]
        assert [(i.pc, i.time, i.stall) for i in got] == [(r.pc, r.time - r.stall, r.stall) for r in w.ran]
    assert len(mapped) == sum(len(w.ran) for w in waves)
