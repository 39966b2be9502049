"""usergpu prof: profile a kernel on a device (thread traces, counters) into a capture directory, and show a capture
— one made here or a real one (shared/data/sqtt's layout): per-kernel summary, each traced wave's instructions,
the counters, and a Perfetto/Chrome trace with a track per wave."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from dataclasses import asdict
from pathlib import Path

from tabulate import tabulate

from usergpu.errors import Error, FieldError
from usergpu.isa.amd.sqtt import Packets, SQTTError, decode, layout_of, wave_instructions
from usergpu.runtime import spans as perfetto
from usergpu.tools.common import input_dir, output_dir, output_file, unsigned
from usergpu.tools.run import NvCode, add_kernel_arguments, prepare

# What show reads of a capture's entries (shared/data/sqtt's README; runtime/amd/profiler.py writes the same): each
# field and the types it may have (None: it may be left out)
PROGRAM = {"file": (str,), "name": (str,), "base": (int, None), "tag": (int, None)}
TRACE = {"file": (str,), "se": (int,), "itrace": (bool, None), "kern": (int, None), "exec_tag": (int, None)}
COUNTERS = {"name": (str,), "counters": (dict,)}


class CaptureError(Error):
    """A capture that cannot be shown: what is missing or wrong in it, or a kernel or wave it does not hold."""


def add_parser(sub) -> None:
    p = sub.add_parser("prof", help="profile kernels (SQTT thread traces, PMC counters) and show captures")
    ops = p.add_subparsers(dest="op", required=True)
    r = ops.add_parser("run", help="run a kernel with profiling on; write the capture directory")
    add_kernel_arguments(r)
    r.add_argument("--dev", default="MOCKKFD+AMD", help="the device (default MOCKKFD+AMD)")
    r.add_argument("--sqtt", action="store_true", help="capture thread traces")
    r.add_argument("--pmc", help="counters to sample, NAME,NAME,...")
    r.add_argument("--itrace-se-mask", type=unsigned, default=0x1,
                   help="the shader engines that trace instructions, a bit each (default 0x1: the first; on a GPU of "
                        "several XCCs, XCC x's engine e is bit x * engines per XCC + e)")
    r.add_argument("-o", "--output", default="capture", type=output_dir,
                   help="the capture directory (default ./capture)")
    r.set_defaults(run=lambda args, hal: run(args))
    s = ops.add_parser("show", help="show a capture: summary, wave instructions, counters")
    s.add_argument("capture", type=input_dir,
                   help="a capture directory (capture.json, code objects, a blob per shader engine)")
    s.add_argument("--kernel", help="only this kernel")
    s.add_argument("--wave", type=unsigned, help="only this wave slot's instructions")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.add_argument("--perfetto", type=output_file, help="also write a Chrome/Perfetto trace, a track per wave")
    s.set_defaults(run=lambda args, hal: show(args))


def run(args: argparse.Namespace) -> int:
    if not (args.sqtt or args.pmc):
        raise Error("prof run: ask for --sqtt, --pmc NAMES or both")
    from usergpu.runtime.device import Device  # the runtime loads only to run
    from usergpu.runtime.launch import launch

    co, kernel, values, grid, block = prepare(args)
    if isinstance(co, NvCode):
        raise Error(f"prof run: {args.file} is an NVIDIA kernel; the profiler traces AMD GPUs (SQTT, PMC)")
    dev = Device(args.dev)
    prof = dev.profile(sqtt=args.sqtt, counters=args.pmc.split(",") if args.pmc else (),
                       itrace_se_mask=args.itrace_se_mask)
    launch(co.data, kernel, grid, block, values, dev)
    out = prof.write(args.output)
    print(f"{kernel} on {args.dev} ({dev.arch}): capture in {out}")
    return show(argparse.Namespace(capture=str(out), kernel=None, wave=None, json=False, perfetto=None))


def _json(path: Path):
    try:
        return json.loads(path.read_text())
    except ValueError as e:  # UnicodeDecodeError too
        raise CaptureError(f"{path}: not JSON ({e})") from None


def _entries(items, fields: dict[str, tuple], where: str) -> list[dict]:
    """items, checked to be a list of objects whose fields have the types fields allows."""
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise CaptureError(f"{where}: a list of objects is expected, not {type(items).__name__}")
    for n, item in enumerate(items):
        for name, kinds in fields.items():
            value = item.get(name)
            if value is None and None in kinds:
                continue
            if type(value) not in kinds:  # exactly: a bool is no count
                wanted = " or ".join(k.__name__ for k in kinds if k is not None)
                raise CaptureError(f"{where}[{n}]: {name!r} must be {wanted}, not {value!r}")
    return items


def load(path: str) -> tuple[dict, list, list]:
    """A capture's description, its counters (pmc.json, if any) and the kernels' traces to show, checked to hold
    what show reads."""
    root = Path(path)
    meta = root / "capture.json"
    if not meta.is_file():
        raise CaptureError(f"{root}: not a capture directory (no capture.json)")
    capture = _json(meta)
    if not isinstance(capture, dict) or not isinstance(capture.get("arch"), str):
        raise CaptureError(f"{meta}: no 'arch' (the GPU the capture was made on, e.g. gfx1100)")
    try:
        layout_of(capture["arch"])  # an arch without a trace format is refused before any blob is read
    except FieldError as e:
        raise CaptureError(f"{meta}: {e}") from None
    if not _entries(capture.get("programs"), PROGRAM, f"{meta}: programs"):
        raise CaptureError(f"{meta}: no programs (the code objects that ran)")
    traces = _entries(capture.get("traces", []), TRACE, f"{meta}: traces")
    pmc = _entries(_json(root / "pmc.json"), COUNTERS, f"{root / 'pmc.json'}") if (root / "pmc.json").exists() else []
    return capture, pmc, traces


def trace_report(root: Path, arch: str, program: dict, trace: dict) -> dict:
    """One blob: its packets per kind, where it was cut off or damaged, and the traced waves' instructions."""
    from usergpu.emu.amd.mock.profiler import classify as instruction_type  # (loads the mock GPU)

    blob = (root / trace["file"]).read_bytes()
    error, insts = None, []
    try:
        packets = decode(blob, arch)  # a hardware buffer ends inside a token: marked in packets.truncated
        if trace.get("itrace"):
            insts = wave_instructions(blob, (root / program["file"]).read_bytes(), arch, program.get("base"))
    except SQTTError as e:
        packets, error = e.packets, str(e)
    cut = packets.truncated if isinstance(packets, Packets) else None
    return {"kernel": program["name"], "se": trace["se"], "file": trace["file"], "bytes": len(blob),
            "packets": dict(Counter(p.kind for p in packets)), "error": error,
            "truncated": cut and asdict(cut) | {"byte": cut.byte},
            "waves": [asdict(i) | {"type": instruction_type(i.text)} for i in insts]}


def show(args: argparse.Namespace) -> int:
    capture, pmc, traces = load(args.capture)
    root, arch = Path(args.capture), capture["arch"]
    programs = {p.get("tag"): p for p in capture["programs"]}
    kernels = list(dict.fromkeys(p["name"] for p in capture["programs"]))
    if args.kernel is not None and args.kernel not in kernels:
        raise CaptureError(f"no kernel {args.kernel!r} in {root} (kernels: {', '.join(kernels)})")
    report = []
    for trace in traces:
        program = programs.get(trace.get("exec_tag", trace.get("kern")), capture["programs"][0])
        if args.kernel is None or program["name"] == args.kernel:
            report.append(trace_report(root, arch, program, trace))
    if args.wave is not None:
        slots = sorted({w["wave"] for e in report for w in e["waves"]})
        if args.wave not in slots:
            of = f" of kernel {args.kernel}" if args.kernel else ""
            raise CaptureError(f"no wave {args.wave} traced{of} in {root} "
                               f"({'waves traced: ' + ', '.join(map(str, slots)) if slots else 'no wave was traced'})")
        for e in report:
            e["waves"] = [w for w in e["waves"] if w["wave"] == args.wave]
    counters = [c for c in pmc if not args.kernel or c["name"] == args.kernel]
    if args.perfetto:
        perfetto.write(args.perfetto, wave_document(arch, [(e["kernel"], e["se"], w) for e in report
                                                           for w in e["waves"]]))
    if args.json:
        print(json.dumps({"arch": arch, "traces": report, "counters": counters}, indent=1))
        return 0
    print_report(arch, report, counters)
    return 0


def damage(entry: dict) -> str:
    """The damage column: the error that stopped decoding, or where the buffer ended mid-token."""
    cut = entry["truncated"]
    if entry["error"] or not cut:
        return entry["error"] or ""
    return f"cut off at byte {cut['byte']}: {cut['kind']}, {cut['bits']} of {cut['size']} bits"


def print_report(arch: str, report: list[dict], counters: list[dict]) -> None:
    rows = [[e["kernel"], e["se"], e["bytes"], sum(e["packets"].values()), len({w["wave"] for w in e["waves"]}),
             len(e["waves"]), damage(e)] for e in report]
    print(f"capture of {arch}: {len(report)} trace blobs")
    print(tabulate(rows, headers=["kernel", "SE", "bytes", "packets", "waves traced", "instructions", "damage"]))
    for e in report:
        if e["waves"]:
            print(f"\n{e['kernel']}, SE {e['se']}:")
            print(tabulate([[w["wave"], w["time"], f"{w['pc']:#x}", w["text"], w["type"], w["duration"], w["stall"]]
                            for w in e["waves"]],
                           headers=["Wave", "Timestamp", "PC", "Instruction", "Type", "Duration", "Stall"]))
    for c in counters:
        print(f"\ncounters of {c['name']}:")
        print(tabulate([[name, sum(per.values()), len(per), ", ".join(f"{k}: {v}" for k, v in list(per.items())[:4])
                         + (", ..." if len(per) > 4 else "")] for name, per in c["counters"].items()],
                       headers=["counter", "total", "instances", "per instance"]))


def wave_document(arch: str, waves: list[tuple[str, int, dict]]) -> dict:
    """A trace with a process per kernel and shader engine and a track per wave slot; one cycle shows as 1 ns."""
    events, seen = [], set()
    for kernel, se, w in waves:
        pid, tid = f"{kernel} SE{se}", w["wave"]
        if (pid, tid) not in seen:
            seen.add((pid, tid))
            events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": f"wave {tid}"}})
        events.append({"name": w["text"], "ph": "X", "pid": pid, "tid": tid, "ts": w["time"] / 1000,
                       "dur": max(w["duration"], 1) / 1000, "args": {"pc": hex(w["pc"]), "stall": w["stall"]}})
    return {"traceEvents": events, "displayTimeUnit": "ns", "otherData": {"arch": arch, "clock": "shader cycles"}}
