"""usergpu disasm for NVIDIA code: a PTX module's kernels (parameters, shared and local declarations, launch
bounds), or a cubin's kernels with their .nv.info attributes and, when nvdisasm is installed, their SASS."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
from pathlib import Path

from usergpu.errors import CodeObjectError, Error, ToolchainError
from usergpu.isa.nv.compile import nvidia_tool

EM_CUDA = 190
ARCH = re.compile(r"sm_\d+[af]?$")
_PTX = re.compile(rb"^\s*\.version\s+\d", re.M)
_BANNER = re.compile(r"^//-+ (\S+)\s+-+$", re.M)  # nvdisasm's line before each section it lists
NVDISASM_TIMEOUT_S = 120


def kind(path: str, data: bytes) -> str | None:
    """'cubin', 'ptx', or None for anything else (an AMDGPU code object, or not a code object at all)."""
    if data[:4] == b"\x7fELF":
        return "cubin" if int.from_bytes(data[18:20], "little") == EM_CUDA else None
    return "ptx" if Path(path).suffix == ".ptx" or _PTX.search(data[:4096]) else None


def run(path: str, data: bytes, what: str, only: str | None, arch: str | None, as_json: bool) -> int:
    doc = cubin_doc(path, data) if what == "cubin" else ptx_doc(path, data)
    if arch and arch != doc["arch"]:
        raise Error(f"{path} is {doc['arch']} code, not --arch {arch} (leave --arch out for a code object)")
    if only:
        names = [k["name"] for k in doc["kernels"]]
        if only not in names:
            raise Error(f"no kernel {only!r} in {path} (kernels: {', '.join(sorted(names)) or 'none'})")
        doc["kernels"] = [k for k in doc["kernels"] if k["name"] == only]
    if as_json:
        print(json.dumps(doc, indent=2))
    else:
        (print_cubin if what == "cubin" else print_ptx)(doc)
    return 0


def _jsonable(value):
    if dataclasses.is_dataclass(value):
        return dataclasses.asdict(value)
    if isinstance(value, bytes):
        return value.hex()
    return list(value) if isinstance(value, tuple) else value


def ptx_doc(path: str, data: bytes) -> dict:
    from usergpu.isa.nv.ptx import parse

    try:
        module = parse(data)
    except CodeObjectError as e:
        raise CodeObjectError(f"{path}: not a PTX module: {e}") from None

    def variables(vs) -> list[dict]:
        return [{"name": v.name, "space": v.space, "type": v.type, "size": v.size, "align": v.align,
                 "extern": v.extern} for v in vs]

    return {"kind": "ptx", "arch": module.arch, "target": module.target, "version": ".".join(map(str, module.version)),
            "address_size": module.address_size, "variables": variables(module.variables.values()),
            "kernels": [{"name": f.name, "maxntid": _jsonable(f.maxntid), "reqntid": _jsonable(f.reqntid),
                         "param_size": f.param_size,
                         "params": [{"name": p.name, "type": p.type, "size": p.size, "align": p.align,
                                     "offset": p.offset, "pointer": p.pointer} for p in f.params],
                         "shared": variables(f.shared), "local": variables(f.local)}
                        for f in module.kernels.values()]}


def cubin_doc(path: str, data: bytes) -> dict:
    from usergpu.isa.nv.cubin import parse

    try:
        co = parse(data)
    except CodeObjectError as e:
        raise CodeObjectError(f"{path}: not a cubin: {e}") from None
    sass, note = _sass(path)
    kernels = []
    for k in co.kernels.values():
        bank = k.param_cbank
        kernels.append({
            "name": k.name, "code_size": k.symbol.size, "text_size": len(k.code), "registers": k.regcount,
            "frame_size": k.frame_size, "min_stack_size": k.min_stack_size, "max_stack_size": k.max_stack_size,
            "shared_size": k.shared_size, "max_threads": _jsonable(k.max_threads), "reqntid": _jsonable(k.reqntid),
            "param_offset": bank.offset if bank else None, "param_size": bank.size if bank else None,
            "params": [{"ordinal": p.ordinal, "offset": p.offset, "size": p.size} for p in k.params],
            "attributes": [{"section": a.section, "name": a.name, "code": a.code, "format": a.format_name,
                            "value": _jsonable(a.value)} for a in k.attributes],
            "relocations": [{"offset": r.offset, "type": r.name, "symbol": r.symbol, "addend": r.addend}
                            for r in k.relocations],
            "sass": sass.get(f".text.{k.name}") if sass is not None else None})
    return {"kind": "cubin", "arch": co.arch, "abi_version": co.abi_version, "flags": co.flags,
            "has_ptx": co.ptx is not None, "sass_note": note, "kernels": kernels}


def _sass(path: str) -> tuple[dict[str, list[str]] | None, str | None]:
    """nvdisasm's listing of the code sections (section name -> lines), or None and why not."""
    try:
        tool = nvidia_tool("bin/nvdisasm")
    except ToolchainError as e:
        return None, f"no SASS: {e}"
    try:
        res = subprocess.run([str(tool), "-c", path], capture_output=True, text=True, timeout=NVDISASM_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise Error(f"nvdisasm took longer than {NVDISASM_TIMEOUT_S} s on {path}") from None
    if res.returncode:
        raise Error(f"nvdisasm could not disassemble {path}: {(res.stderr or res.stdout).strip()}")
    parts = _BANNER.split(res.stdout)
    return {name: [line for line in body.splitlines() if line.strip()]
            for name, body in zip(parts[1::2], parts[2::2], strict=True)}, None


def _dims(d) -> str:
    return "x".join(map(str, d)) if d else "-"


def print_ptx(doc: dict) -> None:
    from tabulate import tabulate

    print(f"PTX {doc['version']} module for {', '.join(doc['target'])} ({doc['address_size']}-bit addresses)")
    if doc["variables"]:
        print(tabulate([[v["space"], v["name"], v["type"], v["size"], v["align"], "extern" if v["extern"] else ""]
                        for v in doc["variables"]], headers=["space", "variable", "type", "size", "align", ""]))
    for k in doc["kernels"]:
        print(f"\nkernel {k['name']}: {k['param_size']} bytes of parameters, maxntid {_dims(k['maxntid'])}, "
              f"reqntid {_dims(k['reqntid'])}")
        if k["params"]:
            print(tabulate([[p["offset"], p["size"], p["align"], p["type"] + (" .ptr" if p["pointer"] is not None
                                                                              else ""), p["name"]]
                            for p in k["params"]], headers=["offset", "size", "align", "type", "parameter"]))
        for v in k["shared"] + k["local"]:
            print(f"  .{v['space']} {v['name']}: {v['size']} bytes, align {v['align']}"
                  + (" (extern)" if v["extern"] else ""))


def print_cubin(doc: dict) -> None:
    from tabulate import tabulate

    print(f"cubin for {doc['arch']} (CUDA ELF ABI {doc['abi_version']}, e_flags {doc['flags']:#x}"
          f"{', with its PTX' if doc['has_ptx'] else ''})")
    for k in doc["kernels"]:
        print(f"\nkernel {k['name']}")
        facts = [["code", f"{k['code_size']} bytes ({k['text_size']} with the device functions after it)"],
                 ["registers", k["registers"]], ["frame / min stack", f"{k['frame_size']} / {k['min_stack_size']}"],
                 ["shared memory", k["shared_size"]], ["max threads", _dims(k["max_threads"])],
                 ["reqntid", _dims(k["reqntid"])],
                 ["parameters", f"{k['param_size']} bytes at c[0x0][{k['param_offset']:#x}]"
                  if k["param_offset"] is not None else "-"]]
        print(tabulate(facts, tablefmt="plain"))
        if k["params"]:
            print(tabulate([[p["ordinal"], p["offset"], p["size"]] for p in k["params"]],
                           headers=["parameter", "offset", "size"]))
        print(tabulate([[a["section"], a["name"], a["format"], _show(a["value"])] for a in k["attributes"]],
                       headers=["section", "attribute", "format", "value"]))
        if k["relocations"]:
            print(tabulate([[f"{r['offset']:#x}", r["type"], r["symbol"], r["addend"]] for r in k["relocations"]],
                           headers=["offset", "relocation", "symbol", "addend"]))
        if k["sass"]:
            print("SASS (nvdisasm):")
        for line in k["sass"] or []:
            print(f"  {line}")
    if doc["sass_note"]:
        print(doc["sass_note"])


def _show(value) -> str:
    if isinstance(value, dict):
        return " ".join(f"{k}={v}" for k, v in value.items())
    return "" if value is None else str(value)
