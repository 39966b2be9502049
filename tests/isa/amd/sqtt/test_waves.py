"""wave_instructions(): the traced waves' instructions follow the reference inst_map exactly, through taken
and not-taken branches; timing is consistent; hand-made traces (encode) map onto a program as the mock GPU
will write them; traces that contradict the program raise SQTTError."""

from __future__ import annotations

import collections
import random

import pytest

from usergpu.isa import amd as isa
from usergpu.isa.amd import codeobj
from usergpu.isa.amd.sqtt import SQTTError, encode, wave_instructions


def test_inst_map_matches_the_reference(mapped_blob):
    insts = wave_instructions(mapped_blob.data, mapped_blob.code_object, mapped_blob.arch, mapped_blob.base)
    assert [[i.wave, i.pc] for i in insts] == mapped_blob.reference["inst_map"]


def test_one_kernel_needs_no_base(mapped_blob):
    with_base = wave_instructions(mapped_blob.data, mapped_blob.code_object, mapped_blob.arch, mapped_blob.base)
    assert wave_instructions(mapped_blob.data, mapped_blob.code_object, mapped_blob.arch) == with_base


def _waves(insts):
    """Each wave's instructions: by (simd, slot), split where a slot's wave ends and the next begins."""
    runs = collections.defaultdict(list)
    for i in insts:
        runs[i.simd, i.wave].append(i)
    for run in runs.values():
        starts = [0] + [k + 1 for k, i in enumerate(run[:-1]) if i.text == "s_endpgm"]
        yield from (run[a:b] for a, b in zip(starts, starts[1:] + [len(run)], strict=True))


def test_every_wave_runs_entry_to_endpgm_in_order(blob):
    insts = wave_instructions(blob.data, blob.code_object, blob.arch, blob.base, itrace=blob.itrace)
    co = codeobj.parse(blob.code_object)
    (kernel,) = co.kernels.values()
    for wave in _waves(insts):
        assert wave[0].pc == kernel.entry and wave[-1].text == "s_endpgm"
        for prev, i in zip(wave, wave[1:], strict=False):
            inst = isa.decode(bytes(co.text.data), blob.arch, prev.pc - co.text.addr)
            following = prev.pc + inst.size
            while (hint := isa.decode(bytes(co.text.data), blob.arch, following - co.text.addr)).mnemonic in (
                    "s_delay_alu", "s_wait_alu"):  # no token, so never in the list
                following += hint.size
            assert i.pc == following or inst.mnemonic.startswith("s_cbranch")
            assert i.time >= prev.time
        for i in wave:
            assert 0 <= i.stall < i.duration


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200", "gfx950"])
def test_real_waves_fall_through_their_branch(captures, arch):
    """Every traced gemm wave holds work item 0, so none skips the reduction: s_cbranch_execz falls through."""
    blob = captures[f"{arch}/gemm_run_0/kern0_se0_0"]
    insts = wave_instructions(blob.data, blob.code_object, blob.arch, blob.base)
    after = [wave[k + 1].text.split()[0] for wave in _waves(insts)
             for k, i in enumerate(wave) if i.text.startswith("s_cbranch_execz")]
    assert after and set(after) == {"v_mov_b32_e32" if arch == "gfx950" else "ds_load_b128"}


def _trace_taking_branches(code_object: bytes, arch: str) -> tuple[list[tuple], list[int]]:
    """Tokens of one wave running a kernel from its entry to s_endpgm taking every branch; and its pcs."""
    co = codeobj.parse(code_object)
    (kernel,) = co.kernels.values()
    gfx9, pc, t, pcs = arch.startswith("gfx9"), kernel.entry, 100, []
    tokens: list[tuple] = [("LAYOUT_HEADER", {"simd_mask": 1} if gfx9 else {"layout": 3 + arch.startswith("gfx12")}, 0),
                           ("CDNA_WAVESTART" if gfx9 else "WAVESTART", {}, 4)]
    while True:
        inst = isa.decode(bytes(co.text.data), arch, pc - co.text.addr)
        t += 8
        if inst.mnemonic in ("s_delay_alu", "s_wait_alu"):
            pc += inst.size
            continue
        pcs.append(pc)
        branch = inst.mnemonic.startswith("s_cbranch")
        immediate = inst.mnemonic.startswith(("s_clause", "s_waitcnt", "s_wait_", "s_nop"))
        if inst.mnemonic == "s_endpgm":
            tokens += [("CDNA_ISSUE", {"inst0": 2}, t), ("CDNA_INST", {"op": 15}, t + 4)] if gfx9 else []
            tokens.append(("CDNA_WAVEEND" if gfx9 else "WAVEEND", {}, t + 100))
            return tokens, pcs
        if gfx9:
            tokens.append(("CDNA_ISSUE", {"inst0": 3 if immediate else 2}, t))
            if not immediate:  # JUMP (12) for a branch, else any type (1: SALU): types besides JUMP/NEXT go unchecked
                tokens.append(("CDNA_INST", {"op": 12 if branch else 1}, t + 4))
        elif immediate:
            tokens.append(("IMMEDIATE", {}, t))
        elif inst.family.startswith("VOP"):
            tokens.append(("VALUINST", {}, t))
        else:  # op 3: branch taken; 0: any other (SALU), not checked against the instruction
            tokens.append(("INST", {"op": 3 if branch else 0}, t))
        simm = inst.fields.get("simm16", 0)
        pc += inst.size + (4 * (simm - 0x10000 if simm & 0x8000 else simm) if branch else 0)


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200", "gfx950"])
def test_taken_branch_follows_its_target(captures, arch):
    """A wave without work item 0 (none of the real ones) jumps from s_cbranch_execz to s_endpgm."""
    blob = captures[f"{arch}/gemm_run_0/kern0_se0_0"]
    tokens, pcs = _trace_taking_branches(blob.code_object, arch)
    insts = wave_instructions(encode(tokens, arch), blob.code_object, arch)
    assert [i.pc for i in insts] == pcs
    after = [b.text for a, b in zip(insts, insts[1:], strict=False) if a.text.startswith("s_cbranch_execz")]
    assert after == [{"gfx1200": "s_nop 0"}.get(arch, "s_endpgm")] and insts[-1].text == "s_endpgm"


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200"])
def test_hand_made_trace_maps_onto_the_program(captures, arch):
    """A trace written the way the mock GPU writes one (encode, with absolute times) maps like a real one."""
    blob = captures[f"{arch}/plus_run_0/kern0_se1_1"]
    real = wave_instructions(blob.data, blob.code_object, arch)
    tokens = [("LAYOUT_HEADER", {"layout": {"gfx1100": 3, "gfx1200": 4}[arch]}, 0), ("WAVESTART", {"wave": 1}, 100)]
    times = [200 + 10 * n for n in range(len(real) - 1)] + [1000]
    for inst, t in zip(real[:-1], times, strict=False):
        if inst.text.startswith(("s_clause", "s_waitcnt", "s_wait_", "s_nop")):
            tokens.append(("IMMEDIATE", {"wave": 1}, t))
        elif inst.text.startswith("v_"):
            tokens.append(("VALUINST", {"wave": 1}, t))
        else:
            tokens.append(("INST", {"wave": 1, "op": 9 if inst.text.startswith("s_sendmsg") else 1}, t))
    tokens += [("WAVERDY", {"mask": 2}, 500), ("WAVEEND", {"wave": 1}, 1000)]
    mapped = wave_instructions(encode(tokens, arch), blob.code_object, arch)
    assert [(i.wave, i.pc, i.text) for i in mapped] == [(1, i.pc, i.text) for i in real]
    assert [i.time + i.stall for i in mapped] == times  # issued at the token's time, after any stall
    for prev, i in zip(mapped, mapped[1:], strict=False):  # a wait starts when the instruction before was done
        assert i.stall == 0 or i.time == prev.time + prev.duration
    assert mapped[-1].stall > 0  # s_endpgm waited for the store


def test_trace_that_contradicts_the_program(captures):
    co = captures["gfx1100/plus_run_0/kern0_se1_1"].code_object
    head = ("LAYOUT_HEADER", {"layout": 3})
    jump_on_load = [head, ("WAVESTART", {}), ("IMMEDIATE", {}), ("INST", {"op": 3})]  # op 3: branch taken
    with pytest.raises(SQTTError, match="INST BRANCH_TAKEN token does not fit 's_load_b128"):
        wave_instructions(encode(jump_on_load, "gfx1100"), co, "gfx1100")
    valu_on_clause = [head, ("WAVESTART", {}), ("VALUINST", {})]
    with pytest.raises(SQTTError, match="VALUINST for non-VALU 's_clause 0x1' at pc 0x1600"):
        wave_instructions(encode(valu_on_clause, "gfx1100"), co, "gfx1100")
    early_end = [head, ("WAVESTART", {}), ("IMMEDIATE", {}), ("WAVEEND", {})]
    with pytest.raises(SQTTError, match="ended at 's_load_b128 .* not at an s_endpgm"):
        wave_instructions(encode(early_end, "gfx1100"), co, "gfx1100")
    with pytest.raises(SQTTError, match="no LAYOUT_HEADER, so no traced unit"):
        wave_instructions(encode([("WAVESTART", {})], "gfx1100"), co, "gfx1100")


def test_cut_buffer_maps_a_prefix_of_the_reference(mapped_blob):
    """A real buffer cut at arbitrary bytes (where the hardware might have stopped writing) maps its whole packets:
    the instructions are the reference inst_map's first ones, and a later cut never maps fewer."""
    data, reference = mapped_blob.data, mapped_blob.reference["inst_map"]
    rng = random.Random(mapped_blob.id)
    mapped = 0
    for cut in sorted(rng.sample(range(8, len(data)), 40)):
        insts = wave_instructions(data[:cut], mapped_blob.code_object, mapped_blob.arch, mapped_blob.base)
        assert [[i.wave, i.pc] for i in insts] == reference[:len(insts)], cut
        assert len(insts) >= mapped
        mapped = len(insts)
