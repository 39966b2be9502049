"""USERGPU_TRACE=1: each executed instruction with the waves that ran it and the registers it changed."""

from __future__ import annotations

import sys

import numpy as np


def tracer(out=sys.stderr):
    """A trace hook for Executor.trace: prints 'pc: text  [waves]  changes' (first lanes of changed VGPRs)."""

    def trace(ex, step, g, before: dict) -> None:
        w = ex.w
        waves = np.arange(w.n)[g]
        changes = []
        for i in np.flatnonzero((w.s[:, g] != before["s"]).any(axis=-1)):
            changes.append(f"s{i}={int(w.s[i, waves[0]]):#x}")
        for i in np.flatnonzero((w.v[:, g] != before["v"]).any(axis=(-1, -2))):
            lanes = ", ".join(f"{int(x):#x}" for x in w.v[i, waves[0], :4])
            changes.append(f"v{i}=[{lanes}, ...]")
        if (w.scc[g] != before["scc"]).any():
            changes.append(f"scc={int(w.scc[waves[0]])}")
        pc = int(w.pc[waves[0]]) - step.size if not w.done[waves[0]] else 0
        print(f"{pc:#x}: {step.text:60s} waves {list(waves[:4])}{'...' if len(waves) > 4 else ''}  "
              f"{' '.join(changes)}", file=out)

    return trace
