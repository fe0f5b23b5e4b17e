"""A structural SQL test that fails on one round's new data leaves that round out of the build (its
previously published rows stay) and publishes the others; a failure no round explains stops the publish."""

from __future__ import annotations

import re

import duckdb
import polars as pl
import pytest

from pipelines.lib.mlperf.tables import TABLES
from pipelines.lib.reference import seeds
from pipelines.lib.staging.files import staged_files, write_staged
from pipelines.lib.warehouse import build as wh
from pipelines.lib.warehouse.store import read_published_info
from support.mini_warehouse import stage_round

pytestmark = [pytest.mark.slow]


def _break_round(base, round_version: str) -> None:
    """Stage the round's runs with one result file listed twice: fct_training_run's grain breaks."""
    runs = pl.read_parquet([p for p in staged_files("training_runs", base) if p.stem == round_version])
    doubled = pl.concat([runs, runs.head(1)])
    write_staged("training_runs", round_version, doubled.select(list(TABLES["training_runs"][0])), base)


def _results(base) -> dict[str, int]:
    con = duckdb.connect(str(base / "mlperf.duckdb"), read_only=True)
    return dict(con.execute("select round, count(*) from fct_training_result group by 1").fetchall())


def test_the_failing_round_keeps_its_previous_rows_and_the_others_publish(tmp_path):
    stage_round(tmp_path, "v4.1", systems=2)
    stage_round(tmp_path, "v5.0", systems=2)
    assert wh.build(tmp_path).published and _results(tmp_path) == {"v4.1": 2, "v5.0": 2}
    stage_round(tmp_path, "v4.1", systems=3)  # v4.1 gains a system: new data that holds
    stage_round(tmp_path, "v5.0", systems=4)
    _break_round(tmp_path, "v5.0")  # v5.0's new data breaks a grain
    built = wh.build(tmp_path)
    assert built.published and set(built.excluded_rounds) == {"v5.0"}
    reason = built.excluded_rounds["v5.0"]
    assert re.match(r"^fct_\w+ failed \(", reason) and "previously published rows of the round stay" in reason
    assert _results(tmp_path) == {"v4.1": 3, "v5.0": 2}  # v4.1's new data, v5.0's previous rows
    # the tests its rows failed, with those rows (the doubled run: a grain, and the mean it skews)
    assert {o.name for o in built.excluded_outcomes} >= {"fct_training_run_unique", "fct_training_result_score_from_runs"}
    assert all(r["round"] == "v5.0" for o in built.excluded_outcomes for r in o.offending)
    assert all(o.passed for o in built.tests if o.severity == "structural")  # the published build passes
    # recorded with the published build: a refresh that changes nothing still names the round
    assert read_published_info(tmp_path)["excluded_rounds"] == built.excluded_rounds
    again = wh.build(tmp_path)
    assert again.skipped and again.excluded_rounds == built.excluded_rounds
    # fixed upstream: the round comes back
    stage_round(tmp_path, "v5.0", systems=4)
    fixed = wh.build(tmp_path)
    assert fixed.published and fixed.excluded_rounds == {} and _results(tmp_path) == {"v4.1": 3, "v5.0": 4}


def test_a_failing_round_with_no_previous_rows_is_left_out(tmp_path):
    stage_round(tmp_path, "v4.1", systems=2)
    stage_round(tmp_path, "v5.0", systems=2)
    _break_round(tmp_path, "v5.0")
    built = wh.build(tmp_path)
    assert built.published and _results(tmp_path) == {"v4.1": 2}
    assert "no previously published rows: the round is not in the warehouse" in built.excluded_rounds["v5.0"]


def test_nothing_is_published_when_no_round_is_left(tmp_path):
    stage_round(tmp_path, "v5.0", systems=2)
    _break_round(tmp_path, "v5.0")
    with pytest.raises(wh.BuildFailed, match="nothing published: no round is left with results: v5.0: fct_"):
        wh.build(tmp_path)
    assert not (tmp_path / "mlperf.duckdb").exists()


def test_a_structural_failure_no_round_explains_stops_the_publish(tmp_path, monkeypatch):
    stage_round(tmp_path, "v4.1", systems=2)
    assert wh.build(tmp_path).published
    published = (tmp_path / "mlperf.duckdb").stat().st_ino
    doubled = tmp_path / "benchmarks.csv"
    text = seeds.BENCHMARKS_CSV.read_text()
    doubled.write_text(text + text.splitlines()[1] + "\n")  # gpt3 twice: dim_benchmark's grain breaks
    monkeypatch.setitem(seeds.SEED_TABLES, "benchmark_seed", doubled)
    with pytest.raises(wh.BuildFailed, match="dim_benchmark_unique"):
        wh.build(tmp_path, force=True)
    assert (tmp_path / "mlperf.duckdb").stat().st_ino == published  # the last good build stays
