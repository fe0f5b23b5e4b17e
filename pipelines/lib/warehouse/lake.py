"""Team mode: the warehouse as a DuckLake (catalog in PostgreSQL, Parquet files under the data path).

A refresh still builds and tests a local build file (`build/`); publishing then copies that verified build
into the lake in ONE transaction, which DuckLake commits as one snapshot: readers (any machine with the catalog
URL and read access to the data path) see the previous snapshot until the commit, then the new one. Only what
changed is rewritten: each relation's digest (its columns, row count and a sum of row hashes) is recorded with
the snapshot, and a relation whose digest is the same is left as it is. A rollback copies an earlier snapshot's
relations back the same way, as a new snapshot. Writers hold the catalog's advisory lock (`catalog_lock.py`);
under it, what a killed writer left (Parquet files no snapshot references) is deleted, and snapshots older than
the newest `keep_snapshots` publishes expire with their files.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from pathlib import Path

import duckdb

from pipelines.lib.io.jsonsafe import dumps_strict
from pipelines.lib.warehouse.extensions import load_extensions
from pipelines.lib.warehouse.models import create_macros
from pipelines.lib.warehouse.query import SANDBOX, quote_ident, quote_literal
from pipelines.lib.warehouse.team import TeamCatalog

LAKE = "mlperf_lake"  # the name the lake is attached as
AT = "mlperf_lake_at"  # an earlier snapshot of it, attached read-only (rollback)
AUTHOR = "mlperf-warehouse"  # the author of the snapshots a refresh or rollback commits


class LakeMissing(Exception):
    """The catalog holds no DuckLake yet (nothing was published to it)."""


def _s3_secret(con: duckdb.DuckDBPyConnection, catalog: TeamCatalog) -> None:
    """A temporary DuckDB secret for the s3:// data path, from the S3 settings (literals: CREATE SECRET takes no
    parameter; the values are registered secrets, redacted from any message)."""
    s3 = catalog.s3
    if s3 is None:
        return
    fields = {"key_id": s3.key_id, "secret": s3.secret, "session_token": s3.session_token, "region": s3.region,
              "endpoint": s3.endpoint, "url_style": s3.url_style}
    options = [f"{key} {quote_literal(value)}" for key, value in fields.items() if value]
    options.append(f"use_ssl {'true' if s3.use_ssl else 'false'}")
    con.execute(f"create or replace temporary secret mlperf_s3 (type s3, {', '.join(options)})")


def attach(con: duckdb.DuckDBPyConnection, catalog: TeamCatalog, alias: str = LAKE, *, read_only: bool,
           snapshot: int | None = None) -> None:
    """Attach the lake as `alias` (read-only, optionally at `snapshot`). A writer passes the data path, which
    creates the lake on first use and must equal the one it records."""
    load_extensions(con, "ducklake", "postgres", *(("httpfs",) if catalog.on_s3 or catalog.s3 else ()),
                    folder=catalog.extensions)
    _s3_secret(con, catalog)
    options = ["read_only"] if read_only else []
    if snapshot is not None:
        options.append(f"snapshot_version {int(snapshot)}")
    if not read_only and catalog.data_path:
        if not catalog.on_s3:
            Path(catalog.data_path).mkdir(parents=True, exist_ok=True)
        options.append(f"data_path {quote_literal(catalog.data_path)}")
    elif not read_only:
        options.append("create_if_not_exists false")
    try:
        con.execute(f"attach {quote_literal('ducklake:postgres:' + catalog.url)} as {alias} ({', '.join(options)})")
    except duckdb.InvalidInputException as exc:
        if "does not exist" in str(exc):
            raise LakeMissing(f"no team warehouse in the catalog {catalog.shown} yet: run `mlperf-warehouse refresh` "
                              "with MLPERF_CATALOG and MLPERF_CATALOG_DATA_PATH set") from None
        raise
    if data_path(con, alias).lower().startswith("s3://"):  # a reader learns where the files are from the lake
        load_extensions(con, "httpfs", folder=catalog.extensions)


def data_path(con: duckdb.DuckDBPyConnection, alias: str = LAKE) -> str:
    """The data path the lake records (where every machine reads its files)."""
    return con.execute(f"select value from __ducklake_metadata_{alias}.ducklake_metadata "
                       "where key = 'data_path'").fetchone()[0]


@contextlib.contextmanager
def connect_lake(catalog: TeamCatalog, *, sandbox: bool = False, memory_bytes: int | None = None,
                 snapshot: int | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only connection whose default database is the lake, inside one transaction: every statement of the
    session reads the snapshot that was current at its first read, whatever a refresh commits meanwhile. `sandbox`
    (user-typed SQL): once the lake is attached, no file outside its data path, no network, no INSTALL/LOAD, the
    configuration locked (`query.SANDBOX`)."""
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    try:
        attach(con, catalog, read_only=True, snapshot=snapshot)
        con.execute(f"use {LAKE}")
        if memory_bytes:
            con.execute(f"set memory_limit = '{max(memory_bytes // (1 << 20), 16)}MiB'")
        if sandbox:
            con.execute("set allowed_directories = $dirs", {"dirs": [data_path(con)]})
            for name, value in SANDBOX.items():
                con.execute(f"set {name} = {str(value).lower()}")
        con.execute("begin transaction")
        yield con
    finally:
        con.close()


def snapshots(con: duckdb.DuckDBPyConnection, alias: str = LAKE) -> list[dict]:
    """Every snapshot of the lake, oldest first: id, time, author, message, and the record (`extra_info`) of those
    a refresh or rollback committed."""
    found = []
    for snapshot_id, at, author, message, extra in con.execute(
            f"select snapshot_id, snapshot_time, author, commit_message, commit_extra_info "
            f"from ducklake_snapshots({quote_literal(alias)}) order by snapshot_id").fetchall():
        try:
            record = json.loads(extra) if author == AUTHOR and extra else None
        except ValueError:
            record = None
        found.append({"snapshot": snapshot_id, "at": str(at), "author": author, "message": message,
                      "record": record if isinstance(record, dict) else None})
    return found


def published(con: duckdb.DuckDBPyConnection, alias: str = LAKE) -> list[dict]:
    """The snapshots a refresh or rollback committed (those with a record), oldest first."""
    return [s for s in snapshots(con, alias) if s["record"] is not None]


# --- what a catalog holds, and its digest ---------------------------------------------------------------------
_VIEW_HEAD = re.compile(r"^\s*create\s+(?:or\s+replace\s+)?view\s+(?:\"(?:[^\"]|\"\")+\"|[^\s(]+)\s+as\s+",
                        re.IGNORECASE)


def relations(con: duckdb.DuckDBPyConnection, database: str) -> dict[str, dict]:
    """name → {"kind": table|view, "sql" (a view's query), "comment", "columns": {name: comment}} of the main
    schema of `database`."""
    found: dict[str, dict] = {}
    for name, comment in con.execute("select table_name, comment from duckdb_tables() where database_name = ? "
                                     "and schema_name = 'main'", [database]).fetchall():
        found[name] = {"kind": "table", "sql": None, "comment": comment, "columns": {}}
    for name, comment, sql in con.execute("select view_name, comment, sql from duckdb_views() where database_name = ? "
                                          "and schema_name = 'main' and not internal", [database]).fetchall():
        found[name] = {"kind": "view", "sql": _VIEW_HEAD.sub("", sql).rstrip().rstrip(";"), "comment": comment,
                       "columns": {}}
    for table, column, comment in con.execute("select table_name, column_name, comment from duckdb_columns() "
                                              "where database_name = ? and schema_name = 'main' order by table_name, "
                                              "column_index", [database]).fetchall():
        if table in found and found[table]["kind"] == "table":
            found[table]["columns"][column] = comment
    return found


def digests(con: duckdb.DuckDBPyConnection, database: str, found: dict[str, dict]) -> tuple[dict, dict]:
    """(name → digest, name → row count) of `database`'s relations, in one statement for the tables. A table's
    digest is its column names and types, row count and the sum of its rows' hashes (unordered); a view's, its
    query. Equal digests: the relation need not be copied again."""
    tables = sorted(n for n, r in found.items() if r["kind"] == "table")
    counts: dict[str, int] = {}
    sums: dict[str, str] = {}
    if tables:
        query = " union all ".join(
            f"select {i} as i, count(*) as n, coalesce(sum(hash(r)), 0)::varchar as h "
            f"from {quote_ident(database)}.main.{quote_ident(t)} as r" for i, t in enumerate(tables))
        for i, n, h in con.execute(query).fetchall():
            counts[tables[i]], sums[tables[i]] = n, h
    shapes = dict(con.execute("select table_name, string_agg(column_name || ' ' || data_type, ', ' order by "
                              "column_index) from duckdb_columns() where database_name = ? and schema_name = 'main' "
                              "group by 1", [database]).fetchall())
    out = {}
    for name, relation in found.items():
        if relation["kind"] == "view":
            out[name] = "view:" + relation["sql"]
        else:
            out[name] = f"{shapes.get(name)}|{counts[name]}|{sums[name]}"
    return out, counts


def copy_relations(con: duckdb.DuckDBPyConnection, source: str, wanted: dict[str, dict], changed: set[str],
                   present: dict[str, dict]) -> None:
    """In the open transaction: replace the lake's `changed` relations by `source`'s, drop what `wanted` lacks,
    and give each replaced relation its comments (DuckLake keeps table and column comments, and views' own)."""
    for name in sorted(set(present) - set(wanted)):
        con.execute(f"drop {present[name]['kind']} if exists {LAKE}.main.{quote_ident(name)}")
    for name in sorted(n for n in changed if wanted[n]["kind"] == "table"):
        if present.get(name, {}).get("kind") == "view":
            con.execute(f"drop view {LAKE}.main.{quote_ident(name)}")
        con.execute(f"create or replace table {LAKE}.main.{quote_ident(name)} as "
                    f"select * from {quote_ident(source)}.main.{quote_ident(name)}")
    views = sorted(n for n in changed if wanted[n]["kind"] == "view")
    if views:  # the SQL functions views call live beside them (DuckLake keeps macros)
        con.execute(f"use {LAKE}")
        create_macros(con)
        con.execute("use memory")
    for name in views:
        if present.get(name, {}).get("kind") == "table":
            con.execute(f"drop table {LAKE}.main.{quote_ident(name)}")
    # A view is bound when it is made: one that reads another view waits for it (at most one pass per view).
    for _ in range(len(views) + 1):
        failed = []
        for name in views:
            try:
                con.execute(f"create or replace view {LAKE}.main.{quote_ident(name)} as {wanted[name]['sql']}")
            except duckdb.CatalogException:
                failed.append(name)
        if not failed or len(failed) == len(views):
            views = failed
            break
        views = [f.split(" (")[0] for f in failed]
    if views:
        raise duckdb.CatalogException(f"views that read what does not exist in the lake: {', '.join(views)}")
    for name in sorted(changed):
        relation = wanted[name]
        if relation["comment"]:
            kind = "table" if relation["kind"] == "table" else "view"
            con.execute(f"comment on {kind} {LAKE}.main.{quote_ident(name)} is {quote_literal(relation['comment'])}")
        for column, comment in relation["columns"].items():
            if comment:
                con.execute(f"comment on column {LAKE}.main.{quote_ident(name)}.{quote_ident(column)} is "
                            f"{quote_literal(comment)}")


def commit(con: duckdb.DuckDBPyConnection, message: str, record: dict) -> None:
    """Commit the open transaction as one snapshot carrying `record` (the single point a writer's publish becomes
    visible: a kill before it leaves only unreferenced files, which the next writer deletes)."""
    con.execute(f"call {LAKE}.set_commit_message(?, ?, extra_info => ?)", [AUTHOR, message, dumps_strict(record)])
    con.execute("commit")


def cleanup(con: duckdb.DuckDBPyConnection, keep: int) -> dict:
    """Under the writer's lock: expire the snapshots older than the newest `keep` publishes, delete their files
    and every file no snapshot references (what a killed refresh or rollback wrote before its commit)."""
    ours = [s["snapshot"] for s in published(con)]
    expired: list[int] = []
    if len(ours) > keep:
        cutoff = ours[-keep]
        expired = [s["snapshot"] for s in snapshots(con) if s["snapshot"] < cutoff]
        if expired:
            con.execute(f"call ducklake_expire_snapshots({quote_literal(LAKE)}, versions => $v)", {"v": expired})
    old = con.execute(f"select count(*) from ducklake_cleanup_old_files({quote_literal(LAKE)}, "
                      "cleanup_all => true)").fetchone()[0]
    orphans = con.execute(f"select count(*) from ducklake_delete_orphaned_files({quote_literal(LAKE)}, "
                          "cleanup_all => true)").fetchone()[0]
    return {"expired_snapshots": expired, "old_files_deleted": old, "orphaned_files_deleted": orphans}
