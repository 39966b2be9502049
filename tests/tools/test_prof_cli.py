"""usergpu prof: showing the real captures of shared/data/sqtt, and a capture made on MOCKKFD+AMD."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from usergpu.isa.amd.sqtt import decode
from usergpu.tools import cli

DATA = Path(__file__).parents[1] / "data" / "sqtt"  # the real captures (a copy of shared/data/sqtt)
CAPTURES = sorted(p.parent for p in DATA.glob("*/*/capture.json"))
assert CAPTURES, f"no real captures in {DATA}"  # part of the repository: none is a broken checkout
KERNELS = Path(__file__).parents[1] / "kernels"


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: f"{p.parent.name}-{p.name}")
def test_show_renders_every_real_capture(capture, capsys, tmp_path):
    assert cli.main(["prof", "show", str(capture)]) == 0
    out = capsys.readouterr().out
    meta = json.loads((capture / "capture.json").read_text())
    reference = json.loads((capture / "reference.json").read_text())
    assert f"capture of {meta['arch']}: {len(meta['traces'])} trace blobs" in out
    assert cli.main(["prof", "show", str(capture), "--json", "--perfetto", str(tmp_path / "t.json")]) == 0
    shown = json.loads(capsys.readouterr().out)
    for entry in shown["traces"]:
        ref = reference[entry["file"]]
        if ref.get("inst_map"):  # the waves the reference maps are the ones shown, in order
            assert [[w["wave"], w["pc"]] for w in entry["waves"]] == ref["inst_map"]
    tracks = {(e["pid"], e["tid"]) for e in json.loads((tmp_path / "t.json").read_text())["traceEvents"]}
    assert len(tracks) == len({(e["se"], w["wave"]) for e in shown["traces"] for w in e["waves"]})


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: f"{p.parent.name}-{p.name}")
def test_damage_column_marks_a_buffer_cut_mid_token(capture, capsys):
    """A real buffer that ends inside a token shows whole: its packets, its waves, and where it was cut off."""
    assert cli.main(["prof", "show", str(capture), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)["traces"]
    assert cli.main(["prof", "show", str(capture)]) == 0
    rows = capsys.readouterr().out.splitlines()
    for entry in shown:
        cut = decode((capture / entry["file"]).read_bytes()).truncated
        assert entry["error"] is None
        assert entry["truncated"] == (cut and {"kind": cut.kind, "offset": cut.offset, "byte": cut.byte,
                                               "size": cut.size, "bits": cut.bits})
        row = next(r for r in rows if r.split()[:3] == [entry["kernel"], str(entry["se"]), str(entry["bytes"])])
        said = f"cut off at byte {cut.byte}: {cut.kind}, {cut.bits} of {cut.size} bits" if cut else None
        assert (said in row) if cut else row.split()[-1] == str(len(entry["waves"]))


def test_json_composes_with_kernel_and_wave(capsys):
    """--json --kernel K --wave W: only K's traces, and in them only slot W's instructions, as the full show has."""
    capture = DATA / "gfx1100" / "gemm_run_0"
    assert cli.main(["prof", "show", str(capture), "--json"]) == 0
    full = json.loads(capsys.readouterr().out)
    (kernel,) = {e["kernel"] for e in full["traces"]}
    slots = sorted({w["wave"] for e in full["traces"] for w in e["waves"]})
    assert len(slots) > 1
    for slot in slots:
        assert cli.main(["prof", "show", str(capture), "--json", "--kernel", kernel, "--wave", str(slot)]) == 0
        shown = json.loads(capsys.readouterr().out)
        assert [e["se"] for e in shown["traces"]] == [e["se"] for e in full["traces"]]
        for part, whole in zip(shown["traces"], full["traces"], strict=True):
            assert part["waves"] == [w for w in whole["waves"] if w["wave"] == slot]


def test_run_then_show_a_mock_capture(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MOCKGPU_ARCH", "gfx1100")
    out = tmp_path / "cap"
    argv = ["prof", "run", str(KERNELS / "prof.cl"), "--kernel", "loop", "--grid", "2", "--block", "64",
            "--arg", "f32[128]:zeros", "--arg", "u32=5", "--sqtt", "--pmc", "SQ_WAVES,SQ_INSTS_VALU", "-o", str(out)]
    assert cli.main(argv) == 0
    text = capsys.readouterr().out
    assert "Timestamp" in text and "s_endpgm" in text and "SQ_INSTS_VALU" in text
    assert cli.main(["prof", "show", str(out), "--wave", "0", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    waves = [w for e in shown["traces"] for w in e["waves"]]
    assert waves and {w["wave"] for w in waves} == {0}
    # two workgroups of two waves: workgroup g runs on shader engine g % 6
    assert shown["counters"][0]["counters"]["SQ_WAVES"] == {f"{se}": 2 * (se < 2) for se in range(6)}


@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
def test_run_then_show_a_cdna_capture(arch, tmp_path, capsys, monkeypatch):
    """MI300X and MI350X: 8 XCCs of 4 shader engines, a trace blob each; the .cl compiles for MOCKGPU_ARCH. The
    XCCs take the 8 workgroups in turn (from the AQL queue's first logical XCC, whichever that is), a workgroup
    each: XCC 0's goes to its SE 0, CU 0, which traces instructions, as does XCC 1's SE 0 (bit 4)."""
    monkeypatch.setenv("MOCKGPU_ARCH", arch)
    out = tmp_path / "cap"
    argv = ["prof", "run", str(KERNELS / "prof.cl"), "--kernel", "loop", "--grid", "8", "--block", "64",
            "--arg", "f32[512]:zeros", "--arg", "u32=5", "--sqtt", "--pmc", "SQ_WAVES,SQ_INSTS_VALU,SQ_WAVE_CYCLES",
            "--itrace-se-mask", "0x11", "-o", str(out)]
    assert cli.main(argv) == 0
    text = capsys.readouterr().out
    assert f"loop on MOCKKFD+AMD ({arch})" in text and f"capture of {arch}: 32 trace blobs" in text
    assert "s_endpgm" in text and "SQ_WAVE_CYCLES" in text
    assert json.loads((out / "capture.json").read_text())["arch"] == arch
    assert cli.main(["prof", "show", str(out), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [e["se"] for e in shown["traces"]] == list(range(32))
    traced = [e for e in shown["traces"] if e["waves"]]  # the traces of XCC 0's and XCC 1's SE 0, CU 0
    assert [e["se"] for e in traced] == [0, 4]
    for e in traced:
        assert e["waves"][-1]["text"] == "s_endpgm" and e["error"] is None
        assert all(w["time"] % 4 == 0 and w["duration"] >= 4 for w in e["waves"])
    (counters,) = shown["counters"]
    waves = counters["counters"]["SQ_WAVES"]  # per XCC and shader engine: SE 0 of each XCC
    assert waves == {f"{x},{se}": int(se == 0) for x in range(8) for se in range(4)}


def test_prof_errors(tmp_path, capsys):
    assert cli.main(["prof", "show", str(tmp_path)]) == 1
    assert "not a capture directory" in capsys.readouterr().err
    assert cli.main(["prof", "run", str(KERNELS / "prof.cl")]) == 1
    assert "--sqtt, --pmc" in capsys.readouterr().err
