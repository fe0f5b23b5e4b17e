"""The BI tools' own way in, tested the way they connect: SQLAlchemy's inspector (what Superset, Metabase's and
Tableau's SQLAlchemy-based connectors list) over duckdb-engine for the local file and the team catalog, and over
PostgreSQL for the mirror; `psql` as a member of the read-only role reads a mart and cannot write."""

from __future__ import annotations

import uuid
from pathlib import Path

import duckdb
import pytest
import sqlalchemy as sa

from support.mini_warehouse import build_warehouse
from support.postgres import server_binaries, temporary_cluster

pytestmark = [pytest.mark.slow]
needs_postgres = pytest.mark.skipif(server_binaries() is None, reason=(
    "PostgreSQL's server is not installed (apt-get install postgresql; .ci/run installs it)"))


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("bi") / "warehouse"
    build_warehouse(base, rounds=("v4.1", "v5.0"), systems=3)
    return base


@pytest.fixture(scope="module")
def cluster():
    if server_binaries() is None:
        pytest.skip("PostgreSQL's server is not installed")
    with temporary_cluster() as running:
        yield running


def public_relations(path: Path) -> dict[str, dict]:
    """name → {"comment", "columns": {name: comment}} of the public relations of the build file, as built."""
    from pipelines.lib.warehouse.models import PUBLIC_PREFIXES

    with duckdb.connect(str(path), read_only=True) as con:
        found = {}
        for name, comment in con.execute(
                "select table_name, comment from duckdb_tables() where schema_name = 'main' union all "
                "select view_name, comment from duckdb_views() where schema_name = 'main' and not internal").fetchall():
            if name.startswith(PUBLIC_PREFIXES):
                found[name] = {"comment": comment, "columns": dict(con.execute(
                    "select column_name, comment from duckdb_columns() where table_name = ? order by column_index",
                    [name]).fetchall())}
    return found


def test_every_public_relation_carries_its_header_comments(warehouse):
    from pipelines.lib.warehouse.models import load_models

    models = load_models()
    built = public_relations(warehouse / "mlperf.duckdb")
    assert built, "no public relation built"
    for name, relation in built.items():
        model = models[name]
        assert relation["comment"] and " ".join(model.description.split())[:40] in relation["comment"], name
        declared = {c.name for c in model.columns if c.description}
        assert declared and all(relation["columns"][c] for c in declared), (name, relation["columns"])


def test_inspector_lists_the_local_file_with_its_comments(warehouse):
    from pipelines.lib.warehouse.team import local_sqlalchemy_url

    built = public_relations(warehouse / "mlperf.duckdb")
    engine = sa.create_engine(local_sqlalchemy_url(warehouse / "mlperf.duckdb"))
    try:
        inspector = sa.inspect(engine)
        names = set(inspector.get_table_names()) | set(inspector.get_view_names())
        assert set(built) <= names
        table = "fct_training_result"
        assert inspector.get_table_comment(table)["text"] == built[table]["comment"]
        columns = {c["name"]: c for c in inspector.get_columns(table)}
        assert set(columns) == set(built[table]["columns"])
        assert any(c.get("comment") for c in columns.values()), "duckdb-engine shows no column comment"
        with engine.connect() as con:
            assert con.exec_driver_sql(f"select count(*) from {table}").scalar() > 0
            with pytest.raises(Exception, match="read-only"):
                con.exec_driver_sql("create table x (a int)")
    finally:
        engine.dispose()


@needs_postgres
def test_inspector_lists_the_team_catalog(warehouse, cluster, tmp_path, monkeypatch):
    from pipelines.lib.io.paths import extensions_dir
    from pipelines.lib.warehouse.lake_publish import publish_published
    from pipelines.lib.warehouse.team import TeamCatalog, team_sqlalchemy_url

    name = f"lake_{uuid.uuid4().hex[:8]}"
    url = cluster.create_database(name, f"{name}_owner", "lake-Secret-3")
    catalog = TeamCatalog(url, str(tmp_path / "lake") + "/", extensions=extensions_dir(warehouse))
    publish_published(catalog, warehouse)  # installs the extensions into the warehouse's folder, from the packages
    assert sorted(p.name for p in extensions_dir(warehouse).rglob("*.duckdb_extension")) == [
        "ducklake.duckdb_extension", "postgres_scanner.duckdb_extension"]
    engine_url = team_sqlalchemy_url(catalog, extensions_dir(warehouse))
    assert "lake-Secret-3" not in engine_url
    monkeypatch.setenv("PGPASSWORD", "lake-Secret-3")  # as a BI tool is given it
    engine = sa.create_engine(engine_url)
    try:
        inspector = sa.inspect(engine)
        names = set(inspector.get_table_names()) | set(inspector.get_view_names())
        assert set(public_relations(warehouse / "mlperf.duckdb")) <= names
        with engine.connect() as con:
            local = duckdb.connect(str(warehouse / "mlperf.duckdb"), read_only=True)
            try:
                for table in ("fct_training_result", "dim_system"):
                    assert con.exec_driver_sql(f"select count(*) from {table}").scalar() == \
                        local.execute(f"select count(*) from {table}").fetchone()[0]
            finally:
                local.close()
    finally:
        engine.dispose()


@needs_postgres
def test_postgres_mirror_holds_every_public_table_with_comments_and_the_reader_cannot_write(warehouse, cluster):
    from pipelines.lib.warehouse.pg_mirror import mirror_published, mirrored_build
    from pipelines.lib.warehouse.team import BiMirror

    url = cluster.create_database("bi", "bi_owner", "mirror-Secret-5")
    target = BiMirror(url, "mlperf", "mlperf_reader")
    with pytest.raises(PermissionError, match="create role mlperf_reader nologin"):
        mirror_published(target, warehouse)  # the mirror's owner may not make roles: an administrator does
    cluster.psql("create role mlperf_reader nologin")
    record = mirror_published(target, warehouse)
    assert record["mirrored"] and mirrored_build(target) == record["build"]
    assert mirror_published(target, warehouse)["mirrored"] is False  # holds this build already: nothing to do
    built = public_relations(warehouse / "mlperf.duckdb")
    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://"))
    try:
        inspector = sa.inspect(engine)
        tables = set(inspector.get_table_names(schema="mlperf"))
        assert tables == set(built) | {"_mirror_info"}
        assert "mlperf_staging" not in inspector.get_schema_names()
        for name, relation in built.items():
            assert inspector.get_table_comment(name, schema="mlperf")["text"] == relation["comment"], name
            columns = {c["name"]: c.get("comment") for c in inspector.get_columns(name, schema="mlperf")}
            assert columns == relation["columns"], name
        with engine.connect() as con:
            for name in built:
                local = duckdb.connect(str(warehouse / "mlperf.duckdb"), read_only=True)
                try:
                    expected = local.execute(f"select count(*) from {name}").fetchone()[0]
                finally:
                    local.close()
                assert con.exec_driver_sql(f"select count(*) from mlperf.{name}").scalar() == expected, name
    finally:
        engine.dispose()
    # a BI user: a login role that is a member of the reader role, connecting with psql
    cluster.psql("create role alice login password 'alice-Secret-1' in role mlperf_reader", database="bi")
    read = cluster.psql("select count(*) from mlperf.fct_training_result", database="bi", user="alice",
                        password="alice-Secret-1")
    assert int(read.stdout.strip()) > 0
    for statement in ("insert into mlperf.dim_system (round) values ('v9.9')",
                      "delete from mlperf.fct_training_result",
                      "create table mlperf.mine (a int)",
                      "drop table mlperf.dim_system",
                      "create table public.mine (a int)"):
        denied = cluster.psql(statement, database="bi", user="alice", password="alice-Secret-1", check=False)
        assert denied.returncode != 0 and ("permission denied" in denied.stderr or "must be owner" in denied.stderr), \
            (statement, denied.stderr)


@needs_postgres
def test_a_mirror_killed_before_its_swap_leaves_the_previous_one(warehouse, cluster, tmp_path):
    """The staging schema of a mirror that died is dropped by the next; BI users saw the old schema throughout."""
    from pipelines.lib.warehouse.catalog_lock import connect
    from pipelines.lib.warehouse.pg_mirror import mirror_published
    from pipelines.lib.warehouse.team import BiMirror

    url = cluster.create_database("bi2", "bi2_owner", "mirror-Secret-6")
    target = BiMirror(url, "marts", "bi2_reader")
    cluster.psql("alter role bi2_owner createrole")  # this owner makes the reader role itself
    first = mirror_published(target, warehouse)
    with connect(url, "test", autocommit=True) as pg:  # what a mirror killed mid-copy leaves
        pg.execute("create schema marts_staging")
        pg.execute("create table marts_staging.half (a int)")
    other = tmp_path / "other"
    build_warehouse(other, rounds=("v5.0",), systems=2)
    second = mirror_published(target, other)
    assert second["mirrored"] and second["build"] != first["build"] or second["tables"] != first["tables"]
    with connect(url, "test", autocommit=True) as pg:
        schemas = {s for (s,) in pg.execute("select nspname from pg_namespace").fetchall()}
        assert "marts_staging" not in schemas and "marts" in schemas
        count = pg.execute("select count(*) from marts.fct_training_result").fetchone()[0]
    assert count == second["tables"]["fct_training_result"]
