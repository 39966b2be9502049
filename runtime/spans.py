"""Profiling: what a device's queues did, from the GPU's timestamps, and its export as Chrome / Perfetto trace JSON
(the Trace Event Format): one complete event ("ph": "X") per span, in microseconds, under a process per device and
a thread per queue, both named by metadata events. Open it in ui.perfetto.dev or chrome://tracing."""

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


QUEUES = {"pm4": "compute queue (PM4)", "aql": "compute queue (AQL)", "sdma": "copy queue (SDMA)",
          "compute": "compute channel (GPFIFO)", "copy": "copy channel (GPFIFO)"}


def document(devices: list) -> dict:
    """The trace of devices' profiled work (Device.spans()): a process per device, a thread per queue."""
    events = []
    for pid, dev in enumerate(devices):
        events.append({"name": "process_name", "ph": "M", "pid": pid,
                       "args": {"name": f"{dev.name}:{dev.index} ({dev.arch})"}})
        for tid, (queue, label) in enumerate(QUEUES.items()):
            spans = [s for s in dev.spans() if s.args.get("queue") == queue]
            if spans:
                events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": label}})
            events += [{"name": s.name, "ph": "X", "pid": pid, "tid": tid, "ts": round(s.start * 1e6, 3),
                        "dur": round(s.seconds * 1e6, 3), "args": s.args} for s in spans]
    return {"traceEvents": events, "displayTimeUnit": "ns"}


def write(path: str | Path, doc: dict) -> None:
    try:
        Path(path).write_text(json.dumps(doc) + "\n")
    except OSError as e:
        raise Error(f"cannot write the trace to {path}: {e.strerror}") from None
