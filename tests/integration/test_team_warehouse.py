"""Team mode on a real PostgreSQL (a temporary cluster of Debian's server) and a DuckLake on a shared folder:
a refresh of every shared Training and HPC round publishes one snapshot; another process with only the catalog
URL reads every public relation; rollback restores a snapshot's row counts; two writers never interleave; a
writer killed before its commit leaves the last snapshot readable and the next one cleans up after it."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import duckdb
import pytest

from support.cli import CLI
from support.mini_warehouse import build_warehouse
from support.paths import needs_shared_mlperf
from support.postgres import server_binaries, temporary_cluster
from support.shared_build import (
    HPC_TEMPLATE,
    RULES_TEMPLATE,
    TRAINING_TEMPLATE,
    copy_of,
    shared_build,
    shared_hpc_rounds,
    shared_rounds,
)

pytestmark = [pytest.mark.slow, pytest.mark.skipif(server_binaries() is None, reason=(
    "PostgreSQL's server is not installed (apt-get install postgresql; .ci/run installs it)"))]


@pytest.fixture(scope="module")
def cluster():
    with temporary_cluster() as running:
        yield running


@pytest.fixture
def catalog(cluster, tmp_path):
    """A fresh catalog database (its owner logs in with a password) and a data path on a 'shared' folder."""
    name = f"lake_{uuid.uuid4().hex[:10]}"
    url = cluster.create_database(name, f"{name}_owner", "owner-Secret-9")
    return {"url": url, "data_path": str(tmp_path / "shared-folder" / "lake")}


def team_env(base: Path, catalog: dict, *, writer: bool = True) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLPERF_", "DAGSTER_"))}
    env |= {"MLPERF_WAREHOUSE_DIR": str(base), "MLPERF_CATALOG": catalog["url"]}
    if writer:
        env["MLPERF_CATALOG_DATA_PATH"] = catalog["data_path"]
    return env


def run_cli(*args: str, env: dict[str, str], timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(CLI + list(args), capture_output=True, text=True, env=env, timeout=timeout)


def lake_counts(catalog: dict, snapshot: int | None = None) -> dict[str, int]:
    """Row count of every public relation in the lake (at `snapshot`), read in this process."""
    from pipelines.lib.warehouse.lake import connect_lake
    from pipelines.lib.warehouse.team import TeamCatalog

    with connect_lake(TeamCatalog(catalog["url"]), snapshot=snapshot) as con:
        return relation_counts(con)


def relation_counts(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    from pipelines.lib.warehouse.models import PUBLIC_PREFIXES

    names = [n for (n,) in con.execute("select table_name from information_schema.tables where "
                                       "table_catalog = current_database() and table_schema = 'main'").fetchall()
             if n.startswith(PUBLIC_PREFIXES)]
    return {n: con.execute(f'select count(*) from "{n}"').fetchone()[0] for n in sorted(names)}


def local_counts(base: Path) -> dict[str, int]:
    with duckdb.connect(str(base / "mlperf.duckdb"), read_only=True) as con:
        return relation_counts(con)


def publish(base: Path, catalog: dict) -> dict:
    """The local published build of `base` into the lake, in this process (as the refresh's asset does)."""
    from pipelines.lib.warehouse.lake_publish import publish_published
    from pipelines.lib.warehouse.team import TeamCatalog

    return publish_published(TeamCatalog(catalog["url"], catalog["data_path"] + "/"), base)


@pytest.fixture(scope="module")
def small_warehouse(tmp_path_factory) -> Path:
    """A tiny real warehouse (two staged rounds, built): a second, different build to publish."""
    base = tmp_path_factory.mktemp("small") / "warehouse"
    build_warehouse(base)
    return base


@pytest.fixture(scope="module")
def every_round(tmp_path_factory) -> Path:
    """A private copy of the warehouse of every shared round (built once per test run)."""
    return copy_of(shared_build(tmp_path_factory), tmp_path_factory.mktemp("every") / "warehouse")


@needs_shared_mlperf()
@pytest.mark.shared_build
def test_refresh_of_every_shared_round_publishes_a_snapshot_another_machine_reads(every_round, catalog, cluster,
                                                                                 tmp_path):
    from support.github import serve_logging_repository
    from support.http_server import LoopbackServer
    from support.paths import SHARED_MLPERF

    mirror_db = f"bi_{uuid.uuid4().hex[:8]}"
    cluster.psql(f"create database {mirror_db}")
    with LoopbackServer(SHARED_MLPERF) as server:
        serve_logging_repository(server)
        env = team_env(every_round, catalog) | {"MLPERF_BI_MIRROR": cluster.url(mirror_db),
            "MLPERF_GITHUB_API_URL": server.url, "MLPERF_SUITES": "training,hpc",
            "MLPERF_ROUNDS": ",".join(shared_rounds()), "MLPERF_HPC_ROUNDS": ",".join(shared_hpc_rounds())}
        proc = run_cli("refresh", "--no-prices", "--results-url-template", server.url + TRAINING_TEMPLATE,
                       "--rules-url-template", server.url + RULES_TEMPLATE,
                       "--hpc-results-url-template", server.url + HPC_TEMPLATE, env=env, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    flat = "".join(proc.stdout.split())  # the summary's table wraps its lines, within words too
    assert "teamcatalogpostgresql://REDACTED@127.0.0.1:" in flat and "snapshot1published" in flat, proc.stdout
    assert "BImirrorschemamlperf:swappedin" in flat, proc.stdout
    for secret in ("owner-Secret-9", "pg-super-Secret-7"):
        assert secret not in proc.stdout + proc.stderr
    expected = local_counts(every_round)
    mirrored = cluster.psql("select count(*) from mlperf.fct_training_result", database=mirror_db).stdout
    assert int(mirrored.strip()) == expected["fct_training_result"]
    assert expected["fct_training_result"] > 0 and expected["fct_hpc_result"] > 0
    # another machine: an empty warehouse folder, the catalog URL only (no data path, no local build)
    reader = team_env(tmp_path / "elsewhere", catalog, writer=False)
    # every relation's count in one query: one reading process, each relation read through the catalog
    counts = " union all ".join(f"select '{name}' as relation, count(*) as n from \"{name}\"" for name in expected)
    out = run_cli("query", counts, "--format", "csv", env=reader)
    assert out.returncode == 0, out.stderr
    assert {name: int(n) for name, n in csv.reader(out.stdout.splitlines()[1:])} == expected, out.stdout
    assert not (tmp_path / "elsewhere" / "mlperf.duckdb").exists()
    status = run_cli("status", env=reader)
    assert status.returncode == 0 and "team catalog" in status.stdout and "snapshot" in status.stdout, status.stdout
    assert "no local build" in status.stdout and "run `mlperf-warehouse refresh`" not in status.stdout


def test_rollback_restores_the_previous_snapshots_row_counts(small_warehouse, catalog, cluster, tmp_path):
    from support.mini_warehouse import build_warehouse as build_more

    first = publish(small_warehouse, catalog)
    before = lake_counts(catalog)
    other = tmp_path / "other"
    build_more(other, rounds=("v4.0", "v4.1", "v5.0"), systems=3)  # another machine's build, more rows
    second = publish(other, catalog)
    after = lake_counts(catalog)
    assert second["snapshot"] > first["snapshot"] and after != before
    assert after == local_counts(other)
    # the earlier snapshot stays readable as it was, by id
    assert lake_counts(catalog, snapshot=first["snapshot"]) == before
    # a reader's login (select on the catalog's tables) may not roll back: told so in a line
    database = catalog["url"].rsplit("/", 1)[1]
    cluster.psql(f"create role {database}_reader login password 'reader-Secret-4'")
    cluster.psql(f"grant select on all tables in schema public to {database}_reader", database=database)
    reader_url = cluster.url(database, f"{database}_reader", "reader-Secret-4")
    denied = run_cli("rollback", env=team_env(tmp_path / "reader", {"url": reader_url}, writer=False))
    assert denied.returncode == 1 and "may read the team catalog" in denied.stderr, denied.stderr
    assert "but not write it" in denied.stderr and len(denied.stderr) < 400 and "reader-Secret-4" not in denied.stderr
    assert lake_counts(catalog) == after
    proc = run_cli("rollback", env=team_env(tmp_path / "third", catalog, writer=False))
    assert proc.returncode == 0, proc.stderr
    assert f"as snapshot {first['snapshot']}" in proc.stdout, proc.stdout
    assert lake_counts(catalog) == before
    # rolling back to the snapshot that is current is refused (it would commit nothing)
    current = run_cli("rollback", "--to", str(second["snapshot"] + 1), env=team_env(tmp_path / "third", catalog))
    assert current.returncode == 2 and "is the current snapshot" in current.stderr, current.stderr
    # publishing the same build again commits nothing new
    again = publish(other, catalog)
    assert again["published"] is True and lake_counts(catalog) == after
    assert publish(other, catalog)["published"] is False


def test_a_second_writer_stops_at_once_naming_the_first(small_warehouse, catalog, tmp_path):
    from pipelines.lib.warehouse.catalog_lock import catalog_lock

    publish(small_warehouse, catalog)
    with catalog_lock(catalog["url"], "refresh"):
        started = time.perf_counter()
        proc = run_cli("rollback", env=team_env(tmp_path / "x", catalog, writer=False))
        # a refresh on another machine stops before it fetches anything (this URL would fail, later)
        refresh = run_cli("refresh", "--no-prices", "--rounds", "v4.1", "--results-url-template",
                          "http://results.invalid/{version}.tar.gz", env=team_env(tmp_path / "y", catalog))
        assert time.perf_counter() - started < 120
    for stopped in (proc, refresh):
        assert stopped.returncode == 1
        assert "another writer holds the team catalog: mlperf-warehouse refresh, pid" in stopped.stderr, stopped.stderr
        assert "owner-Secret-9" not in stopped.stdout + stopped.stderr
    assert "results.invalid" not in refresh.stdout + refresh.stderr and not (tmp_path / "y" / "raw").exists()


def _publisher(base: Path, catalog: dict) -> subprocess.Popen:
    code = ("import sys; from pathlib import Path; from pipelines.lib.warehouse.lake_publish import publish_published;"
            "from pipelines.lib.warehouse.team import TeamCatalog;"
            "publish_published(TeamCatalog(sys.argv[1], sys.argv[2]), Path(sys.argv[3]))")
    return subprocess.Popen([sys.executable, "-c", code, catalog["url"], catalog["data_path"] + "/", str(base)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _lock_held(cluster, database: str) -> bool:
    from pipelines.lib.warehouse.catalog_lock import LOCK_CLASS

    out = cluster.psql(f"select count(*) from pg_locks where locktype = 'advisory' and granted and "
                       f"classid = {LOCK_CLASS}::oid", database=database).stdout
    return int(out.strip() or 0) > 0


def _data_files(catalog: dict) -> set[Path]:
    return {p for p in Path(catalog["data_path"]).rglob("*.parquet")}


@needs_shared_mlperf()
@pytest.mark.shared_build
def test_a_writer_killed_before_its_commit_leaves_the_last_snapshot_and_the_next_cleans_up(
        every_round, small_warehouse, catalog, cluster):
    first = publish(small_warehouse, catalog)
    before, files_before = lake_counts(catalog), _data_files(catalog)
    database = catalog["url"].rsplit("/", 1)[1]
    proc = _publisher(every_round, catalog)
    deadline = time.monotonic() + 120
    while not _lock_held(cluster, database) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _lock_held(cluster, database), "the writer never took the catalog's lock"
    # the first data file it writes: inside the copy of every relation, long before the commit
    while not (_data_files(catalog) - files_before) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert lake_counts(catalog) == before  # readers still see the last snapshot, whole
    from pipelines.lib.warehouse.lake import connect_lake, published
    from pipelines.lib.warehouse.team import TeamCatalog

    with connect_lake(TeamCatalog(catalog["url"])) as con:
        assert published(con)[-1]["snapshot"] == first["snapshot"], "the kill came after the commit"
    left = _data_files(catalog) - files_before
    assert left, "the killed writer had written no file yet: the kill did not land inside the copy"
    # the lock died with its session: the next writer goes ahead, deletes what the killed one left, publishes
    record = publish(every_round, catalog)
    assert record["published"] and record["cleanup"]["orphaned_files_deleted"] >= len(left)
    assert not (left & _data_files(catalog)), "files of the killed writer are still there"
    assert lake_counts(catalog) == local_counts(every_round)


def test_the_shell_opens_the_team_catalog_sandboxed(small_warehouse, catalog, tmp_path):
    publish(small_warehouse, catalog)
    statements = (f"con.execute(\"copy (select 1) to '{tmp_path}/x.csv'\")\n"
                  "print('rows', con.execute('select count(*) from fct_training_result').fetchone()[0])\n")
    proc = subprocess.run(CLI + ["shell"], input=statements, capture_output=True, text=True, timeout=120,
                          env=team_env(tmp_path / "reader", catalog, writer=False))
    assert proc.returncode == 0, proc.stderr
    assert "on the team catalog postgresql://REDACTED@127.0.0.1" in proc.stdout + proc.stderr
    assert f"rows {local_counts(small_warehouse)['fct_training_result']}" in proc.stdout + proc.stderr
    assert "Permission Error" in proc.stdout + proc.stderr and not (tmp_path / "x.csv").exists()
    assert "owner-Secret-9" not in proc.stdout + proc.stderr


def test_every_reading_command_reads_the_team_catalog(small_warehouse, catalog, tmp_path):
    """From a folder that holds no warehouse, with only the catalog URL: export (parquet and MLCommons' summary),
    report, compare, site and prices read the lake's snapshot."""
    publish(small_warehouse, catalog)
    reader = tmp_path / "reader"
    env = team_env(reader, catalog, writer=False)
    out = tmp_path / "out"
    for args in (["export", "--out", str(out / "parquet")],
                 ["export", "--format", "mlcommons-summary", "--out", str(out / "summary")],
                 ["report", "--round", "v5.0", "--benchmark", "bert", "--out", str(out / "report")],
                 ["compare", "sys0", "sys1", "--benchmark", "bert", "--round", "v5.0"],
                 ["site", "--out", str(out / "site"), "--no-reports"]):
        proc = run_cli(*args, env=env)
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
        assert "owner-Secret-9" not in proc.stdout + proc.stderr
    # this build was made without price lists: the lake's answer, not "no published warehouse" of the empty folder
    proc = run_cli("prices", "--accelerator", "h100", env=env)
    assert proc.returncode == 1 and "no cloud prices in this warehouse" in proc.stderr, proc.stderr
    with duckdb.connect() as con:
        exported = con.execute(f"select count(*) from read_parquet('{out}/parquet/fct_training_result/**/*.parquet')"
                               ).fetchone()[0]
    assert exported == local_counts(small_warehouse)["fct_training_result"]
    assert (out / "summary" / "summary_results.json").is_file() and (out / "site" / "index.html").is_file()
    assert any((out / "report").rglob("*.html"))
    assert not (reader / "mlperf.duckdb").exists()
