"""Chrome / Perfetto trace JSON (the Trace Event Format): one complete event ("ph": "X") per span, in microseconds,
under a process per device and a thread per queue, both named by metadata events. Open it in ui.perfetto.dev or
chrome://tracing."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from usergpu.errors import Error


@dataclass(frozen=True)
class Span:
    """Something a queue did: its name, start and duration in seconds on the GPU clock, and facts to show."""

    name: str
    start: float
    seconds: float
    args: dict = field(default_factory=dict)


def document(device: str, queue: str, spans: list[Span], pid: int = 0, tid: int = 0) -> dict:
    """The trace: metadata naming pid (the device) and tid (its queue), then each span as a complete event."""
    meta = [{"name": "process_name", "ph": "M", "pid": pid, "args": {"name": device}},
            {"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": queue}}]
    events = [{"name": s.name, "ph": "X", "pid": pid, "tid": tid, "ts": round(s.start * 1e6, 3),
               "dur": round(s.seconds * 1e6, 3), "args": s.args} for s in spans]
    return {"traceEvents": meta + events, "displayTimeUnit": "ns"}


def write(path: str | Path, doc: dict) -> None:
    try:
        Path(path).write_text(json.dumps(doc) + "\n")
    except OSError as e:
        raise Error(f"cannot write the trace to {path}: {e.strerror}") from None
