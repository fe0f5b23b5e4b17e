"""An empty folder given as --out (made by someone else, for a web server say) keeps its owner, group, mode and
inode: site, report and export write into it instead of replacing it, run after run; and a folder they made
themselves keeps the mode it was given."""

from __future__ import annotations

import os
import stat

import pytest

from pipelines import cli
from support.mini_warehouse import build_warehouse

pytestmark = [pytest.mark.slow]

COMMANDS = {
    "site": (["site"], ".mlperf-warehouse-site", "index.html"),
    "report": (["report", "--round", "v5.0", "--benchmark", "bert"], ".mlperf-warehouse-report", "report.html"),
    "export": (["export", "--format", "csv"], ".mlperf-warehouse-export", "manifest.json"),
}
OTHER = 65534  # nobody: an owner this test's user is not (set only where the test runs as root)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    base = tmp_path_factory.mktemp("owners") / "warehouse"
    base.mkdir()
    assert build_warehouse(base).published
    return base


def _identity(folder):
    st = folder.stat()
    return st.st_ino, st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_empty_folder_keeps_its_owner_mode_and_inode(base, tmp_path, command):
    args, marker, main_file = COMMANDS[command]
    out = tmp_path / "www"
    out.mkdir()
    os.chmod(out, 0o2751)  # setgid and a mode no umask gives: what a new folder would not have
    if os.geteuid() == 0:
        os.chown(out, OTHER, OTHER)
    before = _identity(out)
    for _ in range(2):  # the second run replaces the content of what is now its own folder, not the folder
        assert cli.main([*args, "--out", str(out), "--warehouse-dir", str(base)]) == 0
        assert _identity(out) == before
        assert (out / marker).is_file() and (out / main_file).is_file()
        assert not [p.name for p in out.iterdir() if p.name.startswith(marker + ".")]  # no work folder left
        (out / "stale.txt").write_text("gone after the next run")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["www"]  # nothing built beside it


def test_a_run_killed_in_an_empty_folder_does_not_make_it_foreign(base, tmp_path):
    out = tmp_path / "www"
    (out / ".mlperf-warehouse-export.work-0badc0de" / "fct_training_result").mkdir(parents=True)  # a killed run's
    assert cli.main(["export", "--format", "csv", "--out", str(out), "--warehouse-dir", str(base)]) == 0
    assert (out / "manifest.json").is_file() and not (out / ".mlperf-warehouse-export.work-0badc0de").exists()


def test_its_own_folder_keeps_the_mode_it_was_given(base, tmp_path):
    out = tmp_path / "exports"
    assert cli.main(["export", "--format", "csv", "--out", str(out), "--warehouse-dir", str(base)]) == 0
    os.chmod(out, 0o750)
    assert cli.main(["export", "--format", "csv", "--out", str(out), "--warehouse-dir", str(base)]) == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o750 and (out / "manifest.json").is_file()
