"""usergpu disasm: a code object's kernels (metadata summary, then each instruction at its address), or raw bytes.
NVIDIA files (a cubin, a PTX module) go to disasm_nv."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

from usergpu.errors import CodeObjectError, Error
from usergpu.isa import amd as isa
from usergpu.tools.common import BadArgument, arch, input_file

if TYPE_CHECKING:
    from usergpu.isa.amd.codeobj import Kernel

_SEPARATORS = re.compile(r"0x|[\s,]")


def hex_bytes(text: str) -> bytes:
    """Instruction bytes written in hex: "7e 00 82 be", "7e0082be" or "0x7e,0x00,0x82,0xbe" (argparse type)."""
    digits = _SEPARATORS.sub("", text)
    bad = re.search(r"[^0-9a-fA-F]", digits)
    if bad:
        raise BadArgument(f"{text!r} is not hex bytes ({bad.group(0)!r} is not a hex digit; e.g. \"7e 00 82 be\")")
    if len(digits) % 2:
        raise BadArgument(f"{text!r} has an odd number of hex digits ({len(digits)}): give whole bytes")
    if not digits:
        raise BadArgument("no bytes given (e.g. \"7e 00 82 be\")")
    return bytes.fromhex(digits)


def any_arch(text: str) -> str:
    """An AMD ISA the disassembler knows, or an NVIDIA one (sm_90, sm_90a: what a cubin or PTX module must be)."""
    from usergpu.tools.disasm_nv import ARCH

    return text if ARCH.match(text) else arch(text)


def add_parser(sub, help: str) -> None:
    p = sub.add_parser("disasm", help=help, description=help)
    p.add_argument("file", nargs="?", type=input_file,
                   help="an AMDGPU ELF code object, a cubin, or a PTX module (.ptx)")
    p.add_argument("--kernel", help="only this kernel")
    p.add_argument("--arch", type=any_arch, help=f"the ISA of --hex bytes ({', '.join(isa.ARCHS)}); with a FILE, "
                   "the arch it must be (gfx..., sm_...)")
    p.add_argument("--hex", type=hex_bytes, help='raw instruction bytes, e.g. "7e 00 82 be"')
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(run=lambda args, hal: run(args))


def listing(code: bytes, arch: str, base: int) -> list[dict]:
    """Each instruction: address, bytes (hex) and text."""
    return [{"pc": base + i.offset, "bytes": code[i.offset : i.offset + i.size].hex(), "text": i.text}
            for i in isa.decode_all(code, arch)]


def summary(k: Kernel) -> dict:
    return {
        "name": k.name, "entry": k.entry, "code_size": k.code_size, "wavefront_size": k.wavefront_size,
        "sgpr_count": k.sgpr_count, "vgpr_count": k.vgpr_count, "agpr_count": k.agpr_count,
        "kernarg_size": k.kernarg_size, "group_segment_fixed_size": k.group_segment_fixed_size,
        "private_segment_fixed_size": k.private_segment_fixed_size, "uses_dynamic_stack": k.uses_dynamic_stack,
        "max_flat_workgroup_size": k.max_flat_workgroup_size,
        "user_sgprs": [{"name": n, "first": f, "count": c} for n, f, c in k.user_sgprs],
        "args": [{"offset": a.offset, "size": a.size, "value_kind": a.value_kind, "address_space": a.address_space,
                  "type_name": a.type_name, "name": a.name} for a in k.args],
    }


def run(args: argparse.Namespace) -> int:
    if args.hex is not None:
        if args.file or args.kernel:
            raise Error("--hex disassembles raw bytes: give a code object FILE (and --kernel) or --hex, not both")
        if not args.arch:
            raise Error(f"--hex needs --arch ({', '.join(isa.ARCHS)})")
        if args.arch not in isa.ARCHS:
            raise Error(f"--hex disassembles AMD instruction bytes ({', '.join(isa.ARCHS)}): for {args.arch} SASS, "
                        "give a cubin FILE")
        _print({"arch": args.arch, "instructions": listing(args.hex, args.arch, 0)}, args.json)
        return 0
    if not args.file:
        raise Error("give a code object FILE, or --arch with --hex")
    data = Path(args.file).read_bytes()
    from usergpu.tools import disasm_nv

    if nv := disasm_nv.kind(args.file, data):
        return disasm_nv.run(args.file, data, nv, args.kernel, args.arch, args.json)
    from usergpu.isa.amd.codeobj import parse  # the ELF and metadata readers: only for a file

    try:
        co = parse(data)
    except CodeObjectError as e:
        raise CodeObjectError(f"{args.file}: not an AMDGPU code object: {e}") from None
    if args.arch and args.arch != co.arch:
        raise Error(f"{args.file} is {co.arch} code, not --arch {args.arch} (leave --arch out for a code object)")
    names = [args.kernel] if args.kernel else sorted(co.kernels)
    missing = [n for n in names if n not in co.kernels]
    if missing:
        raise Error(f"no kernel {missing[0]!r} in {args.file} (kernels: {', '.join(sorted(co.kernels)) or 'none'})")
    doc = {"arch": co.arch, "target": co.target, "code_object_version": co.version,
           "kernels": [{**summary(co.kernels[n]), "instructions": listing(co.kernels[n].code, co.arch,
                                                                          co.kernels[n].entry)} for n in names]}
    _print(doc, args.json)
    return 0


def _print(doc: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(doc, indent=2))
        return
    for k in doc.get("kernels", [doc]):
        if "name" in k:
            from tabulate import tabulate  # only a code object's listing has tables

            print(f"kernel {k['name']} ({doc['target']}, code object v{doc['code_object_version']})")
            facts = [["wavefront size", k["wavefront_size"]], ["sgprs / vgprs / agprs",
                      f"{k['sgpr_count']} / {k['vgpr_count']} / {k['agpr_count']}"],
                     ["kernarg size", k["kernarg_size"]], ["LDS (group segment)", k["group_segment_fixed_size"]],
                     ["scratch (private segment)", k["private_segment_fixed_size"]],
                     ["max workgroup size", k["max_flat_workgroup_size"]],
                     ["user SGPRs", ", ".join(f"{u['name']} s{u['first']}" for u in k["user_sgprs"])]]
            print(tabulate(facts, tablefmt="plain"))
            print(tabulate([[a["offset"], a["size"], a["value_kind"], a["address_space"] or "", a["type_name"] or "",
                             a["name"] or ""] for a in k["args"]],
                           headers=["offset", "size", "kind", "address space", "type", "name"]))
        for inst in k["instructions"]:
            print(f"  {inst['pc']:#010x}: {inst['bytes']:<24} {inst['text']}")
        print()
