"""The CLI's Dagster instance keeps its SQLite connections open (instance_storage.py) on the files of
Dagster's default storage: what it writes, `dg dev`'s default storage reads, and the other way round;
a home whose dagster.yaml chooses its own storage keeps it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import dagster as dg
import pytest
from sqlalchemy import event
from sqlalchemy.pool import Pool

from pipelines.runner.instance import prepare_home, warehouse_instance
from pipelines.runner.instance_storage import (
    OPEN_RUN_DATABASES,
    SqliteEventLogStorageKeepingConnections,
    SqliteRunStorageKeepingConnection,
)

pytestmark = [pytest.mark.slow]


@dg.asset
def numbers() -> dg.MaterializeResult:
    return dg.MaterializeResult(metadata={"rows": 3})


@dg.asset_check(asset=numbers)
def numbers_positive() -> dg.AssetCheckResult:
    return dg.AssetCheckResult(passed=True, metadata={"offending_rows": 0})


def _more(i: int) -> dg.AssetsDefinition:
    @dg.asset(name=f"more_{i}", deps=[numbers])
    def more() -> dg.MaterializeResult:
        return dg.MaterializeResult(metadata={"i": i})

    return more


JOB = dg.Definitions(assets=[numbers, *map(_more, range(8))], asset_checks=[numbers_positive],
                     jobs=[dg.define_asset_job("numbers_job")]).resolve_job_def("numbers_job")


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    return prepare_home()  # created with the dagster.yaml the CLI writes


@pytest.fixture
def connections():
    """The database connections opened meanwhile, as every SQLAlchemy pool reports them."""
    opened = []

    def count(dbapi_connection, _record):
        opened.append(dbapi_connection)

    event.listen(Pool, "connect", count)
    yield opened
    event.remove(Pool, "connect", count)


def _run(instance: dg.DagsterInstance) -> str:
    result = JOB.execute_in_process(instance=instance)
    assert result.success
    return result.run_id


def test_cli_instance_writes_what_dagsters_default_storage_reads(home):
    with warehouse_instance() as instance:
        assert isinstance(instance.run_storage, SqliteRunStorageKeepingConnection)
        assert isinstance(instance.event_log_storage, SqliteEventLogStorageKeepingConnections)
        run_id = _run(instance)

    with dg.DagsterInstance.from_config(str(home)) as default:  # what `dg dev` opens
        assert type(default.event_log_storage).__name__ == "SqliteEventLogStorage"
        assert [r.run_id for r in default.get_runs()] == [run_id]
        assert default.get_run_by_id(run_id).is_success
        latest = default.get_latest_materialization_event(dg.AssetKey("numbers"))
        assert latest.run_id == run_id and latest.asset_materialization.metadata["rows"].value == 3
        check = default.event_log_storage.get_latest_asset_check_execution_by_key(
            [dg.AssetCheckKey(dg.AssetKey("numbers"), "numbers_positive")])
        assert next(iter(check.values())).run_id == run_id
        second = _run(default)  # and the default storage's run is read back by the CLI's

    with warehouse_instance() as instance:
        assert {r.run_id for r in instance.get_runs()} == {run_id, second}
        assert instance.get_latest_materialization_event(dg.AssetKey("numbers")).run_id == second
        assert len(instance.all_logs(run_id)) == len(instance.all_logs(second)) > 10


def test_a_run_opens_a_few_connections_not_one_per_statement(home, connections):
    with dg.DagsterInstance.from_config(str(home)) as default:
        _run(default)  # creates the databases too
        before = len(connections)
        _run(default)
        by_default = len(connections) - before
    with warehouse_instance() as instance:
        _run(instance)  # its first run also looks up the index's tables once
        before = len(connections)
        _run(instance)
        kept = len(connections) - before
    # Dagster's own storage connects for each statement group (~170 for these 9 assets); ours only
    # while the run's own file is created, whatever the number of events.
    assert by_default > 120, by_default
    assert kept <= 4, kept


def test_old_run_databases_are_closed_and_deletes_and_wipes_work(home):
    with warehouse_instance() as instance:
        run_ids = [_run(instance) for _ in range(OPEN_RUN_DATABASES + 2)]
        storage = instance.event_log_storage
        open_runs = [name for name in storage._engines if name != "index"]
        assert open_runs == run_ids[-OPEN_RUN_DATABASES:]
        instance.delete_run(run_ids[-1])
        assert instance.all_logs(run_ids[-1]) == []
        assert [r.run_id for r in instance.get_runs()] == list(reversed(run_ids[:-1]))
        storage.wipe()  # deletes the run files: their connections go first
        assert list(storage._engines) == ["index"] and not list((home / "history" / "runs").glob("*-*.db"))
        assert instance.all_logs(run_ids[0]) == []
        assert len(instance.all_logs(_run(instance))) > 10  # and it goes on working


def _schema(database: Path) -> tuple:
    with sqlite3.connect(database) as con:
        return (sorted(con.execute("select type, name, tbl_name, sql from sqlite_master")),
                con.execute("select version_num from alembic_version").fetchall(),
                con.execute("pragma journal_mode").fetchone())


def test_a_run_database_is_a_copy_of_the_empty_one_dagster_creates(home, monkeypatch):
    initialized = []  # the databases Dagster's own initialization ran on
    initdb = SqliteEventLogStorageKeepingConnections._initdb
    monkeypatch.setattr(SqliteEventLogStorageKeepingConnections, "_initdb",
                        lambda self, engine, **kw: (initialized.append(str(engine.url)), initdb(self, engine, **kw))[1])
    with warehouse_instance() as instance:
        ours = [_run(instance) for _ in range(3)]
    assert not [url for url in initialized if any(run in url for run in ours)], initialized
    with dg.DagsterInstance.from_config(str(home)) as default:
        theirs = _run(default)
    runs = home / "history" / "runs"
    assert _schema(runs / f"{ours[0]}.db") == _schema(runs / f"{theirs}.db")
    assert _schema(runs / f"{ours[0]}.db")[1], "stamped with Dagster's alembic revision"
    # nothing else is left in the folder where Dagster globs for run databases
    assert {p.name.split(".db")[0] for p in runs.iterdir()} == {"index", theirs, *ours}
    with warehouse_instance() as instance:  # read back, and a run file that exists is Dagster's to check
        assert all(len(instance.all_logs(run)) > 10 for run in (*ours, theirs))


def test_a_home_that_chooses_its_storage_keeps_it(home, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    (home / "dagster.yaml").write_text(f"storage:\n  sqlite:\n    base_dir: {elsewhere}\n")
    with warehouse_instance() as instance:
        assert type(instance.event_log_storage).__name__ == "SqliteEventLogStorage"
        _run(instance)
    assert (elsewhere / "history" / "runs.db").exists()
    assert not (home / "history").exists()
