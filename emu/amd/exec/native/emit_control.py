"""C for the instructions that move a wave's PC or stop it: the end of the program, a barrier (the wave waits
outside the C), branches (a goto to the target's label, or through the dispatch switch for a target outside the
kernel's instructions), and the PC read, set and swapped through SGPRs."""

from __future__ import annotations

from usergpu.emu.amd.exec.executor import BRANCH, _simm16
from usergpu.emu.amd.exec.native.emit_operands import Operands
from usergpu.emu.amd.exec.operands import Operand
from usergpu.emu.amd.exec.waves import VCC

# the control-flow instructions besides BRANCH's conditional and unconditional branches
CONTROL = ("s_endpgm", "s_barrier", "s_barrier_wait", "s_getpc_b64", "s_setpc_b64", "s_swappc_b64")


def label(off: int) -> str:
    return f"L_{off}" if off >= 0 else f"L_m{-off}"


class ControlFlow(Operands):
    """C for the control-flow instructions of CONTROL and BRANCH."""

    def control(self, name: str, ops: list[Operand], size: int, off: int) -> str:
        """The instruction of `size` bytes at offset off."""
        if name == "s_endpgm":
            return f"DONE[w] = 1; pc = {off + size}; goto out;"
        if name in ("s_barrier", "s_barrier_wait"):
            return f"WAITING[w] = 1; pc = {off + size}; goto out;"
        if name in BRANCH:
            target = off + 4 + 4 * _simm16(ops[0].value)
            cond = {"True": "1", "False": "0", "scc == 0": "SCC == 0", "scc != 0": "SCC != 0",
                    "vcc == 0": f"{self.lane_mask(VCC)} == 0", "vcc != 0": f"{self.lane_mask(VCC)} != 0",
                    "exec == 0": "EXECM == 0", "exec != 0": "EXECM != 0"}[BRANCH[name]]
            jump = f"goto {label(target)};" if target in self.k.insts else f"{{ pc = {target}; goto dispatch; }}"
            return f"if ({cond}) {jump}"
        pc = f"((int64_t)CODE_BASE + {off})"
        if name == "s_getpc_b64":
            return f"{{ uint64_t p_ = {pc} + {size}; SR({ops[0].index}) = (uint32_t)p_; " \
                   f"SR({ops[0].index + 1}) = (uint32_t)(p_ >> 32); }}"
        src = ops[-1]  # s_setpc_b64, s_swappc_b64
        back = ""
        if name == "s_swappc_b64":
            back = (f"SR({ops[0].index}) = (uint32_t)({pc} + {size}); "
                    f"SR({ops[0].index + 1}) = (uint32_t)(({pc} + {size}) >> 32); ")
        return (f"{{ int64_t t_ = (int64_t)((uint64_t)SR({src.index}) | (uint64_t)SR({src.index + 1}) << 32); "
                f"{back}pc = t_ - CODE_BASE; goto dispatch; }}")
