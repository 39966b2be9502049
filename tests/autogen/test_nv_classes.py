"""nv_classes: every method offset, field and QMD range against NVIDIA's own nvmisc.h macros compiled by gcc
(DRF_BASE/DRF_EXTENT for a dword's `hi:lo`, DRF_WORD_MW/DRF_BASE_MW/DRF_EXTENT_MW for MW(hi:lo)), the encoders
against DRF_NUM/DRF_NUM_MW, the hand-written facts for consistency, and constant bank 0 against ptxas."""

from __future__ import annotations

import random
import re
import struct
import subprocess
from pathlib import Path

import pytest

from usergpu.autogen import nv_classes as nv
from usergpu.autogen._nvclass import Field, Layout, Method
from usergpu.autogen.generator import nv_facts, nvclasses, toolchain
from usergpu.errors import FieldError, ToolchainError
from usergpu.isa.nv.compile import nvidia_tool


def _probe(lines: list[str]) -> list[int]:
    """Run printf lines against nvmisc.h and the classes' translation unit; every line prints one integer."""
    try:
        unit, flags = nvclasses.translation_unit(), nvclasses.include_flags()
    except ToolchainError as e:  # only where make nvidia-sources has not run
        pytest.skip(str(e))
    src = "\n".join(["#include <stdio.h>", '#include "nvtypes.h"', '#include "nvmisc.h"', f'#include "{unit}"',
                     "int main(void) {", *lines, "return 0; }"]) + "\n"
    run = toolchain.compile_and_run(src, flags=[*flags, *toolchain.c_flags()])
    assert run.returncode == 0, run.stderr[-3000:]
    return [int(v) for v in run.stdout.split()]


def _print(expr: str) -> str:
    return f'printf("%lld\\n", (long long)({expr}));'


def _elements(name: str, stride: int) -> list[tuple[str, int | None]]:
    """The C spellings of a range: itself, or elements 0 and 3 of an indexed one."""
    return [(f"{name}({i})", i) for i in (0, 3)] if stride else [(name, None)]


def test_methods_and_fields_are_nvmisc_drf():
    lines, want = [], []
    for name, m in nv.METHODS.items():
        for spelled, i in _elements(name, m.stride):
            lines.append(_print(spelled))
            want.append((spelled, m.address(i)))
        for fname, f in m.fields.items():
            lines += [_print(f"DRF_BASE({name}_{fname})"), _print(f"DRF_EXTENT({name}_{fname})")]
            want += [(f"{name}_{fname} lo", f.lo), (f"{name}_{fname} hi", f.hi)]
    for name, f in nv.FIELDS.items():
        lines += [_print(f"DRF_BASE({name})"), _print(f"DRF_EXTENT({name})")]
        want += [(f"{name} lo", f.lo), (f"{name} hi", f.hi)]
    got = _probe(lines)
    wrong = [(what, w, g) for (what, w), g in zip(want, got, strict=True) if w != g]
    assert not wrong, f"{len(wrong)} mismatches, first: {wrong[:5]}"
    assert len(nv.METHODS) > 400 and nv.METHODS["NVC6C0_LAUNCH_DMA"].fields


def test_ampere_qmd_ranges_are_nvmisc_drf_mw():
    """MW(hi:lo): lo = 32 * DRF_WORD_MW + DRF_BASE_MW, hi = 32 * DRF_WORD_MW_HIGH + DRF_EXTENT_MW."""
    lines, want = [], []
    for prefix in nvclasses.QMD_HEADERS.values():
        for fname, f in nv.QMD[prefix].fields.items():
            for spelled, i in _elements(f"{prefix}_{fname}", f.stride):
                hi, lo = f.at(i)
                lines += [_print(f"32 * DRF_WORD_MW({spelled}) + DRF_BASE_MW({spelled})"),
                          _print(f"32 * DRF_WORD_MW_HIGH({spelled}) + DRF_EXTENT_MW({spelled})")]
                want += [(f"{spelled} lo", lo), (f"{spelled} hi", hi)]
    got = _probe(lines)
    wrong = [(what, w, g) for (what, w), g in zip(want, got, strict=True) if w != g]
    assert not wrong, f"{len(wrong)} mismatches, first: {wrong[:5]}"


def test_method_encode_is_drf_num():
    """Method.encode of random values equals DRF_NUM(class, method, field, value) compiled by gcc."""
    rng = random.Random(19)
    lines, want = [], []
    for name, m in nv.METHODS.items():
        cls, method = name[2:6], name[6:]
        for fname, f in m.fields.items():
            if f.stride:
                continue
            v = rng.getrandbits(f.width)
            lines.append(_print(f"DRF_NUM({cls}, {method}, _{fname}, {v}U)"))
            want.append((f"{name}_{fname}={v:#x}", m.encode(**{fname: v})))
    got = _probe(lines)
    wrong = [(what, w, g) for (what, w), g in zip(want, got, strict=True) if w != g]
    assert not wrong, f"{len(wrong)} mismatches, first: {wrong[:5]}"


def test_qmd_encode_is_drf_num_mw():
    """Layout.encode of one random field: the dword DRF_WORD_MW names holds DRF_NUM_MW(class, QMD, field, value),
    the others are zero (the single-dword fields; DRF_NUM_MW does not split a value across dwords)."""
    rng = random.Random(19)
    for prefix in nvclasses.QMD_HEADERS.values():
        layout, cls, qmd = nv.QMD[prefix], prefix[2:6], prefix[6:]
        cases = [(n, f, rng.getrandbits(f.width)) for n, f in layout.fields.items()
                 if not f.stride and f.lo // 32 == f.hi // 32]
        lines = [line for n, _, v in cases for line in (_print(f"DRF_WORD_MW({prefix}_{n})"),
                                                        _print(f"DRF_NUM_MW({cls}, {qmd}, _{n}, {v}U)"))]
        got = _probe(lines)
        for k, (n, _, v) in enumerate(cases):
            words = struct.unpack(f"<{layout.size // 4}I", layout.encode(**{n: v}))
            word, value = got[2 * k], got[2 * k + 1] & 0xFFFFFFFF
            assert words[word] == value and sum(words) == value, n


@pytest.mark.parametrize("prefix", nv_facts.QMD)
def test_facts_qmd_fields_fit_and_do_not_overlap(prefix):
    """The hand-written layouts: each field's bits within the QMD, no two fields (element 0 of an indexed one and
    the elements before the next field) sharing a bit."""
    size, fields = nv_facts.QMD[prefix]
    layout = nv.QMD[prefix]
    assert layout.size == size and {k: tuple(f)[: 2 + bool(f.stride)] for k, f in layout.fields.items()} == fields
    owner: dict[int, str] = {}
    for name, f in layout.fields.items():
        assert f.hi < size * 8 and f.lo <= f.hi, name
        for bit in range(f.lo, f.hi + 1):
            assert bit not in owner, f"{name} and {owner.get(bit)} share bit {bit}"
            owner[bit] = name


def test_blackwell_and_cbank0_facts_are_the_tables():
    assert nv.BLACKWELL_CLASSES == nv_facts.CLASSES
    assert nv.CBANK0 == nv_facts.CBANK0
    assert nv.AMPERE_COMPUTE_A == 0xC6C0 and nv.HOPPER_COMPUTE_A == 0xCBC0  # the SDK's, beside the facts'


def test_field_layout_and_method_records():
    f = Field(20, 16)
    assert f.width == 5 and f.encode(0x1F) == 0x1F0000 and f.decode(0xFFFF_FFFF) == 0x1F
    with pytest.raises(FieldError, match="does not fit"):
        f.encode(0x20)
    with pytest.raises(FieldError, match="not an indexed field"):
        f.at(1)
    indexed = Field(1055, 1024, 64)
    assert indexed.at(2) == (1183, 1152)
    with pytest.raises(FieldError, match="takes an element index"):
        indexed.at()
    layout = Layout(16, {"A": Field(3, 0), "B": Field(63, 32), "C": Field(64, 64, 1)})
    data = layout.encode(A=5, B=0xDEADBEEF, C=[1, 0, 1])
    assert data == bytes([5, 0, 0, 0, 0xEF, 0xBE, 0xAD, 0xDE, 0b101, 0, 0, 0, 0, 0, 0, 0])
    assert layout.decode(data) == {"A": 5, "B": 0xDEADBEEF} and layout.get(data, "C", 2) == 1
    with pytest.raises(FieldError, match="no field D"):
        layout.encode(D=1)
    with pytest.raises(FieldError, match="past bit 127"):
        layout.encode(C=[0] * 65)
    with pytest.raises(FieldError, match="3 bytes"):
        layout.get(b"abc", "A")
    m = Method(0x320, 4, {"V": Field(31, 0)})
    assert m.address(3) == 0x32C and m.encode(V=7) == 7 and m.decode(9) == {"V": 9}


# a kernel that reads %ntid.xyz, %nctaid.xyz and two parameters (the PTX ISA of ptxas 13.5 for each arch)
CBANK_PTX = """.version {version}
.target {arch}
.address_size 64
.visible .entry k(.param .u64 p, .param .u32 v)
{{
  .reg .b32 r<16>; .reg .b64 rd<4>;
  ld.param.u64 rd1, [p]; ld.param.u32 r15, [v];
  mov.u32 r1, %ntid.x; mov.u32 r2, %ntid.y; mov.u32 r3, %ntid.z;
  mov.u32 r4, %nctaid.x; mov.u32 r5, %nctaid.y; mov.u32 r6, %nctaid.z;
  add.u32 r7, r1, r2; add.u32 r7, r7, r3; add.u32 r7, r7, r4; add.u32 r7, r7, r5; add.u32 r7, r7, r6;
  add.u32 r7, r7, r15; cvta.to.global.u64 rd2, rd1; st.global.u32 [rd2], r7; ret;
}}
"""
EIATTR_PARAM_CBANK = 0x0A


def _tool(name: str) -> Path:
    try:
        return nvidia_tool(f"bin/{name}")
    except ToolchainError as e:  # only without the nv extra
        pytest.skip(str(e))


def _section(elf: bytes, wanted: str) -> bytes:
    """A section's bytes from an ELF64 little-endian file (cubins are)."""
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    strtab = headers[shstrndx]
    for h in headers:
        name = elf[strtab[4] + h[0]:].split(b"\0", 1)[0].decode()
        if name == wanted:
            return elf[h[4]:h[4] + h[5]]
    raise AssertionError(f"no section {wanted}")


def _param_cbank(info: bytes) -> int:
    """The parameters' offset in constant bank 0: .nv.info's PARAM_CBANK (format 4: u16 size, then symbol index
    and offset | size << 16)."""
    at = 0
    while at < len(info):
        fmt, attr = info[at], info[at + 1]
        size = struct.unpack_from("<H", info, at + 2)[0] if fmt == 4 else 0
        if attr == EIATTR_PARAM_CBANK:
            return struct.unpack_from("<II", info, at + 4)[1] & 0xFFFF
        at += 4 + size
    raise AssertionError("no PARAM_CBANK attribute")


@pytest.mark.parametrize("arch", nv_facts.CBANK0)
def test_cbank0_offsets_are_what_ptxas_emits(arch, tmp_path):
    ptxas, nvdisasm = _tool("ptxas"), _tool("nvdisasm")
    ptx = tmp_path / "k.ptx"
    ptx.write_text(CBANK_PTX.format(version="8.8", arch=arch))
    cubin = tmp_path / "k.cubin"
    subprocess.run([str(ptxas), f"-arch={arch}", str(ptx), "-o", str(cubin)], check=True, capture_output=True)
    facts = nv_facts.CBANK0[arch]
    assert _param_cbank(_section(cubin.read_bytes(), ".nv.info.k")) == facts["params"]
    sass = subprocess.run([str(nvdisasm), str(cubin)], check=True, capture_output=True, text=True).stdout
    read = {int(o, 16) for o in re.findall(r"c\[0x0\]\[(0x[0-9a-f]+)\]", sass)}
    for what in ("ntid", "nctaid"):
        assert {facts[what] + 4 * k for k in range(3)} <= read, (what, sorted(map(hex, read)))
