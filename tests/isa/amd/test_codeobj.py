"""Code object parsing: kernels, descriptors and metadata agree with the source, each other and llvm-readelf-22;
malformed objects raise CodeObjectError naming the problem, and nothing else."""

from __future__ import annotations

import json
import math
import re
import shutil
import struct
import subprocess
from functools import cache, lru_cache
from pathlib import Path

import elf_damage  # tests/isa, on the path by tests/conftest.py
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from usergpu.autogen.amdhsa import BITFIELDS
from usergpu.isa import elf
from usergpu.isa.amd.codeobj import compile_opencl, kd, parse, target

KERNELS = Path(__file__).resolve().parents[2] / "kernels"
CORPUS = sorted(p.name for p in KERNELS.glob("*.cl"))
ARCHS = ("gfx1100", "gfx1200", "gfx942", "gfx950")
ELF_H = Path("/usr/lib/llvm-22/include/llvm/BinaryFormat/ELF.h")

pytestmark = pytest.mark.skipif(not (shutil.which("clang-22") and shutil.which("ld.lld-22")),
                                reason="needs the Debian packages clang-22 and lld-22")


@cache
def build(name: str, arch: str, version: int = 6, extra: tuple[str, ...] = ()) -> bytes:
    opts = ["-I", str(KERNELS), "-cl-kernel-arg-info", f"-mcode-object-version={version}", *extra]
    return compile_opencl((KERNELS / name).read_text(), arch, opts)


def source_kernels(name: str) -> dict[str, list[str]]:
    """kernel name -> its parameter names, read from the corpus source."""
    out = {}
    for kname, params in re.findall(r"__kernel\s+void\s+(\w+)\s*\(([^)]*)\)", (KERNELS / name).read_text()):
        out[kname] = [re.findall(r"\w+", p)[-1] for p in params.split(",") if p.strip() not in ("", "void")]
    return out


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", CORPUS)
def test_kernels_and_args_match_source(name, arch):
    co = parse(build(name, arch))
    expected = source_kernels(name)
    assert set(co.kernels) == set(expected)
    for kname, k in co.kernels.items():
        explicit = [a for a in k.args if not a.value_kind.startswith("hidden_")]
        assert [a.name for a in explicit] == expected[kname]
        assert all(a.type_name for a in explicit)
        offsets = [a.offset for a in k.args]
        assert offsets == sorted(offsets) and all(a.size > 0 for a in k.args)
        assert all(a.offset + a.size <= k.kernarg_size for a in k.args)
        for a in explicit:
            pointer = a.type_name.endswith("*")
            assert a.value_kind in (("global_buffer", "dynamic_shared_pointer") if pointer else ("by_value",))
            assert (a.address_space is not None) == pointer


def known_field(key: str) -> bool:
    scalars = {"GROUP_SEGMENT_FIXED_SIZE", "PRIVATE_SEGMENT_FIXED_SIZE", "KERNARG_SIZE", "RESERVED0",
               "KERNEL_CODE_ENTRY_BYTE_OFFSET", "RESERVED1", "RESERVED3", "COMPUTE_PGM_RSRC3"}
    return key in scalars or any(key == f"{reg}_{f}" for reg, fs in BITFIELDS.items() for f in fs)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", CORPUS)
def test_descriptor_agrees_with_metadata(name, arch):
    co = parse(build(name, arch))
    gfx9 = arch in ("gfx942", "gfx950")
    text = co.text
    for k in co.kernels.values():
        f, m = k.fields, k.metadata
        assert all(known_field(key) for key in f), [key for key in f if not known_field(key)]
        assert k.wavefront_size == m[".wavefront_size"] == (64 if gfx9 else 32)
        assert f["KERNEL_CODE_PROPERTY_ENABLE_WAVEFRONT_SIZE32"] == (not gfx9)
        assert f["KERNARG_SIZE"] == k.kernarg_size == m[".kernarg_segment_size"]
        assert f["GROUP_SEGMENT_FIXED_SIZE"] == k.group_segment_fixed_size == m[".group_segment_fixed_size"]
        assert f["PRIVATE_SEGMENT_FIXED_SIZE"] == k.private_segment_fixed_size == m[".private_segment_fixed_size"]
        assert f["KERNEL_CODE_PROPERTY_USES_DYNAMIC_STACK"] == k.uses_dynamic_stack == m[".uses_dynamic_stack"]
        assert k.symbol == m[".symbol"] == f"{k.name}.kd"
        # code: the function symbol at the entry, inside .text
        func = next(s for s in co.symbols if s.name == k.name)
        assert (func.type, func.value, func.size) == ("FUNC", k.entry, k.code_size)
        assert k.entry == k.descriptor_addr + f["KERNEL_CODE_ENTRY_BYTE_OFFSET"]
        assert k.code == bytes(text.data[k.entry - text.addr:k.entry - text.addr + k.code_size]) and k.code
        # register counts: the granulated rsrc1 fields encode the metadata's counts (LLVM's encoding granules)
        granule = kd.vgpr_granule(arch, k.wave32)
        assert k.vgpr_alloc == max(1, math.ceil(k.vgpr_count / granule)) * granule
        assert k.sgpr_alloc == (max(1, math.ceil(k.sgpr_count / 8)) * 8 if gfx9 else None)
        if gfx9:
            assert k.accum_offset % 4 == 0 and k.accum_offset + k.agpr_count <= k.vgpr_alloc
        else:
            assert k.accum_offset is None and k.agpr_count == 0
        # user SGPRs: contiguous from s0 in hardware order, within USER_SGPR_COUNT; system SGPRs right after
        order = [name for _, name, _ in kd.USER_SGPRS] + ["kernarg_preload"]
        assert [u[0] for u in k.user_sgprs] == sorted((u[0] for u in k.user_sgprs), key=order.index)
        assert [u[1] for u in k.user_sgprs] == [sum(u[2] for u in k.user_sgprs[:i]) for i in range(len(k.user_sgprs))]
        assert sum(u[2] for u in k.user_sgprs) <= k.user_sgpr_count
        assert not k.args or "kernarg_segment_ptr" in [u[0] for u in k.user_sgprs]
        assert [s[1] for s in k.system_sgprs] == list(range(k.user_sgpr_count, k.user_sgpr_count + len(k.system_sgprs)))
        assert k.packed_workitem_ids and 1 <= k.workitem_id_dims <= 3


def test_corpus_specifics():
    for arch in ARCHS:
        lds, scratch = parse(build("lds.cl", arch)).kernels, parse(build("scratch.cl", arch)).kernels
        assert lds["reduce_sum"].group_segment_fixed_size == 256 * 4
        assert lds["transpose"].group_segment_fixed_size == 16 * 17 * 4
        assert lds["dyn_local"].args[1].value_kind == "dynamic_shared_pointer"
        assert scratch["private_array"].private_segment_fixed_size >= 64 * 4
        assert scratch["private_array"].fields["COMPUTE_PGM_RSRC2_ENABLE_PRIVATE_SEGMENT"] == 1
        assert scratch["calls"].private_segment_fixed_size >= 32 * 4
        # architected flat scratch: no scratch wave offset SGPR although ENABLE_PRIVATE_SEGMENT is set
        assert "private_segment_wavefront_offset" not in [s[0] for s in scratch["private_array"].system_sgprs]
        grid = parse(build("memory.cl", arch)).kernels["grid2d"]
        assert grid.workitem_id_dims == 3 and "workgroup_id_y" in [s[0] for s in grid.system_sgprs]
    gfx90a = parse(build("scratch.cl", "gfx90a")).kernels["private_array"]  # flat scratch set up by the kernel
    assert [s[0] for s in gfx90a.user_sgprs] == ["private_segment_buffer", "kernarg_segment_ptr"]
    assert gfx90a.system_sgprs == [("workgroup_id_x", 6, 1), ("private_segment_wavefront_offset", 7, 1)]
    agprs = parse(build("matrix.cl", "gfx942")).kernels["agprs"]
    assert agprs.agpr_count >= 4 and agprs.accum_offset >= 4


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("version", (4, 5, 6))
def test_code_object_versions(version, arch):
    co = parse(build("memory.cl", arch, version))
    assert co.version == version and co.arch == arch
    assert co.target == co.metadata["amdhsa.target"]
    assert set(co.kernels) == set(source_kernels("memory.cl"))
    assert co.kernels["vadd"].args[0].name == "a"


@pytest.mark.parametrize("arch", ("gfx942", "gfx950"))
def test_kernarg_preload(arch):
    k = parse(build("memory.cl", arch, 6, ("-mllvm", "-amdgpu-kernarg-preload-count=4"))).kernels["saxpy"]
    length = k.fields["KERNARG_PRELOAD_SPEC_LENGTH"]
    assert length >= 7  # alpha, x, y, n: dwords 0..6 of the kernarg segment
    assert k.user_sgprs == [("kernarg_segment_ptr", 0, 2), ("kernarg_preload", 2, length)]
    assert k.user_sgpr_count == 2 + length and k.system_sgprs[0] == ("workgroup_id_x", 2 + length, 1)


@pytest.mark.skipif(not ELF_H.exists(), reason="needs the Debian package llvm-22-dev")
def test_mach_table_matches_llvm_header():
    pairs = re.findall(r"EF_AMDGPU_MACH_AMDGCN_(GFX\w+)\s*=\s*(0x[0-9a-f]+)", ELF_H.read_text())
    assert {int(v, 16): n.lower().replace("_", "-") for n, v in pairs} == target.MACH
    assert (target.MACH[0x41], target.MACH[0x48], target.MACH[0x4C], target.MACH[0x4F]) == (
        "gfx1100", "gfx1200", "gfx942", "gfx950")


# --- llvm-readelf-22 as an independent oracle ---------------------------------------------------------------------

def yaml_subset(text: str):
    """The block YAML llvm-readelf prints the metadata in: maps, lists, flow lists, plain and quoted scalars."""
    toks = []
    for line in text.splitlines():
        if line.strip() in ("", "---", "..."):
            continue
        indent, s = len(line) - len(line.lstrip()), line.strip()
        while s.startswith("- "):
            toks.append((indent, "-"))
            indent += 2 + len(s[2:]) - len(s[2:].lstrip())
            s = s[2:].lstrip()
        toks.append((indent, s))
    pos = 0

    def scalar(v: str):
        if v.startswith("[") and v.endswith("]"):
            return [scalar(x.strip()) for x in v[1:-1].split(",") if x.strip()]
        if v[0] in "'\"":
            return v[1:-1].replace("''", "'")
        return {"true": True, "false": False}.get(v, int(v) if re.fullmatch(r"-?\d+", v) else v)

    def node(indent: int):
        nonlocal pos
        if toks[pos][1] == "-":
            items = []
            while pos < len(toks) and toks[pos] == (indent, "-"):
                pos += 1
                items.append(node(toks[pos][0]))
            return items
        if not re.match(r"[\w.]+:(\s|$)", toks[pos][1]):
            pos += 1
            return scalar(toks[pos - 1][1])
        out = {}
        while pos < len(toks) and toks[pos][0] == indent and toks[pos][1] != "-":
            key, _, val = toks[pos][1].partition(":")
            pos += 1
            out[key] = scalar(val.strip()) if val.strip() else node(toks[pos][0])
        return out

    return node(toks[0][0])


def readelf(data: bytes, tmp_path: Path) -> dict:
    path = tmp_path / "k.hsaco"
    path.write_bytes(data)
    out = subprocess.run(["llvm-readelf-22", "--elf-output-style=JSON", "--symbols", "--notes", str(path)],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)[0]


READELF_TYPES = {"None": "NOTYPE", "Object": "OBJECT", "Function": "FUNC", "Section": "SECTION", "File": "FILE"}


@pytest.mark.skipif(not shutil.which("llvm-readelf-22"), reason="needs the Debian package llvm-22")
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", CORPUS)
def test_agrees_with_readelf(name, arch, tmp_path):
    data = build(name, arch)
    co, ref = parse(data), readelf(data, tmp_path)
    theirs = [(s["Name"]["Name"], s["Value"], s["Size"], READELF_TYPES[s["Type"]["Name"]], s["Binding"]["Name"].upper(),
               s["Section"]["Name"]) for s in (e["Symbol"] for e in ref["Symbols"])]
    ours = [(s.name, s.value, s.size, s.type, s.binding,
             s.section or {elf.SHN_UNDEF: "Undefined", elf.SHN_ABS: "Absolute"}[s.shndx]) for s in co.symbols]
    assert ours == theirs
    notes = [n for sec in ref["NoteSections"] for n in sec["NoteSection"]["Notes"] if "AMDGPU Metadata" in n]
    assert len(notes) == 1 and yaml_subset(notes[0]["AMDGPU Metadata"]) == co.metadata


# --- malformed objects --------------------------------------------------------------------------------------------

def put(data: bytes, offset: int, raw: bytes) -> bytes:
    return data[:offset] + raw + data[offset + len(raw):]


def shdr_field(co, index: int, fmt: str, at: int, value: int) -> bytes:
    """Overwrite one field of section header `index` (at byte `at` of the 64-byte header)."""
    shoff = struct.unpack_from("<Q", co.data, 0x28)[0]
    return put(co.data, shoff + index * 64 + at, struct.pack(fmt, value))


def sym_field(co, name: str, fmt: str, at: int, value: int) -> bytes:
    """Overwrite one field of symbol `name` in .symtab (at byte `at` of the 24-byte entry)."""
    tab = co.section(".symtab")
    index = [s.name for s in co.symbols].index(name)
    return put(co.data, tab.offset + index * 24 + at, struct.pack(fmt, value))


def metadata_desc(co) -> tuple[int, int]:
    """(file offset, size) of the metadata note's msgpack bytes; '.note' holds only that note."""
    note = co.section(".note")
    namesz, descsz = struct.unpack_from("<II", co.data, note.offset)
    return note.offset + 12 + (namesz + 3) // 4 * 4, descsz


def rodata_end(co) -> int:
    return co.section(".rodata").addr + co.section(".rodata").size


def kd_offset(co) -> int:
    rodata = co.section(".rodata")
    return rodata.offset + co.kernels["vadd"].descriptor_addr - rodata.addr


CORRUPTIONS = {
    "empty": (lambda co: b"", "too short for an ELF64 header: 0 bytes"),
    "truncated_10": (lambda co: co.data[:10], "too short for an ELF64 header: 10 bytes"),
    "truncated_63": (lambda co: co.data[:63], "too short"),
    "truncated_64": (lambda co: co.data[:64], "section header table at offset"),
    "truncated_half": (lambda co: co.data[:len(co.data) // 2], "runs past the end of the file"),
    "truncated_last_byte": (lambda co: co.data[:-1], "section header table at offset"),
    "bad_magic": (lambda co: put(co.data, 0, b"\x7fELG"), "bad ELF magic at offset 0: 7f 45 4c 47"),
    "elf32": (lambda co: put(co.data, 4, b"\x01"), "not ELF64 little-endian: EI_CLASS 1"),
    "big_endian": (lambda co: put(co.data, 5, b"\x02"), "EI_DATA 2"),
    "wrong_machine": (lambda co: put(co.data, 18, struct.pack("<H", 62)), "e_machine is 62, not EM_AMDGPU (224)"),
    "not_hsa_osabi": (lambda co: put(co.data, 7, b"\x00"), "EI_OSABI is 0, not ELFOSABI_AMDGPU_HSA"),
    "code_object_v3": (lambda co: put(co.data, 8, b"\x01"), "EI_ABIVERSION 1 is not code object v4, v5 or v6"),
    "relocatable": (lambda co: put(co.data, 16, struct.pack("<H", 1)), "not ET_DYN"),
    "unknown_mach": (lambda co: put(co.data, 48, struct.pack("<I", 0x7E)), "unknown EF_AMDGPU_MACH 0x7e"),
    "shoff_past_end": (lambda co: put(co.data, 0x28, struct.pack("<Q", len(co.data) + 8)),
                       "section header table at offset"),
    "phoff_past_end": (lambda co: put(co.data, 0x20, struct.pack("<Q", len(co.data))),
                       "program header table at offset"),
    "shstrndx_out_of_range": (lambda co: put(co.data, 0x3E, struct.pack("<H", 200)), "e_shstrndx 200 is not a section"),
    "section_name_out_of_bounds": (lambda co: shdr_field(co, co.section(".text").index, "<I", 0, 0xFFFFFF),
                                   "string table '13' offset 0xffffff is out of bounds"),
    "section_data_past_end": (lambda co: shdr_field(co, co.section(".text").index, "<Q", 24, len(co.data)),
                              "data at offset"),
    "symbol_name_out_of_bounds": (lambda co: sym_field(co, "vadd", "<I", 0, 0xFFFFFF),
                                  "string table '.strtab' offset 0xffffff is out of bounds"),
    "symtab_entry_size": (lambda co: shdr_field(co, co.section(".symtab").index, "<Q", 56, 23),
                          "symbol table '.symtab': entry size 23"),
    "metadata_bad_msgpack": (lambda co: put(co.data, metadata_desc(co)[0], b"\xc1" * 8),
                             "metadata note in section '.note' at offset 0x200: bad msgpack"),
    "metadata_truncated_msgpack": (lambda co: put(co.data, metadata_desc(co)[0], b"\xdf\xff\xff\xff\xff"),
                                   "bad msgpack"),
    "metadata_no_kernels": (lambda co: co.data.replace(b"amdhsa.kernels", b"amdhsa.kernelz"),
                            "no 'amdhsa.kernels' list"),
    "metadata_not_a_map": (lambda co: put(put(co.data, metadata_desc(co)[0], b"\x93\x01\x02\x03"),
                                          co.section(".note").offset + 4, struct.pack("<I", 4)),
                           "msgpack is a list, not a map"),
    "metadata_kernel_without_symbol": (lambda co: co.data.replace(b"\xa7.symbol", b"\xa7.symbox"),
                                       "is not a map with string .name and .symbol"),
    "note_past_section": (lambda co: put(co.data, co.section(".note").offset + 4, struct.pack("<I", 0xFFFF)),
                          "runs past the section end"),
    "no_metadata_note": (lambda co: put(co.data, co.section(".note").offset + 8, struct.pack("<I", 33)),
                         "no NT_AMDGPU_METADATA note"),
    "kd_symbol_missing": (lambda co: co.data.replace(b"vadd.kd\0", b"vadd.kx\0"),
                          "kernel 'vadd': descriptor symbol 'vadd.kd' is not in the symbol table"),
    "kd_symbol_past_end": (lambda co: sym_field(co, "vadd.kd", "<Q", 8, 0x10_0000_0000),
                           "kernel 'vadd': descriptor 'vadd.kd' at address 0x1000000000 (64 bytes) lies outside"),
    "kd_symbol_straddles_section_end": (lambda co: sym_field(co, "vadd.kd", "<Q", 8, rodata_end(co) - 8),
                                        "lies outside every section"),
    "kd_entry_offset_out_of_bounds": (lambda co: put(co.data, kd_offset(co) + 16, struct.pack("<q", 1 << 40)),
                                      "kernel 'vadd': no function symbol at its code entry"),
    "code_symbol_size_past_text": (lambda co: sym_field(co, "vadd", "<Q", 16, 1 << 32),
                                   "kernel 'vadd': code at"),
}


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("case", sorted(CORRUPTIONS))
def test_corrupted(case, arch):
    corrupt, message = CORRUPTIONS[case]
    co = parse(build("memory.cl", arch))
    bad = corrupt(co)
    assert bad != co.data
    elf_damage.refused_by_its_check(parse, bad, message, "malformed code object")


@lru_cache(maxsize=1)
def sample() -> bytes:
    return build("memory.cl", "gfx1100")


@st.composite
def damaged(draw) -> bytes:
    return elf_damage.damage(draw, sample(), [(0x200, 0x780)])  # and the note


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged())
def test_random_damage_raises_only_code_object_error(data):
    elf_damage.parses_or_refuses(parse, data)
