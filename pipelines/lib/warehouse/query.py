"""Read-only access to the published warehouse (never through Dagster's read-write resources)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import duckdb

from pipelines.lib.io.paths import published_db


class WarehouseMissing(Exception):
    pass



def quote_ident(name: str) -> str:
    """A table or column name as a DuckDB identifier (for names read from the catalog, never typed in)."""
    return '"' + name.replace('"', '""') + '"'


def fetch_dicts(con: duckdb.DuckDBPyConnection, sql: str, params: list | tuple | None = None) -> list[dict]:
    """The rows of a query as dicts keyed by column name."""
    cursor = con.execute(sql, list(params or []))
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=False)) for row in cursor.fetchall()]

def published_build_file(path: Path) -> Path:
    """The build file that `path` is a hard link of, else `path` itself.

    DuckDB caches open databases by path within a process: a second connection to
    `mlperf.duckdb` while one is open would see the old build after a publish. Each build has its
    own file name, so opening that name always gives the build that is published now.
    """
    try:
        inode = path.stat().st_ino
        for candidate in (path.parent / "builds").glob("mlperf-*.duckdb"):
            if candidate.stat().st_ino == inode:
                return candidate
    except OSError:
        pass
    return path


# For SQL typed by a person (`query`, `shell`): no file read or written outside the warehouse, no
# INSTALL/LOAD, no network, and the configuration locked so none of this can be switched back on.
SANDBOX = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "lock_configuration": True,
}


@contextlib.contextmanager
def connect_readonly(path: Path | None = None, *, sandbox: bool = False,
                     memory_bytes: int | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only connection to the published build; `sandbox=True` for user-typed SQL (see SANDBOX),
    `memory_bytes` caps what its queries may use (DuckDB's memory_limit, locked with the sandbox)."""
    path = path or published_db()
    if not path.exists():
        raise WarehouseMissing(f"no published warehouse at {path}; run `mlperf-warehouse refresh` first")
    config = dict(SANDBOX) if sandbox else {}
    if memory_bytes:
        config["memory_limit"] = f"{max(memory_bytes // (1 << 20), 16)}MiB"
    con = duckdb.connect(str(published_build_file(path)), read_only=True, config=config)
    try:
        yield con
    finally:
        con.close()
