"""The C that every instruction's code is made of: an operand read as a type (a lane's VGPRs, SGPRs, the special
scalars, constants), a result stored to a destination, lane masks in SGPRs, and the loop over a wave's lanes. The
base of the Emitter's parts (codegen.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from usergpu.emu.amd.exec.helpers import DTYPES
from usergpu.emu.amd.exec.native.cexpr import Untranslatable, ctype, short
from usergpu.emu.amd.exec.operands import Operand, const_bits
from usergpu.emu.amd.exec.waves import NULL, VCC, width

if TYPE_CHECKING:
    from usergpu.emu.amd.exec.native.codegen import Kernel


class Operands:
    """C for the operands of one kernel's instructions."""

    def __init__(self, kernel: Kernel):
        self.k, self.L = kernel, kernel.lanes
        self.consts: list[str] = []  # the float constants of the instruction being translated

    def read(self, op: Operand, typ: str, lane: bool = True) -> str:
        """C for an operand's value as typ (VOP neg/abs applied to floats), per lane or per wave."""
        if typ == "bf16" or typ not in DTYPES:
            raise Untranslatable(typ)
        bits = width(typ)
        if bits == 8:
            raise Untranslatable("an 8-bit operand")
        ubits = 64 if bits == 64 else max(bits, 16)
        if op.kind == "v":
            if not lane:
                raise Untranslatable("a VGPR in a scalar operation")
            i = op.index
            raw = (f"((uint64_t)VR({i})[lane] | (uint64_t)VR({i + 1})[lane] << 32)" if bits == 64 else
                   f"((uint16_t)(VR({i})[lane] >> {16 * (op.half or 0)}))" if bits == 16 else f"VR({i})[lane]")
        elif op.kind == "s":
            i = op.index
            half = f"((uint16_t)(SR({i}) >> {16 * (op.half or 0)}))"  # a 16-bit source's half (op_sel)
            raw = "0" if i == NULL else (f"((uint64_t)SR({i}) | (uint64_t)SR({i + 1}) << 32)" if bits == 64 else
                                         half if bits == 16 else f"SR({i})")
        elif op.kind == "special":
            raw = {"scc": "SCC", "execz": "(EXECM == 0)", "vccz": f"({self.lane_mask(VCC)} == 0)"}[op.value]
        elif op.kind in ("int", "float", "lit", "aperture"):
            raw = f"{const_bits(op, typ)}ULL"
            if typ[0] == "f":
                name = f"k{len(self.consts)}_"  # made opaque once, before the instruction's lane loop
                self.consts.append(f"const uint{ubits}_t {name} = OPAQUE(uint{ubits}_t, {raw});")
                raw = name
        else:
            raise Untranslatable(f"operand {op.text}")
        dt = np.dtype(DTYPES[typ])
        val = f"BITCAST({ctype(dt)}, uint{ubits}_t, (uint{ubits}_t)({raw}))"
        if dt.kind == "f":
            if op.abs:
                val = f"h_abs_{short(dt)}({val})"
            if op.neg:
                val = f"h_neg_{short(dt)}({val})"
        return val

    def lane_mask(self, index: int) -> str:
        """A lane mask in SGPRs (one register per 32 lanes) as a uint64_t."""
        if index == NULL:
            return "0ull"
        pair = f"((uint64_t)SR({index}) | (uint64_t)SR({index + 1}) << 32)"
        return pair if self.L == 64 else f"(uint64_t)SR({index})"

    def set_mask(self, index: int, value: str) -> str:
        if index == NULL:
            return ""
        if self.L == 64:
            return f"SR({index}) = (uint32_t)({value}); SR({index + 1}) = (uint32_t)(({value}) >> 32);"
        return f"SR({index}) = (uint32_t)({value});"

    def write(self, op: Operand, typ: str, value: str, lane: bool = True, cond: str = "ON") -> str:
        """C storing value (a C expression of typ's dtype) into op: per lane where cond holds, or per wave."""
        bits = width(typ)
        dt = np.dtype(DTYPES[typ])
        ubits = bits if bits in (16, 32, 64) else None
        if ubits is None:
            raise Untranslatable(f"a {bits}-bit destination")
        raw = f"BITCAST(uint{ubits}_t, {ctype(dt)}, {value})"
        i = op.index
        if op.kind == "s":
            if i == NULL:
                return f"(void)({value});"
            if bits == 64:
                return f"{{ uint64_t r_ = {raw}; SR({i}) = (uint32_t)r_; SR({i + 1}) = (uint32_t)(r_ >> 32); }}"
            return f"SR({i}) = (uint32_t){raw};"
        if op.kind != "v" or not lane:
            raise Untranslatable(f"destination {op.text}")
        if bits == 64:
            return (f"{{ uint64_t r_ = {raw}; if ({cond}) {{ VR({i})[lane] = (uint32_t)r_; "
                    f"VR({i + 1})[lane] = (uint32_t)(r_ >> 32); }} }}")
        if bits == 16 and not op.zero_high:
            sh = 16 * (op.half or 0)
            return (f"{{ uint32_t o_ = VR({i})[lane]; uint32_t n_ = (o_ & ~(0xFFFFu << {sh})) | "
                    f"((uint32_t){raw} << {sh}); VR({i})[lane] = ({cond}) ? n_ : o_; }}")
        return f"{{ uint32_t n_ = {raw}; VR({i})[lane] = ({cond}) ? n_ : VR({i})[lane]; }}"

    def lanes(self, body: str, pre: str = "") -> str:
        return f"{{ const uint64_t em = EXECM; {pre}\n  for (int lane = 0; lane < L; lane++) {{ {body} }} }}"
