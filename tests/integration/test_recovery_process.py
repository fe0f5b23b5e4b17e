"""Whole processes: one refresh at a time, stale leftovers cleaned, a damaged published file
recovered, and parse workers that die with their refresh."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from support.cli import CLI, in_process
from support.logs import SSD_ROUND, ssd_mirror, write_ssd_archive
from support.paths import PROJECT_ROOT

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]

ROOT = PROJECT_ROOT
REFRESH = ["refresh", "--rounds", SSD_ROUND, "--no-prices"]


@pytest.fixture
def env(tmp_path, warehouse, monkeypatch, capsys):
    """The environment of a refresh of a 3-system v4.1 mirror, the warehouse, the mirror, and `refresh()`:
    the next refresh, run in this process (a refresh in a process of its own is what a test is about)."""
    site = tmp_path / "site"
    environment = os.environ | {"PYTHONPATH": str(ROOT)} | ssd_mirror(site, systems=3).settings(warehouse)
    return environment, warehouse, site, lambda: in_process(REFRESH, environment, monkeypatch, capsys)


def _opens(path: Path) -> int:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute("select count(*) from fct_training_run").fetchone()[0]
    finally:
        con.close()


HOLD_LOCK = """
import sys, time
from pathlib import Path
from pipelines.lib.io.locking import refresh_lock
with refresh_lock(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(120)
"""


def test_a_second_refresh_exits_naming_the_running_one_and_a_killed_holder_frees_the_lock(env):
    environment, warehouse, _, refresh = env
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(warehouse)], env=environment,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        second = subprocess.run(CLI + REFRESH, env=environment, capture_output=True, text=True)
        assert second.returncode == 1
        assert f"another refresh (pid {holder.pid}" in second.stderr and "does nothing" in second.stderr
        assert time.monotonic() - started < 20  # it did not wait, and did nothing
        assert not (warehouse / "mlperf.duckdb").exists() and not (warehouse / "raw").exists()
        assert "last_refresh.json" not in [p.name for p in warehouse.rglob("*")]  # the holder's record is not overwritten
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    done = refresh()  # the kernel released the dead holder's lock
    assert done.returncode == 0, done.stdout + done.stderr
    assert _opens(warehouse / "mlperf.duckdb") == 15


def test_the_next_refresh_removes_stale_files_and_rebuilds_a_truncated_published_file(env):
    environment, warehouse, _, refresh = env
    assert refresh().returncode == 0
    published = warehouse / "mlperf.duckdb"
    old = time.time() - 3600
    stale = [warehouse / "raw" / "mlperf" / ".training_results_v4.1.tar.gz.0123456789ab.tmp",
             warehouse / "builds" / "mlperf-20200101T000000000000Z.duckdb",  # an unfinished build
             warehouse / "builds" / "mlperf-20200101T000000000000Z.duckdb.wal",
             warehouse / "builds" / "mlperf-20990101T000000000000Z.duckdb.wal",
             warehouse / "staging" / "training_runs" / ".v4.1.parquet.0123.tmp"]
    for path in stale:
        path.write_bytes(b"\0" * 4096)
        os.utime(path, (old, old))
    with open(published, "r+b") as fh:  # truncated in place: the build it is a hard link of is damaged too
        fh.truncate(16384)
    with pytest.raises(duckdb.Error):
        _opens(published)

    status = subprocess.run(CLI + ["status"], env=environment, capture_output=True, text=True)
    assert status.returncode == 0, status.stderr
    assert "published file DAMAGED" in status.stdout and "last refresh: ok" in status.stdout

    done = refresh()
    assert done.returncode == 0, done.stdout + done.stderr
    assert [p for p in stale if p.exists()] == []
    assert _opens(published) == 15
    assert "DAMAGED" not in subprocess.run(CLI + ["status"], env=environment, capture_output=True, text=True).stdout


def test_a_published_file_replaced_by_garbage_is_republished_from_the_newest_good_build(env):
    _, warehouse, site, refresh = env
    assert refresh().returncode == 0
    write_ssd_archive(site / f"training_results_{SSD_ROUND}-main.tar.gz", systems=4)
    assert refresh().returncode == 0
    published = warehouse / "mlperf.duckdb"
    newest = sorted((warehouse / "builds").glob("mlperf-*.duckdb"))[-1]
    garbage = warehouse / "garbage"
    garbage.write_bytes(b"not a database" * 100)
    os.replace(garbage, published)

    done = refresh()
    assert done.returncode == 0, done.stdout + done.stderr
    assert _opens(published) == 20
    assert published.stat().st_ino == newest.stat().st_ino  # the newest good build, not a rebuild
    assert "unchanged" in done.stdout


WORKERS = """
import os, sys, time
from pipelines.lib.mlperf.scoring_pool import ResultScorer
from pipelines.lib.mlperf.round_rules import RoundRules
scorer = ResultScorer("v4.1", RoundRules(None, None), 2)
futures = [scorer.pool.submit(time.sleep, 120) for _ in range(2)]
time.sleep(1.0)
print(" ".join(str(pid) for pid in scorer.pool._processes), flush=True)
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead too
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def test_parse_workers_die_with_a_killed_refresh():
    proc = subprocess.Popen([sys.executable, "-c", WORKERS], stdout=subprocess.PIPE, text=True,
                            env=os.environ | {"PYTHONPATH": str(ROOT)})
    pids = [int(p) for p in proc.stdout.readline().split()]
    assert len(pids) == 2 and all(_alive(p) for p in pids)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(p) for p in pids), "workers outlived their refresh"
