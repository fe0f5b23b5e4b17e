"""`refresh` with nothing to do stops at the pre-flight: no Dagster run, the published build untouched;
any change upstream, or --full, runs the jobs again."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from support.cli import CLI, in_process
from support.logs import SSD_ROUND, ssd_mirror, write_ssd_archive

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]

REFRESH = ["refresh", "--rounds", SSD_ROUND, "--no-prices"]


def _runs(home: Path) -> list[str]:
    with dg.DagsterInstance.from_config(str(home)) as instance:
        runs = instance.get_runs()
        assert all(run.tags.get("mlperf/launched_by") == "mlperf-warehouse refresh" for run in runs)
        return [run.job_name for run in runs]


def _mirror(tmp_path: Path) -> tuple[Path, Path, dict]:
    """A local mirror holding a small v4.1 archive and the rules; the environment pointing a refresh at
    it and at an empty warehouse (whose Dagster instance is its own)."""
    site, warehouse = tmp_path / "site", tmp_path / "warehouse"
    mirror = ssd_mirror(site, systems=4)
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"} | mirror.settings(warehouse)
    return site / f"training_results_{SSD_ROUND}-main.tar.gz", warehouse, env


def test_nothing_changed_skips_dagster_until_a_source_changes(tmp_path, monkeypatch, capsys):
    archive, warehouse, env = _mirror(tmp_path)

    def refresh(*extra):
        done = in_process([*REFRESH, *extra], env, monkeypatch, capsys)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    assert "published" in refresh()
    home = warehouse / "dagster"
    first = _runs(home)
    assert {"training_round_job", "warehouse_job", "outputs_job"} <= set(first)
    published = (warehouse / "mlperf.duckdb").stat()

    out = refresh()
    assert "nothing changed since the last complete refresh" in out
    assert _runs(home) == first  # no Dagster run at all
    assert (warehouse / "mlperf.duckdb").stat().st_ino == published.st_ino
    status = in_process(["status", "--json"], env, monkeypatch, capsys)
    assert '"ok": true' in status.stdout and "nothing changed" in status.stdout

    assert "unchanged upstream; not re-parsed" in refresh("--full")  # every job runs, nothing is redone
    assert len(_runs(home)) == len(first) + 2  # a round run and a warehouse run (no publish: no outputs)

    write_ssd_archive(archive, systems=5)  # the mirror's archive changes: the pre-flight must not skip it
    out = refresh()
    assert "nothing changed" not in out and "downloaded; re-parsed" in out


def test_a_refresh_killed_after_downloading_a_change_does_not_let_the_next_one_skip(tmp_path, monkeypatch, capsys):
    """The killed refresh leaves the new archive in raw/, its round not staged and nothing published:
    the next refresh must not take that for "nothing changed" (the record is dropped as a refresh starts)."""
    archive, warehouse, env = _mirror(tmp_path)
    command = REFRESH
    assert in_process(command, env, monkeypatch, capsys).returncode == 0
    raw = next((warehouse / "raw").rglob(f"training_results_{SSD_ROUND}.tar.gz"))
    old_raw = raw.read_bytes()
    write_ssd_archive(archive, systems=300)

    refresh = subprocess.Popen(CLI + command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    deadline = time.monotonic() + 60
    while raw.read_bytes() == old_raw and refresh.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    os.killpg(refresh.pid, signal.SIGKILL)  # the new archive is downloaded; it is still being parsed
    refresh.wait()
    assert raw.read_bytes() == archive.read_bytes()

    done = in_process(command, env, monkeypatch, capsys)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "nothing changed" not in done.stdout and "published" in done.stdout
    with duckdb.connect(str(warehouse / "mlperf.duckdb"), read_only=True) as con:
        assert con.execute("select count(*) from fct_training_result").fetchone()[0] == 300
