"""The PostgreSQL mirror for BI tools that speak only PostgreSQL (Superset, Metabase, Tableau, Power BI, Looker).

Every public relation (`dim_`, `fct_`, `mart_`) of a published build is copied, as a table, into
`<schema>_staging` of the mirror's database, with the table and column comments of the build (the model
headers'). One transaction then swaps it in place of `<schema>`: a BI query sees the whole previous mirror or the
whole new one, never a mix. The reader role (a group role BI users are made members of) may use the schema and
select from its tables, and nothing else; it gets no login and no password here. The swap is one writer's at a
time: the database's advisory lock (`catalog_lock.MIRROR`).
"""

from __future__ import annotations

import time
from pathlib import Path

import duckdb

from pipelines.lib.warehouse.catalog_lock import MIRROR, catalog_lock, connect
from pipelines.lib.warehouse.extensions import load_extensions
from pipelines.lib.warehouse.models import PUBLIC_PREFIXES
from pipelines.lib.warehouse.query import quote_ident, quote_literal
from pipelines.lib.warehouse.store import build_stamp
from pipelines.lib.warehouse.team import BiMirror

# DuckDB types PostgreSQL has no column type for (the postgres extension refuses them): published as JSON text.
_AS_JSON = ("STRUCT", "MAP", "UNION")
RECORD = "_mirror_info"  # one row in the mirror: which build it holds, and when it was swapped in


def public_relations(con: duckdb.DuckDBPyConnection, database: str) -> list[tuple[str, str | None]]:
    """(name, comment) of `database`'s public tables and views, by name."""
    rows = con.execute(
        "select table_name, comment from duckdb_tables() where database_name = $db and schema_name = 'main' "
        "union all select view_name, comment from duckdb_views() where database_name = $db and schema_name = 'main' "
        "and not internal order by 1", {"db": database}).fetchall()
    return [(name, comment) for name, comment in rows if name.startswith(PUBLIC_PREFIXES)]


def _columns(con: duckdb.DuckDBPyConnection, database: str, name: str) -> list[tuple[str, str, str | None]]:
    return con.execute("select column_name, data_type, comment from duckdb_columns() where database_name = ? and "
                       "schema_name = 'main' and table_name = ? order by column_index", [database, name]).fetchall()


def _select_list(columns: list[tuple[str, str, str | None]]) -> str:
    return ", ".join(f"to_json({quote_ident(c)})::varchar as {quote_ident(c)}" if t.upper().startswith(_AS_JSON)
                     else quote_ident(c) for c, t, _ in columns)


def _reader_role(pg, role: str) -> None:
    """The reader role exists, or is made (a group role: no login); a mirror owner who may not make roles is told
    what to ask a database administrator for."""
    import psycopg

    if pg.execute("select 1 from pg_roles where rolname = %s", (role,)).fetchone():
        return
    try:
        pg.execute(f"create role {role} nologin")
    except psycopg.errors.InsufficientPrivilege:
        raise PermissionError(f"the BI reader role {role} does not exist and this user may not create it: ask a "
                              f"database administrator for `create role {role} nologin` (MLPERF_BI_READER_ROLE)"
                              ) from None


def mirror_build(target: BiMirror, build: Path) -> dict:
    """Replace the mirror's schema by the public relations of the build file `build`. Returns what was mirrored:
    the schema, the build, each table's row count and the seconds taken."""
    started = time.perf_counter()
    schema, staging = target.schema, f"{target.schema}_staging"
    with catalog_lock(target.url, "BI mirror", MIRROR, what="the BI mirror"):
        with connect(target.url, "BI mirror", autocommit=True) as pg:
            _reader_role(pg, target.reader_role)
            pg.execute(f"drop schema if exists {staging} cascade")  # what a killed mirror left
            pg.execute(f"create schema {staging}")
        con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
        counts: dict[str, int] = {}
        comments: list[str] = []
        try:
            load_extensions(con, "postgres")
            con.execute(f"attach {quote_literal(build.as_posix())} as mirrored_build (read_only)")
            con.execute(f"attach {quote_literal(target.url)} as bi_mirror (type postgres)")
            for name, comment in public_relations(con, "mirrored_build"):
                columns = _columns(con, "mirrored_build", name)
                con.execute(f"create table bi_mirror.{staging}.{quote_ident(name)} as select {_select_list(columns)} "
                            f"from mirrored_build.main.{quote_ident(name)}")
                counts[name] = con.execute(f"select count(*) from mirrored_build.main.{quote_ident(name)}").fetchone()[0]
                table = f"{staging}.{quote_ident(name)}"
                if comment:
                    comments.append(f"comment on table {table} is {quote_literal(comment)}")
                comments += [f"comment on column {table}.{quote_ident(c)} is {quote_literal(text)}"
                             for c, _, text in columns if text]
            built_at, fingerprint, _ = build_stamp(con, "mirrored_build")
        finally:
            con.close()
        role = target.reader_role
        with connect(target.url, "BI mirror") as pg:  # one transaction: the swap, the comments and the grants
            # a BI query holding the old schema's tables delays the swap; past a minute the mirror fails, and stays
            pg.execute("set local lock_timeout = '60s'")
            for statement in comments:
                pg.execute(statement)
            pg.execute(f"create table {staging}.{RECORD} (build text, built_at text, fingerprint text, "
                       "mirrored_at timestamptz default now())")
            pg.execute(f"insert into {staging}.{RECORD} (build, built_at, fingerprint) values (%s, %s, %s)",
                       (build.name, str(built_at), fingerprint))
            pg.execute(f"comment on table {staging}.{RECORD} is 'the build this mirror holds and when it was swapped in'")
            pg.execute(f"drop schema if exists {schema} cascade")
            pg.execute(f"alter schema {staging} rename to {schema}")
            pg.execute(f"revoke all on schema {schema} from public")
            pg.execute(f"grant usage on schema {schema} to {role}")
            pg.execute(f"grant select on all tables in schema {schema} to {role}")
            pg.commit()
    return {"schema": schema, "build": build.name, "tables": counts,
            "seconds": round(time.perf_counter() - started, 3)}


def mirrored_build(target: BiMirror) -> str | None:
    """The build the mirror holds now (None: no mirror yet)."""
    with connect(target.url, "BI mirror", autocommit=True) as pg:
        exists = pg.execute("select to_regclass(%s)", (f"{target.schema}.{RECORD}",)).fetchone()[0]
        if exists is None:
            return None
        row = pg.execute(f"select build from {target.schema}.{RECORD}").fetchone()
        return row[0] if row else None


def mirror_published(target: BiMirror, base: Path | None = None) -> dict | None:
    """The local published build into the mirror, unless the mirror holds it already (`mirrored`: whether this
    call swapped a new one in). None when nothing is published locally."""
    from pipelines.lib.warehouse.lake_publish import published_build_path

    build = published_build_path(base)
    if build is None:
        return None
    if mirrored_build(target) == build.name:
        return {"schema": target.schema, "build": build.name, "mirrored": False}
    return mirror_build(target, build) | {"mirrored": True}
