"""Dagster's SQLite run and event-log storage, keeping its connections open for the process.

Dagster's own SQLite storage opens a new engine and database connection for every statement group (a
run's ~200 events cost ~650 connections) and, as the last connection to a WAL database closes, SQLite
checkpoints it: most of a run's bookkeeping time. These subclasses keep one connection per database
file instead, commit without waiting for the disk (`synchronous=NORMAL`: in WAL mode a power cut may
lose the last commits, never the file's consistency) and otherwise are Dagster's classes: same files,
same schema, same alembic stamps, so `dg dev` (on Dagster's default storage) reads what the CLI wrote,
and the other way round. Only the CLI's instance uses them (instance.py).

Each run has a database file of its own, which Dagster creates with ~50 DDL statements and an alembic
stamp (loading every migration script), three times per refresh. A new run's file is instead a copy of one
empty run database that Dagster's own initialization made once per process: copying a small file costs next to
nothing beside running the DDL and the migrations again.

Nothing secret is stored: every event and run is stored as `redact` leaves it (`_redacted`), so a configured
secret, or the credentials of a mirror's URL recorded as an archive's metadata or in a log line, never reaches
the run databases or the UI that reads them.
"""

from __future__ import annotations

import tempfile
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dagster._core.storage.event_log.sqlite.sqlite_event_log import INDEX_SHARD_NAME, SqliteEventLogStorage
from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS
from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine
from sqlalchemy.pool import QueuePool

from pipelines.lib.io.files import create_file
from pipelines.lib.io.redaction import redact

# Engines (one connection each) kept open per event-log storage besides the index: a refresh runs one
# job at a time, so a handful of run databases is plenty; older ones are closed.
OPEN_RUN_DATABASES = 4


def _engine(conn_string: str) -> Engine:
    """An engine whose connection is returned to its pool, not closed, after each use (a nested or
    concurrent use gets a connection of its own, closed after use)."""
    engine = create_engine(
        conn_string,
        poolclass=QueuePool, pool_size=1, max_overflow=-1,
        connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS, "check_same_thread": False},
    )
    event.listen(engine, "connect", _pragmas)
    return engine


def _pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


_RUN_DATABASE_TEMPLATE: bytes | None = None


def _redacted(value):
    """`value` (an event or a run) as it may be stored: with every secret and URL credential `redact` finds in its
    serialized form masked. Redacted on the serialized text, so a field of any depth (metadata, a log message, an
    error's text, a tag) is covered; an object with nothing to mask is stored as it is."""
    from dagster._serdes import deserialize_value, serialize_value

    text = serialize_value(value)
    clean = redact(text)
    return value if clean == text else deserialize_value(clean, as_type=type(value))


class SqliteEventLogStorageKeepingConnections(SqliteEventLogStorage):
    """SqliteEventLogStorage with one open connection per shard (the index and recent runs)."""

    def __init__(self, base_dir: str, inst_data=None):
        self._engines: OrderedDict[str, Engine] = OrderedDict()  # before super(): it reindexes through _connect
        self._tables_seen: set[str] = set()
        super().__init__(base_dir, inst_data=inst_data)

    @classmethod
    def from_config_value(cls, inst_data, config_value):
        return cls(inst_data=inst_data, **config_value)

    def _shard_engine(self, shard: str) -> Engine:
        engine = self._engines.get(shard)
        if engine is not None:
            self._engines.move_to_end(shard)
            return engine
        engine = _engine(self.conn_string_for_shard(shard))  # connects on first use
        if shard not in self._initialized_dbs:
            # the index, or a run whose file exists already: Dagster checks or creates it
            if shard == INDEX_SHARD_NAME or not create_file(Path(self.path_for_shard(shard)),
                                                            self._run_database_template()):
                self._initdb(engine)
            self._initialized_dbs.add(shard)
        self._engines[shard] = engine
        runs = [name for name in self._engines if name != INDEX_SHARD_NAME]
        for name in runs[:-OPEN_RUN_DATABASES]:
            self._engines.pop(name).dispose()
        return engine

    def _run_database_template(self) -> bytes:
        """An empty run database as Dagster's own initialization leaves it, made once per process in a
        temp folder of its own."""
        global _RUN_DATABASE_TEMPLATE
        if _RUN_DATABASE_TEMPLATE is None:
            with tempfile.TemporaryDirectory(prefix="mlperf-warehouse-dagster-") as scratch:
                engine = _engine(f"sqlite:///{Path(scratch) / 'run.db'}")
                try:
                    self._initdb(engine)
                finally:
                    engine.dispose()
                _RUN_DATABASE_TEMPLATE = (Path(scratch) / "run.db").read_bytes()
        return _RUN_DATABASE_TEMPLATE

    @contextmanager
    def _connect(self, shard: str) -> Iterator:
        with self._db_lock:
            with self._shard_engine(shard).connect() as conn, conn.begin():
                yield conn

    def store_event(self, event) -> None:
        super().store_event(_redacted(event))

    def has_table(self, table_name: str) -> bool:
        """Dagster asks for each asset event, each time on a new connection; a table, once there, stays."""
        if table_name in self._tables_seen:
            return True
        found = super().has_table(table_name)
        if found:
            self._tables_seen.add(table_name)
        return found

    def _close_all(self) -> None:
        with self._db_lock:
            while self._engines:
                self._engines.popitem()[1].dispose()

    def wipe(self) -> None:
        self._close_all()  # the run files are deleted: no connection may outlive them
        super().wipe()

    def dispose(self) -> None:
        self._close_all()
        super().dispose()


class SqliteRunStorageKeepingConnection(SqliteRunStorage):
    """SqliteRunStorage with one open connection to runs.db."""

    _kept_engine: Engine | None = None  # opened by the first connect(), closed by dispose()

    @classmethod
    def from_config_value(cls, inst_data, config_value):
        return cls.from_local(inst_data=inst_data, **config_value)

    @contextmanager
    def connect(self) -> Iterator:
        if self._kept_engine is None:
            self._kept_engine = _engine(self._conn_string)
        with self._kept_engine.connect() as conn, conn.begin():
            yield conn

    def add_run(self, dagster_run):
        return super().add_run(_redacted(dagster_run))

    def add_run_tags(self, run_id: str, new_tags) -> None:
        super().add_run_tags(run_id, {key: redact(value) for key, value in new_tags.items()})

    def dispose(self) -> None:
        if self._kept_engine is not None:
            self._kept_engine.dispose()
            self._kept_engine = None
        super().dispose()


def storage_overrides(home: str) -> dict:
    """dagster.yaml settings that put the classes above on Dagster's default SQLite files under `home`."""
    from dagster._core.instance.ref import _event_logs_directory, _runs_directory, _schedule_directory

    return {
        "run_storage": {"module": __name__, "class": SqliteRunStorageKeepingConnection.__name__,
                        "config": {"base_dir": _runs_directory(home)}},
        "event_log_storage": {"module": __name__, "class": SqliteEventLogStorageKeepingConnections.__name__,
                              "config": {"base_dir": _event_logs_directory(home)}},
        "schedule_storage": {"module": "dagster._core.storage.schedules", "class": "SqliteScheduleStorage",
                             "config": {"base_dir": _schedule_directory(home)}},
    }
