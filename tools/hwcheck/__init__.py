"""Hardware checks: scripts a person runs once on a machine with a real GPU to prove the driver and runtime there
(`python -m usergpu.tools.hwcheck.nv`). What every check script shares lives here: a check is a function that
returns what it measured or raises; each becomes one PASS, FAIL or SKIP line (or one JSON record), a failure is
its error's message and never a traceback, and the exit status is non-zero when any check failed."""

from __future__ import annotations

import json
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from usergpu.errors import Error


class Mismatch(Error):
    """A check whose result differs from the reference (numpy, a hash, the fault expected): says what differs."""


@dataclass
class Result:
    name: str
    status: str  # PASS, FAIL or SKIP
    detail: str
    figures: dict = field(default_factory=dict)
    seconds: float = 0.0


@dataclass
class Measured:
    """What a check returns when it passes: a line for people, figures for machines, and a value later checks
    may use (the device, a program)."""

    detail: str
    figures: dict = field(default_factory=dict)
    value: object = None


class Report:
    """The checks of one run, printed as they finish (a check that hangs leaves the lines before it on screen) or,
    with as_json, as one JSON document at the end."""

    def __init__(self, title: str, as_json: bool = False, debug: bool = False):
        self.title, self.as_json, self.debug = title, as_json, debug
        self.results: list[Result] = []
        self.values: dict[str, object] = {}
        self.started = time.perf_counter()
        self._say(title)

    def _say(self, line: str) -> None:
        if not self.as_json:
            print(line, flush=True)

    def check(self, name: str, run: Callable[..., Measured], needs: tuple[str, ...] = ()) -> object:
        """Run one check, given the values of the checks it needs (SKIP when one of them did not pass); its value,
        or None when it did not pass."""
        missing = [n for n in needs if n not in self.values]
        if missing:
            return self._add(Result(name, "SKIP", f"needs {', '.join(missing)}, which did not pass"))
        t0 = time.perf_counter()
        try:
            m = run(*(self.values[n] for n in needs))
        except Error as e:
            return self._add(Result(name, "FAIL", f"{type(e).__name__}: {e}", seconds=time.perf_counter() - t0))
        except Exception as e:  # a defect of the check or the runtime: still one FAIL line, the run goes on
            if self.debug:
                traceback.print_exc()
            return self._add(Result(name, "FAIL", f"unexpected {type(e).__name__}: {e}",
                                    seconds=time.perf_counter() - t0))
        self.values[name] = m.value
        self._add(Result(name, "PASS", m.detail, m.figures, time.perf_counter() - t0))
        return m.value

    def _add(self, r: Result) -> None:
        self.results.append(r)
        first, *more = r.detail.splitlines() or [""]
        self._say("\n".join([f"{r.status} {r.name:<14} {first}", *(f"     {' ' * 14} {line}" for line in more)]))

    @property
    def ok(self) -> bool:
        return any(r.status == "PASS" for r in self.results) and not any(r.status != "PASS" for r in self.results)

    def finish(self) -> int:
        """The summary (a line, or the JSON document); the exit status: 0 when every check passed, else 1."""
        counts = {s: sum(r.status == s for r in self.results) for s in ("PASS", "FAIL", "SKIP")}
        seconds = time.perf_counter() - self.started
        if self.as_json:
            checks = [{**asdict(r), "seconds": round(r.seconds, 4)} for r in self.results]
            json.dump({"title": self.title, "ok": self.ok, "seconds": round(seconds, 3), "counts": counts,
                       "checks": checks}, sys.stdout, indent=1)
            print()
        else:
            print(f"summary: {'PASS' if self.ok else 'FAIL'}: {counts['PASS']} passed, {counts['FAIL']} failed, "
                  f"{counts['SKIP']} skipped in {seconds:.1f} s", flush=True)
        return 0 if self.ok else 1
