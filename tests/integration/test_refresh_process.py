"""Whole `mlperf-warehouse refresh` processes: queries during a refresh, and a refresh killed part-way."""

import json
import os
import signal
import subprocess
import threading
import time

import pytest

from support.cli import CLI, in_process
from support.logs import SSD_ROUND, ssd_mirror, write_ssd_archive

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]

REFRESH = ["refresh", "--rounds", SSD_ROUND, "--no-prices"]
COUNT_SQL = "select count(*) as systems, sum(runs_total) as runs from fct_training_result"


@pytest.fixture
def env(tmp_path, warehouse, monkeypatch, capsys):
    site = tmp_path / "site"
    environment = os.environ | ssd_mirror(site, systems=20).settings(warehouse)
    first = in_process(REFRESH, environment, monkeypatch, capsys)
    assert first.returncode == 0, first.stdout + first.stderr
    write_ssd_archive(site / f"training_results_{SSD_ROUND}-main.tar.gz", systems=400)  # the next refresh has more to do
    return environment, warehouse


def _count(environment):
    proc = subprocess.run(CLI + ["query", COUNT_SQL, "--format", "json"], env=environment, capture_output=True, text=True)
    assert proc.returncode == 0, f"query failed during a refresh: {proc.stderr}"
    row = json.loads(proc.stdout)[0]
    return row["systems"], row["runs"]


def test_queries_while_a_refresh_runs_see_the_old_or_the_new_build(env):
    """Queries all through the refresh: every half second while it fetches and parses (the published file is
    not touched then), back to back from its build until it exits (the new build replaces the old)."""
    environment, _ = env
    refresh = subprocess.Popen(CLI + REFRESH, env=environment,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    building, stderr = threading.Event(), []

    def read_progress():
        for line in refresh.stderr:
            stderr.append(line)
            if line.startswith("building and publishing"):
                building.set()

    reader = threading.Thread(target=read_progress, daemon=True)
    reader.start()
    seen, while_building = [], 0
    while refresh.poll() is None:
        seen.append(_count(environment))
        if building.is_set():
            while_building += 1
        else:
            building.wait(0.5)
    reader.join(10)
    assert refresh.returncode == 0, "".join(stderr)
    seen.append(_count(environment))
    assert set(seen) <= {(20, 100), (400, 2000)}, seen
    assert seen[0] == (20, 100) and seen[-1] == (400, 2000)
    assert building.is_set() and while_building >= 3, (while_building, seen)


def test_a_refresh_killed_part_way_leaves_the_warehouse_and_the_next_refresh_completes(env, monkeypatch, capsys):
    environment, warehouse = env
    published = warehouse / "mlperf.duckdb"
    before = published.read_bytes()
    refresh = subprocess.Popen(CLI + REFRESH, env=environment,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    assert b"fetching and parsing" in refresh.stderr.readline()
    time.sleep(0.3)  # inside the round's parse, well before publishing
    os.killpg(refresh.pid, signal.SIGKILL)  # the refresh and its parse workers
    refresh.wait()
    assert published.read_bytes() == before
    assert _count(environment) == (20, 100)
    done = in_process(REFRESH, environment, monkeypatch, capsys)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _count(environment) == (400, 2000)
