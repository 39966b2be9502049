"""ABI check of the generated hardware modules (PM4, SDMA, registers of GC and the blocks around it): gcc
compiled against the same linux-source-6.12 headers prints every constant, every bit-field helper at several
argument vectors, every SDMA packet field's offset/mask/shift and every register offset, BASE_IDX, field SHIFT
and MASK (and NBIO's cfg offsets); the committed modules must agree on all of them. The headers' define names
are listed here with a regex of this test's own (the generator uses libclang), so a define the generator
dropped fails the test too."""

from __future__ import annotations

import ctypes
import importlib
import random
import re
from pathlib import Path

import pytest

from usergpu.autogen._regs import Reg
from usergpu.autogen._support import FieldMacro
from usergpu.autogen.generator import hwmodules, regs, toolchain
from usergpu.errors import FieldError, ToolchainError

MASK32, MASK64 = (1 << 32) - 1, (1 << 64) - 1
GC = "include/asic_reg/gc/gc_{}_{}.h"
HEADERS = {
    "pm4_nv": ["amdgpu/nvd.h"],
    "pm4_soc15": ["amdgpu/soc15d.h"],
    "sdma_v6": ["amdgpu/sdma_v6_0_0_pkt_open.h"],
    "sdma_v4": ["amdgpu/vega10_sdma_pkt_open.h"],
    **{f"regs_gc_{v}": [GC.format(v, "offset"), GC.format(v, "sh_mask")] for v in ("11_0_0", "12_0_0", "9_4_3")},
}
# the register maps of the blocks around GC (MMHUB, NBIO, OSSSYS, MP, HDP, SMUIO of Navi31 and Navi48)
BLOCKS = {f"regs_{b.split('/')[1]}": b for b in toolchain.REG_BLOCKS}
for _name, _block in BLOCKS.items():
    _folder, _stem = _block.split("/")
    HEADERS[_name] = regs.headers(_stem.split("_", 1)[1], _folder, _stem.split("_", 1)[0])
PACKET_MODULES = ["pm4_nv", "pm4_soc15", "sdma_v6", "sdma_v4"]
SDMA = ["sdma_v6", "sdma_v4"]
REGS = ["regs_gc_11_0_0", "regs_gc_12_0_0", "regs_gc_9_4_3"]
DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)(\(?)[ \t]*(\S?)", re.M)
FIELD = re.compile(r"([A-Z0-9_]+?)_([a-z][a-z0-9_]*)")  # <DWORD>_<field> of an SDMA packet define


def headers(name: str) -> list[Path]:
    try:
        amd = toolchain.linux_amd()
    except ToolchainError as e:  # only when linux-source-6.12 is not installed
        pytest.skip(str(e))
    return [amd / h for h in HEADERS[name]]


def defines(name: str) -> tuple[set[str], set[str]]:
    """Names of the object-like (include guards left out) and function-like #defines of a module's headers."""
    obj, func = set(), set()
    for h in headers(name):
        for n, paren, body in DEFINE.findall(h.read_text()):
            if paren:
                func.add(n)
            elif body:
                obj.add(n)
    return obj, func


def probe(name: str, exprs: list[str]) -> list[int]:
    """Each C expression's value as unsigned long long, from one program with one static array."""
    if not exprs:
        return []
    src = "\n".join(
        ["#include <stdio.h>", *(f'#include "{h}"' for h in headers(name)), "static const unsigned long long v[] = {"]
        + [f"(unsigned long long)({e})," for e in exprs]
        + ["};", 'int main(void) { for (unsigned i = 0; i < sizeof v / sizeof v[0]; i++) printf("%llu\\n", v[i]); }']
    )
    run = toolchain.compile_and_run(src + "\n", "c", toolchain.c_flags())
    assert run.returncode == 0, run.stderr[-3000:]
    got = [int(x) for x in run.stdout.split()]
    assert len(got) == len(exprs)
    return got


def compare(name: str, expect: dict[str, int], what: str, record) -> None:
    got = probe(name, list(expect))
    wrong = [(e, v & MASK64, g) for (e, v), g in zip(expect.items(), got, strict=True) if v & MASK64 != g]
    assert not wrong, f"{len(wrong)} of {len(expect)} {what} differ from C, first: {wrong[:5]}"
    record(what, len(expect))
    print(f"{name}: {len(expect)} {what} checked against gcc")


def module(name: str):
    headers(name)  # skip before importing when the headers are absent (the module itself is committed)
    return importlib.import_module(f"usergpu.autogen.{name}")


def constants(mod) -> dict[str, int]:
    return {k: v for k, v in vars(mod).items() if type(v) is int and not k.startswith("_")}


def field_macros(mod) -> dict[str, FieldMacro]:
    return {k: v for k, v in vars(mod).items() if isinstance(v, FieldMacro)}


def sdma_defines(mod, obj: set[str]) -> dict[str, tuple[type, str, str]]:
    """Every `<P>_<DWORD>_<field>_offset` define stem of the header -> (its packet class, dword, field)."""
    by_cname = {cls._cname_: cls for cls in mod.PACKETS}
    longest = sorted(by_cname, key=len, reverse=True)
    out = {}
    for n in sorted(obj):
        if not n.endswith("_offset"):
            continue
        stem = n.removesuffix("_offset")
        p = next((p for p in longest if stem.startswith(p + "_")), None)
        assert p is not None, f"{n}: no generated packet owns it"
        m = FIELD.fullmatch(stem[len(p) + 1 :])
        assert m, f"{n}: not <packet>_<DWORD>_<field>_offset"
        out[stem] = (by_cname[p], *m.groups())
    return out


@pytest.mark.parametrize("name", PACKET_MODULES)
def test_constants_match_the_c_compiler_and_cover_the_header(name, record_property):
    mod = module(name)
    obj, _ = defines(name)
    consts = constants(mod)
    stems = sdma_defines(mod, obj) if name in SDMA else {}
    packet_fields = {f"{s}_{k}" for s in stems for k in ("offset", "mask", "shift")}  # test_sdma_packet_layouts
    assert set(consts) | packet_fields | (set(mod.LEFT_OUT) & obj) == obj, "an object-like #define is unaccounted for"
    assert not set(consts) & packet_fields
    compare(name, consts, "constants", record_property)


@pytest.mark.parametrize("name", PACKET_MODULES)
def test_field_macros_match_the_c_macros(name, record_property):
    mod = module(name)
    _, func = defines(name)
    fms = field_macros(mod)
    assert set(fms) | set(mod.LEFT_OUT) == func and not set(fms) & set(mod.LEFT_OUT)
    rng = random.Random(name)
    expect = {}
    for k, fm in fms.items():
        n = len(fm.fields)
        vectors = [(0,) * n, (MASK32,) * n, *(tuple(int(i == j) for j in range(n)) for i in range(n))]
        vectors += [tuple(rng.getrandbits(32) for _ in range(n)) for _ in range(3)]
        for args in vectors:
            expect[f"{k}({', '.join(f'{a:#x}u' for a in args)})"] = fm(*args)
    compare(name, expect, f"FieldMacro calls ({len(fms)} macros)", record_property)


@pytest.mark.parametrize("name", SDMA)
def test_sdma_packet_layouts_match_the_header_defines(name, record_property):
    mod = module(name)
    obj, _ = defines(name)
    # a packet P exists exactly where P_HEADER_op_offset is defined
    assert {n.removesuffix("_HEADER_op_offset") for n in obj if n.endswith("_HEADER_op_offset")} == {
        c._cname_ for c in mod.PACKETS
    }
    stems = sdma_defines(mod, obj)
    got = iter(probe(name, [f"{s}_{k}" for s in stems for k in ("offset", "mask", "shift")]))
    seen: dict[type, set[str]] = {cls: set() for cls in mod.PACKETS}
    shared = {}  # (packet, field) -> how many dwords spell it
    for cls, _, field in stems.values():
        shared[cls, field] = shared.get((cls, field), 0) + 1
    for stem, (cls, dword, field) in stems.items():
        index, mask, shift = next(got), next(got), next(got)
        attr = field if shared[cls, field] == 1 else f"{dword.lower()}_{field}"
        n = len(cls._dwords_)
        assert cls._dwords_[index] == dword, stem
        pkt = cls()
        setattr(pkt, attr, MASK32)
        dwords = list((ctypes.c_uint32 * n).from_buffer_copy(bytes(pkt)))
        assert dwords == [(mask << shift) & MASK32 if i == index else 0 for i in range(n)], stem
        assert mask << shift <= MASK32, stem
        seen[cls].add(attr)
    for cls in mod.PACKETS:
        assert ctypes.sizeof(cls) == 4 * len(cls._dwords_), cls.__name__
        named = {f[0] for f in cls._fields_ if not f[0].startswith("_reserved_")}
        assert named == seen[cls], f"{cls.__name__}: fields without a define {named - seen[cls]}"
        pkt = cls()  # the reserved padding is exactly the bits no field holds
        for f in cls._fields_:
            setattr(pkt, f[0], MASK32 if f[0].startswith("_reserved_") else 0)
        gaps = list((ctypes.c_uint32 * len(cls._dwords_)).from_buffer_copy(bytes(pkt)))
        for f in cls._fields_:
            setattr(pkt, f[0], 0 if f[0].startswith("_reserved_") else MASK32)
        fields = list((ctypes.c_uint32 * len(cls._dwords_)).from_buffer_copy(bytes(pkt)))
        assert [a | b for a, b in zip(gaps, fields, strict=True)] == [MASK32] * len(gaps)
        assert not any(a & b for a, b in zip(gaps, fields, strict=True)), cls.__name__
    nfields = sum(map(len, seen.values()))
    record_property("packets", len(mod.PACKETS))
    record_property("packet fields", nfields)
    print(f"{name}: {len(mod.PACKETS)} packet structs, {nfields} fields ({3 * nfields} defines) checked against gcc")


@pytest.mark.parametrize("name", REGS + list(BLOCKS))
def test_registers_match_the_c_compiler_and_cover_the_headers(name, record_property):
    mod = module(name)
    obj, func = defines(name)
    assert not func
    expect: dict[str, int] = {}

    def fields(owner: str, fs: dict[str, tuple[int, int]]) -> None:
        for f, (shift, mask) in fs.items():
            expect[f"{owner}__{f}__SHIFT"], expect[f"{owner}__{f}_MASK"] = shift, mask

    for r, reg in mod.REGS.items():
        expect[f"reg{r}"] = reg.offset
        if reg.base_idx is not None:  # None: the header has no regNAME_BASE_IDX (the set check below proves it)
            expect[f"reg{r}_BASE_IDX"] = reg.base_idx
        fields(r, reg.fields)
    for r, reg in mod.IND_REGS.items():
        assert reg.base_idx is None
        expect[f"ix{r}"] = reg.offset
        fields(r, reg.fields)
    cfg = getattr(mod, "CFG_REGS", {})  # NBIO's PCI configuration space registers, when the header has them
    for r, reg in cfg.items():
        assert reg.base_idx is None
        expect[f"cfg{r}"] = reg.offset
        if r in mod.REGS:  # the same register through MMIO: the same sh_mask fields
            assert reg.fields == mod.REGS[r].fields, r
        fields(r, reg.fields)
    for r, fs in getattr(mod, "MASK_ONLY", {}).items():
        expect.update({f"{r}__{f}_MASK": m for f, m in fs.items()})
    assert not set(mod.FIELDS_ONLY) & (set(mod.REGS) | set(mod.IND_REGS) | set(cfg))
    for r, fs in mod.FIELDS_ONLY.items():
        fields(r, fs)
    for r, fs in mod.SHIFT_ONLY.items():
        expect.update({f"{r}__{f}__SHIFT": s for f, s in fs.items()})
    missing, extra = obj - set(expect), set(expect) - obj
    assert not missing and not extra, f"not in the module: {sorted(missing)[:5]}, nor the header: {sorted(extra)[:5]}"
    nfields = sum(len(r.fields) for r in (*mod.REGS.values(), *mod.IND_REGS.values()))
    record_property("registers", len(mod.REGS) + len(mod.IND_REGS) + len(cfg))
    record_property("register fields", nfields)
    only = sum(map(len, mod.FIELDS_ONLY.values())), sum(map(len, mod.SHIFT_ONLY.values()))
    print(f"{name}: {len(mod.REGS)} registers + {len(mod.IND_REGS)} indirect + {len(cfg)} config, {nfields} fields"
          f" (+{only[0]} fields-only, +{only[1]} shift-only)")
    compare(name, expect, "register values", record_property)


def test_table_sizes_and_known_facts():
    mods = {n: module(n) for n in HEADERS if n not in BLOCKS}
    for n in ("pm4_nv", "pm4_soc15"):
        assert 100 < len(constants(mods[n])) < 1000 and 50 < len(field_macros(mods[n])) < 500, n
        assert mods[n].PACKET3_NOP == 0x10 and mods[n].PACKET3(mods[n].PACKET3_NOP, 0) == 0xC0001000
    for n in SDMA:
        mod = mods[n]
        assert 30 <= len(mod.PACKETS) < 100 and 30 < len(constants(mod)) < 200 and 300 < len(field_macros(mod)) < 2000
        assert mod.SDMA_PKT_COPY_LINEAR._dwords_[:2] == ("HEADER", "COUNT")
        assert ctypes.sizeof(mod.SDMA_PKT_COPY_LINEAR) == 28
        pkt = mod.SDMA_PKT_COPY_LINEAR(op=mod.SDMA_OP_COPY, sub_op=mod.SDMA_SUBOP_COPY_LINEAR)
        assert bytes(pkt)[:4] == (1).to_bytes(4, "little")
        assert mod.SDMA_PKT_COPY_LINEAR_HEADER_OP(mod.SDMA_OP_COPY) == 1
    assert mods["sdma_v4"].SDMA_PKT_HEADER._cname_ == "SDMA_PKT"  # vega10's shared header dword
    for n in REGS:
        mod = mods[n]
        assert 3000 < len(mod.REGS) < 20000 and 10000 < sum(len(r.fields) for r in mod.REGS.values()) < 50000, n
        assert mod.REGS["GRBM_STATUS"].base_idx == 0
        assert mod.REGS["CP_ME_CNTL"].encode(ME_HALT=1) == 1 << 28
    grbm = [mods[n].REGS["GRBM_STATUS"].offset for n in REGS]
    assert grbm == [0xDA4, 0xDA4, 0x4]


def test_reg_encode_decode_address():
    reg = Reg(0x10, 1, {"A": (0, 0xF), "B": (4, 0x30)})
    assert reg.encode(A=3, B=2) == 0x23 and reg.decode(0x23) == {"A": 3, "B": 2}
    assert reg.address([0x100, 0x2000]) == 0x2010
    with pytest.raises(FieldError, match="B=0x4 does not fit"):
        reg.encode(B=4)
    with pytest.raises(FieldError, match="no field C; the fields are A, B"):
        reg.encode(C=1)
    with pytest.raises(FieldError):
        Reg(0, None, {}).address([0])


@pytest.mark.parametrize("row", hwmodules.MODULES, ids=lambda m: m.name)
def test_generator_raises_toolchain_error_without_linux_source(row, tmp_path, monkeypatch):
    monkeypatch.setattr(toolchain, "CACHE", tmp_path)
    monkeypatch.setattr(toolchain, "LINUX_TARBALL", tmp_path / "absent.tar.xz")
    with pytest.raises(ToolchainError, match="linux-source-6.12"):
        row.render()


def test_block_register_maps_know_what_the_am_driver_programs():
    mods = {n: module(n) for n in BLOCKS}
    for n, mod in mods.items():
        assert 50 < len(mod.REGS) < 10000, n
        # every register has a segment, but MP 14.0.2's and one SR-IOV shadow NBIO 7.9's header gives none
        unplaced = [k for k, r in mod.REGS.items() if r.base_idx is None]
        shadow = ["BIF_CFG_DEV0_EPF0_0_PCIE_VENDOR_SPECIFIC_HDR_GPUIOV_SRIOV_SHADOW"]
        assert not unplaced or n == "regs_mp_14_0_2" or n == "regs_nbio_7_9_0" and unplaced == shadow, n
    for n, base in (("regs_mp_13_0_0", 0), ("regs_mp_13_0_2", 0), ("regs_mp_14_0_2", 1),
                    ("regs_mp_13_0_6", 0)):  # SMU message, response,
        mp = mods[n]  # argument mailboxes (in MP1 14.0.x's second segment)
        got = [mp.REGS[f"MP1_SMN_C2PMSG_{i}"] for i in (66, 90, 82)]
        assert [(r.offset & 0xFF, r.base_idx) for r in got] == [(0x82, base), (0x9A, base), (0x92, base)], n
        assert got[0].fields == {"CONTENT": (0, 0xFFFFFFFF)}
    assert mods["regs_mp_13_0_0"].REGS["MP1_SMN_C2PMSG_66"].offset == 0x282
    assert mods["regs_mp_13_0_2"].REGS["MP0_SMN_C2PMSG_64"].offset == 0x80  # the PSP's GFX mailbox (psp_v13_0.c)
    assert mods["regs_mp_14_0_2"].REGS["MPASP_SMN_C2PMSG_64"].offset == 0x80  # and psp_v14_0.c's
    assert mods["regs_mp_13_0_6"].REGS["MP0_SMN_C2PMSG_64"].offset == 0x80  # MI300X's PSP (psp_v13_0.c)
    assert mods["regs_mp_13_0_6"].REGS["MP0_SMN_C2PMSG_35"].offset == 0x63  # its bootloader's command register
    for n in ("regs_osssys_6_0_0", "regs_osssys_7_0_0", "regs_osssys_4_4_2"):
        assert mods[n].REGS["IH_RB_CNTL"].encode(RB_ENABLE=1) == 1
    for n in ("regs_mmhub_3_0_0", "regs_mmhub_4_1_0"):
        assert mods[n].REGS["MMVM_L2_CNTL"].encode(ENABLE_L2_CACHE=1) == 1
    assert mods["regs_mmhub_1_8_0"].REGS["VM_L2_CNTL"].encode(ENABLE_L2_CACHE=1) == 1  # gfx9 hubs: no MM prefix
    assert mods["regs_sdma_4_4_2"].REGS["SDMA_F32_CNTL"].encode(HALT=1) == 1
    for n in ("regs_nbio_4_3_0", "regs_nbif_6_3_1", "regs_nbio_7_9_0"):
        nbio = mods[n]
        assert nbio.REGS["BIF_BX_PF0_GPU_HDP_FLUSH_REQ"].encode(CP0=1) == 1
        assert nbio.CFG_REGS and all(r.base_idx is None for r in nbio.CFG_REGS.values())
    assert mods["regs_nbio_4_3_0"].MASK_ONLY == {"PCIE_LC_RXRECOVER_RXSTANDBY_CNTL": {"LC_RX_L0S_STANDBY_EN": 0x10000}}
    for n, mod in mods.items():  # the docstring names the block, its inputs and its HWIP
        block = BLOCKS[n].split("/")[1]
        assert f"{block}_offset.h" in mod.__doc__ and "_HWIP][inst][base_idx]" in mod.__doc__, n
