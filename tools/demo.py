"""usergpu demo: what this build can do on any machine — the GPUs found, then a kernel compiled for each ISA the
disassembler knows, its metadata and its machine code."""

from __future__ import annotations

import argparse

from usergpu.drivers.hal import HAL
from usergpu.emu.amd import isa
from usergpu.emu.amd.codeobj import compile_opencl, parse
from usergpu.tools import disasm

VADD = """__kernel void vadd(__global const float* a, __global const float* b, __global float* c, int n) {
    int i = __builtin_amdgcn_workgroup_id_x() * 256 + __builtin_amdgcn_workitem_id_x();
    if (i < n) c[i] = a[i] + b[i];
}"""


def run(args: argparse.Namespace, hal: HAL, devices_cmd) -> int:
    devices_cmd(argparse.Namespace(json=False), hal)
    for arch in isa.ARCHS:
        co = parse(compile_opencl(VADD, arch))
        print(f"\n== vadd compiled for {arch} by clang-22, disassembled by usergpu ==")
        k = co.kernels["vadd"]
        disasm._print({"target": co.target, "code_object_version": co.version,
                       "kernels": [{**disasm.summary(k), "instructions": disasm.listing(k.code, arch, k.entry)}]},
                      as_json=False)
    return 0
