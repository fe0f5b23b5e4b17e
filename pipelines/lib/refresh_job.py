"""Run a full refresh in-process with Dagster's own `materialize`, one round partition at a time."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import dagster as dg

from .paths import warehouse_dir
from .rounds import results_url_template

# Dagster's per-step DEBUG lines drown the progress display; failures are summarized instead.
_QUIET = {"loggers": {"console": {"config": {"log_level": "ERROR"}}}}


@dataclass
class StepOutcome:
    name: str
    ok: bool
    seconds: float
    detail: str


@dataclass
class RefreshSummary:
    steps: list[StepOutcome] = field(default_factory=list)
    published: bool = False

    @property
    def ok(self) -> bool:
        return all(s.ok for s in self.steps)

    def render(self) -> str:
        width = max((len(s.name) for s in self.steps), default=10)
        lines = [f"{'step':<{width}}  {'result':<6}  {'secs':>6}  detail"]
        for s in self.steps:
            lines.append(f"{s.name:<{width}}  {'ok' if s.ok else 'FAILED':<6}  {s.seconds:>6.1f}  {s.detail}")
        failed = [s.name for s in self.steps if not s.ok]
        if self.published:
            verdict = "published" + (f" (previous data kept for: {', '.join(failed)})" if failed else "")
        elif any(s.name == "warehouse" and s.ok for s in self.steps):
            verdict = "unchanged (no input changed)"
        else:
            verdict = "NOT published (previous warehouse kept)"
        lines.append(f"warehouse: {verdict} at {warehouse_dir() / 'mlperf.duckdb'}")
        return "\n".join(lines)


def _metadata(result: dg.ExecuteInProcessResult, asset_key: str) -> dict:
    for event in result.get_asset_materialization_events():
        if event.asset_key.to_user_string() == asset_key:
            return {k: v.value for k, v in event.materialization.metadata.items()}
    return {}


def _error(result: dg.ExecuteInProcessResult) -> str:
    for event in result.all_events:
        if event.is_step_failure and event.step_failure_data and event.step_failure_data.error:
            err = event.step_failure_data.error
            while err.cause is not None and (err.cls_name or "").startswith("Dagster"):
                err = err.cause  # the user-code error, not Dagster's wrapper
            return err.message.strip().splitlines()[0]
    return "failed"


def refresh(rounds: list[str], **kwargs) -> RefreshSummary:
    """Fetch and stage `rounds` (and prices), build, check and publish; the outcome is recorded for `status`."""
    from .locking import refresh_lock, remove_stale_files
    from .status import record_refresh_outcome

    with refresh_lock(warehouse_dir()):  # a second refresh of this directory raises WarehouseBusy
        remove_stale_files(warehouse_dir())
        try:
            summary = _refresh(rounds, **kwargs)
        except BaseException as exc:
            record_refresh_outcome(None, False, f"refresh crashed: {type(exc).__name__}: {exc}")
            raise
        record_refresh_outcome(None, summary.ok, summary.render())
        return summary


def _refresh(
    rounds: list[str],
    *,
    url_template: str | None = None,
    prices: bool = True,
    progress: Callable[[str], None] = lambda _: None,
    instance: dg.DagsterInstance | None = None,
    backoff_seconds: float = 1.0,
) -> RefreshSummary:
    # Imported here: the Dagster definitions are only needed once a refresh runs.
    from pipelines.defs.metrics.assets import metric_marts_sensible
    from pipelines.defs.mlperf.assets import mlperf_results_archive, mlperf_round_tables
    from pipelines.defs.mlperf.partitions import mlperf_rounds
    from pipelines.defs.resources import MlperfResultsSource, WarehouseLocation
    from pipelines.defs.warehouse import assets as warehouse_assets
    from pipelines.defs.warehouse import checks as warehouse_checks

    instance = instance or dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(
        mlperf_rounds.name, [r for r in rounds if not instance.has_dynamic_partition(mlperf_rounds.name, r)]
    )
    resources = {
        "results_source": MlperfResultsSource(url_template=results_url_template(url_template),
                                              backoff_seconds=backoff_seconds),
        "warehouse_location": WarehouseLocation(directory=str(warehouse_dir())),
    }
    summary = RefreshSummary()
    for index, round_version in enumerate(rounds, 1):
        progress(f"[{index}/{len(rounds)}] {round_version}: fetching and parsing ...")
        started = time.perf_counter()
        result = dg.materialize(
            [mlperf_results_archive, mlperf_round_tables],
            partition_key=round_version, instance=instance, resources=resources, raise_on_error=False, run_config=_QUIET,
        )
        seconds = time.perf_counter() - started
        if result.success:
            fetched = _metadata(result, "mlperf_results_archive")
            staged = _metadata(result, "mlperf_round_tables")
            detail = (
                f"{'downloaded' if fetched.get('changed') else 'unchanged upstream'}; "
                f"{'re-parsed' if not staged.get('skipped') else 'not re-parsed'}; "
                f"runs {staged.get('runs')}, systems {staged.get('systems')}, quarantined {staged.get('quarantined')}"
            )
        else:
            detail = _error(result)
        summary.steps.append(StepOutcome(f"results {round_version}", result.success, seconds, detail))
        progress(f"[{index}/{len(rounds)}] {round_version}: {'ok' if result.success else 'FAILED'} in {seconds:.1f}s; {detail}")

    if prices:
        from pipelines.defs.prices.resources import price_sources_from_env

        from .refresh_prices import refresh_prices

        sources = price_sources_from_env(backoff_seconds=backoff_seconds)
        summary.steps.extend(refresh_prices(instance, resources, progress, price_sources=sources))

    # A results round that fails blocks publishing: its scores would silently be those of an older
    # archive. A price list that fails does not: that provider's previous snapshot stays current
    # (the price history says when it was fetched) and the others' fresh prices are published.
    if any(not s.ok for s in summary.steps if s.name.startswith("results")):
        progress("a results round failed: the published warehouse is left as it was")
        return summary
    progress("building and publishing the warehouse ...")
    started = time.perf_counter()
    result = dg.materialize(
        [warehouse_assets.mlperf_warehouse, warehouse_checks.quarantine_counts, warehouse_checks.training_result_unique,
         warehouse_checks.unmapped_accelerators, metric_marts_sensible],
        instance=instance, resources=resources, raise_on_error=False, run_config=_QUIET,
    )
    meta = _metadata(result, "mlperf_warehouse") if result.success else {}
    summary.published = bool(meta.get("published"))
    detail = (
        ("published" if summary.published else "inputs unchanged, not rebuilt")
        + "; " + ", ".join(f"{k[5:]} {v}" for k, v in meta.items() if k.startswith("rows_"))
    ) if result.success else _error(result)
    summary.steps.append(StepOutcome("warehouse", result.success, time.perf_counter() - started, detail))
    summary.steps.extend(_check_outcomes(result))
    if summary.published:
        summary.steps.append(_after_publish(instance, resources, progress))
    return summary


def _check_outcomes(result: dg.ExecuteInProcessResult) -> list[StepOutcome]:
    """The asset checks on the published build: a failed ERROR-severity check fails the refresh (a
    WARN one is shown); the SQL tests in sql/tests are what gate publishing itself."""
    outcomes = []
    for evaluation in result.get_asset_check_evaluations():
        if evaluation.passed:
            continue
        blocking = evaluation.severity == dg.AssetCheckSeverity.ERROR
        shown = {k: v.value for k, v in evaluation.metadata.items()}
        outcomes.append(StepOutcome(f"check {evaluation.check_name}", not blocking, 0.0,
                                    f"{'failed' if blocking else 'warning'}: {shown}"[:500]))
    return outcomes


def _after_publish(instance, resources, progress) -> StepOutcome:
    """The BI export and the latest round's report, refreshed from the new build."""
    from pipelines.defs.metrics.assets import mlperf_report
    from pipelines.defs.warehouse.exports import warehouse_parquet_export

    progress("exporting Parquet and rendering the report ...")
    started = time.perf_counter()
    result = dg.materialize(
        [warehouse_parquet_export, mlperf_report], instance=instance, resources=resources,
        raise_on_error=False, run_config=_QUIET,
    )
    detail = "exports/parquet and reports/ written" if result.success else _error(result)
    return StepOutcome("exports + report", result.success, time.perf_counter() - started, detail)
