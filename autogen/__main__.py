"""python -m usergpu.autogen [--check] [--only NAME ...]: regenerate the bindings, or check they are up to date."""

from __future__ import annotations

import argparse
import difflib
import sys
import tempfile
from pathlib import Path

from usergpu.autogen.generator.modules import MODULES
from usergpu.errors import ToolchainError

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m usergpu.autogen", description=__doc__)
    ap.add_argument("--check", action="store_true", help="regenerate into a temporary folder and diff")
    ap.add_argument("--only", action="append", metavar="NAME", choices=[m.name for m in MODULES])
    args = ap.parse_args(argv)
    stale = 0
    with tempfile.TemporaryDirectory() as tmp:
        dest = Path(tmp) if args.check else HERE
        for m in MODULES:
            if args.only and m.name not in args.only:
                continue
            try:
                text = m.render()
            except ToolchainError as e:
                print(f"{m.name}: skipped ({e})")
                continue
            out = dest / f"{m.name}.py"
            out.write_text(text)
            if not args.check:
                print(f"{m.name}: written {out}")
                continue
            committed = HERE / f"{m.name}.py"
            old = committed.read_text() if committed.exists() else ""
            if old == text:
                print(f"{m.name}: up to date")
                continue
            stale += 1
            diff = list(difflib.unified_diff(old.splitlines(), text.splitlines(), str(committed), "regenerated", n=1))
            print(f"{m.name}: out of date ({len(diff)} diff lines)")
            sys.stdout.writelines(line + "\n" for line in diff[:40])
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
