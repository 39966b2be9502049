"""The real SQTT captures in shared/data/sqtt (see its README.md), one Blob per shader engine's buffer, handed
to tests as parameters: `blob` (every one), `mapped_blob` (those with a reference inst_map), `fuzz_blob` (the
smallest instruction-traced one of each arch), or all by id ('gfx1100/plus_run_0/kern0_se1_1') as `captures`.
The captures are part of the repository (tests/data/sqtt): none found is an error, not a skip."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

# the real captures: the repository's copy of shared/data/sqtt
DATA = Path(__file__).resolve().parents[3] / "data" / "sqtt"


@dataclass(frozen=True)
class Blob:
    folder: Path  # shared/data/sqtt/<arch>/<run>
    file: str  # kern0_se<N>_<i>.bin
    arch: str
    itrace: bool  # instruction tracing was on for this shader engine

    @property
    def id(self) -> str:
        return f"{self.folder.parent.name}/{self.folder.name}/{self.file.removesuffix('.bin')}"

    @property
    def data(self) -> bytes:
        return _read(self.folder / self.file)

    @property
    def code_object(self) -> bytes:
        return _read(self.folder / self.capture["programs"][0]["file"])

    @property
    def base(self) -> int:
        return self.capture["programs"][0]["base"]

    @property
    def capture(self) -> dict:
        return _json(self.folder / "capture.json")

    @property
    def reference(self) -> dict:
        """This blob's reference decode: 'packets' (counts per kind) and, where present, 'inst_map'."""
        return _json(self.folder / "reference.json")[self.file]


@cache
def _read(path: Path) -> bytes:
    return path.read_bytes()


@cache
def _json(path: Path) -> dict:
    return json.loads(path.read_text())


def blobs() -> list[Blob]:
    """Every blob of every capture; the captures are part of the repository, so none found is an error."""
    out = []
    captures = sorted(DATA.glob("*/*/capture.json"))
    assert captures, f"no SQTT captures at {DATA} (tests/data/sqtt, a copy of shared/data/sqtt)"
    for capture in captures:
        meta = _json(capture)
        out += [Blob(capture.parent, t["file"], meta["arch"], t["itrace"]) for t in meta["traces"]]
    return out


def one_per_format() -> dict[str, Blob]:
    """The smallest instruction-traced blob of each arch (the fuzz targets)."""
    out: dict[str, Blob] = {}
    for b in blobs():
        if b.itrace and (b.arch not in out or len(b.data) < len(out[b.arch].data)):
            out[b.arch] = b
    return out


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    sets = {"blob": blobs, "mapped_blob": lambda: [b for b in blobs() if "inst_map" in b.reference],
            "fuzz_blob": lambda: list(one_per_format().values())}
    for name, found in sets.items():
        if name in metafunc.fixturenames:
            cases = found()
            metafunc.parametrize(name, [pytest.param(b, id=b.id) for b in cases])


@pytest.fixture(scope="session")
def captures() -> dict[str, Blob]:
    return {b.id: b for b in blobs()}
