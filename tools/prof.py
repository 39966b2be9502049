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

from usergpu.emu.amd.mock.profiler import classify as instruction_type
from usergpu.emu.amd.sqtt import SQTTError, decode, wave_instructions
from usergpu.errors import Error
from usergpu.runtime import profile as perfetto
from usergpu.runtime.device import Device
from usergpu.runtime.launch import launch
from usergpu.tools.run import add_kernel_arguments, prepare


def add_parser(sub) -> None:
    p = sub.add_parser("prof", help="profile kernels (SQTT thread traces, PMC counters) and show captures")
    ops = p.add_subparsers(dest="op", required=True)
    r = ops.add_parser("run", help="run a kernel with profiling on; write the capture directory")
    add_kernel_arguments(r)
    r.add_argument("--dev", default="MOCKKFD+AMD", help="the device (default MOCKKFD+AMD)")
    r.add_argument("--sqtt", action="store_true", help="capture thread traces")
    r.add_argument("--pmc", help="counters to sample, NAME,NAME,...")
    r.add_argument("-o", "--output", default="capture", help="the capture directory (default ./capture)")
    r.set_defaults(run=lambda args, hal: run(args))
    s = ops.add_parser("show", help="show a capture: summary, wave instructions, counters")
    s.add_argument("capture", help="a capture directory (capture.json, code objects, a blob per shader engine)")
    s.add_argument("--kernel", help="only this kernel")
    s.add_argument("--wave", type=int, help="only this wave slot's instructions")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.add_argument("--perfetto", help="also write a Chrome/Perfetto trace, a track per wave")
    s.set_defaults(run=lambda args, hal: show(args))


def run(args: argparse.Namespace) -> int:
    if not (args.sqtt or args.pmc):
        raise Error("prof run: ask for --sqtt, --pmc NAMES or both")
    co, kernel, values, grid, block = prepare(args)
    dev = Device(args.dev)
    prof = dev.profile(sqtt=args.sqtt, counters=args.pmc.split(",") if args.pmc else ())
    launch(co.data, kernel, grid, block, values, dev)
    out = prof.write(args.output)
    print(f"{kernel} on {args.dev} ({dev.arch}): capture in {out}")
    return show(argparse.Namespace(capture=str(out), kernel=None, wave=None, json=False, perfetto=None))


def load(path: str) -> tuple[dict, list, list]:
    """A capture's description, its counters (pmc.json, if any) and the kernels' traces to show."""
    root = Path(path)
    try:
        capture = json.loads((root / "capture.json").read_text())
    except (OSError, ValueError) as e:
        raise Error(f"{root}: not a capture directory (capture.json: {e})") from None
    pmc = json.loads((root / "pmc.json").read_text()) if (root / "pmc.json").exists() else []
    return capture, pmc, capture.get("traces", [])


def show(args: argparse.Namespace) -> int:
    capture, pmc, traces = load(args.capture)
    root, arch = Path(args.capture), capture["arch"]
    programs = {p["tag"]: p for p in capture["programs"]}
    report, events = [], []
    for trace in traces:
        program = programs.get(trace.get("exec_tag", trace["kern"]), capture["programs"][0])
        if args.kernel and program["name"] != args.kernel:
            continue
        blob = (root / trace["file"]).read_bytes()
        error = None
        try:
            packets = decode(blob, arch, strict=False)  # a hardware buffer may end inside a token
        except SQTTError as e:
            packets, error = e.packets, str(e)
        entry = {"kernel": program["name"], "se": trace["se"], "file": trace["file"], "bytes": len(blob),
                 "packets": dict(Counter(p.kind for p in packets)), "error": error, "waves": []}
        if trace.get("itrace") and error is None:
            code = (root / program["file"]).read_bytes()
            insts = wave_instructions(blob, code, arch, program.get("base"))
            entry["waves"] = [asdict(i) | {"type": instruction_type(i.text)} for i in insts
                              if args.wave is None or i.wave == args.wave]
        report.append(entry)
        events += [(program["name"], trace["se"], w) for w in entry["waves"]]
    counters = [c for c in pmc if not args.kernel or c["name"] == args.kernel]
    if args.perfetto:
        perfetto.write(args.perfetto, wave_document(arch, events))
    if args.json:
        print(json.dumps({"arch": arch, "traces": report, "counters": counters}, indent=1))
        return 0
    print_report(arch, report, counters)
    return 0


def print_report(arch: str, report: list[dict], counters: list[dict]) -> None:
    rows = [[e["kernel"], e["se"], e["bytes"], sum(e["packets"].values()), len({w["wave"] for w in e["waves"]}),
             len(e["waves"]), e["error"] or ""] for e in report]
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
