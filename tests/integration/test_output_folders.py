"""Every command that writes a folder (site, report, export) builds it beside its target and swaps it in,
replacing only a folder it wrote itself (a marker file): whatever else is there stays untouched."""

from __future__ import annotations

import pytest

from pipelines import cli
from support.mini_warehouse import build_warehouse

pytestmark = [pytest.mark.slow]

COMMANDS = {
    "site": (["site"], ".mlperf-warehouse-site", "index.html"),
    "report": (["report", "--round", "v5.0", "--benchmark", "bert"], ".mlperf-warehouse-report", "report.html"),
    "export": (["export", "--format", "csv"], ".mlperf-warehouse-export", "manifest.json"),
}


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    base = tmp_path_factory.mktemp("outputs") / "warehouse"
    base.mkdir()
    assert build_warehouse(base).published
    return base


def _tree(folder) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_folder_the_command_did_not_write_is_left_untouched(base, tmp_path, capsys, command):
    args, marker, main_file = COMMANDS[command]
    out = tmp_path / "mine"
    (out / "assets").mkdir(parents=True)
    (out / "assets" / "logo.svg").write_text("<svg/>")
    (out / "rounds" / "2024").mkdir(parents=True)
    (out / "rounds" / "2024" / "notes.md").write_text("my notes")
    (out / "index.html").write_text("<p>my page</p>")
    before = _tree(out)
    assert cli.main([*args, "--out", str(out), "--warehouse-dir", str(base)]) == 1
    err = capsys.readouterr().err
    assert "is not empty and was not written by `mlperf-warehouse" in err and "choose another --out" in err
    assert _tree(out) == before
    assert [p.name for p in tmp_path.iterdir()] == ["mine"]  # no half-built folder left beside it


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_its_own_folder_is_replaced_whole(base, tmp_path, command):
    args, marker, main_file = COMMANDS[command]
    out = tmp_path / "out"
    for _ in range(2):
        assert cli.main([*args, "--out", str(out), "--warehouse-dir", str(base)]) == 0
        assert (out / marker).is_file() and (out / main_file).is_file()
        (out / "stale.txt").write_text("left from an earlier run")  # gone after the next run
    assert cli.main([*args, "--out", str(out), "--warehouse-dir", str(base)]) == 0
    assert not (out / "stale.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli.main([*args, "--out", str(empty), "--warehouse-dir", str(base)]) == 0
    assert (empty / marker).is_file()
