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


def quote_literal(text: str) -> str:
    """Text as a DuckDB string literal, where a statement takes no bound parameter (COPY ... TO, ATTACH)."""
    return "'" + text.replace("'", "''") + "'"


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


def data_in_use() -> int | None:
    """This process's data memory now (Linux's VmData: heap and private writable mappings, what RLIMIT_DATA
    counts), or None where /proc does not say."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmData:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


@contextlib.contextmanager
def memory_bound(memory_bytes: int | None) -> Iterator[int | None]:
    """While the block runs, this process may hold at most `memory_bytes` of data memory more than it holds now
    (RLIMIT_DATA; yields that process limit, None where it cannot be set). DuckDB's memory_limit bounds only
    what its buffer manager tracks: a string built by `repeat()` or a big list is allocated beside it (4 GB
    for a query under a 2 GiB memory_limit). Under this limit any such allocation fails, and DuckDB raises an
    OutOfMemoryException (Python a MemoryError). The previous limit is back when the block ends."""
    import resource

    in_use = data_in_use() if memory_bytes else None
    if in_use is None:
        yield None
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    bound = in_use + int(memory_bytes)
    if hard != resource.RLIM_INFINITY:
        bound = min(bound, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (bound, hard))
    try:
        yield bound
    finally:
        resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))


def limit_child_memory(memory_bytes: int, own_bytes: int):
    """A `preexec_fn` that limits a child process (the duckdb CLI) to `memory_bytes` of data memory beyond
    `own_bytes`, its own at start (RLIMIT_DATA, for every allocation: the CLI's -safe mode locks DuckDB's
    configuration before a memory_limit could be set)."""
    def limit() -> None:
        import resource

        hard = resource.getrlimit(resource.RLIMIT_DATA)[1]
        bound = memory_bytes + own_bytes
        resource.setrlimit(resource.RLIMIT_DATA, (bound if hard == resource.RLIM_INFINITY else min(bound, hard), hard))
    return limit


def relation_columns(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[str, str]]]:
    """(column name, DuckDB type) in order, of every table and view of the connection's own database, in one
    query: each query of the information schema reads the whole catalog, whatever it filters on."""
    found: dict[str, list[tuple[str, str]]] = {}
    for table, column, data_type in con.execute(
            "select table_name, column_name, data_type from information_schema.columns "
            "where table_schema = 'main' and table_catalog = current_database() "
            "order by table_name, ordinal_position").fetchall():
        found.setdefault(table, []).append((column, data_type))
    return found


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


@contextlib.contextmanager
def connect_published(base: Path | None = None, *, sandbox: bool = False,
                      memory_bytes: int | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only connection to what is published: the team catalog's newest snapshot when one is configured
    (`team.team_catalog()`, from MLPERF_CATALOG), else the published file of the warehouse at `base`. Every reader
    (query, report, site, export, compare, prices, the outputs' assets and checks) opens the warehouse here."""
    from pipelines.lib.warehouse.team import team_catalog

    catalog = team_catalog()
    if catalog is None:
        with connect_readonly(published_db(base), sandbox=sandbox, memory_bytes=memory_bytes) as con:
            yield con
        return
    from pipelines.lib.warehouse.lake import connect_lake

    with connect_lake(catalog, sandbox=sandbox, memory_bytes=memory_bytes) as con:
        yield con

