"""Memory instructions: scalar loads (SMEM), global/flat/scratch loads, stores and atomics, and LDS (DS) loads,
stores, atomics and cross-lane moves. Only active lanes touch memory; a bad address raises MemoryFault."""

from __future__ import annotations

import re

import numpy as np

from usergpu.emu.amd.exec.operands import Operand
from usergpu.emu.amd.exec.waves import NULL
from usergpu.emu.memory import MemoryFault
from usergpu.emu.native import say_once

SIZES = {"b8": 1, "u8": 1, "i8": 1, "b16": 2, "u16": 2, "i16": 2, "d16_b16": 2, "d16_hi_b16": 2, "d16_u8": 1,
         "d16_i8": 1, "d16_hi_u8": 1, "d16_hi_i8": 1, "d16_hi_b8": 1, "b32": 4, "b64": 8, "b96": 12, "b128": 16,
         "dword": 4, "dwordx2": 8, "dwordx3": 12, "dwordx4": 16, "u32": 4, "i32": 4}
LOAD = re.compile(r"^(global|flat|scratch|ds|buffer)_(load|store)_(2addr_(?:stride64_)?)?(\w+)$")
ATOMIC = re.compile(r"^(global|flat|ds|buffer)_(atomic_)?(\w+?)_(rtn_)?([fiub]\d+|bf16|x2)$")
ATOMIC_OPS = {
    "add": "a + b", "sub": "a - b", "min": "np.where(b < a, b, a)", "max": "np.where(b > a, b, a)", "and": "a & b",
    "or": "a | b", "xor": "a ^ b", "swap": "b", "storexchg": "b", "inc": "np.where(a >= b, 0, a + 1)",
    "dec": "np.where((a == 0) | (a > b), b, a - 1)", "cmpswap": "np.where(a == c, b, a)",
    "cmpst": "np.where(a == c, b, a)", "add_f32": "a + b", "min_num": "fmin(a, b)", "max_num": "fmax(a, b)",
    "sub_clamp": "np.where(a > b, a - b, 0)", "cond_sub": "np.where(a >= b, a - b, a)",
    "pk_add_f16": "pk_add16(a, b, 'f16')", "pk_add_bf16": "pk_add16(a, b, 'bf16')",
    "cmpstore": "np.where(a == c, b, a)", "mskor": "(a & ~b) | c", "wrap": "np.where(a >= b, a - b, a + c)",
    "rsub": "b - a", "condxchg32": "np.where(((b >> 31) & 1) == 1, b & 0x7FFFFFFF, a & 0xFFFFFFFF) | "
                                   "np.where((b >> 63) == 1, b & 0x7FFFFFFF00000000, a & 0xFFFFFFFF00000000)",
}
# the atomics with a second data operand (DS: data1; global cmpswap: the data's second half)
TWO_DATA = {"cmpswap", "cmpst", "cmpstore", "mskor", "wrap"}
ATYPE = {"u32": np.uint32, "i32": np.int32, "b32": np.uint32, "u64": np.uint64, "i64": np.int64, "b64": np.uint64,
         "f32": np.float32, "f64": np.float64}


# gfx9's spellings of the memory mnemonics -> gfx11's, which the tables here are written in (the same operations)
GFX9_NAMES = [(re.compile(p), r) for p, r in (
    (r"^ds_read2st64_", "ds_load_2addr_stride64_"), (r"^ds_write2st64_", "ds_store_2addr_stride64_"),
    (r"^ds_read2_", "ds_load_2addr_"), (r"^ds_write2_", "ds_store_2addr_"), (r"^ds_read_", "ds_load_"),
    (r"^ds_write_", "ds_store_"), (r"^ds_wrxchg", "ds_storexchg"),
    (r"^s_(buffer_)?load_dword$", r"s_\1load_b32"), (r"^s_(buffer_)?load_dwordx(\d+)$", r"s_\1load_x\2"),
    (r"_(load|store)_dword$", r"_\1_b32"), (r"_(load|store)_dwordx2$", r"_\1_b64"),
    (r"_(load|store)_dwordx3$", r"_\1_b96"), (r"_(load|store)_dwordx4$", r"_\1_b128"),
    (r"_load_ubyte$", "_load_u8"), (r"_load_sbyte$", "_load_i8"), (r"_load_ushort$", "_load_u16"),
    (r"_load_sshort$", "_load_i16"), (r"_store_byte$", "_store_b8"), (r"_store_short$", "_store_b16"),
    (r"_load_ubyte_d16(_hi)?$", r"_load_d16\1_u8"), (r"_load_sbyte_d16(_hi)?$", r"_load_d16\1_i8"),
    (r"_load_short_d16(_hi)?$", r"_load_d16\1_b16"), (r"_store_byte_d16_hi$", "_store_d16_hi_b8"),
    (r"_store_short_d16_hi$", "_store_d16_hi_b16"),
    (r"_atomic_(add|sub|inc|dec)(_x2)?$", r"_atomic_\1\2_u"), (r"_atomic_s(min|max)(_x2)?$", r"_atomic_\1\2_i"),
    (r"_atomic_u(min|max)(_x2)?$", r"_atomic_\1\2_u"), (r"_atomic_(and|or|xor|swap|cmpswap)(_x2)?$",
                                                            r"_atomic_\1\2_b"),
    (r"_atomic_(\w+?)_x2_([iub])$", r"_atomic_\1_\g<2>64"), (r"_atomic_(\w+?)_([iub])$", r"_atomic_\1_\g<2>32"),
)]
_SMEM_X = re.compile(r"^s_(buffer_)?load_x(\d+)$")


_DS_D16 = re.compile(r"^(ds_(?:load|store))_([uib])(8|16)_d16(_hi)?$")


def canonical(name: str, gen: int) -> str:
    """A memory mnemonic as gfx11 spells it (gfx9's ds_read_b32 is ds_load_b32, global_atomic_smax_x2 is
    global_atomic_max_i64, s_load_dwordx4 is s_load_b128), LDS's half-register forms as the global ones
    (ds_load_u16_d16_hi: ds_load_d16_hi_b16)."""
    if gen == 9:
        for pattern, repl in GFX9_NAMES:
            name = pattern.sub(repl, name)
    m = _DS_D16.match(name)
    if m:
        kind = "b" if m.group(3) == "16" else m.group(2)
        return f"{m.group(1)}_d16{m.group(4) or ''}_{kind}{m.group(3)}"
    m = _SMEM_X.match(name)
    return f"s_{m.group(1) or ''}load_b{32 * int(m.group(2))}" if m else name


def step(ex, name: str, ops: list[Operand], mods: dict, inst):
    name = canonical(name, ex.gen)
    if inst.family.startswith("SMEM") and name.startswith(("s_load_", "s_buffer_load_")):
        width = name.rsplit("_", 1)[1]  # b32 .. b512, or a sub-dword u8 / i8 / u16 / i16
        return _smem(ops, mods, int(width[1:]) // 32 if width[0] == "b" else 1, name)
    if name in ("ds_swizzle_b32", "ds_bpermute_b32", "ds_permute_b32"):
        return _lanes(name, ops, mods, inst.fields["offset0"] | inst.fields["offset1"] << 8)
    m = LOAD.match(name)
    if m:
        seg, kind, two, what = m.groups()
        size = SIZES.get(what)
        if size is None:
            return None
        if seg == "ds":
            return _ds(kind, size, bool(two), "stride64" in (two or ""), what, ops, mods)
        return _vmem(seg, kind, size, what, ops, mods)
    spec = atomic(name)
    return None if spec is None else _atomic(*spec, ops, mods)


def atomic(name: str) -> tuple[str, str, str, bool, bool] | None:
    """An atomic's (segment, expression over a (memory), b, c (data), type, returns by name, two data) or None."""
    m = ATOMIC.match(name)
    if not m or not (m.group(2) or m.group(1) == "ds"):
        return None
    seg, _, op, rtn, typ = m.groups()
    if op.endswith(("_u64", "_u32", "_i32")):
        return None
    key = op if op in ATOMIC_OPS else f"{op}_{typ}" if f"{op}_{typ}" in ATOMIC_OPS else None
    if key is None:
        return None
    return seg, ATOMIC_OPS[key], typ, bool(rtn), key in TWO_DATA


def _offset(mods: dict) -> int:
    v = int(mods.get("offset", "0"), 0)
    return v


def scalar_address(ex, ops: list[Operand], mods: dict, g, seg: str = "") -> tuple:
    """A scalar memory access's (address, offset, num_records or None) per wave: the base (s[base:+1]; seg
    "buffer_": a buffer resource's first 48 bits; "scratch_": one SGPR, a private offset) plus the immediate and
    the SGPR or literal soffset."""
    w = ex.w
    base, off_op = ops[1], ops[2] if len(ops) > 2 else None
    offset = np.full(w.s[0, g].shape, _offset(mods) % (1 << 64), np.uint64)
    if off_op is not None and off_op.kind == "s" and off_op.index != NULL:
        offset = offset + w.sget(off_op.index, 1, g).astype(np.uint64)
    elif off_op is not None and off_op.kind in ("int", "lit"):
        offset = offset + np.uint64(off_op.value % (1 << 64))
    if seg == "buffer_":
        desc = np.stack([w.s[base.index + i, g] for i in range(4)], -1).astype(np.uint64)
        return (desc[:, 0] | ((desc[:, 1] & np.uint64(0xFFFF)) << np.uint64(32))) + offset, offset, desc[:, 2]
    if seg == "scratch_":
        return w.sget(base.index, 1, g).astype(np.uint64) + offset, offset, None
    return w.sget(base.index, 2, g) + offset, offset, None


def _smem(ops: list[Operand], mods: dict, dwords: int, name: str):
    """s_load_*: from a 64-bit base address; s_buffer_load_*: from a buffer resource (its base in the first 48
    bits), reading 0 past its num_records. Offsets: the immediate, and an SGPR or literal soffset."""
    dst = ops[0]
    sub = {"u8": 1, "i8": 1, "u16": 2, "i16": 2}.get(name.rsplit("_", 1)[1])
    seg = "buffer_" if name.startswith("s_buffer_load_") else ""

    def smem(ex, g) -> None:
        w = ex.w
        addr, offset, records = scalar_address(ex, ops, mods, g, seg)
        if records is None and not sub:  # every dword at once, unless they cross mappings: then each on its own
            try:
                words = ex.mem.read(addr & ~np.uint64(3), 4 * dwords).view(np.uint32)
            except MemoryFault:
                pass
            else:
                w.s[dst.index : dst.index + dwords, g] = words.T
                return
        inside = ([offset + np.uint64(4 * i + 4) <= records for i in range(dwords)] if records is not None else
                  [np.ones(addr.shape, bool)] * dwords)
        if sub:
            val = _gather(ex, addr[:, None], inside[0][:, None], sub).view(np.uint8 if sub == 1 else np.uint16)
            val = val.reshape(-1).astype(np.int64)
            if name.endswith(("i8", "i16")):
                val = np.where(val >> (8 * sub - 1), val - (1 << 8 * sub), val)
            w.s[dst.index, g] = (val & 0xFFFFFFFF).astype(np.uint32)
            return
        for i in range(dwords):
            words = np.zeros(addr.shape, np.uint32)
            ok = inside[i]
            if ok.any():
                words[ok] = ex.mem.read((addr[ok] & ~np.uint64(3)) + np.uint64(4 * i), 4).view(np.uint32).reshape(-1)
            w.s[dst.index + i, g] = words
    return smem


def _lane_addresses(ex, seg: str, addr_op: Operand, saddr: Operand | None, imm: int, g) -> np.ndarray:
    """Per-lane byte addresses (waves, lanes): 64-bit vaddr, or saddr + 32-bit vaddr; scratch: per-lane offsets."""
    w = ex.w
    n = len(w.pc[g])
    if addr_op.kind == "v" and (saddr is None or saddr.kind == "off") and seg != "scratch":
        a = w.read(addr_op, "u64", g)
    else:
        a = w.read(addr_op, "u32", g).astype(np.uint64) if addr_op.kind == "v" else np.zeros((n, 1), np.uint64)
        if saddr is not None and saddr.kind == "s" and saddr.index != NULL:
            sa = w.sget(saddr.index, 1 if seg == "scratch" else 2, g).astype(np.uint64)
            a = a + sa[:, None]
    return np.broadcast_to((a + np.uint64(imm % (1 << 64))), (n, w.lanes))


def _buffer_addresses(ex, ops: list[Operand], mods: dict, g, size: int) -> tuple[np.ndarray, np.ndarray]:
    """A buffer instruction's per-lane addresses from its buffer resource (V#: base, stride, num_records), and
    which lanes are in range: out of range, loads read 0 and stores are dropped (no fault), as on hardware."""
    w = ex.w
    n = len(w.pc[g])
    vaddr, rsrc, soff = ops[1], ops[2], ops[3]
    desc = np.stack([w.s[rsrc.index + i, g] for i in range(4)], -1).astype(np.uint64)
    base = desc[:, 0] | ((desc[:, 1] & np.uint64(0xFFFF)) << np.uint64(32))
    stride = (desc[:, 1] >> np.uint64(16)) & np.uint64(0x3FFF)
    records = desc[:, 2]
    soffset = w.read(soff, "u32", g, False).astype(np.uint64) if soff.kind != "off" else np.zeros(n, np.uint64)
    offen, idxen = "offen" in mods, "idxen" in mods
    zero = np.zeros((n, w.lanes), np.uint64)
    index = w.read(Operand("v", vaddr.index), "u32", g).astype(np.uint64) if idxen else zero
    voff = w.read(Operand("v", vaddr.index + idxen), "u32", g).astype(np.uint64) if offen else zero
    offset = voff + np.uint64(_offset(mods)) + soffset[:, None]
    if idxen:
        ok = (index < records[:, None]) & (offset + np.uint64(size) <= np.maximum(stride, 1)[:, None])
    else:
        ok = offset + np.uint64(size) <= records[:, None]
    addr = base[:, None] + index * stride[:, None] + offset
    return np.broadcast_to(addr, (n, w.lanes)), np.broadcast_to(ok, (n, w.lanes))


def _vmem(seg: str, kind: str, size: int, what: str, ops: list[Operand], mods: dict):
    imm = _offset(mods)
    if seg == "buffer":
        return _buffer(kind, size, what, ops, mods)
    if kind == "load":
        dst, addr_op = ops[0], ops[1]
        saddr = ops[2] if len(ops) > 2 else None
    else:
        addr_op, data_op = ops[0], ops[1]
        saddr = ops[2] if len(ops) > 2 else None
    signed = what in ("i8", "i16", "d16_i8", "d16_hi_i8")
    hi = "hi" in what

    def vmem(ex, g) -> None:
        w = ex.w
        lanes = w.exec_mask(g)
        addr = _lane_addresses(ex, seg, addr_op, saddr, imm, g)
        raw = np.zeros(addr.shape + (size,), np.uint8) if kind == "load" else _from_vgprs(w, data_op, g, size, hi)
        for where, sel, offs in _apertures(seg, addr, lanes):
            if where == "global" and kind == "load":
                raw[sel] = ex.mem.read(offs[sel], size)
            elif where == "global":
                ex.mem.write(offs[sel], raw[sel])
            elif where == "scratch":
                access = _scratch(ex, g, offs, sel, size, kind)
                if kind == "load":
                    raw[sel] = access("read", None)[sel]
                else:
                    access("write", raw)
            else:
                _lds_access(ex, g, offs, sel, size, kind, raw)
        if kind == "load":
            _to_vgprs(w, dst, g, raw, lanes, size, signed, what, hi)
    return vmem


APERTURE = {0x10000: "lds", 0x20000: "scratch"}  # the high halves of src_shared_base / src_private_base


def _apertures(seg: str, addr: np.ndarray, lanes: np.ndarray):
    """(where, lanes, addresses) for each memory a vector access reaches: a flat address in the LDS or private
    aperture is an offset into that memory; scratch_* are private offsets; the rest global addresses."""
    if seg == "scratch":
        yield "scratch", lanes, addr
        return
    if seg != "flat":
        yield "global", lanes, addr
        return
    high = (addr >> np.uint64(32)).astype(np.int64)
    rest = lanes.copy()
    for base, where in APERTURE.items():
        sel = lanes & (high == base)
        if sel.any():
            rest &= ~sel
            yield where, sel, addr & np.uint64(0xFFFFFFFF)
    if rest.any():
        yield "global", rest, addr


def _lds_access(ex, g, offs: np.ndarray, sel: np.ndarray, size: int, kind: str, raw: np.ndarray) -> None:
    """A flat access that lands in the workgroup's LDS."""
    grp = np.broadcast_to(ex.group[g][:, None], sel.shape)
    off = offs.astype(np.int64)
    inside = lds_inside(ex, sel, off, size)
    idx = off[inside][:, None] + np.arange(size)
    if kind == "load":
        raw[sel] = 0
        raw[inside] = ex.lds[grp[inside][:, None], idx]
    else:
        ex.lds[grp[inside][:, None], idx] = raw[inside]


def _buffer(kind: str, size: int, what: str, ops: list[Operand], mods: dict):
    data_op = ops[0]
    signed, hi = what in ("i8", "i16", "d16_i8", "d16_hi_i8"), "hi" in what
    if "format" in what:  # typed buffer access (a format conversion): not modelled
        return None

    def buffer(ex, g) -> None:
        w = ex.w
        addr, ok = _buffer_addresses(ex, ops, mods, g, size)
        lanes = w.exec_mask(g) & ok
        if kind == "load":
            _to_vgprs(w, data_op, g, _gather(ex, addr, lanes, size), w.exec_mask(g), size, signed, what, hi)
        else:
            ex.mem.write(addr[lanes], _from_vgprs(w, data_op, g, size, hi)[lanes])
    return buffer


def _gather(ex, addr: np.ndarray, lanes: np.ndarray, size: int) -> np.ndarray:
    out = np.zeros(addr.shape + (size,), np.uint8)
    out[lanes] = ex.mem.read(addr[lanes], size)
    return out


def _scratch(ex, g, addr: np.ndarray, lanes: np.ndarray, size: int, kind: str):
    """Each lane's private memory: its own bytes [0, scratch size)."""
    waves = np.arange(ex.w.n)[g]
    limit = ex.scratch.shape[2]
    bad = lanes & (addr.astype(np.int64) + size > limit)
    if bad.any():
        raise MemoryFault(int(addr[bad][0]), f"scratch {kind}", f"past the {limit}-byte private segment")
    wi, li = np.nonzero(lanes)
    offs = addr[wi, li].astype(np.int64)[:, None] + np.arange(size)

    def access(op: str, raw):
        if op == "read":
            out = np.zeros(addr.shape + (size,), np.uint8)
            out[wi, li] = ex.scratch[waves[wi][:, None], li[:, None], offs]
            return out
        ex.scratch[waves[wi][:, None], li[:, None], offs] = raw[wi, li]
        return None
    return access


def _to_vgprs(w, dst: Operand, g, raw: np.ndarray, lanes: np.ndarray, size: int, signed: bool, what: str,
              hi: bool) -> None:
    if size >= 4:
        words = raw.view(np.uint32).reshape(raw.shape[:2] + (size // 4,))
        for i in range(size // 4):
            w.v[dst.index + i, g] = np.where(lanes, words[..., i], w.v[dst.index + i, g])
        return
    val = raw.view(np.uint8 if size == 1 else np.uint16).reshape(raw.shape[:2]).astype(np.int64)
    if signed:
        val = np.where(val >> (8 * size - 1), val - (1 << 8 * size), val)
    if what.startswith("d16"):  # the low or high 16 bits of the VGPR; the other half kept
        val16 = (val & 0xFFFF).astype(np.uint32)
        old = w.v[dst.index, g]
        new = (old & np.uint32(0xFFFF)) | (val16 << np.uint32(16)) if hi else (old & np.uint32(0xFFFF0000)) | val16
        w.v[dst.index, g] = np.where(lanes, new, old)
        return
    w.v[dst.index, g] = np.where(lanes, (val & 0xFFFFFFFF).astype(np.uint32), w.v[dst.index, g])


def _from_vgprs(w, src: Operand, g, size: int, hi: bool) -> np.ndarray:
    n = len(w.pc[g])
    words = np.stack([w.v[src.index + i, g] for i in range(max(size // 4, 1))], axis=-1).reshape(n, w.lanes, -1)
    raw = words.view(np.uint8).reshape(n, w.lanes, -1)
    if size < 4:
        start = 2 if hi else 0
        return raw[..., start : start + size]
    return raw[..., :size]


def atomic_operands(seg: str, returns: bool, ops: list[Operand], mods: dict, cmpswap: bool) -> tuple:
    """An atomic's (returns, destination or None, address, data, saddr or None, DS's second data or None)."""
    # returns the old value: gfx11's glc, gfx940's sc0 (its name for that bit), gfx12's th
    returns = returns or "glc" in mods or "sc0" in mods or mods.get("th", "").startswith("TH_ATOMIC_RETURN")
    dst = ops[0] if returns else None
    rest = ops[1:] if returns else ops
    addr_op, data_op = rest[0], rest[1]
    if seg == "buffer":  # vdata (returns the old value in place), vaddr, srsrc, soffset
        dst, data_op, addr_op = (ops[0] if returns else None), ops[0], ops[1]
    saddr = rest[2] if seg != "ds" and len(rest) > 2 else None
    data2 = rest[2] if seg == "ds" and cmpswap else None  # ds_cmpstore: the compare value is data1
    return returns, dst, addr_op, data_op, saddr, data2


def _atomic(seg: str, expr: str, typ: str, returns: bool, cmpswap: bool, ops: list[Operand], mods: dict):
    """An atomic read-modify-write: a the memory's value, b the data, c the second data (cmpswap: the compare
    value; ds_mskor, ds_wrap: data1); returns the old value."""
    from usergpu.emu.amd.exec.valu import evaluate

    imm = _offset(mods)
    dtype = ATYPE.get(typ, np.uint32)
    size = np.dtype(dtype).itemsize
    returns, dst, addr_op, data_op, saddr, data2 = atomic_operands(seg, returns, ops, mods, cmpswap)

    def atomic(ex, g) -> None:
        w = ex.w
        lanes = returned = w.exec_mask(g)  # returned: the lanes the old value goes to (outside the LDS: 0)
        nwords = size // 4 * (2 if cmpswap and seg != "ds" else 1)
        data = np.stack([w.v[data_op.index + i, g] for i in range(nwords)], -1).view(np.uint8).reshape(
            lanes.shape + (-1,))
        b = data[..., :size].copy().view(dtype).reshape(lanes.shape)
        c = data[..., size:].copy().view(dtype).reshape(lanes.shape) if cmpswap and seg != "ds" else None
        if data2 is not None:
            c = np.stack([w.v[data2.index + i, g] for i in range(size // 4)], -1).view(dtype).reshape(lanes.shape)
        if seg == "buffer":
            addr, ok = _buffer_addresses(ex, ops, mods, g, size)
            lanes = returned = lanes & ok
            keys = addr[lanes]
        elif seg == "ds":
            addr = _lds_addr(ex, addr_op, imm, g)
            lanes = lds_inside(ex, lanes, addr, size)
            grp = np.broadcast_to(ex.group[g][:, None], lanes.shape)[lanes].astype(np.uint64)
            keys = grp << np.uint64(32) | addr[lanes].astype(np.uint64)  # one LDS per workgroup
        else:
            addr = _lane_addresses(ex, seg, addr_op, saddr, imm, g)
            keys = addr[lanes]
        uniq, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        if seg == "ds":
            where = (grp[first].astype(np.int64), addr[lanes][first].astype(np.int64))
            cur = np.stack([ex.lds[where[0], where[1] + i] for i in range(size)], -1).view(dtype).reshape(-1)
        else:
            cur = ex.mem.read(uniq, size).view(dtype).reshape(-1).copy()
        bl, cl = b[lanes], (c[lanes] if c is not None else np.zeros_like(b[lanes]))
        old_l = np.empty(len(keys), dtype)
        if len(uniq) == len(keys):  # no two lanes share an address: one vector step
            old_l[:] = cur[inverse]
            cur[inverse] = np.asarray(evaluate(expr, {"a": old_l, "b": bl, "c": cl})).astype(dtype)
        else:  # lane order within each address, as the hardware serialises them
            for k, u in enumerate(inverse.tolist()):
                old_l[k] = cur[u]
                cur[u] = dtype(evaluate(expr, {"a": cur[u], "b": bl[k], "c": cl[k]}))
        if seg == "ds":
            raw = cur.view(np.uint8).reshape(len(uniq), size)
            for i in range(size):
                ex.lds[where[0], where[1] + i] = raw[:, i]
        else:
            ex.mem.write(uniq, cur.view(np.uint8).reshape(len(uniq), size))
        old = np.zeros(lanes.shape, dtype)
        old[lanes] = old_l
        if dst is not None:
            words = old.view(np.uint32).reshape(lanes.shape + (-1,))
            for i in range(words.shape[-1]):
                w.v[dst.index + i, g] = np.where(returned, words[..., i], w.v[dst.index + i, g])
    return atomic


# ---- LDS -------------------------------------------------------------------------------------------------
def _lds_addr(ex, addr_op: Operand, imm: int, g) -> np.ndarray:
    w = ex.w
    a = w.read(addr_op, "u32", g).astype(np.int64) + imm
    return np.broadcast_to(a, (len(w.pc[g]), w.lanes))


def lds_inside(ex, lanes: np.ndarray, addr: np.ndarray, size: int) -> np.ndarray:
    """lanes, less those whose LDS access of size bytes at addr lies outside the workgroup's allocation. That is no
    fault on the hardware (the LDS checks each address against the wave's LDS_SIZE): such a load reads 0 and a store
    or atomic writes nothing. The emulator does the same, and says so once a kernel (outside_lds)."""
    inside = lanes & (addr >= 0) & (addr + size <= ex.lds.shape[1])
    if (inside != lanes).any():
        outside_lds(ex)
    return inside


def outside_lds(ex) -> None:
    say_once(f"{ex.kernel}: LDS accesses outside the workgroup's {ex.lds.shape[1]} bytes of LDS read 0 and write "
             "nothing, as on the hardware")


def _ds(kind: str, size: int, two: bool, stride64: bool, what: str, ops: list[Operand], mods: dict):
    scale = size * (64 if stride64 else 1)
    offs = [int(mods.get("offset0", "0"), 0) * scale, int(mods.get("offset1", "0"), 0) * scale] if two else [
        _offset(mods)]
    signed = what in ("i8", "i16", "d16_i8", "d16_hi_i8")
    hi = "hi" in what
    if kind == "load":
        dst, addr_op = ops[0], ops[1]
    else:
        addr_op, datas = ops[0], ops[1:]

    def ds(ex, g) -> None:
        w = ex.w
        lanes = w.exec_mask(g)
        base = _lds_addr(ex, addr_op, 0, g)
        grp = np.broadcast_to(ex.group[g][:, None], lanes.shape)
        for k, off in enumerate(offs):
            addr = base + off
            inside = lds_inside(ex, lanes, addr, size)
            idx = np.where(inside, addr, 0)[..., None] + np.arange(size)
            if kind == "load":
                raw = ex.lds[grp[..., None], idx]
                raw = np.where(inside[..., None], raw, 0).astype(np.uint8)
                target = Operand("v", dst.index + k * max(size // 4, 1), 1, text="")
                _to_vgprs(w, target, g, raw, lanes, size, signed, what, hi)
            else:
                raw = _from_vgprs(w, datas[k], g, size, hi)
                wi, li = np.nonzero(inside)
                ex.lds[grp[wi, li][:, None], idx[wi, li]] = raw[wi, li]
    return ds


def _lanes(name: str, ops: list[Operand], mods: dict, offset: int):
    """ds_swizzle_b32 (lanes within groups by the offset's pattern), ds_bpermute (read lane addr/4),
    ds_permute (write to lane addr/4): data moves between lanes without touching LDS."""
    dst, a_op = ops[0], ops[1]
    d_op = ops[2] if len(ops) > 2 else None

    def lanes_op(ex, g) -> None:
        w = ex.w
        active = w.exec_mask(g)
        n = len(w.pc[g])
        if name == "ds_swizzle_b32":
            src = np.broadcast_to(w.read(a_op, "u32", g), (n, w.lanes))
            sel = swizzle_lanes(offset, w.lanes)
            out = np.where(active[:, sel], src[:, sel], 0).astype(np.uint32)
            w.write(dst, "u32", g, out, active)
            return
        addr = (np.broadcast_to(w.read(a_op, "u32", g), (n, w.lanes)).astype(np.int64) + offset) // 4 % w.lanes
        data = np.broadcast_to(w.read(d_op, "u32", g), (n, w.lanes))
        rows = np.arange(n)[:, None]
        if name == "ds_bpermute_b32":
            out = np.where(active[rows, addr], data[rows, addr], 0).astype(np.uint32)
        else:
            out = np.zeros((n, w.lanes), np.uint32)
            for lane in range(w.lanes):  # later lanes win a shared destination
                tgt = addr[:, lane]
                ok = active[:, lane]
                out[np.arange(n)[ok], tgt[ok]] = data[ok, lane]
        w.write(dst, "u32", g, out, active)
    return lanes_op


# ds_swizzle_b32's offset (offset1:offset0) as the ISA guides' DS_SWIZZLE_B32 decodes it (LLVM's names for the modes,
# SIDefines.h Swizzle): a mode by its range of offsets, then its fields
SWIZZLE_FFT = 0xE000  # from here up: FFT decomposition (FFT_MODE_ENC)
SWIZZLE_ROTATE = 0xC000  # from here to FFT's: rotate (ROTATE_MODE_ENC)
# offset[15], below rotate's offsets: QDMode, full sharing within each 4 lanes (QUAD_PERM_ENC); clear: bit-masks mode,
# limited sharing within 32 lanes (BITMASK_PERM_ENC)
SWIZZLE_QDMODE = 0x8000
SWIZZLE_FIELD = 0x1F  # each mask and count is 5 bits; offset[4:0] is the and mask, or the lanes' bits kept
SWIZZLE_OR_SHIFT, SWIZZLE_XOR_SHIFT = 5, 10  # bit-masks mode: the or mask offset[9:5], the xor mask offset[14:10]
SWIZZLE_ROTATE_SHIFT, SWIZZLE_ROTATE_RIGHT = 5, 10  # rotate: by offset[9:5] lanes, to the right if offset[10]
QUAD, QUAD_LANE_BITS = 4, 2  # QDMode: offset[2i+1:2i] is the source of each quad's lane i
LANE_BITS = 5  # every mode moves lanes within groups of 32: a lane's low 5 bits
GROUP_LANE = (1 << LANE_BITS) - 1  # a lane's place in its group


def swizzle_lanes(offset: int, lanes: int) -> np.ndarray:
    """The source lane of each lane for a ds_swizzle offset, as the ISA's DS_SWIZZLE_B32 defines it, within
    groups of 32 lanes: FFT (the lane's 5 bits reversed, shifted right by the mask's bit count, with the mask's bits
    of the lane), rotate (by offset[9:5] lanes, right if offset[10], the bits of mask offset[4:0] kept), QDMode
    (offset[7:0] picks within each 4), else bit masks (and offset[4:0], or [9:5], xor [14:10])."""
    lane = np.arange(lanes)
    low, top = lane & GROUP_LANE, lane & ~GROUP_LANE
    mask = offset & SWIZZLE_FIELD
    if offset >= SWIZZLE_FFT:
        reverse = sum(((low >> i) & 1) << (LANE_BITS - 1 - i) for i in range(LANE_BITS))
        return top | (reverse >> mask.bit_count()) | (low & mask)
    if offset >= SWIZZLE_ROTATE:
        by = offset >> SWIZZLE_ROTATE_SHIFT & SWIZZLE_FIELD
        rotate = -by if offset >> SWIZZLE_ROTATE_RIGHT & 1 else by
        return top | (low & mask) | ((low + rotate) & ~mask & GROUP_LANE)
    if offset & SWIZZLE_QDMODE:
        picks = np.asarray([(offset >> QUAD_LANE_BITS * i) & (QUAD - 1) for i in range(QUAD)])
        return lane - lane % QUAD + picks[lane % QUAD]
    or_mask, xor_mask = offset >> SWIZZLE_OR_SHIFT & SWIZZLE_FIELD, offset >> SWIZZLE_XOR_SHIFT & SWIZZLE_FIELD
    return top | (((low & mask) | or_mask) ^ xor_mask)
