"""A warehouse written while Training's names were "mlperf" (staged `mlperf_*` tables, `mlperf-<round>` quarantine
files and parse markers, `mlperf_round` partitions) refreshes under Training's names without downloading or
parsing anything again, and publishes the same tables; the migration is done once, and finishes one that stopped."""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from pipelines.defs.rounds.migration import migrate_training_names
from pipelines.lib.mlperf.training_rename import pending_moves
from pipelines.runner.jobs import refresh
from support.http_server import LoopbackServer
from support.logs import SSD_ROUND, ssd_mirror
from support.old_names import NEW_PARTITIONS, OLD_PARTITIONS, old_names, rename_back
from support.paths import copy_warehouse
from support.refresh import refresh_settings

pytestmark = [pytest.mark.slow]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A published warehouse refreshed over loopback HTTP, the server still serving its sources (the same URLs)."""
    folder = tmp_path_factory.mktemp("migration")
    mirror = ssd_mirror(folder / "site", systems=3)
    with LoopbackServer(folder / "site") as server, pytest.MonkeyPatch.context() as env:
        def refresh_at(base: Path):
            env.setenv("MLPERF_WAREHOUSE_DIR", str(base))
            env.delenv("DAGSTER_HOME", raising=False)
            server.requests.clear()
            return refresh(refresh_settings(rounds=[SSD_ROUND],
                                            results_url_template=f"{server.url}/training_results_{{version}}-main.tar.gz",
                                            rules_url_template=f"{server.url}/logging-{{ref}}.tar.gz",
                                            trust_rules_refs=[mirror.trusted_ref]), prices=False)

        first = refresh_at(folder / "warehouse")
        assert first.ok and first.published, first.render()
        yield folder / "warehouse", refresh_at, server


def _old_copy(site, tmp_path, monkeypatch) -> tuple[Path, list[Path]]:
    base = copy_warehouse(site[0], tmp_path / "warehouse")
    monkeypatch.setenv("MLPERF_WAREHOUSE_DIR", str(base))
    with _instance(base) as instance:
        renamed = rename_back(base, instance)
    assert old_names(base) and not any(p.exists() for p in renamed)
    return base, renamed


def _instance(base: Path) -> dg.DagsterInstance:
    """The warehouse's own instance (its home; the process's settings may name another warehouse until a refresh)."""
    return dg.DagsterInstance.from_config(str(base / "dagster"))


def _published(base: Path) -> dict[str, list[tuple]]:
    with duckdb.connect(str(base / "mlperf.duckdb"), read_only=True) as con:
        names = [n for (n,) in con.execute("select table_name from information_schema.tables where "
                                           "regexp_matches(table_name, '^(dim|fct|mart)_') order by 1").fetchall()]
        return {n: sorted(map(repr, con.execute(f"select * from {n}").fetchall())) for n in names}


def test_an_old_warehouse_refreshes_without_downloading_or_parsing(site, tmp_path, monkeypatch):
    published, refresh_at, server = site
    base, renamed = _old_copy(site, tmp_path, monkeypatch)

    summary = refresh_at(base)

    assert summary.ok, summary.render()
    migrations = [s for s in summary.steps if s.name == "migration"]
    assert len(migrations) == 1 and f"{len(renamed)} staged files" in migrations[0].detail, summary.render()
    assert "1 mlperf_round partitions now training_round" in migrations[0].detail
    assert summary.render().count("Training's names") == 1
    assert server.requests and all("if-none-match" in h or "if-modified-since" in h for _, _, h in server.requests)
    results = [s for s in summary.steps if s.name.startswith("results")]
    assert results and all("unchanged upstream; not re-parsed" in s.detail for s in results), summary.render()
    assert old_names(base) == [] and all(p.exists() for p in renamed)
    assert _published(base) == _published(published)
    with _instance(base) as instance:
        assert instance.get_dynamic_partitions(OLD_PARTITIONS) == []
        assert instance.get_dynamic_partitions(NEW_PARTITIONS) == [SSD_ROUND]
        staged = sorted(p for p in (base / "staging").rglob("*") if p.is_file())
        assert migrate_training_names(instance, base) is None  # a second migration: nothing to do, nothing done
        assert sorted(p for p in (base / "staging").rglob("*") if p.is_file()) == staged


def test_a_migration_stopped_part_way_is_finished(site, tmp_path, monkeypatch):
    base, renamed = _old_copy(site, tmp_path, monkeypatch)
    moves = pending_moves(base)
    assert len(moves) == len(renamed) > 2
    for old, new in moves[: len(moves) // 2]:  # where a crash stopped it: some files moved, the old partitions kept
        new.parent.mkdir(parents=True, exist_ok=True)
        os.replace(old, new)
    with _instance(base) as instance:
        instance.add_dynamic_partitions(NEW_PARTITIONS, [SSD_ROUND])
        done = migrate_training_names(instance, base)
        assert done is not None and f"{len(moves) - len(moves) // 2} staged files" in done
        assert old_names(base) == [] and all(p.exists() for p in renamed)
        assert instance.get_dynamic_partitions(OLD_PARTITIONS) == []
        assert instance.get_dynamic_partitions(NEW_PARTITIONS) == [SSD_ROUND]


def test_a_file_written_under_its_new_name_wins(tmp_path):
    from pipelines.lib.mlperf.training_rename import move_staged_files

    staging = tmp_path / "staging"
    for folder, name, text in (("mlperf_runs", "v4.1.parquet", "old"), ("training_runs", "v4.1.parquet", "new"),
                               ("mlperf_runs", "v5.0.parquet", "only old"), ("_meta", "mlperf-v5.0.json", "marker")):
        (staging / folder).mkdir(parents=True, exist_ok=True)
        (staging / folder / name).write_text(text)
    move_staged_files(tmp_path)
    assert (staging / "training_runs" / "v4.1.parquet").read_text() == "new"
    assert (staging / "training_runs" / "v5.0.parquet").read_text() == "only old"
    assert (staging / "_meta" / "training-v5.0.json").read_text() == "marker"
    assert not (staging / "mlperf_runs").exists() and not (staging / "_meta" / "mlperf-v5.0.json").exists()
    assert move_staged_files(tmp_path) == []


def test_a_round_kept_from_a_build_of_the_old_names_keeps_its_rows(tmp_path):
    """A round a build takes from the published one (it failed, or is left out) is read from that build's
    raw_mlperf_* tables when the build was made before Training's names said Training."""
    from pipelines.lib.warehouse.build.inputs import load_raw

    previous = tmp_path / "previous.duckdb"
    with duckdb.connect(str(previous)) as old:
        old.execute("create table raw_mlperf_runs (round varchar, run_file varchar)")
        old.execute("insert into raw_mlperf_runs values ('v4.1', 'a/result_0.txt'), ('v5.0', 'b/result_0.txt')")
        old.execute("create table raw_hpc_runs (round varchar, run_file varchar)")
    with duckdb.connect() as con:
        load_raw(con, tmp_path / "warehouse", previous=previous, from_previous=frozenset({"v4.1"}))
        assert con.execute("select round, run_file from raw_training_runs").fetchall() == [("v4.1", "a/result_0.txt")]
        assert con.execute("select count(*) from raw_hpc_runs").fetchone() == (0,)
