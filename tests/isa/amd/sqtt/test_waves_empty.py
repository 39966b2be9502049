"""wave_instructions() on real captures of an empty kernel (tests/data/sqtt_empty): a wave whose only instruction
is s_endpgm writes WAVESTART and WAVEEND and no instruction token, and still executed that s_endpgm. Whether a
tokenless wave was instruction-traced is not in the stream, so the caller says (itrace)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from usergpu.isa import amd as isa
from usergpu.isa.amd import codeobj
from usergpu.isa.amd.sqtt import SQTTError, decode, wave_instructions

DATA = Path(__file__).resolve().parents[3] / "data"
EMPTY = DATA / "sqtt_empty"
ARCHS = ["gfx1100", "gfx1200"]


def _capture(folder: Path) -> tuple[dict, bytes]:
    meta = json.loads((folder / "capture.json").read_text())
    return meta, (folder / meta["programs"][0]["file"]).read_bytes()


@pytest.mark.parametrize("arch", ARCHS)
def test_the_kernel_is_one_s_endpgm(arch):
    _, elf = _capture(EMPTY / arch / "empty_run_0")
    co = codeobj.parse(elf)
    (kernel,) = co.kernels.values()
    assert isa.decode(bytes(co.text.data), arch, kernel.entry - co.text.addr).mnemonic == "s_endpgm"


@pytest.mark.parametrize("arch", ARCHS)
def test_the_traced_wave_maps_its_s_endpgm(arch):
    meta, elf = _capture(folder := EMPTY / arch / "empty_run_0")
    base, entry = meta["programs"][0]["base"], next(iter(codeobj.parse(elf).kernels.values())).entry
    got = {}
    for t in meta["traces"]:
        blob = (folder / t["file"]).read_bytes()
        got[t["se"]] = wave_instructions(blob, elf, arch, base, itrace=t["itrace"])
    assert [[i.wave, i.pc, i.text] for i in got[1]] == [[0, entry, "s_endpgm"]]  # SE 1 ran the one workgroup
    assert all(insts == [] for se, insts in got.items() if se != 1)
    (end,) = [p for p in decode((folder / meta["traces"][1]["file"]).read_bytes(), arch) if p.kind == "WAVEEND"]
    assert (got[1][0].time, got[1][0].duration, got[1][0].stall) == (end.time, 1, 0)  # WAVEEND stands for it


@pytest.mark.parametrize("arch", ARCHS)
def test_an_untraced_wave_with_no_tokens_is_no_empty_one(arch):
    """gemm's SE 2 traced waves but not their instructions: told itrace, nothing maps; told otherwise, its waves
    end far from an s_endpgm, which says instructions are missing rather than inventing a one-instruction run."""
    folder = DATA / "sqtt" / arch / "gemm_run_0"
    meta, elf = _capture(folder)
    trace = next(t for t in meta["traces"] if t["se"] == 2)
    assert trace["itrace"] is False
    blob, base = (folder / trace["file"]).read_bytes(), meta["programs"][0]["base"]
    assert wave_instructions(blob, elf, arch, base, itrace=False) == []
    with pytest.raises(SQTTError, match="not at an s_endpgm: the trace lost some of its instructions"):
        wave_instructions(blob, elf, arch, base)
