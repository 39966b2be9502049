"""One kernel of a code object: its metadata, its decoded descriptor and where its code lies."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from usergpu.autogen.amdhsa import kernel_descriptor_t
from usergpu.errors import CodeObjectError
from usergpu.isa.amd.codeobj import kd as kdesc
from usergpu.isa.amd.codeobj.target import packed_workitem_ids
from usergpu.isa.elf import Section, Symbol


@dataclass(frozen=True)
class Arg:
    """One kernarg of the metadata's .args (hidden ones included; name and type_name need -cl-kernel-arg-info)."""

    offset: int
    size: int
    value_kind: str
    address_space: str | None
    type_name: str | None
    name: str | None
    meta: dict[str, Any]  # the whole map, for the rarer keys (.is_const, .pointee_align, ...)


@dataclass(frozen=True)
class Kernel:
    name: str
    symbol: str  # the descriptor symbol, '<name>.kd'
    metadata: dict[str, Any]  # this kernel's map from amdhsa.kernels
    args: list[Arg]
    descriptor: kernel_descriptor_t
    descriptor_addr: int
    fields: dict[str, int]  # every descriptor field by LLVM name (kd.decode_fields)
    entry: int  # code address: descriptor address + KERNEL_CODE_ENTRY_BYTE_OFFSET
    code: bytes  # entry .. entry + size of the kernel's function symbol
    wavefront_size: int
    user_sgprs: list[tuple[str, int, int]]  # (name, first SGPR, count) in load order
    user_sgpr_count: int  # COMPUTE_PGM_RSRC2 USER_SGPR_COUNT; LLVM pads it on gfx11 (to 16 with the system SGPRs)
    system_sgprs: list[tuple[str, int, int]]
    workitem_id_dims: int  # 1..3 work-item ID VGPRs set up (ENABLE_VGPR_WORKITEM_ID + 1)
    packed_workitem_ids: bool  # all in v0, 10 bits apart (gfx90a-class, gfx11+), else v0, v1, v2
    kernarg_size: int
    kernarg_align: int
    group_segment_fixed_size: int
    private_segment_fixed_size: int
    uses_dynamic_stack: bool
    max_flat_workgroup_size: int
    sgpr_count: int  # exact counts from the metadata
    vgpr_count: int
    agpr_count: int
    vgpr_alloc: int  # registers the descriptor reserves (granulated rsrc1 fields, see kd.vgpr_alloc)
    sgpr_alloc: int | None
    accum_offset: int | None  # gfx90a-class only

    @property
    def code_size(self) -> int:
        return len(self.code)

    @property
    def wave32(self) -> bool:
        return self.wavefront_size == 32


def _meta_int(meta: dict[str, Any], key: str, name: str, default: int | None = None) -> int:
    v = meta.get(key, default)
    if not isinstance(v, int):
        raise CodeObjectError(f"kernel '{name}': metadata {key} is {v!r}, not an integer")
    return v


def _args(meta: dict[str, Any], name: str) -> list[Arg]:
    raw = meta.get(".args", [])
    if not isinstance(raw, list) or not all(isinstance(a, dict) for a in raw):
        raise CodeObjectError(f"kernel '{name}': metadata .args is not a list of maps")
    return [Arg(_meta_int(a, ".offset", name), _meta_int(a, ".size", name), str(a.get(".value_kind")),
                a.get(".address_space"), a.get(".type_name"), a.get(".name"), a) for a in raw]


def _locate(sections: list[Section], addr: int, size: int) -> Section | None:
    return next((s for s in sections if s.contains(addr, size) and s.data.nbytes == s.size), None)


def build_kernel(meta: dict[str, Any], arch: str, sections: list[Section], symbols: list[Symbol]) -> Kernel:
    """A Kernel from its metadata map, the descriptor its .symbol names and the function symbol at its entry."""
    name, symname = meta[".name"], meta[".symbol"]
    sym = next((s for s in symbols if s.name == symname), None)
    if sym is None:
        raise CodeObjectError(f"kernel '{name}': descriptor symbol '{symname}' is not in the symbol table")
    sec = _locate(sections, sym.value, kdesc.KD_SIZE)
    if sec is None:
        raise CodeObjectError(f"kernel '{name}': descriptor '{symname}' at address {sym.value:#x} "
                              f"({kdesc.KD_SIZE} bytes) lies outside every section in the file")
    at = sym.value - sec.addr
    desc = kernel_descriptor_t.from_buffer_copy(sec.data[at:at + kdesc.KD_SIZE])
    fields = kdesc.decode_fields(desc, arch)
    entry = sym.value + desc.kernel_code_entry_byte_offset
    func = next((s for s in symbols if s.value == entry and s.type == "FUNC" and s.name == name),
                next((s for s in symbols if s.value == entry and s.type == "FUNC"), None))
    if func is None:
        raise CodeObjectError(f"kernel '{name}': no function symbol at its code entry {entry:#x} "
                              f"(descriptor '{symname}' in '{sec.name}' at file offset {sec.offset + at:#x})")
    text = _locate(sections, entry, func.size)
    if text is None:
        raise CodeObjectError(f"kernel '{name}': code at {entry:#x} ({func.size} bytes) lies outside every section")
    wave32 = bool(fields["KERNEL_CODE_PROPERTY_ENABLE_WAVEFRONT_SIZE32"])
    users = kdesc.user_sgprs(fields)
    n_user = kdesc.user_sgpr_count(fields)
    return Kernel(
        name=name, symbol=symname, metadata=meta, args=_args(meta, name), descriptor=desc, descriptor_addr=sym.value,
        fields=fields, entry=entry, code=bytes(text.data[entry - text.addr:entry - text.addr + func.size]),
        wavefront_size=32 if wave32 else 64, user_sgprs=users, user_sgpr_count=n_user,
        system_sgprs=kdesc.system_sgprs(fields, n_user, arch),
        workitem_id_dims=min(fields["COMPUTE_PGM_RSRC2_ENABLE_VGPR_WORKITEM_ID"], 2) + 1,
        packed_workitem_ids=packed_workitem_ids(arch),
        kernarg_size=_meta_int(meta, ".kernarg_segment_size", name),
        kernarg_align=_meta_int(meta, ".kernarg_segment_align", name),
        group_segment_fixed_size=_meta_int(meta, ".group_segment_fixed_size", name),
        private_segment_fixed_size=_meta_int(meta, ".private_segment_fixed_size", name),
        uses_dynamic_stack=bool(meta.get(".uses_dynamic_stack", False)),
        max_flat_workgroup_size=_meta_int(meta, ".max_flat_workgroup_size", name),
        sgpr_count=_meta_int(meta, ".sgpr_count", name), vgpr_count=_meta_int(meta, ".vgpr_count", name),
        agpr_count=_meta_int(meta, ".agpr_count", name, 0),
        vgpr_alloc=kdesc.vgpr_alloc(fields, arch, wave32), sgpr_alloc=kdesc.sgpr_alloc(fields, arch),
        accum_offset=kdesc.accum_offset(fields),
    )
