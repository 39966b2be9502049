"""A kernel as C: every instruction reachable from the entry, decoded once as the reference executor decodes it,
becomes a labelled block of one wave's code (lane loops over its VGPRs, EXEC as a mask); branches are gotos, a
computed jump goes through a switch on the PC. ALU results are the semantics table's expressions translated by
cexpr; an instruction this file has no C for becomes a block that hands the wave to the reference backend for that
one instruction (the same semantics, at its speed), so every kernel runs, and runs the same.

The Emitter is composed of one part per kind of instruction (emit_control, emit_scalar, emit_valu, emit_memory),
each over the operand reads and writes of emit_operands; this file walks the kernel and picks the part.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from usergpu.emu.amd.exec.executor import BRANCH, HWREG, NOOPS, _simm16, operands
from usergpu.emu.amd.exec.native.cexpr import Untranslatable
from usergpu.emu.amd.exec.native.emit_control import CONTROL, ControlFlow, label
from usergpu.emu.amd.exec.native.emit_memory import ACCESS, MemoryOps
from usergpu.emu.amd.exec.native.emit_scalar import ScalarALU
from usergpu.emu.amd.exec.native.emit_valu import VectorALU
from usergpu.errors import DecodeError
from usergpu.isa.amd import decode

# the entry points: the kernel walked from its entry, its C, and the fault access codes the executor reads back
__all__ = ["ACCESS", "Emitter", "Kernel", "discover"]

MAX_INSTRUCTIONS = 50_000  # a kernel larger than this is left to the reference backend past that point
STOPS = ("s_endpgm", "s_branch", "s_setpc_b64", "s_trap", "s_code_end")


@dataclass
class Kernel:
    """The instructions reachable from the entry: offset from the entry -> decoded instruction (None where the bytes
    do not decode)."""
    arch: str
    lanes: int
    insts: dict[int, object] = field(default_factory=dict)
    acc: int = 0  # the first AccVGPR's VGPR number (gfx90a+)

    def span(self) -> tuple[int, int]:
        """The bytes the instructions lie in, from the entry: [first, end)."""
        return min(self.insts), max(off + (inst.size if inst else 4) for off, inst in self.insts.items())


def discover(code, entry: int, arch: str, lanes: int, acc: int = 0) -> Kernel:
    """Walk the code from entry (an offset into code) along fall-through and branch targets."""
    k = Kernel(arch, lanes, acc=acc)
    todo = [0]
    while todo and len(k.insts) < MAX_INSTRUCTIONS:
        off = todo.pop()
        if off in k.insts or not 0 <= entry + off < len(code):
            continue
        try:
            inst = decode(code, arch, entry + off)
        except DecodeError:
            k.insts[off] = None
            continue
        k.insts[off] = inst
        name = inst.mnemonic.strip()
        if name in BRANCH:
            todo.append(off + 4 + 4 * _simm16(inst.fields.get("simm16", 0)))
        if name not in STOPS:
            todo.append(off + inst.size)
    return k


class Emitter(ControlFlow, ScalarALU, VectorALU, MemoryOps):
    """C for the instructions of one kernel (offsets relative to the code mapping's start)."""

    def indexed(self) -> set[int]:
        """The VALU instructions between an s_set_gpr_idx_on and its s_set_gpr_idx_off (gfx9's VGPR indexing mode,
        gpr_index.py), which the reference runs: LLVM brackets each indexed move in straight-line code."""
        out, on = set(), False
        for off in sorted(self.k.insts):
            name = self.k.insts[off].mnemonic.strip() if self.k.insts[off] else ""
            on = name == "s_set_gpr_idx_on" or on and name != "s_set_gpr_idx_off"
            if on and name.startswith("v_"):
                out.add(off)
        return out

    def source(self) -> str:
        offs = sorted(self.k.insts)
        blocks = []
        indexed = self.indexed()
        for n, off in enumerate(offs):
            inst = self.k.insts[off]
            code = None
            if inst is not None and off not in indexed:
                self.consts = []
                try:
                    code = self.instruction(inst, off)
                except Untranslatable:
                    code = None
                if code is not None and self.consts:
                    code = "{ " + " ".join(self.consts) + f" {code} }}"
            if code is None:
                blocks.append(f"{label(off)}: pc = {off}; goto fallback;")
                continue
            nxt = off + inst.size
            tail = "" if n + 1 < len(offs) and offs[n + 1] == nxt else f" pc = {nxt}; goto dispatch;"
            code = code.replace("PC_HERE", str(off))
            blocks.append(f"{label(off)}: if (steps >= limit) {{ pc = {off}; goto limit; }} steps++;\n  {code}{tail}")
        cases = " ".join(f"case {off}: goto {label(off)};" for off in offs)
        return (f"#define L {self.L}\n#include \"wave.h\"\nWAVE_BEGIN\n"
                f"dispatch: switch (pc) {{ {cases} default: goto fallback; }}\n" + "\n".join(blocks) + "\nWAVE_END\n")

    def instruction(self, inst, off: int) -> str | None:
        name = inst.mnemonic.strip()
        if NOOPS.match(name):
            return ";"
        if name in HWREG:
            return None
        ops, mods = operands(inst, self.k.acc)
        if ops is None:
            return None
        if name in CONTROL or name in BRANCH:
            return self.control(name, ops, inst.size, off)
        if name.startswith("s_") and not inst.family.startswith("SMEM"):
            return self.scalar(name, ops, mods)
        if name.startswith("v_") and "::" in name:
            return self.vopd(name, ops)
        if name.startswith("v_"):
            return self.vector(name, ops, mods)
        return self.memory(name, ops, mods, inst)

