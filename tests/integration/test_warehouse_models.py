"""The SQL models as Dagster assets: Dagster's own `materialize` of the round assets and
`warehouse_models` on a small synthetic archive, recorded on a real (temporary) Dagster instance."""

import shutil

import dagster as dg
import duckdb
import pytest

from pipelines.defs.resources import BuildAssumptions, MlperfResultsSource, WarehouseLocation
from pipelines.defs.rounds.assets import SUITE_ROUNDS
from pipelines.defs.warehouse.models import MODELS, SQL_TESTS, group_of, warehouse_models
from pipelines.lib.io.package_data import package_path
from pipelines.lib.mlperf.suites import TRAINING
from pipelines.lib.warehouse import models as model_headers
from pipelines.runner.instance import warehouse_instance
from pipelines.runner.runs import run_job
from support.logs import serve_package_rules, write_ssd_archive

pytestmark = [pytest.mark.slow]

ROUND_ASSETS, training_rounds = SUITE_ROUNDS[TRAINING.name].assets, SUITE_ROUNDS[TRAINING.name].partitions

ROUND = "v4.1"
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


@pytest.fixture
def staged(warehouse, tmp_path):
    """A warehouse directory with one staged round (two Acme systems, five SSD runs each), and the
    instance the CLI would record what Dagster did on (its storage, under the warehouse directory)."""
    site = tmp_path / "site"
    site.mkdir()
    write_ssd_archive(site / f"training_results_{ROUND}.tar.gz", systems=2)
    rules = serve_package_rules(site, ROUND)
    resources = {
        "results_source": MlperfResultsSource(
            url_templates={TRAINING.name: str(site / "training_results_{version}.tar.gz")},
            rules_url_template=str(site / rules), backoff_seconds=0.01),
        "warehouse_location": WarehouseLocation(directory=str(warehouse)),
        "build_assumptions": BuildAssumptions(),
    }
    with warehouse_instance() as instance:
        instance.add_dynamic_partitions(training_rounds.name, [ROUND])
        result = dg.materialize(ROUND_ASSETS, partition_key=ROUND, instance=instance, resources=resources,
                                run_config=QUIET)
        assert result.success
        yield instance, resources, warehouse


def build_models(instance, resources):
    return run_job("warehouse_job", instance, resources)  # the definitions' own job: models + every check


def check_history(instance, asset: str, name: str):
    key = dg.AssetCheckKey(dg.AssetKey(asset), name)
    return instance.event_log_storage.get_asset_check_execution_history(key, limit=10)


def test_the_asset_graph_has_one_asset_per_model_grouped_by_layer():
    assert set(warehouse_models.keys) == {dg.AssetKey(name) for name in MODELS}
    specs = {spec.key.to_user_string(): spec for spec in warehouse_models.specs}
    assert {spec.group_name for spec in specs.values()} == {"staging", "core", "metrics"}
    assert specs["stg_training_runs"].group_name == "staging" and group_of("int_run_scoring") == "core"
    assert specs["mart_utilization"].group_name == "metrics" and specs["dim_system"].group_name == "core"
    assert {d.asset_key.to_user_string() for d in specs["fct_training_result"].deps} == {
        "int_result_score", "fct_training_run", "dim_system", "stg_training_rules", "stg_training_rcp"}
    assert {d.asset_key.to_user_string() for d in specs["stg_training_runs"].deps} == {"training_round_tables"}
    assert "azure_prices" in {d.asset_key.to_user_string() for d in specs["stg_cloud_prices"].deps}
    # a seed is no asset: dim_benchmark's only upstream asset is the model of its other seed
    assert [d.asset_key.to_user_string() for d in specs["dim_benchmark"].deps] == ["dim_benchmark_dataset"]
    assert not list(specs["dim_benchmark_dataset"].deps)
    assert "raw_benchmark_seed" in specs["dim_benchmark"].metadata["seeds"]
    assert {(c.asset_key.to_user_string(), c.name) for c in warehouse_models.check_specs} == {
        (t.model, t.name) for t in SQL_TESTS}


def test_each_model_is_materialized_with_rows_and_columns_and_each_check_lands_on_its_model(staged):
    instance, resources, base = staged
    result = build_models(instance, resources)
    assert result.success
    con = duckdb.connect(str(base / "mlperf.duckdb"), read_only=True)
    for name in MODELS:
        event = instance.get_latest_materialization_event(dg.AssetKey(name))
        assert event is not None, name
        metadata = event.asset_materialization.metadata
        assert metadata["dagster/row_count"].value == con.execute(f"select count(*) from {name}").fetchone()[0]
        columns = [(c.name, c.type) for c in metadata["dagster/column_schema"].value.columns]
        assert columns == [(c, t) for c, t, *_ in con.execute(f"describe {name}").fetchall()], name
    assert instance.get_latest_materialization_event(dg.AssetKey("fct_training_result")).asset_materialization \
        .metadata["dagster/row_count"].value == 2
    for test in SQL_TESTS:  # every SQL test evaluated once, on the model it tests, and passed
        history = check_history(instance, test.model, test.name)
        assert [h.status.value for h in history] == ["SUCCEEDED"], test.name
    python_checks = {"unmapped_accelerators": "dim_system", "accelerators_without_peak": "mart_utilization",
                     "quarantine_counts": "fct_quarantine", "metric_marts_sensible": "mart_scaling_efficiency"}
    evaluated = {(e.asset_key.to_user_string(), e.check_name) for e in result.get_asset_check_evaluations()}
    assert {(asset, name) for name, asset in python_checks.items()} <= evaluated

    # Nothing changed: the build is skipped, nothing materialized again, the SQL tests not re-run (their
    # results say so), the Python checks not run; the skip is an observation on every model.
    before = {n: instance.get_latest_materialization_event(dg.AssetKey(n)).run_id for n in MODELS}
    again = build_models(instance, resources)
    assert again.success and again.get_asset_materialization_events() == []
    assert {n: instance.get_latest_materialization_event(dg.AssetKey(n)).run_id for n in MODELS} == before
    latest = check_history(instance, "fct_training_result", "fct_training_result_unique")[0]
    assert latest.event.dagster_event.event_specific_data.metadata["skipped"].value is True
    assert not {(a, n) for n, a in python_checks.items()} & {
        (e.asset_key.to_user_string(), e.check_name) for e in again.get_asset_check_evaluations()}
    observed = [e for e in again.all_events if e.event_type_value == "ASSET_OBSERVATION"]
    assert len(observed) == len(MODELS)
    assert all(e.event_specific_data.asset_observation.metadata["skipped"].value for e in observed)


def test_a_failing_sql_test_is_recorded_on_its_model_and_blocks_publishing(staged, tmp_path, monkeypatch):
    """A structural test failing on the only round leaves no round to publish: nothing is published."""
    instance, resources, base = staged
    # The shipped models, with one shipped test made to fail: every result is "offending".
    sql = tmp_path / "sql"
    shutil.copytree(package_path("sql"), sql)
    failing = sql / "tests" / "fct_training_result_positive.sql"
    failing.write_text(failing.read_text().replace("where score_minutes <= 0", "where score_minutes > 0"))
    monkeypatch.setattr(model_headers, "sql_dir", lambda: sql)

    result = build_models(instance, resources)
    assert not result.success
    assert not (base / "mlperf.duckdb").exists()  # nothing published
    assert result.get_asset_materialization_events() == []
    for name in MODELS:
        assert instance.get_latest_materialization_event(dg.AssetKey(name)) is None
    history = check_history(instance, "fct_training_result", "fct_training_result_positive")
    assert [h.status.value for h in history] == ["FAILED"]
    evaluation = history[0].event.dagster_event.event_specific_data
    assert not evaluation.passed and evaluation.severity == dg.AssetCheckSeverity.ERROR
    assert evaluation.metadata["offending_rows_shown"].value == 2
    offending = evaluation.metadata["offending_rows"].value
    assert {r["system"] for r in offending} == {"box0", "box1"} and all("results archive v4.1" in r["_source"]
                                                                         for r in offending)
    # only the failed test has an evaluation; the others of the thrown-away build have none
    others = check_history(instance, "fct_training_result", "fct_training_result_unique")
    assert [h.event.dagster_event.event_type_value for h in others] == ["ASSET_CHECK_EVALUATION_PLANNED"]

