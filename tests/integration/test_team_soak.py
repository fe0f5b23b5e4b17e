"""Team mode's soak test (issue 36): a reader queries the lake in a loop while three refreshes, a rollback and
one killed refresh run, each writer a process of its own; every answer the reader got is a complete snapshot.

The reader is a process that opens a fresh `connect_lake` connection per answer and, in that one transaction,
counts the rows of several public relations one statement at a time (pausing between them, so a commit has
time to land mid-answer), then reads `_build_info`'s fingerprint and the snapshot it read. Afterwards every
answer must equal, exactly, what some committed snapshot holds (each read again by id), and the snapshot it
says it read; the snapshots it saw never go backwards and are never older than a publish that had finished
before the answer began; the killed writer committed nothing, and the next publish deleted what it left.
The four warehouses differ in rounds and systems, so each build's row counts differ in every relation read."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from support.mini_warehouse import build_warehouse
from support.postgres import server_binaries, temporary_cluster

pytestmark = [pytest.mark.slow, pytest.mark.skipif(server_binaries() is None, reason=(
    "PostgreSQL's server is not installed (apt-get install postgresql; .ci/run installs it)"))]

# what the reader counts, in this order (then _build_info's fingerprint)
COUNTED = ("fct_training_result", "dim_system", "fct_training_run", "mart_scaling_efficiency", "fct_quarantine")
PAUSE = 0.02  # seconds between the reader's statements: a commit may land between two of them
BUILDS = (  # (rounds, systems): four different small warehouses, built in this order (their names sort so)
    (("v4.1",), 2),
    (("v4.0", "v4.1", "v5.0"), 3),
    (("v3.1", "v4.0", "v4.1", "v5.0"), 4),
    (("v3.0", "v3.1", "v4.0", "v4.1", "v5.0"), 5),
)

_READER = """
import json, sys, time
from pathlib import Path
from pipelines.lib.warehouse.lake import connect_lake
from pipelines.lib.warehouse.team import TeamCatalog

catalog, stop, counted, pause = TeamCatalog(sys.argv[1]), Path(sys.argv[3]), sys.argv[4].split(","), float(sys.argv[5])
with open(sys.argv[2], "a") as out:
    while not stop.exists():
        answer = {"started": time.time()}
        try:
            with connect_lake(catalog) as con:
                counts = []
                for name in counted:
                    counts.append(con.execute(f'select count(*) from "{name}"').fetchone()[0])
                    time.sleep(pause)
                answer["counts"] = counts
                answer["fingerprint"] = con.execute("select fingerprint from _build_info").fetchone()[0]
                answer["snapshot"] = con.execute("select * from mlperf_lake.current_snapshot()").fetchone()[0]
        except Exception as exc:
            answer["error"] = f"{type(exc).__name__}: {exc}"
        answer["ended"] = time.time()
        out.write(json.dumps(answer) + "\\n")
        out.flush()
"""

_PUBLISHER = """
import json, os, sys
from pathlib import Path
os.nice(int(sys.argv[4]))
from pipelines.lib.warehouse.lake_publish import publish_published
from pipelines.lib.warehouse.team import TeamCatalog
print(json.dumps(publish_published(TeamCatalog(sys.argv[1], sys.argv[2]), Path(sys.argv[3])), default=str))
"""


@pytest.fixture(scope="module")
def cluster():
    with temporary_cluster() as running:
        yield running


@pytest.fixture(scope="module")
def warehouses(tmp_path_factory) -> list[Path]:
    """Four small real warehouses, each with other row counts (built in order: their build names increase)."""
    bases = []
    for i, (rounds, systems) in enumerate(BUILDS):
        base = tmp_path_factory.mktemp(f"soak{i}") / "warehouse"
        build_warehouse(base, rounds=rounds, systems=systems)
        bases.append(base)
    return bases


@pytest.fixture
def catalog(cluster, tmp_path):
    name = f"soak_{uuid.uuid4().hex[:10]}"
    url = cluster.create_database(name, f"{name}_owner", "owner-Secret-9")
    return {"url": url, "data_path": str(tmp_path / "shared-folder" / "lake"), "database": name}


def _publisher(base: Path, catalog: dict, nice: int = 0) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", _PUBLISHER, catalog["url"], catalog["data_path"] + "/", str(base),
                             str(nice)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _publish(base: Path, catalog: dict) -> dict:
    """A refresh's publish of `base`, in a process of its own, to its end; its record."""
    proc = _publisher(base, catalog)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    record = json.loads(out.strip().splitlines()[-1])
    assert record["published"] is True, record
    return record


def _snapshot_ids(catalog: dict) -> list[int]:
    from pipelines.lib.warehouse.lake import connect_lake, snapshots
    from pipelines.lib.warehouse.team import TeamCatalog

    with connect_lake(TeamCatalog(catalog["url"])) as con:
        return [s["snapshot"] for s in snapshots(con)]


def _snapshot_answer(catalog: dict, snapshot: int) -> tuple | None:
    """What a reader reading snapshot `snapshot` must answer: (counts, fingerprint); None for a snapshot holding no
    relation (the lake's creation, before the first publish)."""
    from pipelines.lib.warehouse.lake import connect_lake
    from pipelines.lib.warehouse.team import TeamCatalog

    with connect_lake(TeamCatalog(catalog["url"]), snapshot=snapshot) as con:
        if not con.execute("select count(*) from information_schema.tables where table_catalog = current_database() "
                           "and table_schema = 'main'").fetchone()[0]:
            return None
        counts = tuple(con.execute(f'select count(*) from "{name}"').fetchone()[0] for name in COUNTED)
        return counts, con.execute("select fingerprint from _build_info").fetchone()[0]


def _answers(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


def _await_answers(path: Path, reader: subprocess.Popen, since: float, count: int = 1) -> None:
    """Until the reader has given `count` answers begun after `since` (each of the lake as it is now)."""
    deadline = time.monotonic() + 60
    while sum(a["started"] > since for a in _answers(path)) < count:
        if reader.poll() is not None:
            pytest.fail(f"the reader stopped (exit {reader.returncode}): {reader.stderr.read()}")
        assert time.monotonic() < deadline, f"the reader gave no {count} answers in 60 s"
        time.sleep(0.05)


def _lock_held(cluster, database: str) -> bool:
    from pipelines.lib.warehouse.catalog_lock import LOCK_CLASS

    out = cluster.psql(f"select count(*) from pg_locks where locktype = 'advisory' and granted and "
                       f"classid = {LOCK_CLASS}::oid", database=database).stdout
    return int(out.strip() or 0) > 0


def _data_files(catalog: dict) -> set[Path]:
    return set(Path(catalog["data_path"]).rglob("*.parquet"))


def test_a_reader_in_a_loop_sees_only_whole_snapshots_through_refreshes_a_rollback_and_a_kill(
        warehouses, catalog, cluster, tmp_path):
    from pipelines.lib.warehouse.lake_publish import publish_published, rollback_lake
    from pipelines.lib.warehouse.team import TeamCatalog

    first_build, second, third, fourth = warehouses
    expected: dict[int, tuple] = {}  # snapshot → its answer, read as soon as it is committed
    finished: list[tuple[float, int]] = []  # (when a publish had returned, the snapshot it committed)

    def committed(snapshot: int) -> None:
        finished.append((time.time(), snapshot))
        expected[snapshot] = _snapshot_answer(catalog, snapshot)

    # the lake exists (one publish) before the reader starts
    committed(publish_published(TeamCatalog(catalog["url"], catalog["data_path"] + "/"), first_build)["snapshot"])
    answers_file, stop = tmp_path / "answers.jsonl", tmp_path / "stop"
    reader = subprocess.Popen([sys.executable, "-c", _READER, catalog["url"], str(answers_file), str(stop),
                               ",".join(COUNTED), str(PAUSE)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)
    try:
        _await_answers(answers_file, reader, 0)
        # two refreshes that complete, one after the other
        for base in (second, third):
            committed(_publish(base, catalog)["snapshot"])
            _await_answers(answers_file, reader, finished[-1][0])
        # a rollback to the second build (in this process)
        rolled = rollback_lake(TeamCatalog(catalog["url"]), to=str(finished[1][1]))
        assert rolled["to_snapshot"] == finished[1][1]
        committed(rolled["snapshot"])
        _await_answers(answers_file, reader, finished[-1][0])
        # a refresh killed inside its copy: after its first new data file, before its commit
        snapshots_before, files_before = _snapshot_ids(catalog), _data_files(catalog)
        killed = _publisher(fourth, catalog, nice=10)  # niced: a busy machine still kills it before its commit
        deadline = time.monotonic() + 120
        while not (_data_files(catalog) - files_before) and killed.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        killed.send_signal(signal.SIGKILL)  # nothing, if it ended already (the assertion below says so)
        killed.wait(timeout=30)
        assert killed.returncode == -signal.SIGKILL, f"the writer ended before the kill: {killed.stderr.read()}"
        left = _data_files(catalog) - files_before
        assert left, "the killed writer had written no data file: the kill did not land inside its copy"
        assert _snapshot_ids(catalog) == snapshots_before, "the killed writer committed a snapshot"
        killed_at = time.time()
        _await_answers(answers_file, reader, killed_at)
        # its lock died with its session; the third completed refresh deletes what it left
        deadline = time.monotonic() + 30
        while _lock_held(cluster, catalog["database"]) and time.monotonic() < deadline:
            time.sleep(0.05)
        final = _publish(fourth, catalog)
        committed(final["snapshot"])
        assert final["cleanup"]["orphaned_files_deleted"] >= len(left), final["cleanup"]
        assert not (left & _data_files(catalog)), "files of the killed writer are still there"
        _await_answers(answers_file, reader, finished[-1][0])
    finally:
        stop.touch()
        try:
            reader.wait(timeout=60)
        except subprocess.TimeoutExpired:
            reader.kill()
            reader.wait()
    assert reader.returncode == 0, reader.stderr.read()

    # every snapshot ever committed, read again by id: none other than those the publishes returned
    for snapshot in _snapshot_ids(catalog):
        answer = _snapshot_answer(catalog, snapshot)
        if snapshot in expected:
            assert answer == expected[snapshot], f"snapshot {snapshot} reads otherwise now"
        else:
            assert answer is None, f"snapshot {snapshot} holds relations but no publish returned it"
    assert sorted(expected) == [s for _, s in finished]
    assert len({expected[s] for s in expected}) == len(BUILDS), "the four builds do not differ in what is counted"

    answers = _answers(answers_file)
    errors = [a for a in answers if "error" in a]
    assert not errors, f"{len(errors)} of {len(answers)} answers failed, the first: {errors[0]}"
    whole = set(expected.values())
    for a in answers:
        got = (tuple(a["counts"]), a["fingerprint"])
        assert got in whole, f"an answer that is no committed snapshot (a mix of two?): {a}; snapshots: {expected}"
        assert got == expected.get(a["snapshot"]), f"an answer that is not the snapshot it read: {a}; {expected}"
    seen = [a["snapshot"] for a in answers]
    assert seen == sorted(seen), "the reader saw an older snapshot after a newer one"
    for at, snapshot in finished:
        stale = [a for a in answers if a["started"] > at and a["snapshot"] < snapshot]
        assert not stale, f"answers begun after snapshot {snapshot} was committed read older ones: {stale[:3]}"
    distinct = set(seen)
    assert len(distinct) >= 2, f"the reader saw only snapshot(s) {sorted(distinct)}: it proved nothing"
    assert distinct == set(expected), f"the reader saw snapshots {sorted(distinct)} of {sorted(expected)}"
    print(f"\n{len(answers)} answers, {len(distinct)} snapshots seen ({len(whole)} different contents), "
          f"{len(left)} files of the killed writer deleted")
