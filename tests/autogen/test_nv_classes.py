"""nv_classes: every method offset, field and QMD range against NVIDIA's own nvmisc.h macros compiled by gcc
(DRF_BASE/DRF_EXTENT for a dword's `hi:lo`, DRF_WORD_MW/DRF_BASE_MW/DRF_EXTENT_MW for MW(hi:lo)), the encoders
against DRF_NUM/DRF_NUM_MW, the QMD layouts and widened copy fields against the header text itself (read by a
regex, not the compiler), and constant bank 0 against ptxas."""

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


def test_qmd_ranges_are_nvmisc_drf_mw():
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


# a QMD field as open-gpu-doc writes it: `#define PREFIX_NAME MW(hi:lo)` or, indexed, `PREFIX_NAME(i)
# MW((hi+(i)*stride):(lo+(i)*stride))`
MW = re.compile(r"^#define (NV[0-9A-F]{4}_QMDV\d\d_\d\d)_(\w+?)(\(i\))?\s+MW\((?:(\d+):(\d+)|"
                r"\((\d+)\+\(i\)\*(\d+)\):\((\d+)\+\(i\)\*(\d+)\))\)", re.M)


def _header_qmd(header: str, prefix: str) -> dict[str, Field]:
    """The fields of version `prefix` as the header's text spells them."""
    path = toolchain.doc_file(f"classes/compute/{header}.h")[0]
    fields = {}
    for m in MW.finditer(path.read_text()):
        if m.group(1) == prefix:
            hi, lo, ihi, istride, ilo, lstride = m.group(4, 5, 6, 7, 8, 9)
            assert istride == lstride, m.group(0)
            fields[m.group(2)] = Field(int(hi), int(lo)) if m.group(3) is None else Field(int(ihi), int(ilo),
                                                                                           int(istride))
    return fields


@pytest.mark.parametrize(("header", "prefix"), nvclasses.QMD_HEADERS.items())
def test_qmd_layouts_are_the_header_text(header, prefix):
    """Each QMD layout has exactly the fields its header's text defines for that version, at those bits, and is
    sized by its last one: 256 bytes for V03_00, 384 for V04_00 and V05_00."""
    try:
        want = _header_qmd(header, prefix)
    except ToolchainError as e:  # only where make nvidia-sources has not run
        pytest.skip(str(e))
    layout = nv.QMD[prefix]
    assert layout.fields == want
    assert layout.size == (256 if prefix.endswith("V03_00") else 384)
    assert max(f.hi for f in layout.fields.values()) == layout.size * 8 - 1


def test_hopper_qmd_is_complete():
    """V04_00 in full: a launch's fields where clcbc0qmd.h puts them (its text's MW(hi:lo)), the release semaphores,
    the shared memory configuration and the cache invalidations beside them."""
    try:
        want = _header_qmd("clcbc0qmd", "NVCBC0_QMDV04_00")
    except ToolchainError as e:
        pytest.skip(str(e))
    layout = nv.QMD["NVCBC0_QMDV04_00"]
    assert layout.size == 384 and len(layout.fields) == len(want) > 100
    for name in ("GRID_WIDTH", "GRID_HEIGHT", "GRID_DEPTH", "QMD_TYPE", "SASS_VERSION", "QMD_GROUP_ID",
                 "TARGET_SM_CONFIG_SHARED_MEM_SIZE", "INVALIDATE_SHADER_CONSTANT_CACHE", "RELEASE_ENABLE",
                 "RELEASE_SEMAPHORE2_ADDR_LOWER", "DEPENDENT_QMD0_POINTER", "CONSTANT_BUFFER_ADDR_LOWER_SHIFTED6"):
        assert layout.fields[name] == want[name], name
    assert layout.fields["GRID_WIDTH"] == Field(1055, 1024) and layout.fields["RELEASE_ENABLE"] == Field(320, 320, 16)


def test_copy_offsets_have_the_header_width():
    """From Hopper's copy class on, OFFSET_IN/OUT_UPPER hold what the header's text says (25 bits), not Ampere's 17."""
    for cls in ("c8b5", "c9b5", "cab5"):
        try:
            text = toolchain.doc_file(f"classes/dma-copy/cl{cls}.h")[0].read_text()
        except ToolchainError as e:
            pytest.skip(str(e))
        for method in ("OFFSET_IN_UPPER", "OFFSET_OUT_UPPER"):
            name = f"NV{cls.upper()}_{method}"
            hi, lo = map(int, re.search(rf"^#define {name}_UPPER\s+(\d+):(\d+)", text, re.M).groups())
            assert nv.METHODS[name].fields["UPPER"] == Field(hi, lo) and hi - lo + 1 == 25, name
    assert nv.METHODS["NVC7B5_OFFSET_IN_UPPER"].fields["UPPER"].width == 17


def test_blackwell_ids_and_cbank0():
    """The Blackwell class ids come from their headers (the ids nouveau's nvif/class.h gives too)."""
    assert nv.BLACKWELL_CLASSES == {
        "BLACKWELL_CHANNEL_GPFIFO_A": 0xC96F, "BLACKWELL_CHANNEL_GPFIFO_B": 0xCA6F, "BLACKWELL_COMPUTE_A": 0xCDC0,
        "BLACKWELL_COMPUTE_B": 0xCEC0, "BLACKWELL_DMA_COPY_A": 0xC9B5, "BLACKWELL_DMA_COPY_B": 0xCAB5,
        "BLACKWELL_USERMODE_A": 0xC761}
    assert nv.CBANK0 == nv_facts.CBANK0
    assert nv.AMPERE_COMPUTE_A == 0xC6C0 and nv.HOPPER_COMPUTE_A == 0xCBC0


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
