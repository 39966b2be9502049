"""Run a kernel's waves: each step takes the lowest PC among the waves that can run and executes that instruction
for every wave there at once (batched SIMT), so diverged waves meet again where their PCs do.

Instructions are decoded once (cached by PC, and across dispatches by their bytes) and compiled to a closure from the
semantics table; an instruction with no semantics raises UnsupportedInstruction naming it and its PC.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from usergpu.emu.amd.exec import cdna, gpr_index, memops, smem, valu
from usergpu.emu.amd.exec.operands import Operand, parse
from usergpu.emu.amd.exec.waves import Waves
from usergpu.emu.memory import Memory, MemoryFault
from usergpu.errors import DecodeError, GPUFault, GPUHang, UnsupportedInstruction
from usergpu.isa.amd import decode
from usergpu.isa.amd.codeobj.target import version

Step = Callable[["Executor", object], None]
CLOCK_EVERY = 256  # steps between looks at the clock when a run is time-sliced
NO_PC = np.iinfo(np.int64).max  # the PC a wave that is done or at a barrier counts as (no PC is this high)
NOOPS = re.compile(r"^s_(waitcnt.*|wait_.*|delay_alu|clause|nop|set_inst_prefetch_distance|inst_prefetch|sendmsg"
                   r"|sendmsghalt|sethalt|ttracedata|icache_inv|dcache_inv|barrier_signal|wait_event|"
                   r"prefetch.*|setprio|sleep|incperflevel|decperflevel|setkill|wakeup)$|^(buffer_gl[01]_inv|global_inv|"
                   r"global_wb|global_wbinv|buffer_wbl2|buffer_inv|v_nop|v_pipeflush|ds_nop|v_clrexcp)$")


@dataclass
class Compiled:
    text: str
    size: int
    run: Step


# compiled instructions shared by every dispatch, (arch, lanes, first AccVGPR, pc) -> (their bytes, Compiled): a
# suite launches its kernels again and again, and decoding and compiling each instruction anew cost a launch more
# than running it; a hit compares the bytes at pc (another kernel may sit there now). Steps take their executor
# at run time, so one serves every dispatch. _BY_BYTES holds the same by (arch, lanes, first AccVGPR, the
# instruction's bytes, its pc where its step holds it: AT_PC), for a kernel loaded at another address.
_STEPS: dict[tuple[str, int, int, int], tuple[bytes, Compiled]] = {}
_BY_BYTES: dict[tuple[str, int, int, bytes, int | None], Compiled] = {}
STEPS_KEPT = 1 << 14  # a suite's working set; about 2 KiB each


class Executor:
    BATCH_WAVES = 1024  # waves a dispatch runs together: numpy arrays of waves x lanes, long enough to pay
    def __init__(self, arch: str, code: bytes, code_base: int, memory: Memory, waves: Waves, groups: np.ndarray,
                 lds_bytes: int, scratch_bytes: int, kernel: str, budget: int, cache: dict | None = None):
        self.arch, self.code, self.code_base, self.mem, self.w = arch, code, code_base, memory, waves
        self.gen = version(arch)[0]
        self.group = groups  # wave -> workgroup number within the batch
        self.lds = np.zeros((int(groups.max()) + 1 if len(groups) else 1, max(lds_bytes, 4)), np.uint8)
        self.scratch = np.zeros((waves.n, waves.lanes, max(scratch_bytes, 4)), np.uint8)
        self.kernel, self.budget = kernel, budget
        # FLOAT_DENORM_MODE per type size (0 flush in and out, 1 flush out, 2 flush in, 3 keep), set by the
        # descriptor, changed by s_denorm_mode
        self.denorm = {32: 3, 16: 3, 64: 3}
        self.mode = 0  # the MODE register's other bits (FP_ROUND, IEEE, ...), as s_setreg last wrote them
        self._cache: dict[int, Compiled] = {} if cache is None else cache  # shared by a dispatch's batches
        self.trace: Callable[[Executor, Compiled, object, dict], None] | None = None
        # a profiler's hook: (executor, the waves that ran it, pc, instruction) after each step; w.pc is where
        # each of those waves goes next
        self.observe: Callable[[Executor, np.ndarray, int, Compiled], None] | None = None

    def park(self) -> None:
        """Done with its batch, kept for another of the same shape: let go of the dispatch's code and memory."""
        self.code = self.mem = self._cache = None

    def reuse(self, code: bytes, code_base: int, memory: Memory, kernel: str, budget: int, cache: dict) -> None:
        """A parked executor made ready for a batch of another dispatch (same arch and shape): waves, LDS and
        scratch zeroed as a new one's are."""
        self.code, self.code_base, self.mem, self.kernel, self.budget, self._cache = (code, code_base, memory, kernel,
                                                                                      budget, cache)
        self.w.reset()
        self.lds.fill(0)
        self.scratch.fill(0)
        self.mode = 0
        self.trace = self.observe = None

    # ---- the program ---------------------------------------------------------------------------------------
    def at(self, pc: int) -> Compiled:
        got = self._cache.get(pc)
        if got is None:
            got = self._cache[pc] = self._fetch(pc)
        return got

    def _fetch(self, pc: int) -> Compiled:
        """The instruction at pc, decoded and compiled — or as an earlier dispatch compiled the same bytes there."""
        off = pc - self.code_base
        if not 0 <= off < len(self.code):  # the PC left the mapping that holds the kernel's code
            raise MemoryFault(pc, "execute")
        key = (self.arch, self.w.lanes, self.w.acc, pc)
        known = _STEPS.get(key)
        if known is not None and self.code[off : off + len(known[0])] == known[0]:
            return known[1]
        try:
            inst = decode(self.code, self.arch, off)
        except DecodeError as e:
            raise UnsupportedInstruction(f"undecodable bytes {e.data.hex(' ')}", pc, self.kernel) from None
        raw = self.code[off : off + inst.size]
        shared = (*key[:3], raw, pc if inst.mnemonic.strip() in AT_PC else None)
        got = _BY_BYTES.get(shared)
        if got is None:
            got = Compiled(inst.text, inst.size, self._compile(inst))
            if len(_BY_BYTES) >= STEPS_KEPT:
                _BY_BYTES.clear()
            _BY_BYTES[shared] = got
        if len(_STEPS) >= STEPS_KEPT:
            _STEPS.clear()
        _STEPS[key] = (raw, got)
        return got

    def _compile(self, inst) -> Step:
        name = inst.mnemonic.strip()
        if NOOPS.match(name):
            return _nothing
        text = inst.text
        if name in HWREG:
            return _hwreg(name, inst)
        if name in gpr_index.SETTERS:
            return gpr_index.setter(name, inst)
        ops, mods = operands(inst, self.w.acc)
        step = self._build(name, ops, mods, inst)
        if step is not None and self.gen == 9 and name.startswith("v_"):
            return gpr_index.indexed(step, lambda ex, ops: ex._build(name, ops, mods, inst), ops, inst)
        if step is not None:
            return step

        def unsupported(ex: Executor, g) -> None:  # shared by its bytes: its pc is where the wave is, less its size
            raise UnsupportedInstruction(text, int(ex.w.pc[g][0]) - inst.size, ex.kernel)

        return unsupported

    def _build(self, name: str, ops: list[Operand] | None, mods: dict, inst) -> Step | None:
        builders = (cdna.step, smem.step, scalar_step, valu.step, memops.step) if self.gen == 9 else (
            scalar_step, valu.step, memops.step)
        for builder in builders if ops is not None else ():
            step = builder(self, name, ops, mods, inst)
            if step is not None:
                return step
        return None

    # ---- running -------------------------------------------------------------------------------------------
    def run(self, until: float | None = None) -> bool:
        """Run the waves to their end (True), or until the monotonic clock passes `until` (False: call again to go
        on; the waves' state is all in self.w)."""
        w = self.w
        count = 0
        with np.errstate(all="ignore"):  # NaN, inf and wrapping are the hardware's results, not warnings
            while True:
                pcs = np.where(w.done | w.waiting, NO_PC, w.pc)  # the live waves' PCs
                pc = int(pcs.min())
                if pc == NO_PC:
                    if not w.waiting.any():
                        return True
                    self._release_barriers()
                    continue
                count += 1
                if until is not None and count % CLOCK_EVERY == 0 and time.monotonic() > until:
                    return False
                self.step(np.flatnonzero(pcs == pc), pc)

    def step(self, idx: np.ndarray, pc: int) -> None:
        """Run the instruction at pc for the waves idx (all at that PC), under run's np.errstate."""
        w = self.w
        g = slice(None) if len(idx) == w.n else idx
        try:
            step = self.at(pc)
        except MemoryFault as f:
            raise GPUFault(f.address, f.access, self.kernel, int(idx[0]), pc, f.why, w.dump(int(idx[0]))) from None
        w.steps[g] += 1
        if w.steps[idx[0]] > self.budget:
            raise self.hang(int(idx[0]), pc, step.text)
        before = self._snapshot(g) if self.trace else None
        w.pc[g] = pc + step.size
        try:
            step.run(self, g)
        except MemoryFault as f:
            wave = int(idx[0])
            raise GPUFault(f.address, f.access, self.kernel, wave, pc, f.why, w.dump(wave)) from None
        if self.trace:
            self.trace(self, step, g, before)
        if self.observe:
            self.observe(self, idx, pc, step)

    def hang(self, wave: int, pc: int, text: str) -> GPUHang:
        return GPUHang(f"wave {wave} ran {self.budget} instructions without ending (pc {pc:#x}: {text})", self.kernel,
                       "raise the instruction budget (MOCKGPU_BUDGET on a mock GPU, budget= of the bare emulator's "
                       "launch) if it is meant to run that long")

    def _release_barriers(self) -> None:
        w = self.w
        groups = np.unique(self.group[w.waiting])
        for grp in groups:
            mine = self.group == grp
            if (w.waiting[mine] | w.done[mine]).all():
                w.waiting[mine] = False

    def _snapshot(self, g) -> dict:
        return {"s": self.w.s[:, g].copy(), "v": self.w.v[:, g].copy(), "scc": self.w.scc[g].copy()}

    def branch(self, g, taken: np.ndarray, target: int) -> None:
        """Jump the waves of g where taken (a (waves,) bool) to target."""
        pcs = self.w.pc[g]
        self.w.pc[g] = np.where(taken, target, pcs)


def _nothing(ex: Executor, g) -> None:
    return None


HWREG = ("s_getreg_b32", "s_setreg_b32", "s_setreg_imm32_b32")  # their hwreg(..) operand is no value
# gfx9's 16-bit VALU operations whose result clears the high half of the destination VGPR (LLVM's model of the
# hardware, GCNSubtarget::zeroesHigh16BitsOfDest: GFX8 and GFX9 clear it, GFX10 on keep it). gfx9's other 16-bit
# writers keep it: the op_sel forms (v_mad_f16, v_mad_u16/i16, v_fma_f16, v_div_fixup_f16; their pre-gfx9 forms are
# the *_legacy_* here), the f16 mac/madak/madmk/fmac/fmaak/fmamk, v_mad_mix{lo,hi}_f16, and SDWA (dst_unused says).
ZERO_HIGH = frozenset({
    "v_cvt_f16_f32", "v_cvt_f16_u16", "v_cvt_f16_i16", "v_rcp_f16", "v_rsq_f16", "v_sqrt_f16", "v_log_f16",
    "v_exp_f16", "v_sin_f16", "v_cos_f16", "v_floor_f16", "v_ceil_f16", "v_trunc_f16", "v_rndne_f16", "v_fract_f16",
    "v_frexp_mant_f16", "v_frexp_exp_i16_f16", "v_ldexp_f16", "v_lshlrev_b16", "v_lshrrev_b16", "v_ashrrev_i16",
    "v_add_u16", "v_sub_u16", "v_subrev_u16", "v_mul_lo_u16", "v_add_f16", "v_sub_f16", "v_subrev_f16", "v_mul_f16",
    "v_max_f16", "v_min_f16", "v_max_u16", "v_min_u16", "v_max_i16", "v_min_i16", "v_mad_legacy_f16",
    "v_mad_legacy_u16", "v_mad_legacy_i16", "v_fma_legacy_f16", "v_div_fixup_legacy_f16"})


def operands(inst, acc: int = 0) -> tuple[list[Operand] | None, dict[str, str]]:
    """An instruction's value operands (None where one is not a value the executor reads) and its modifiers
    {name: text} ("1" for a flag): what each backend builds the instruction from. AccVGPRs (a5, a[0:3]) become the
    VGPRs of the unified file they are, from acc on."""
    texts, items = [o.text for o in inst.operands], [m.strip() for m in inst.modifiers]
    if texts and " " in texts[-1] and not texts[-1].startswith("["):  # gfx12: the cache policy rides on the
        texts[-1], tail = texts[-1].split(" ", 1)                   # last operand's text
        items = tail.split() + items
    if inst.mnemonic.strip() == "s_sendmsg_rtn_b32":  # its source is a message name, not a value
        texts = texts[:1]
    try:
        ops = [parse(t) if t != "::" else Operand("sep", text="::") for t in texts]
    except ValueError:
        ops = None
    ops = ops and [replace(o, kind="v", index=o.index + acc) if o.kind == "a" else o for o in ops]
    mods = {m.split(":", 1)[0]: (m.split(":", 1)[1] if ":" in m else "1") for m in items}
    if ops and "opsel0" in inst.fields and not inst.family.startswith("VOP3P"):
        ops = _op_sel_halves(ops, inst.fields)
    if ops and _zeroes_high(inst):
        ops = [replace(ops[0], zero_high=True), *ops[1:]]
    if ops and re.match(r"s_cmpk_\w+_i32$", inst.mnemonic.strip()):  # SOPK's simm16, sign-extended when signed
        ops = [ops[0], replace(ops[1], value=_simm16(ops[1].value) & 0xFFFFFFFF)]
    return ops, mods


def _zeroes_high(inst) -> bool:
    """Whether the instruction is one of gfx9's ZERO_HIGH writing the low half (no op_sel of its destination)."""
    name = re.sub(r"_(e32|e64|dpp)$", "", inst.mnemonic.strip())
    return (inst.arch.startswith("gfx9") and not inst.family.endswith("SDWA") and name in ZERO_HIGH
            and not inst.fields.get("opsel3"))


def _op_sel_halves(ops: list[Operand], fields: dict[str, int]) -> list[Operand]:
    """VOP3's OPSEL bits pick the half each 16-bit source reads (bits 0-2) and the half a 16-bit destination
    writes (bit 3), the other kept; 32-bit operands ignore them. gfx11's text names a VGPR's half (v0.h), gfx9's and
    any SGPR's only in op_sel:[...]: the encoding's bits serve all. (VOP3P reads op_sel its own way.)"""
    bits = [fields.get(f"opsel{k}", 0) for k in (3, 0, 1, 2)]
    return [replace(o, half=1) if o.kind in ("v", "s") and o.half is None and k < len(bits) and bits[k] else o
            for k, o in enumerate(ops)]


# ---- scalar instructions ---------------------------------------------------------------------------------
# EXEC = S0 op EXEC; saveexec: D = the old EXEC, wrexec: D = the new
SAVEEXEC = re.compile(r"^s_(and|or|xor|nand|nor|xnor|and_not0|and_not1|or_not0|or_not1|andn1|andn2|orn1|orn2)"
                      r"_(saveexec|wrexec)_b(32|64)$")
SAVEEXEC_OPS = {"and": "a & e", "or": "a | e", "xor": "a ^ e", "nand": "~(a & e)", "nor": "~(a | e)",
                "xnor": "~(a ^ e)", "and_not0": "~a & e", "andn1": "~a & e", "and_not1": "a & ~e", "andn2": "a & ~e",
                "or_not0": "~a | e", "orn1": "~a | e", "or_not1": "a | ~e", "orn2": "a | ~e"}
BRANCH = {"s_branch": "True", "s_cbranch_scc0": "scc == 0", "s_cbranch_scc1": "scc != 0",
          "s_cbranch_vccz": "vcc == 0", "s_cbranch_vccnz": "vcc != 0", "s_cbranch_execz": "exec == 0",
          "s_cbranch_execnz": "exec != 0",
          # gfx9's branches on the debugger's CDBGSYS / CDBGUSER status bits, which nothing here sets
          **dict.fromkeys(("s_cbranch_cdbgsys", "s_cbranch_cdbguser", "s_cbranch_cdbgsys_or_user",
                           "s_cbranch_cdbgsys_and_user"), "False")}
# the instructions whose compiled step holds its own address (a branch's target, a return address, a trap's pc)
AT_PC = frozenset({*BRANCH, "s_trap", "s_code_end", "s_call_b64", "s_getpc_b64", "s_setpc_b64", "s_swappc_b64"})
SCMP = re.compile(r"^s_cmpk?_(\w+?)_([iuf]\d+)$")


def scalar_step(ex: Executor, name: str, ops: list[Operand], mods: dict, inst) -> Step | None:
    if not name.startswith("s_") or inst.family.startswith("SMEM"):
        return None
    if name in ("s_endpgm", "s_endpgm_ordered_ps_done"):
        return lambda ex, g: ex.w.done.__setitem__(g, True)
    if name in ("s_trap", "s_code_end"):  # a trap (abort, assert), or running past the code's end
        pc = ex.code_base + inst.offset
        why = "the kernel trapped" if name == "s_trap" else "ran past the end of the code"

        def trap(ex: Executor, g) -> None:
            wave = int(np.arange(ex.w.n)[g][0])
            raise GPUFault(pc, name, ex.kernel, wave, pc, why, ex.w.dump(wave))
        return trap
    if name == "s_denorm_mode":
        imm = ops[0].value

        def denorm_mode(ex: Executor, g) -> None:
            ex.denorm[32] = imm & 3
            ex.denorm[16] = ex.denorm[64] = (imm >> 2) & 3
        return denorm_mode
    if name == "s_sendmsg_rtn_b32":  # a message with a reply (the realtime clock, doorbell id): 0 here
        return lambda ex, g: ex.w.sset(ops[0].index, 1, g, np.zeros(len(ex.w.pc[g]), np.uint32))
    if name in ("s_barrier", "s_barrier_wait"):
        return lambda ex, g: ex.w.waiting.__setitem__(g, True)
    if name in BRANCH:
        target = inst.offset + ex.code_base + 4 + 4 * _simm16(ops[0].value)
        cond = BRANCH[name]

        def branch(ex: Executor, g) -> None:
            w = ex.w
            env = {"scc": w.scc[g], "vcc": w.sget(106, w.lanes // 32, g), "exec": w.exec_bits(g)}
            taken = np.broadcast_to(np.asarray(valu.evaluate(cond, env)), w.pc[g].shape)
            ex.branch(g, taken, target)
        return branch
    if name == "s_call_b64":  # gfx9: the return address into sdst, then a branch by simm16
        target = inst.offset + ex.code_base + 4 + 4 * _simm16(ops[1].value)
        back = ex.code_base + inst.offset + inst.size

        def call(ex: Executor, g) -> None:
            ex.w.sset(ops[0].index, 2, g, np.full(ex.w.pc[g].shape, back, np.uint64))
            ex.w.pc[g] = target
        return call
    if name == "s_getpc_b64":
        next_pc = ex.code_base + inst.offset + inst.size
        return lambda ex, g: ex.w.sset(ops[0].index, 2, g, np.full(ex.w.pc[g].shape, next_pc, np.uint64))
    if name in ("s_setpc_b64", "s_swappc_b64"):
        src = ops[-1]
        back = ops[0] if name == "s_swappc_b64" else None
        next_pc = ex.code_base + inst.offset + inst.size

        def jump(ex: Executor, g) -> None:
            target = ex.w.sget(src.index, 2, g).astype(np.int64)
            if back is not None:
                ex.w.sset(back.index, 2, g, np.full(target.shape, next_pc, np.uint64))
            ex.w.pc[g] = target
        return jump
    m = SAVEEXEC.match(name)
    if m:
        expr, write, bits = SAVEEXEC_OPS[m.group(1)], m.group(2) == "wrexec", int(m.group(3))
        dst, src = ops

        def saveexec(ex: Executor, g) -> None:
            w = ex.w
            e = w.sget(126, bits // 32, g)
            a = w.read(src, f"u{bits}", g, vector=False)
            new = np.asarray(valu.evaluate(expr, {"a": a, "e": e})).astype(e.dtype)
            w.sset(dst.index, bits // 32, g, new if write else e)
            w.sset(126, bits // 32, g, new)
            w.scc[g] = (new != 0).astype(np.uint32)
        return saveexec
    m = SCMP.match(name)
    if m and m.group(1) in valu.CMP:
        expr, typ = valu.CMP[m.group(1)], m.group(2)
        a_op, b_op = ops

        def scmp(ex: Executor, g) -> None:
            a, b = ex.w.read(a_op, typ, g, False), ex.w.read(b_op, typ, g, False)
            ex.w.scc[g] = np.asarray(valu.evaluate(expr, {"a": a, "b": b})).astype(np.uint32)
        return scmp
    if name[2:].rsplit("_", 1)[0] in valu.MOVREL:
        return _smovrel(name, ops)
    if name in ("s_bitcmp0_b32", "s_bitcmp1_b32", "s_bitcmp0_b64", "s_bitcmp1_b64"):
        want, bits = int(name[8]), int(name[-2:])

        def bitcmp(ex: Executor, g) -> None:
            value = ex.w.read(ops[0], f"u{bits}", g, False).astype(np.uint64)
            bit = ex.w.read(ops[1], "u32", g, False).astype(np.uint64) & np.uint64(bits - 1)
            ex.w.scc[g] = (((value >> bit) & np.uint64(1)) == want).astype(np.uint32)
        return bitcmp
    return valu.scalar_alu(ex, name, ops, mods, inst)


def _simm16(v: int) -> int:
    v &= 0xFFFF
    return v - 0x10000 if v & 0x8000 else v


def _smovrel(name: str, ops: list[Operand]) -> Step:
    """s_movrels (read s[src + M0]), s_movreld (write s[dst + M0]), s_movrelsd_2 (both, by M0's two fields)."""
    dst, src = ops
    count = 2 if name.endswith("64") else 1

    def movrel(ex: Executor, g) -> None:
        w = ex.w
        s_off, d_off = valu.movrel_offsets(name[2:], w, g)
        waves = np.arange(w.n)[g]
        if src.kind == "s":
            words = [w.s[src.index + s_off + i, waves] for i in range(count)]
        else:
            value = w.read(src, f"u{32 * count}", g, False).astype(np.uint64)
            words = [np.broadcast_to((value >> np.uint64(32 * i)) & np.uint64(0xFFFFFFFF), waves.shape) for i in
                     range(count)]
        for i, word in enumerate(words):
            w.s[dst.index + d_off + i, waves] = word
    return movrel


# hwreg ids (the same on gfx11 and gfx12) the executor models; the others read 0 and ignore writes
HW_REG_MODE, HW_REG_HW_ID1, HW_REG_HW_ID2 = 1, 23, 24


def _hwreg(name: str, inst) -> Step:
    """s_getreg_b32 / s_setreg_b32 / s_setreg_imm32_b32 on hwreg(id, offset, size): MODE (FP_ROUND [3:0],
    FP_DENORM [7:4] as the executor's denormal modes, single then double/half), HW_ID1 (WAVE_ID [4:0]: the wave
    within its workgroup), HW_ID2 (WG_ID [20:16]: the workgroup within the batch)."""
    field = inst.fields["simm16"]
    reg, offset, size = field & 63, field >> 6 & 31, (field >> 11 & 31) + 1
    mask = ((1 << size) - 1) << offset

    def value(ex: Executor, g) -> np.ndarray:
        waves = np.arange(ex.w.n)[g]
        group = ex.group[waves]
        if reg == HW_REG_MODE:
            mode = ex.mode & ~0xF0 | ex.denorm[32] << 4 | ex.denorm[64] << 6
            return np.full(waves.shape, mode, np.uint32)
        if reg == HW_REG_HW_ID1:
            return (waves - np.searchsorted(ex.group, group)).astype(np.uint32) & np.uint32(31)
        if reg == HW_REG_HW_ID2:
            return (group.astype(np.uint32) & np.uint32(31)) << np.uint32(16)
        return np.zeros(waves.shape, np.uint32)

    if name == "s_getreg_b32":
        dst = inst.fields["sdst"]
        return lambda ex, g: ex.w.sset(dst, 1, g, (value(ex, g) & np.uint32(mask)) >> np.uint32(offset))

    def setreg(ex: Executor, g) -> None:
        if reg != HW_REG_MODE:
            return
        new = inst.literal if name == "s_setreg_imm32_b32" else int(ex.w.sget(inst.fields["sdst"], 1, g)[0])
        mode = int(value(ex, g)[0]) & ~mask | (new << offset) & mask
        ex.mode = mode
        ex.denorm[32] = mode >> 4 & 3
        ex.denorm[16] = ex.denorm[64] = mode >> 6 & 3
    return setreg
