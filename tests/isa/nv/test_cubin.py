"""Cubin parsing: kernels, attributes, constant banks, shared sizes and relocations of cubins ptxas makes agree with
what nvdisasm, `ptxas -v`, llvm-readelf-22 and the PTX say; the older ELF layouts are read from cubins of ptxas 12.4
and 12.9 (tests/data/nv); malformed cubins raise CodeObjectError naming the problem, and nothing else."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import tempfile
from functools import cache
from pathlib import Path

import elf_damage  # tests/isa, on the path by tests/conftest.py
import nv_corpus  # tests/kernels, on the path by tests/conftest.py
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from usergpu.errors import CodeObjectError
from usergpu.isa.nv import assemble_ptx, compile_cuda
from usergpu.isa.nv.cubin import parse
from usergpu.isa.nv.nvinfo import EIATTR

DATA = Path(__file__).resolve().parents[2] / "data" / "nv"
ARCHS = ("sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_120")
# where ptxas 13.5 puts the parameters in constant bank 0 (NV.md)
PARAM_BASE = {"sm_80": 0x160, "sm_86": 0x160, "sm_89": 0x160, "sm_90": 0x210, "sm_90a": 0x210, "sm_100": 0x380,
              "sm_120": 0x380}


PTXAS, NVDISASM = nv_corpus.tool("bin/ptxas"), nv_corpus.tool("bin/nvdisasm")
pytestmark = pytest.mark.skipif(not nv_corpus.has_toolchain(),
                                reason="needs clang-22 (Debian) and ptxas (PyPI nvidia-cuda-nvcc, the nv extra)")
needs_nvdisasm = pytest.mark.skipif(NVDISASM is None, reason="needs nvdisasm (PyPI nvidia-cuda-nvdisasm)")

SRC = r"""
struct Pair { char c; double d; };
__constant__ float coeffs[4] = {1.5f, 2.5f, 3.5f, 4.5f};
__device__ int counter;
__device__ __noinline__ float pick(float x, int k) {
  float loc[16];
  for (int i = 0; i < 16; i++) loc[i] = x * i;
  return loc[k & 15];
}
extern "C" __global__ void params(char c, short s, int i, long long q, float f, double d, float* p, Pair pr,
                                  unsigned char u, short t) {
  p[threadIdx.x] = c + s + i + q + f + d + pr.c + pr.d + u + t;
}
extern "C" __global__ void __attribute__((launch_bounds(128))) tiled(float* out, const float* in) {
  __shared__ float tile[256];
  tile[threadIdx.x] = in[blockIdx.x * blockDim.x + threadIdx.x];
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = tile[threadIdx.x ^ 1];
}
extern "C" __global__ void dynamic(int* out) {
  extern __shared__ int buf[];
  buf[threadIdx.x] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = buf[blockDim.x - 1 - threadIdx.x];
}
extern "C" __global__ void caller(float* out, int k) {
  out[threadIdx.x] = pick(out[threadIdx.x], k + threadIdx.x) * coeffs[k & 3];
  __nvvm_atom_add_gen_i(&counter, 1);
}
"""
KERNELS = {"params", "tiled", "dynamic", "caller"}
REQNTID = (64, 2, 1)  # written into dynamic's PTX: clang has no attribute for .reqntid


@cache
def ptx(arch: str) -> str:
    text = compile_cuda(SRC, arch).decode()
    return re.sub(r"(\.entry dynamic\([^)]*\))", r"\1\n.reqntid " + ", ".join(map(str, REQNTID)), text)


@cache
def cubin(arch: str, relocatable: bool = False) -> bytes:
    return assemble_ptx(ptx(arch), arch, ["-c"] if relocatable else None)


def _run(argv: list, data: str | bytes | None = None, suffix: str = ".cubin") -> str:
    with tempfile.NamedTemporaryFile(suffix=suffix) as f:
        f.write(data.encode() if isinstance(data, str) else data)
        f.flush()
        res = subprocess.run([*map(str, argv), f.name], capture_output=True, text=True, timeout=300, check=True)
    return res.stdout + res.stderr


@cache
def ptxas_v(arch: str) -> dict[str, dict[str, int]]:
    """What `ptxas -v` says about each entry: registers, stack frame, smem."""
    return ptxas_report(_run([PTXAS, f"-arch={arch}", "-v", "-o", "/dev/null"], ptx(arch), ".ptx"))


def ptxas_report(text: str) -> dict[str, dict[str, int]]:
    out = {}
    for name, body in re.findall(r"Compiling entry function '(\w+)'.*?\n(.*?)(?=Compiling entry|\Z)", text, re.S):
        facts = {"registers": int(re.search(r"Used (\d+) registers", body).group(1)),
                 "stack": int(re.search(r"(\d+) bytes stack frame", body).group(1))}
        smem = re.search(r"(\d+) bytes smem", body)
        facts["smem"] = int(smem.group(1)) if smem else 0
        out[name] = facts
    return out


@cache
def nvdisasm(data: bytes) -> str:
    return _run([NVDISASM], data)


def listing_sections(text: str) -> dict[str, str]:
    """nvdisasm's listing cut at its `//----- .section ---` banners: section name -> its lines."""
    parts = re.split(r"^//-+ (\S+)\s+-+$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def listing_records(chunk: str) -> list[tuple[str, int, int, int]]:
    """The attribute records nvdisasm lists in one .nv.info section: (name, offset, format, code)."""
    return [(name, int(off, 16), int(fmt, 16), int(code, 16)) for name, off, fmt, code in re.findall(
        r"nvinfo : (\w+).*?/\*([0-9a-f]+)\*/\s+\.byte\s+0x([0-9a-f]+),\s*0x([0-9a-f]+)", chunk, re.S)]


def zeros(chunk: str) -> int:
    """The size nvdisasm gives a section it lists as zeros (no `.zero` line: empty)."""
    m = re.search(r"\.zero\s+(\d+)", chunk)
    return int(m.group(1)) if m else 0


def ptx_params(text: str, kernel: str) -> list[tuple[int, int]]:
    """(offset, size) of each .param of an .entry, laid out at natural alignment (PTX ISA: kernel parameters)."""
    decl = re.search(rf"\.entry {kernel}\((.*?)\)", text, re.S).group(1)
    out, end = [], 0
    for p in re.findall(r"\.param\s+([^,]+?)\s*(?:,|$)", decl.strip() + ","):
        if m := re.search(r"\.align (\d+) \.b8 \w+\[(\d+)\]", p):
            align, size = int(m.group(1)), int(m.group(2))
        else:
            align = size = int(re.search(r"\.[usbf](\d+)\b", p).group(1)) // 8
        offset = -(-end // align) * align
        out.append((offset, size))
        end = offset + size
    return out


@pytest.mark.parametrize("arch", ARCHS)
def test_kernels_and_arch(arch):
    co = parse(cubin(arch))
    assert co.arch == arch and co.sm == int(arch[3:6].rstrip("a"))
    assert co.abi_version == 8 and co.data[7] == 0x41  # ptxas 13 writes ABI 8 for every arch
    assert set(co.kernels) == KERNELS == set(re.findall(r"\.entry (\w+)\(", ptx(arch)))
    assert co.ptx == ptx(arch)
    for k in co.kernels.values():
        assert k.code == bytes(co.section(f".text.{k.name}").data) and k.symbol.size <= len(k.code)


@needs_nvdisasm
@pytest.mark.parametrize("arch", ARCHS)
def test_agrees_with_nvdisasm(arch):
    co = parse(cubin(arch))
    text = nvdisasm(cubin(arch))
    assert re.search(r"^\s*\.target\s+(\w+)", text, re.M).group(1) == co.arch
    assert set(re.findall(r"\.other\s+(\w+),@\"STO_CUDA_ENTRY", text)) == set(co.kernels)
    chunks = listing_sections(text)
    for name in [".nv.info", *(f".nv.info.{k}" for k in co.kernels)]:
        ours = [a for a in co.info] if name == ".nv.info" else [a for a in co.kernels[name[9:]].attributes
                                                                 if a.section == name]
        theirs = listing_records(chunks[name])
        assert [(a.offset, a.format, a.code) for a in ours] == [r[1:] for r in theirs], name
        assert all(n == "EIATTR_UNKNOWN" or n == a.name for a, (n, *_) in zip(ours, theirs, strict=True)), name
    for k in co.kernels.values():
        assert k.shared_size == zeros(chunks.get(f".nv.shared.{k.name}", ""))
        assert len(k.constant0) == zeros(chunks[f".nv.constant0.{k.name}"])


@needs_nvdisasm
@pytest.mark.parametrize("arch", ARCHS)
def test_parameter_bank(arch):
    """PARAM_CBANK as nvdisasm lists it, where NV.md says, and covering every c[0x0][..] the SASS reads there."""
    co = parse(cubin(arch))
    chunks = listing_sections(nvdisasm(cubin(arch)))
    for k in co.kernels.values():
        bank = k.param_cbank
        listed = re.search(r"EIATTR_PARAM_CBANK.*?index@\((\S+)\)\s+/\*\w+\*/\s+\.short\s+(0x\w+)\s+/\*\w+\*/\s+"
                           r"\.short\s+(0x\w+)", chunks[f".nv.info.{k.name}"], re.S)
        assert (bank.section, bank.offset, bank.size) == (listed.group(1), int(listed.group(2), 16),
                                                          int(listed.group(3), 16))
        assert bank.section == f".nv.constant0.{k.name}" and bank.offset == PARAM_BASE[arch]
        assert bank.size == k.cbank_param_size and len(k.constant0) == bank.offset + bank.size
        reads = {int(x, 16) for x in re.findall(r"c\[0x0\]\[(0x[0-9a-f]+)\]", chunks[f".text.{k.name}"])}
        used = {r for r in reads if r >= bank.offset}
        assert used and all(r < bank.offset + bank.size for r in used), (k.name, sorted(map(hex, used)))


@pytest.mark.parametrize("arch", ARCHS)
def test_params_follow_the_ptx(arch):
    co = parse(cubin(arch))
    for k in co.kernels.values():
        assert [(p.ordinal, p.offset, p.size) for p in k.params] == [
            (i, off, size) for i, (off, size) in enumerate(ptx_params(ptx(arch), k.name))]
        assert all(p.in_cbank for p in k.params)
        last = k.params[-1]
        assert k.param_cbank.size == last.offset + last.size
    sizes = [p.size for p in co.kernels["params"].params]
    assert sizes == [1, 2, 4, 8, 4, 8, 8, 16, 1, 2]  # char short int long long float double float* Pair uchar short


@pytest.mark.parametrize("arch", ARCHS)
def test_registers_stack_and_shared_match_ptxas(arch):
    co, report = parse(cubin(arch)), ptxas_v(arch)
    assert set(report) == set(co.kernels)
    for name, facts in report.items():
        k = co.kernels[name]
        assert (k.regcount, k.frame_size) == (facts["registers"], facts["stack"]), name
        # every kernel's shared window starts with what the arch reserves: 1 KiB from sm_90 (the SASS puts the
        # kernel's own at 0x400), none before; `dynamic` declares only extern shared, so its size is that reserve
        assert k.shared_size == facts["smem"] + co.kernels["dynamic"].shared_size, name
    assert report["tiled"]["smem"] == 256 * 4  # __shared__ float tile[256]
    assert co.kernels["dynamic"].shared_size == (0x400 if co.sm >= 90 else 0)
    assert co.kernels["caller"].frame_size == 16 * 4 == co.kernels["caller"].min_stack_size  # float loc[16]


@pytest.mark.parametrize("arch", ARCHS)
def test_launch_bounds_and_exits(arch):
    co = parse(cubin(arch))
    assert co.kernels["tiled"].max_threads == (128, 1, 1) and co.kernels["tiled"].reqntid is None
    assert co.kernels["dynamic"].reqntid == REQNTID and co.kernels["dynamic"].max_threads is None
    for k in co.kernels.values():
        assert k.exit_offsets and all(o % 16 == 0 and o < k.symbol.size for o in k.exit_offsets)
        assert k.maxreg_count == 255 and k.attribute("EIATTR_CUDA_API_VERSION").value == 135  # ptxas 13.5


@pytest.mark.parametrize("arch", ["sm_80", "sm_90", "sm_120"])
def test_module_constants_and_device_function(arch):
    co = parse(cubin(arch))
    assert co.constants[3] == struct.pack("<4f", 1.5, 2.5, 3.5, 4.5)  # __constant__ coeffs
    funcs = {s.name: s for s in co.symbols if s.type == "FUNC"}
    inlined = funcs["$caller$_Z4pickfi"]  # ptxas places the callee after the kernel, in its .text
    assert inlined.section == ".text.caller" and inlined.value + inlined.size <= len(co.kernels["caller"].code)
    assert {a.value.function for a in co.info if a.name == "EIATTR_FRAME_SIZE"} >= {"caller", "$caller$_Z4pickfi"}


@pytest.mark.parametrize("arch", ["sm_80", "sm_90", "sm_120"])
def test_relocations_match_readelf(arch):
    if not shutil.which("llvm-readelf-22"):
        pytest.skip("needs llvm-readelf-22 (Debian llvm-22)")
    data = cubin(arch, relocatable=True)
    co = parse(data)
    text = _run(["llvm-readelf-22", "-r"], data)
    theirs = {}
    for name, body in re.findall(r"Relocation section '(\S+)'.*?\n(.*?)(?=\nRelocation section|\Z)", text, re.S):
        theirs[name] = [(int(off, 16), int(info, 16) & 0xFFFFFFFF, sym) for off, info, sym in
                        re.findall(r"^([0-9a-f]{16})\s+([0-9a-f]{16})\s+\S+(?: \S+)?\s+[0-9a-f]{16}\s+(\S+)", body,
                                   re.M)]
    ours = {}
    for r in co.relocations:
        ours.setdefault(r.section, []).append((r.offset, r.type, r.symbol))
    assert ours == theirs and ".rela.text.caller" in ours
    caller = co.kernels["caller"].relocations
    assert caller and all(r.target == ".text.caller" for r in caller)
    assert {r.symbol for r in caller} >= {"counter", "_Z4pickfi"}  # the __device__ variable, the callee
    assert all(re.fullmatch(r"R_CUDA_[A-Z0-9_]+", r.name) for r in co.relocations)
    assert all((r.addend is None) == r.section.startswith(".rel.") for r in co.relocations)  # .rel and .rela


def test_cubin_without_ptx_section():
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp, "k.ptx"), Path(tmp, "k.cubin")
        src.write_text(ptx("sm_90"))
        subprocess.run([str(PTXAS), "-arch=sm_90", str(src), "-o", str(out)], check=True, timeout=300)
        co = parse(out.read_bytes())
    assert co.ptx is None and set(co.kernels) == KERNELS


FIXTURES = {"cuda12.4-sm_90a.cubin": ("sm_90a", 7, 0x33), "cuda12.9-sm_100a.cubin": ("sm_100a", 8, 0x41)}


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_older_ptxas(name):
    """ELF ABI 7 (SM in bits 0-7, 'a' at 0x800) and ptxas 12.9's ABI 8 ('a' at 0x8 in e_flags, no .nv.compat)."""
    arch, abi, osabi = FIXTURES[name]
    data = (DATA / name).read_bytes()
    co = parse(data)
    assert (co.arch, co.abi_version, data[7]) == (arch, abi, osabi)
    report = ptxas_report((DATA / name.replace(".cubin", ".ptxas-v.txt")).read_text())
    k = co.kernels["axpy"]
    assert (k.regcount, k.frame_size) == (report["axpy"]["registers"], report["axpy"]["stack"])
    assert [(p.offset, p.size) for p in k.params] == ptx_params((DATA / name.replace(".cubin", ".ptx")).read_text(),
                                                                "axpy")
    assert k.shared_size == report["axpy"]["smem"] + 0x400 and k.param_cbank.offset == PARAM_BASE[arch[:6]]
    if NVDISASM:
        text = nvdisasm(data)
        target = re.search(r"^\s*\.target\s+(\w+)", text, re.M)
        if target:
            assert target.group(1) == arch
        else:  # ABI 7: nvdisasm spells the e_flags bits out
            flags = re.search(r"\.headerflags\s+@\"([^\"]*)\"", text).group(1).split()
            assert f"EF_CUDA_SM{co.sm}" in flags and ("EF_CUDA_ACCELERATORS" in flags) == arch.endswith("a")


def test_attribute_names_are_unique():
    named = [n for n in EIATTR if n != "-"]
    assert len(named) == len(set(named)) and EIATTR[0x0A] == "PARAM_CBANK" and EIATTR[0x2F] == "REGCOUNT"


# --- damage: each row a corruption of the sm_90 cubin and what the error must say ----------------------------------

def put(data: bytes, off: int, chunk: bytes) -> bytes:
    return data[:off] + chunk + data[off + len(chunk):]


def shdr_at(co, name: str) -> int:
    shoff = struct.unpack_from("<Q", co.data, 0x28)[0]
    return shoff + co.section(name).index * 64


def record_offset(co, kernel: str, attr: str) -> int:
    """File offset of a kernel's attribute record."""
    a = co.kernels[kernel].attribute(attr)
    return co.section(a.section).offset + a.offset


def symbol_offset(co, name: str) -> int:
    symtab = co.section(".symtab")
    return symtab.offset + 24 * next(i for i, s in enumerate(co.symbols) if s.name == name)


def regcount_offset(co) -> int:
    a = next(a for a in co.info if a.name == "EIATTR_REGCOUNT")
    return co.section(".nv.info").offset + a.offset


CORRUPTIONS = {
    "bad_magic": (lambda co: put(co.data, 0, b"\x7fELG"), "bad ELF magic at offset 0"),
    "truncated_header": (lambda co: co.data[:40], "too short for an ELF64 header: 40 bytes"),
    "truncated_sections": (lambda co: co.data[:len(co.data) // 2], "section header table at offset"),
    "not_cuda": (lambda co: put(co.data, 18, struct.pack("<H", 62)), "e_machine is 62, not EM_CUDA (190)"),
    "abi_version": (lambda co: put(co.data, 8, b"\x09"), "EI_ABIVERSION is 9, not a CUDA ELF ABI (7 or 8)"),
    "osabi": (lambda co: put(co.data, 7, b"\x33"), "EI_OSABI is 51, not 65"),
    "sm_zero": (lambda co: put(co.data, 0x30, struct.pack("<I", co.flags & ~0xFF00)), "names SM 0"),
    "section_past_end": (lambda co: put(co.data, shdr_at(co, ".nv.info.tiled") + 24, struct.pack("<Q", len(co.data))),
                         "data at offset"),
    "record_past_section": (lambda co: put(co.data, record_offset(co, "tiled", "EIATTR_PARAM_CBANK") + 2,
                                           struct.pack("<H", 0x4000)),
                            "section '.nv.info.tiled' offset 0x"),
    "record_format": (lambda co: put(co.data, record_offset(co, "tiled", "EIATTR_MAX_THREADS"), b"\x07"),
                      "EIATTR_MAX_THREADS has unknown format byte 0x7"),
    "kparam_size": (lambda co: put(co.data, record_offset(co, "params", "EIATTR_KPARAM_INFO") + 2,
                                   struct.pack("<H", 8)),
                    "EIATTR_KPARAM_INFO value is 8 bytes, its layout needs 12"),
    "regcount_symbol": (lambda co: put(co.data, regcount_offset(co) + 4, struct.pack("<I", 999)),
                        "section '.nv.info' offset 0x0: EIATTR_REGCOUNT names symbol 999"),
    "kernel_section": (lambda co: put(co.data, symbol_offset(co, "tiled") + 6,
                                      struct.pack("<H", co.section(".text.dynamic").index)),
                       "kernel 'tiled': its symbol is in section '.text.dynamic', not '.text.tiled'"),
    "no_symtab": (lambda co: put(co.data, shdr_at(co, ".symtab") + 4, struct.pack("<I", 1)), "no symbol table"),
    "ptx_not_text": (lambda co: put(co.data, co.section(".usergpu.ptx").offset + 5, b"\xff"),
                     "the PTX in section '.usergpu.ptx': byte 5 (0xff) is not UTF-8 text"),
    "symtab_entry_size": (lambda co: put(co.data, shdr_at(co, ".symtab") + 56, struct.pack("<Q", 23)),
                          "symbol table '.symtab': entry size 23"),
}


@pytest.mark.parametrize("case", sorted(CORRUPTIONS))
def test_corrupted(case):
    corrupt, message = CORRUPTIONS[case]
    co = parse(cubin("sm_90"))
    bad = corrupt(co)
    assert bad != co.data
    elf_damage.refused_by_its_check(parse, bad, message, "malformed cubin")


def test_relocation_damage():
    co = parse(cubin("sm_90", relocatable=True))
    rel = co.section(".rela.text.caller")
    bad = put(co.data, rel.offset + 12, struct.pack("<I", 4000))  # the first entry's symbol index
    with pytest.raises(CodeObjectError, match=r"relocation section '.rela.text.caller' offset 0x0: symbol 4000"):
        parse(bad)


SAMPLES = (lambda: cubin("sm_90"), lambda: cubin("sm_80", relocatable=True),
           lambda: (DATA / "cuda12.4-sm_90a.cubin").read_bytes())


@st.composite
def damaged(draw) -> bytes:
    """A real cubin (ptxas 13.5's, a relocatable one, ptxas 12.4's) with bytes changed where the reader looks (the
    headers, the symbol table, the attribute and relocation sections, anywhere), maybe cut short."""
    data = draw(st.sampled_from(SAMPLES))()
    looked_at = [s for s in parse(data).sections if s.size and s.type != 8 and
                 (s.name.startswith((".nv.info", ".rel")) or s.name in (".symtab", ".nv.compat"))]
    return elf_damage.damage(draw, data, [(s.offset, s.offset + s.size) for s in looked_at])


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged())
def test_random_damage_raises_only_code_object_error(data):
    elf_damage.parses_or_refuses(parse, data)
