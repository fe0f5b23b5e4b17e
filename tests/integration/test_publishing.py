"""Safe publishing: readers never see a half-built or mixed warehouse, killed builds change
nothing, rollback brings back the previous build. Real processes, real files, no mocks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pipelines.lib.warehouse import build as wh
from pipelines.lib.warehouse.query import connect_readonly
from pipelines.lib.warehouse.store import complete_builds, rollback
from support.mini_warehouse import stage_round
from support.paths import TESTS_DIR

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]

TESTS = TESTS_DIR
CLI = Path(sys.executable).with_name("mlperf-warehouse")
# One statement reading two tables and the build stamp: a mixed build would show a bad pair.
SHAPE_SQL = ("select (select count(*) from fct_training_run) as runs, (select count(*) from dim_system) as systems, "
             "(select fingerprint from _build_info) as fingerprint")
# The two datasets a build can hold: `systems` systems with 5 runs each.
SHAPES = {2: (10, 2), 3: (15, 3)}


def shape(base: Path) -> tuple[int, int]:
    with connect_readonly(base / "mlperf.duckdb") as con:
        return con.execute(SHAPE_SQL).fetchone()[:2]


def publish_shape(base: Path, systems: int) -> wh.BuildResult:
    stage_round(base, "v5.0", systems=systems)
    return wh.build(base)


def python_process(code: str, base: Path, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), str(base), str(TESTS)],
                            env=os.environ | {"MLPERF_WAREHOUSE_DIR": str(base)}, text=True, **kwargs)


def published_record(base: Path) -> dict:
    return json.loads((base / "builds" / "published.json").read_text())


def test_rollback_restores_previous_build(warehouse):
    publish_shape(warehouse, 2)
    first = published_record(warehouse)
    publish_shape(warehouse, 3)
    second = published_record(warehouse)
    assert shape(warehouse) == SHAPES[3]

    record = rollback(warehouse)
    assert record["build"] == first["build"] and record["rolled_back_from"] == second["build"]
    assert shape(warehouse) == SHAPES[2]
    assert published_record(warehouse) | {"rolled_back_from": None} == first | {"rolled_back_from": None}
    with pytest.raises(ValueError, match="no kept build older"):
        rollback(warehouse)

    proc = subprocess.run([str(CLI), "rollback", "--to", second["build"]], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert shape(warehouse) == SHAPES[3]

    # After rolling back to an older build, the next refresh sees its inputs differ and republishes.
    rollback(warehouse, to=first["build"])
    assert wh.build(warehouse).published and shape(warehouse) == SHAPES[3]


def test_reader_of_old_file_keeps_reading_after_publish(warehouse):
    publish_shape(warehouse, 2)
    with connect_readonly(warehouse / "mlperf.duckdb") as old:
        publish_shape(warehouse, 3)  # os.replace while `old` holds the previous file open
        assert old.execute(SHAPE_SQL).fetchone()[:2] == SHAPES[2]
        # New readers see the new build. (In another process: DuckDB caches open databases by path,
        # so a second connect in *this* process would share `old`'s instance.)
        proc = subprocess.run([str(CLI), "query", SHAPE_SQL, "--format", "json"], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        assert tuple(json.loads(proc.stdout)[0].values())[:2] == SHAPES[3]
        assert old.execute("select count(*) from fct_training_result").fetchone()[0] == 2


def test_queries_during_repeated_builds_see_old_or_new_never_an_error(warehouse):
    publish_shape(warehouse, 2)
    stop = warehouse.parent / "stop-building"
    builder = python_process("""
        import sys, time
        from pathlib import Path
        sys.path.insert(0, sys.argv[2])
        from support.mini_warehouse import stage_round
        from pipelines.lib.warehouse import build as wh
        base = Path(sys.argv[1]); builds = 0
        while not (base.parent / "stop-building").exists():
            stage_round(base, "v5.0", systems=3 if builds % 2 == 0 else 2)
            wh.build(base)
            builds += 1
        print(builds)
    """, warehouse, stdout=subprocess.PIPE)
    seen = []
    try:
        for _ in range(20):
            proc = subprocess.run([str(CLI), "query", SHAPE_SQL, "--format", "json"], capture_output=True, text=True,
                                  env=os.environ | {"MLPERF_WAREHOUSE_DIR": str(warehouse)})
            assert proc.returncode == 0, f"query failed during a build: {proc.stderr}"
            row = json.loads(proc.stdout)[0]
            seen.append((row["runs"], row["systems"]))
    finally:
        stop.touch()
        builds = int(builder.communicate(timeout=120)[0])
    assert builder.returncode == 0 and builds >= 2
    assert set(seen) <= set(SHAPES.values()), f"a query saw a mixed build: {seen}"
    assert set(seen) == set(SHAPES.values()), "the readers should have seen both builds"


def test_sigkill_mid_build_leaves_published_warehouse_unchanged(warehouse):
    publish_shape(warehouse, 2)
    published = warehouse / "mlperf.duckdb"
    before = (published.read_bytes(), (warehouse / "builds" / "published.json").read_text())
    existing = {p.name for p in (warehouse / "builds").glob("mlperf-*.duckdb")}
    builder = python_process("""
        import sys
        from pathlib import Path
        sys.path.insert(0, sys.argv[2])
        from support.mini_warehouse import stage_round
        from pipelines.lib.warehouse import build as wh
        stage_round(Path(sys.argv[1]), "v5.0", systems=2000, runs_per_system=10)  # a build of about a second
        wh.build(Path(sys.argv[1]))
    """, warehouse)
    deadline = time.monotonic() + 60
    while not ({p.name for p in (warehouse / "builds").glob("mlperf-*.duckdb")} - existing):
        assert builder.poll() is None and time.monotonic() < deadline, "the build never started"
        time.sleep(0.005)
    time.sleep(0.2)  # well inside the build, before publish
    builder.send_signal(signal.SIGKILL)
    builder.wait()
    assert builder.returncode == -signal.SIGKILL

    assert (published.read_bytes(), (warehouse / "builds" / "published.json").read_text()) == before
    assert shape(warehouse) == SHAPES[2]
    assert all(p.name in existing for p in complete_builds(warehouse)), "a killed build must not be a rollback target"

    result = wh.build(warehouse)  # the next refresh completes and publishes the staged data
    assert result.published and shape(warehouse) == (20000, 2000)
