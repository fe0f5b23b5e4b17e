"""Every SQL model of `sql/` as its own asset, all built, tested and published by ONE multi_asset.

The specs come from the model headers (`pipelines/lib/warehouse/models.py`): key = model name,
group by layer, deps from `-- depends on:`, one asset check per SQL test (the files of
`sql/tests/` and the uniqueness test generated from each grain). The build itself is the
Dagster-free `pipelines.lib.warehouse.build.build`: all models into one new DuckDB file, every SQL
test, then an atomic publish only if all pass. So the assets are materialized together or not at all.
"""

import time
from datetime import timedelta

import dagster as dg

from pipelines.defs.prices.assets import PRICE_ASSETS
from pipelines.defs.resources import BuildAssumptions, WarehouseLocation
from pipelines.defs.rounds.assets import SUITE_ROUNDS
from pipelines.lib.mlperf.suites import SUITES
from pipelines.lib.warehouse import build as warehouse
from pipelines.lib.warehouse.models import (
    DERIVED_TABLES,
    PUBLIC_PREFIXES,
    Model,
    external_relations,
    load_models,
    load_tests,
    model_order,
)

MODELS = load_models()
SQL_TESTS = load_tests(MODELS)
# What the report and the site read from the published warehouse.
REPORT_INPUTS = ("dim_accelerator", "dim_benchmark", "dim_system", "fct_training_result", "fct_training_run",
                 "mart_cost_to_train", "mart_scaling_efficiency", "mart_utilization")


def group_of(name: str) -> str:
    """staging = stg_, core = int_/dim_/fct_, metrics = mart_."""
    return "staging" if name.startswith("stg_") else "metrics" if name.startswith("mart_") else "core"


def public_models() -> list[dg.AssetKey]:
    return [dg.AssetKey(name) for name in MODELS if name.startswith(PUBLIC_PREFIXES)]


def _upstream_assets(relation: str) -> list[dg.AssetKey]:
    """The asset that stages a raw_ table: a suite's round tables for its staged tables (`raw_<staged prefix>`),
    the price assets for prices, all of them for the quarantine. Seeds are package data, not assets."""
    relation = DERIVED_TABLES.get(relation, relation)
    rounds = {name: [dg.AssetKey(pieces.round_tables)] for name, pieces in SUITE_ROUNDS.items()}
    prices = [a.key for a in PRICE_ASSETS]
    for suite in SUITES.values():
        if relation.startswith(f"raw_{suite.staged_prefix}") and not relation.endswith("_seed"):
            return rounds[suite.name]
    if relation == "raw_cloud_prices":
        return prices
    if relation == "raw_quarantine":
        return [key for name in SUITES for key in rounds[name]] + prices
    return []


def column_schema(model: Model, built: list[tuple[str, str]] | None = None) -> dg.TableSchema | None:
    """The model's columns with their header descriptions: the declared types at definition time (so the
    UI shows them before any run), the built file's types after a build."""
    described = {c.name: c.description for c in model.columns}
    columns = built if built is not None else [(c.name, c.type) for c in model.columns]
    if not columns:
        return None
    return dg.TableSchema(columns=[dg.TableColumn(name, type_, description=described.get(name))
                                   for name, type_ in columns])


def _spec(model: Model) -> dg.AssetSpec:
    external = external_relations()
    deps: list[dg.AssetKey] = []
    for relation in model.depends_on:
        keys = [dg.AssetKey(relation)] if relation in MODELS else _upstream_assets(relation)
        deps += [k for k in keys if k not in deps]
    seeds = [r for r in model.depends_on if external.get(r) == "seed"]
    grain = ", ".join(model.grain) if model.grain else f"none ({model.grain_note})"
    return dg.AssetSpec(
        model.name,
        group_name=group_of(model.name),
        kinds={"duckdb", "sql"},
        description=f"{model.description} Grain: {grain}.",
        deps=deps,
        # nothing is materialized when the build is skipped (inputs unchanged since the published build)
        skippable=True,
        metadata={
            "grain": grain,
            "kind": model.kind,
            "sql": f"sql/{model.layer}/{model.name}.sql",
            "reads": ", ".join(model.depends_on),
            "seeds": (", ".join(seeds) + " (package data loaded by the build, not assets)") if seeds else "none",
        } | ({"dagster/column_schema": schema} if (schema := column_schema(model)) else {}),
        # Weekly results refresh plus a day of slack: older than that, the UI shows the facts stale.
        freshness_policy=(dg.FreshnessPolicy.time_window(fail_window=timedelta(days=8))
                          if model.name.startswith("fct_") else None),
    )


# A structural test that fails leaves its rounds out of the build (ERROR); a plausibility test names
# the rows whose metrics were nulled or flagged (WARN): it never stops a publish.
_SEVERITY = {"structural": dg.AssetCheckSeverity.ERROR, "plausibility": dg.AssetCheckSeverity.WARN}


def _check_result(outcome: warehouse.TestOutcome) -> dg.AssetCheckResult:
    rows = [{k: (v if isinstance(v, (int, float, bool)) or v is None else str(v)) for k, v in r.items()}
            for r in outcome.offending]
    return dg.AssetCheckResult(
        asset_key=outcome.model,
        check_name=outcome.name,
        passed=outcome.passed,
        severity=_SEVERITY[outcome.severity],
        description=outcome.description if outcome.passed else outcome.report(),
        metadata={
            "offending_rows_shown": len(rows),
            "more_offending_rows": outcome.more,
            "generated_from_grain": outcome.generated,
            "severity": outcome.severity,
        } | ({"offending_rows": dg.MetadataValue.json(rows), "summary": outcome.summary()} if rows else {}),
    )


@dg.multi_asset(
    name="warehouse_models",
    specs=[_spec(MODELS[name]) for name in model_order(MODELS)],
    check_specs=[
        dg.AssetCheckSpec(test.name, asset=test.model, description=f"{test.description} ({test.severity})",
                          blocking=test.severity == "structural")
        for test in SQL_TESTS
    ],
    can_subset=False,  # one build, one atomic publish: all models or none
    description="Builds every SQL model into a new DuckDB file, runs every SQL test (files of sql/tests and "
    "the grain uniqueness tests), then atomically publishes it as warehouse/mlperf.duckdb. A round whose rows "
    "fail a structural test is built from its previously published rows (or left out) and named; plausibility "
    "tests warn. Skipped (nothing materialized) when no staged input, SQL model or seed changed.",
)
def warehouse_models(context: dg.AssetExecutionContext, warehouse_location: WarehouseLocation,
                     build_assumptions: BuildAssumptions):
    started = time.perf_counter()
    try:
        result = warehouse.build(warehouse_location.path(), parameters=build_assumptions.parameters())
    except warehouse.BuildFailed as failed:
        # The failed SQL tests are recorded on their models; then the step fails: nothing is materialized
        # and nothing was published.
        for outcome in failed.outcomes:
            if not outcome.passed:
                yield _check_result(outcome)
        raise
    if result.skipped:
        context.log.info(f"inputs unchanged since the published build ({result.fingerprint[:12]}): nothing rebuilt, "
                         "no model materialized, SQL tests not re-run")
        for name in MODELS:
            yield dg.AssetObservation(asset_key=name, metadata={
                "skipped": True, "reason": "inputs unchanged since the published build",
                "fingerprint": result.fingerprint})
        # Dagster wants every check of the step answered. Not re-run: a build is only published when
        # every SQL test passed, so the answer for the published build is a pass, marked as skipped.
        for test in SQL_TESTS:
            yield dg.AssetCheckResult(
                asset_key=test.model, check_name=test.name, passed=True, severity=_SEVERITY[test.severity],
                description="not re-run: inputs unchanged since the published build",
                metadata={"skipped": True, "fingerprint": result.fingerprint,
                          "excluded_rounds": dg.MetadataValue.json(result.excluded_rounds)})
        return
    seconds = round(time.perf_counter() - started, 2)
    # A structural test that failed on a round's new data (the round was left out or kept its previously
    # published rows) is recorded as failed, with those rows, though the published build passes it.
    failed_on_excluded = {o.name: o for o in result.excluded_outcomes}
    outcomes: dict[str, list[warehouse.TestOutcome]] = {}
    for outcome in result.tests:
        outcomes.setdefault(outcome.model, []).append(failed_on_excluded.get(outcome.name, outcome))
    for name in model_order(MODELS):
        stats = result.models[name]
        yield dg.MaterializeResult(
            asset_key=name,
            metadata={
                "dagster/row_count": stats.rows,
                "dagster/column_schema": column_schema(MODELS[name], stats.columns),
                "kind": MODELS[name].kind,
                "build": result.build,
                "published": result.published,
                "path": str(result.path),
                "build_seconds": seconds,
                "excluded_rounds": dg.MetadataValue.json(result.excluded_rounds),
            },
            data_version=dg.DataVersion(result.fingerprint),
        )
        for outcome in outcomes.get(name, []):
            yield _check_result(outcome)
