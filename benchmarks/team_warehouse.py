"""Team mode's costs, in one run on the warehouse of every shared round: publishing to the local file against
publishing into the DuckLake (first time, the same build again, a rebuild from the same inputs, a small change)
and into the PostgreSQL mirror; one mart query from each of the three (median of 5); a rollback of each.

The warehouse is that of every shared round of every suite (Training, HPC, Inference) with the shared price
lists, refreshed cold by `mlperf-warehouse refresh` over HTTP on 127.0.0.1 into a scratch folder (as
suites_refresh.py does), or a copy of the warehouse folder given by --warehouse (never changed). The catalog and
the mirror live in a temporary PostgreSQL cluster (tests/support/postgres.py: Debian's server binaries); the
lake's data path is a local folder standing for the shared one. Everything runs in this process except the
refresh.

Usage: python benchmarks/team_warehouse.py [--warehouse DIR | --keep DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.github import serve_logging_repository  # noqa: E402
from support.http_server import LoopbackServer  # noqa: E402
from support.paths import SHARED_MLPERF, copy_warehouse  # noqa: E402
from support.postgres import temporary_cluster  # noqa: E402
from support.price_site import PRICE_URL_VARIABLES, serve_fixtures  # noqa: E402
from support.shared_build import setting_variables, shared_sources  # noqa: E402

REPEAT = 5
# One mart query, in SQL both DuckDB and PostgreSQL run: the price options and the cheapest cost to train per
# round, provider and pricing model.
QUERY = """select round, provider, pricing_model, count(*) as options, count(cost_to_train_usd) as priced,
       min(cost_to_train_usd) as cheapest_usd, avg(cost_to_train_usd) as mean_usd
from {table} group by round, provider, pricing_model"""


def refresh(warehouse: Path) -> tuple[int, float, str]:
    """Every shared round of every suite with the shared price lists, cold, as one `mlperf-warehouse refresh`."""
    with LoopbackServer(SHARED_MLPERF) as server, LoopbackServer() as prices:
        serve_fixtures(prices)
        serve_logging_repository(server)  # GitHub's API for the rules releases of rounds rules_refs.csv lacks
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MLPERF_", "DAGSTER_"))}
        env |= {name: prices.url for name in PRICE_URL_VARIABLES} | {
            "MLPERF_GITHUB_API_URL": server.url, "MLPERF_GCP_API_KEY": "benchmark-key",
            "MLPERF_WAREHOUSE_DIR": str(warehouse), "MLPERF_SUITES": "training,hpc,inference"} | setting_variables(
            shared_sources(server.url))
        started = time.perf_counter()
        proc = subprocess.run([str(Path(sys.executable).parent / "mlperf-warehouse"), "refresh"], env=env,
                              capture_output=True, text=True)
        return proc.returncode, time.perf_counter() - started, proc.stdout + proc.stderr


def timed(action: Callable[[], object]) -> tuple[float, object]:
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def median_of(action: Callable[[], object], n: int = REPEAT) -> tuple[float, object]:
    """The median seconds of `n` runs of `action`, and its last result."""
    seconds, result = [], None
    for _ in range(n):
        took, result = timed(action)
        seconds.append(took)
    return statistics.median(seconds), result


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def ratio(a: float, b: float) -> str:
    return f"{a / b:.1f}×" if b else "n/a"


def size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else path.stat().st_size


def mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB"


def rows_of(result) -> set[tuple]:
    """Rows as comparable tuples (floats to 9 significant digits: PostgreSQL's and DuckDB's sums round apart)."""
    return {tuple(float(f"{v:.9g}") if isinstance(v, float) else v for v in row) for row in result}


def changed_copy(build: Path, folder: Path) -> Path:
    """A copy of the build file with a small change, as a new price list would make: the cost of one round's
    price options 1 % higher in mart_cost_to_train, and a new fingerprint. Named as a later build."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    copy = folder / f"mlperf-{stamp}.duckdb"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(build, copy)
    with duckdb.connect(str(copy)) as con:
        round_ = con.execute("select max(round) from mart_cost_to_train where cost_to_train_usd is not null"
                             ).fetchone()[0]
        con.execute("update mart_cost_to_train set cost_to_train_usd = cost_to_train_usd * 1.01, "
                    "perf_per_dollar = perf_per_dollar / 1.01 where round = ?", [round_])
        con.execute("update _build_info set fingerprint = 'benchmark-small-change'")
    return copy


def describe(record: dict) -> str:
    replaced = record.get("replaced") or []
    if not record.get("published", True):
        return "nothing committed (the lake's newest snapshot holds this build)"
    return f"snapshot {record['snapshot']}, {len(replaced)} of {len(record.get('digests') or {})} relations " \
           f"copied" + (f" ({', '.join(replaced)})" if replaced and len(replaced) <= 6 else "")


def measure(base: Path, scratch: Path) -> None:
    import psycopg

    from pipelines.lib.io.context import amend
    from pipelines.lib.io.paths import extensions_dir, published_db
    from pipelines.lib.warehouse.build import build
    from pipelines.lib.warehouse.extensions import load_extensions
    from pipelines.lib.warehouse.lake import connect_lake
    from pipelines.lib.warehouse.lake_publish import publish_build, published_build_path, rollback_lake
    from pipelines.lib.warehouse.pg_mirror import mirror_build
    from pipelines.lib.warehouse.query import connect_readonly
    from pipelines.lib.warehouse.store import publish, rollback
    from pipelines.lib.warehouse.team import BiMirror, TeamCatalog

    amend(warehouse_dir=base)  # the extensions are installed into its folder, as a command would
    first = published_build_path(base)
    with duckdb.connect(str(first), read_only=True) as con:
        tables, views = (con.execute(f"select count(*) from duckdb_{kind}() where database_name = current_database() "
                                     "and schema_name = 'main'" + (" and not internal" if kind == "views" else ""))
                         .fetchone()[0] for kind in ("tables", "views"))
        rows = con.execute("select sum(estimated_size) from duckdb_tables() where database_name = current_database()"
                           ).fetchone()[0]
    print(f"warehouse: {first.name}, {mib(size(first))}, {tables} tables and {views} views, "
          f"about {rows:,} rows\n")

    # --- (a) publishing -------------------------------------------------------------------------------------
    rebuild_s, rebuilt = timed(lambda: build(base, force=True))
    second = base / "builds" / rebuilt.build
    link_s, _ = median_of(lambda: publish(second, base))  # the publish step alone: a hard link and a rename

    with temporary_cluster() as cluster:
        lake_url = cluster.create_database("mlperf_lake", "lake_owner", "lake-Owner-1")
        bi_url = cluster.create_database("mlperf_bi", "bi_owner", "bi-Owner-1")
        data_path = scratch / "shared-folder" / "lake"
        # as a command builds them from the settings: the extensions go into the warehouse's own folder
        writer = TeamCatalog(lake_url, str(data_path) + "/", extensions=extensions_dir(base))
        # a reader has the catalog URL only: the lake records its data path
        reader = TeamCatalog(lake_url, extensions=extensions_dir(base))
        mirror = BiMirror(bi_url)
        cluster.psql("create role mlperf_reader nologin")  # an administrator's: the mirror's owner may not

        lake_first_s, lake_first = timed(lambda: publish_build(writer, first))
        lake_same_s, lake_same = timed(lambda: publish_build(writer, first))
        lake_rebuilt_s, lake_rebuilt = timed(lambda: publish_build(writer, second))
        third = changed_copy(second, base / "builds")  # a kept build: the local rollback goes back from it
        lake_small_s, lake_small = timed(lambda: publish_build(writer, third))
        mirror_first_s, mirrored = timed(lambda: mirror_build(mirror, first))
        mirror_again_s, _ = timed(lambda: mirror_build(mirror, third))
        cluster.psql("create role alice login password 'alice-Reader-2' in role mlperf_reader")
        alice = cluster.url("mlperf_bi", "alice", "alice-Reader-2")

        print("(a) publishing one build")
        print(f"  local file, rebuild + SQL tests + publish (build(force=True)): {ms(rebuild_s)}")
        print(f"  local file, the publish step alone (hard link + atomic rename), median of {REPEAT}: {ms(link_s)}")
        print(f"  DuckLake, first publish: {ms(lake_first_s)}; {describe(lake_first)}")
        print(f"  DuckLake, the same build again: {ms(lake_same_s)}; {describe(lake_same)}")
        print(f"  DuckLake, a rebuild from the same inputs: {ms(lake_rebuilt_s)}; {describe(lake_rebuilt)}")
        print(f"  DuckLake, a small change (one round's costs in mart_cost_to_train): {ms(lake_small_s)}; "
              f"{describe(lake_small)}")
        print(f"  PostgreSQL mirror, first: {ms(mirror_first_s)}; {len(mirrored['tables'])} tables")
        print(f"  PostgreSQL mirror, replaced by the next build: {ms(mirror_again_s)}")
        schema_bytes = int(cluster.psql("select sum(pg_total_relation_size(c.oid)) from pg_class c join "
                                        "pg_namespace n on n.oid = c.relnamespace where n.nspname = 'mlperf' "
                                        "and c.relkind = 'r'", "mlperf_bi").stdout)
        print(f"  sizes: build file {mib(size(first))}; lake data path {mib(size(data_path))} (Parquet, "
              f"{sum(1 for _ in data_path.rglob('*.parquet'))} files: {lake_small['snapshot']} snapshots); catalog "
              f"database {mib(int(cluster.psql('select pg_database_size(current_database())', 'mlperf_lake').stdout))};"
              f" mirror schema {mib(schema_bytes)} (tables, TOAST and indexes)")
        print(f"  ratios: DuckLake first publish ÷ local rebuild+publish {ratio(lake_first_s, rebuild_s)}; "
              f"DuckLake small change ÷ first {lake_small_s / lake_first_s:.2f}; "
              f"mirror ÷ DuckLake first publish {ratio(mirror_first_s, lake_first_s)}\n")

        # --- (b) one mart query from each -----------------------------------------------------------------
        local_sql, lake_sql, pg_sql = (QUERY.format(table=t) for t in
                                       ("mart_cost_to_train", "mart_cost_to_train", "mlperf.mart_cost_to_train"))

        def local_cold():
            with connect_readonly(published_db(base)) as con:
                return con.execute(local_sql).fetchall()

        def lake_cold():
            with connect_lake(reader) as con:
                return con.execute(lake_sql).fetchall()

        def pg_cold():
            with psycopg.connect(alice) as pg:
                return pg.execute(pg_sql).fetchall()

        publish(third, base)  # the local file holds what the lake and the mirror hold now
        results = {}
        print(f"(b) one mart query (group by round, provider, pricing_model over mart_cost_to_train), median of "
              f"{REPEAT}")
        cold = {}
        for name, action in (("local file", local_cold), ("DuckLake", lake_cold), ("PostgreSQL mirror", pg_cold)):
            cold[name], results[name] = median_of(action)
        warm = {}
        with connect_readonly(published_db(base)) as con:
            warm["local file"], _ = median_of(lambda: con.execute(local_sql).fetchall())
        with connect_lake(reader) as con:
            warm["DuckLake"], _ = median_of(lambda: con.execute(lake_sql).fetchall())
        with psycopg.connect(alice) as pg:
            warm["PostgreSQL mirror"], _ = median_of(lambda: pg.execute(pg_sql).fetchall())
        def extensions_only():
            con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
            load_extensions(con, "ducklake", "postgres", folder=extensions_dir(base))
            con.close()

        loading, _ = median_of(extensions_only)
        for name in cold:
            print(f"  {name}: connect + query {ms(cold[name])}; on an open connection {ms(warm[name])}")
        print(f"  (of the DuckLake's connect: loading the ducklake and postgres extensions {ms(loading)})")
        same = rows_of(results["local file"]) == rows_of(results["DuckLake"]) == rows_of(results["PostgreSQL mirror"])
        print(f"  {len(results['local file'])} rows; the same rows from all three: {'yes' if same else 'NO'}")
        print(f"  ratios to the local file: DuckLake {ratio(cold['DuckLake'], cold['local file'])} connect + query, "
              f"{ratio(warm['DuckLake'], warm['local file'])} query only; PostgreSQL mirror "
              f"{ratio(cold['PostgreSQL mirror'], cold['local file'])} connect + query, "
              f"{ratio(warm['PostgreSQL mirror'], warm['local file'])} query only\n")

        # --- (c) rollback -----------------------------------------------------------------------------------
        local_back_s, local_back = timed(lambda: rollback(base))
        lake_back_s, lake_back = timed(lambda: rollback_lake(writer))
        with connect_lake(reader) as con:
            restored = rows_of(con.execute(lake_sql).fetchall())
        with connect_readonly(published_db(base)) as con:
            expected = rows_of(con.execute(local_sql).fetchall())
        print("(c) rollback to the build before")
        print(f"  local file (store.rollback: reads the kept build's record, links it): {ms(local_back_s)}; "
              f"now {local_back['build']}")
        print(f"  DuckLake (rollback_lake: a new snapshot copying the earlier one's differing relations): "
              f"{ms(lake_back_s)}; snapshot {lake_back['snapshot']} as snapshot {lake_back['to_snapshot']}, "
              f"{len(lake_back['replaced'])} relations copied ({', '.join(lake_back['replaced'])}); the query "
              f"gives the rolled-back rows: {'yes' if restored == expected else 'NO'}")
        print(f"  ratio: DuckLake ÷ local {ratio(lake_back_s, local_back_s)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--warehouse", type=Path, help="a copy of this warehouse folder (with a published build) "
                       "instead of a refresh of every shared round")
    where.add_argument("--keep", type=Path, help="refresh into this warehouse folder and keep it as refreshed "
                       "(the measures run on a copy)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="team-bench-") as tmp:
        scratch = Path(tmp)
        if args.warehouse:
            base = copy_warehouse(args.warehouse.resolve(), scratch / "warehouse")
            print(f"the warehouse: a copy of {args.warehouse}")
        else:
            refreshed = (args.keep or scratch / "refreshed").resolve()
            code, seconds, out = refresh(refreshed)
            print(f"the warehouse: every shared round of every suite with the price lists, refreshed cold: exit "
                  f"{code} in {seconds:.1f} s")
            if not (refreshed / "mlperf.duckdb").exists():
                print(out[-3000:])
                raise SystemExit(1)
            base = copy_warehouse(refreshed, scratch / "warehouse") if args.keep else refreshed
        measure(base, scratch)


if __name__ == "__main__":
    main()
