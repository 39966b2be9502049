"""python -m usergpu.autogen [--check] [--only NAME ...]: regenerate the bindings, or check they are up to date."""

from __future__ import annotations

import argparse
import difflib
import sys
import tempfile
from pathlib import Path

from usergpu.autogen import _data
from usergpu.autogen.generator.modules import MODULES
from usergpu.errors import ToolchainError

HERE = Path(__file__).resolve().parent


def files(name: str, rendered: str | dict[str, str | bytes]) -> dict[str, str | bytes]:
    """The files a module renders to: its NAME.py, and any data file beside it."""
    return rendered if isinstance(rendered, dict) else {f"{name}.py": rendered}


def readable(content: str | bytes) -> list[str]:
    """A file's lines for a diff: a data file's tables, one entry a line."""
    if not isinstance(content, bytes):
        return content.splitlines()
    try:
        return _data.lines(content) if content else []
    except ValueError:  # msgpack's errors for bytes that are not its format
        return ["(not a data file)"]


def read(path: Path, like: str | bytes) -> str | bytes:
    """The committed file (empty if missing), as text or bytes like its regenerated content."""
    if not path.exists():
        return type(like)()
    return path.read_bytes() if isinstance(like, bytes) else path.read_text()


def write(path: Path, content: str | bytes) -> None:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)


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
                rendered = files(m.name, m.render())
            except ToolchainError as e:
                print(f"{m.name}: skipped ({e})")
                continue
            for filename, content in rendered.items():
                write(dest / filename, content)
            if not args.check:
                print(f"{m.name}: written {', '.join(str(dest / f) for f in rendered)}")
                continue
            diff = []
            for filename, content in rendered.items():
                committed = HERE / filename
                old = read(committed, content)
                if old != content:
                    diff += list(difflib.unified_diff(readable(old), readable(content), str(committed), "regenerated",
                                                      n=1)) or [f"--- {committed}", "+++ regenerated: other bytes"]
            if not diff:
                print(f"{m.name}: up to date")
                continue
            stale += 1
            print(f"{m.name}: out of date ({len(diff)} diff lines)")
            sys.stdout.writelines(line + "\n" for line in diff[:40])
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
