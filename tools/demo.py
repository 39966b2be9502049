"""usergpu demo: what this build can do on any machine. First the showcase — vector add, tiled matmul and an LDS
reduction compiled by clang-22 (and on a CDNA GPU an MFMA matmul on its matrix cores; CUDA C assembled by ptxas on
an NVIDIA device), run through the runtime on a device (the mock GPU by default, MOCKGPU_ARCH or MOCKGPU_NV_ARCH
picks its ISA), checked against numpy and timed by the GPU's timestamps, with a Chrome/Perfetto trace of the
launches — then the GPUs found and the showcase's vadd compiled for each ISA (or NVIDIA arch) usergpu knows."""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable
from pathlib import Path

from tabulate import tabulate

from usergpu.drivers.hal import HAL
from usergpu.isa import amd as isa
from usergpu.isa.amd.codeobj import compile_opencl, parse
from usergpu.runtime import spans as profile
from usergpu.tools import disasm, showcase

DEVICE = "MOCKKFD+AMD"
NV_ARCHS = ("sm_80", "sm_86", "sm_89", "sm_90", "sm_120")
TRACE = "usergpu-demo-trace.json"


def _dims(d: tuple[int, ...]) -> str:
    return "x".join(map(str, d))


def run(args: argparse.Namespace, hal: HAL, devices_cmd: Callable[[argparse.Namespace, HAL], int]) -> int:
    """The demo; 1 when a showcase kernel fails its check, else 0."""
    device = getattr(args, "dev", None) or DEVICE
    dev, results = showcase.run(device)
    label = f"{dev.name}:{dev.index} ({dev.arch})"
    print(f"== showcase on {label}: compiled by clang-22, run through the runtime, checked against numpy ==")
    rows = [[r.case.kernel, _dims(r.case.grid), _dims(r.case.block), f"{r.seconds * 1e6:.2f}" if r.ok else "-",
             "-" if r.lane_instructions is None else f"{r.lane_instructions:,}", r.check] for r in results]
    print(tabulate(rows, headers=["kernel", "grid", "block", "GPU time (µs)", "lane-instructions", "check"],
                   disable_numparse=True))
    print("(GPU time from the GPU's timestamps; lane-instructions from the same launch on the bare emulator)")
    path = getattr(args, "trace", None) or TRACE
    profile.write(path, profile.document([dev]))
    print(f"trace of {len(dev.spans())} kernels: {path} (open in ui.perfetto.dev or chrome://tracing)")

    print("\n== the GPUs found ==")
    devices_cmd(argparse.Namespace(json=False), hal)

    (nvidia_archs if showcase.nvidia(dev.arch) else amd_isas)(dev.arch)
    return 0 if all(r.ok for r in results) else 1


def amd_isas(device_arch: str) -> None:
    """The showcase's vadd for each AMD ISA the disassembler knows, and its listing for the device's."""
    print("\n== vadd compiled by clang-22 for each ISA, decoded by usergpu ==")
    kernels = {arch: parse(compile_opencl(showcase.SOURCE, arch)).kernels["vadd"] for arch in isa.ARCHS}
    print(tabulate([[arch, k.wavefront_size, k.sgpr_count, k.vgpr_count, k.code_size, len(isa.decode_all(k.code, arch))]
                    for arch, k in kernels.items()],
                   headers=["ISA", "wave size", "sgprs", "vgprs", "code bytes", "instructions"]))
    arch = device_arch if device_arch in kernels else isa.ARCHS[0]
    print(f"\nvadd for {arch}:")
    for inst in disasm.listing(kernels[arch].code, arch, kernels[arch].entry):
        print(f"  {inst['pc']:#010x}: {inst['bytes']:<24} {inst['text']}")


def nvidia_archs(device_arch: str) -> None:
    """The showcase's vadd assembled by ptxas for each NVIDIA arch the runtime drives, and nvdisasm's SASS of it for
    the device's."""
    from usergpu.emu.nv.ptx.launch import module_of
    from usergpu.tools.disasm_nv import cubin_doc

    print("\n== vadd compiled by clang-22 to PTX for each arch, assembled by ptxas, read by usergpu ==")
    docs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for arch in NV_ARCHS:
            path = Path(tmp) / f"showcase-{arch}.cubin"
            path.write_bytes(showcase.code_object(arch))
            docs[arch] = (cubin_doc(str(path), path.read_bytes()), module_of(path.read_bytes()))
    rows = []
    for arch, (doc, module) in docs.items():
        k = next(k for k in doc["kernels"] if k["name"] == "vadd")
        rows.append([arch, len(module.kernels["vadd"].body), k["registers"], k["code_size"], k["param_offset"]])
    print(tabulate(rows, headers=["arch", "PTX instructions", "registers", "SASS bytes", "params at (cbank 0)"]))
    doc = docs.get(device_arch, docs["sm_90"])[0]
    sass = next(k for k in doc["kernels"] if k["name"] == "vadd")["sass"]
    print(f"\nvadd for {doc['arch']} (SASS, nvdisasm):")
    for line in sass or [doc["sass_note"] or "no SASS"]:
        print(f"  {line.strip()}")
