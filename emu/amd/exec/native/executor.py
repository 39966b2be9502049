"""The native backend's executor: the reference Executor's state and interface, its waves run by the kernel's
compiled C (codegen.py, build.py). The C works on the reference's own arrays (registers, LDS, scratch, GPU memory's
host bytes), so an instruction the C hands back runs on the reference for that wave and the C goes on from there;
faults, hangs and time slices come back as return codes and leave with the reference's errors and facts."""

from __future__ import annotations

import concurrent.futures
import time
from dataclasses import dataclass

import numpy as np

from usergpu.emu.amd.exec import memops
from usergpu.emu.amd.exec.executor import Executor
from usergpu.emu.amd.exec.native import build, codegen
from usergpu.emu.native import point_at_mappings, say_once
from usergpu.errors import GPUFault

RC_OK, RC_DONE, RC_FALLBACK, RC_FAULT, RC_HANG, RC_QUOTA = range(6)
QUOTA = 1 << 16  # steps between looks at the clock when a run is time-sliced
WARM_SLICE = 0.02  # s the reference runs a kernel between looks at its compile in the background
# Background mode tiers a kernel's builds. HOT_S: s a kernel runs on the reference (over all its dispatches) before
# its quick build (-O0: about 0.5 s of clang for a 240 KB kernel, 2-3 s at -O2) is made in the background; a suite's
# many kernels that run once, briefly, never wait for clang, a long or often-run one does. Each dispatch counts
# LAUNCH_S more (a kernel launched often pays clang back, in later runs too, from the cache). TIER_S: s a kernel runs
# on its quick build before its optimised build (FLAGS) is made, which then runs it; a kernel that runs little on its
# quick build never pays for the optimised one. HOT_S measured on tinygrad's test_ops, nothing cached, -n 2 on two
# cores (where clang takes a core from the tests): MI350X 0.15 s 179 s (898 builds), 0.5 s 124-136 s (285), 1 s
# 114-116 s (110), 2 s 117 s (26); Navi31 0.5 s 89 s, 1 s 85 s.
HOT_S, LAUNCH_S, TIER_S = 1.0, 0.05, 1.0
# LONG_S: s one batch of a dispatch runs on the reference before its progress is judged: with most of its waves not
# done it will run as long again at least (a loop in few waves: tinygrad's fused randn), so it is hot at once
# (MI350X, nothing cached: test_randomness 19.9 s with HOT_S alone, 17.0 s with LONG_S 0.5 s, 12.6 s with 0.25 s;
# test_ops 114-125 s without, 120-133 s with 0.25 s: within its run-to-run spread)
LONG_S = 0.25


@dataclass
class _Builds:
    """A kernel's builds in background mode, under way or done."""

    quick: concurrent.futures.Future
    optimised: concurrent.futures.Future | None = None
    ran: float = 0.0  # s the quick build has run the kernel


_builds: dict[str, _Builds] = {}  # span digest -> its builds
_reference_s: dict[str, float] = {}  # span digest -> seconds the reference has run it (background mode)
_long: set[str] = set()  # span digests of kernels a dispatch of which ran LONG_S with most of its waves not done
# one worker each: a quick build never waits behind an optimised one (clang runs with the GIL let go)
_pools: dict[str, concurrent.futures.ThreadPoolExecutor] = {}
# kernels not compiled yet, as discovered for a dispatch: (arch key, lanes, the entry's first bytes) -> [(span, its
# bytes, (digest, compile arguments))], so the dispatches that run one on the reference do not walk it again each
_discovered: dict[tuple, list[tuple[tuple[int, int], bytes, tuple]]] = {}
DISCOVERED_KEPT = 1024
WHY = ("not mapped", "{size}-byte access runs past the end of its buffer", "a read-only mapping",
       "past the {scratch}-byte private segment")


class NativeExecutor(Executor):
    BATCH_WAVES = 4096  # the C runs a wave at a time: a batch this size stays in the caches, its set-up cheap
    # a kernel not compiled before runs on the reference, and is built in the background once it has run there
    # HOT_S, quickly and then optimised (the mock GPUs' dispatches: a suite's many small kernels each run once, in
    # less time than clang takes); else it compiles (optimised) at once
    background = False
    _on_reference = 0.0  # s this batch has run on the reference (LONG_S)

    def run(self, until: float | None = None) -> bool:
        if self.trace or self.observe:  # per-instruction hooks: the reference runs the dispatch, and says so
            say_once("a traced or profiled dispatch runs on the numpy reference backend (slower than native)")
            return super().run(until)
        st = self._state()
        if st is None:  # the C's scheduler takes a workgroup's waves as one run of numbers
            return super().run(until)
        lib = self._program()
        while lib is None:  # not compiled (yet): the reference runs the kernel, a slice at a time
            start = time.monotonic()
            done = super().run(start + WARM_SLICE if until is None else min(start + WARM_SLICE, until))
            digest, ran = self._cache["pending"][1], time.monotonic() - start
            _reference_s[digest] = _reference_s.get(digest, 0.0) + ran
            self._on_reference += ran
            if self._on_reference >= LONG_S and self.w.done.mean() < 0.5:
                _long.add(digest)
            if done:
                return True
            if until is not None and time.monotonic() > until:
                return False
            lib = self._program()
        quick, start = self._cache["native"][2], time.monotonic()
        try:
            return self._run_native(lib, st, until)
        finally:
            if quick is not None:  # the time it ran on its quick build, toward its optimised one
                _builds[quick].ran += time.monotonic() - start

    def _run_native(self, lib, st, until: float | None) -> bool:
        w = self.w
        while True:
            st.quota = QUOTA if until is not None else 1 << 62
            st.denorm32, st.denorm16 = self.denorm[32], self.denorm[16]
            rc = lib.run(st)
            self.denorm[32], self.denorm[16] = self.denorm[64] = int(st.denorm32), int(st.denorm16)
            if st.lds_outside:
                memops.outside_lds(self)
                st.lds_outside = 0
            if rc == RC_DONE:
                return True
            wave = int(st.wave)
            pc = int(w.pc[wave])
            if rc == RC_FALLBACK:
                with np.errstate(all="ignore"):  # as the reference's run steps
                    self.step(np.asarray([wave]), pc)
            elif rc == RC_FAULT:
                w.pc[wave] = pc + self.at(pc).size  # as the reference leaves it: at the next instruction
                why = WHY[st.fault_why].format(size=int(st.fault_size), scratch=self.scratch.shape[2])
                raise GPUFault(int(st.fault_addr), codegen.ACCESS[st.fault_access], self.kernel, wave, pc, why,
                               w.dump(wave))
            elif rc == RC_HANG:
                raise self.hang(wave, pc, self.at(pc).text)
            elif rc == RC_QUOTA and time.monotonic() > until:
                return False

    def park(self) -> None:
        super().park()
        self._ranges = self._ranges_of = None

    def reuse(self, *args) -> None:
        super().reuse(*args)
        self._fresh, self._on_reference = True, 0.0

    # ---- the compiled kernel -------------------------------------------------------------------------------
    def _program(self) -> object | None:
        """(After _state.) The kernel's library: shared by a dispatch's batches (the reference's instruction
        cache), else its optimised build found by its code's bytes (build.find: no decoding), else decoded,
        translated and compiled — now, or (background) in a worker thread: None until a build is done (a compile's
        error is raised here). The dispatch's cache holds (entry, library, the digest where it is a quick build, so
        that a time-sliced dispatch goes on on the optimised build once that is made)."""
        got = self._cache.get("native")
        entry = self._entry - self.code_base
        if got is not None and got[0] == entry:
            if got[2] is None:
                return got[1]
            lib, quick = _built(got[2], self._cache["pending"][2])
        else:
            # the C names AccVGPRs by their place in the unified file: ACCUM_OFFSET is part of what was compiled
            key = self.arch if self.gen != 9 else f"{self.arch}+acc{self.w.acc}"
            lib, quick = build.find(self.code, entry, key, self.w.lanes), None
            if lib is None:
                pending = self._cache.get("pending")
                if pending is None or pending[0] != entry:
                    pending = self._cache["pending"] = (entry, *self._discover(entry, key))
                    _reference_s[pending[1]] = _reference_s.get(pending[1], 0.0) + LAUNCH_S  # once a dispatch
                if not self.background:
                    lib = build.compile_kernel(*pending[2])
                else:
                    lib, quick = _built(pending[1], pending[2])
                    if lib is None:
                        return None
        self._cache["native"] = (entry, lib, quick)
        return lib

    def _discover(self, entry: int, key: str) -> tuple[str, tuple]:
        """The digest and compile arguments of the kernel at entry: as an earlier dispatch found them for the same
        bytes, else walked and translated now."""
        first = (key, self.w.lanes, self.code[entry : entry + build.PREFIX])
        for (lo, hi), data, found in _discovered.get(first, ()):
            if self.code[entry + lo : entry + hi] == data:
                return found
        kernel = codegen.discover(self.code, entry, self.arch, self.w.lanes, self.w.acc)
        span = kernel.span()
        # the kernel's bytes as they are now: the compile may outlive the GPU memory they sit in
        code = bytes(self.code[entry : min(len(self.code), entry + max(span[1], build.PREFIX))])
        args = (code, 0, key, self.w.lanes, span, codegen.Emitter(kernel).source)
        found = (build.span_key(*args[:5]), args)
        if len(_discovered) >= DISCOVERED_KEPT:
            _discovered.clear()
        _discovered.setdefault(first, []).append((span, code[span[0] : span[1]], found))
        return found

    def _state(self) -> object | None:
        """The C's view of this executor's arrays (kept alive with it); None if a workgroup's waves are not one run
        of wave numbers."""
        st = getattr(self, "_st", None)
        if st is not None and self._ranges_of is self.mem.derived and not self._fresh:
            return st
        ffi = build.ffi()
        w = self.w
        if st is None:
            group = np.ascontiguousarray(self.group, np.int64)
            step = group[1:] - group[:-1]
            if (step < 0).any():
                return None
            st = ffi.new("State *")
            starts = np.flatnonzero(step) + 1
            self._keep = [group, np.concatenate(([0], starts, [len(group)])).astype(np.int64)]
            for name, arr, ctype in (("v", w.v.transpose(1, 0, 2), "uint32_t[]"), ("s", w.s.T, "uint32_t[]"),
                                     ("scc", w.scc, "uint32_t[]"),
                                     ("pc", w.pc, "int64_t[]"), ("done", w.done, "uint8_t[]"),
                                     ("waiting", w.waiting, "uint8_t[]"), ("steps", w.steps, "int64_t[]"),
                                     ("gstart", self._keep[1], "int64_t[]"), ("group", group, "int64_t[]"),
                                     ("lds", self.lds, "uint8_t[]"), ("scratch", self.scratch, "uint8_t[]")):
                setattr(st, name, ffi.from_buffer(ctype, arr))  # the array's own bytes: it must be C-contiguous
            st.n, st.vgprs, st.ngroups = w.n, w.v.shape[0], len(starts) + 1
            st.lds_size, st.scratch_size = self.lds.shape[1], self.scratch.shape[2]
            self._st, self._fresh = st, True
        if self._fresh:  # a batch's first run: where its waves start, its budget, its scheduler at the start
            self._entry = int(w.pc[0])  # every wave starts at the kernel's entry
            st.budget, st.entry, st.gi = self.budget, self._entry, 0
            self._fresh = False
        point_at_mappings(st, self.mem, ffi)
        self._ranges = self.mem.derived["native"]
        self._ranges_of = self.mem.derived
        return st


def _built(digest: str, args: tuple) -> tuple[object | None, str | None]:
    """A kernel's best build in the background and, where that is its quick build, its digest; (None, None) until
    one is done. Its quick build starts once the kernel has run HOT_S on the reference or a dispatch of it was
    judged long (LONG_S; at once where an earlier process made it: the kernel was hot then), its optimised build once
    the quick one has run it TIER_S."""
    b = _builds.get(digest)
    if b is None:
        if build.quick_cached(*args[:5]):
            done: concurrent.futures.Future = concurrent.futures.Future()
            done.set_result(build.compile_quick(*args))
            b = _builds[digest] = _Builds(done)
        elif _reference_s.get(digest, 0.0) >= HOT_S or digest in _long:
            b = _builds[digest] = _Builds(_pool("quick").submit(build.compile_quick, *args))
        else:
            return None, None
    if b.optimised is not None and b.optimised.done():
        return b.optimised.result(), None
    if not b.quick.done():
        return None, None
    if b.optimised is None and b.ran >= TIER_S:
        b.optimised = _pool("optimised").submit(build.compile_kernel, *args)
    return b.quick.result(), digest


def _pool(tier: str) -> concurrent.futures.ThreadPoolExecutor:
    if tier not in _pools:
        _pools[tier] = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=f"usergpu-native-{tier}")
    return _pools[tier]
