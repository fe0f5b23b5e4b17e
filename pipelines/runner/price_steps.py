"""Refresh the cloud price lists in-process: one prices_job run for today's partition. Each provider is
its own step, so one provider failing does not stop the others (its previous snapshot stays current)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date

import dagster as dg

from pipelines.defs.metadata import PricesStaged
from pipelines.lib.staging.files import staged_files
from pipelines.lib.warehouse.summary import StepOutcome, clip
from pipelines.runner.runs import materialized_metadata, run_error, run_job


def refresh_prices(instance: dg.DagsterInstance, resources: dict, progress: Callable[[str], None] = lambda _: None,
                   *, day: str | None = None, price_sources=None, debug: bool = False) -> list[StepOutcome]:
    from pipelines.defs.prices.resources import price_sources_from_settings

    day = day or date.today().isoformat()
    all_resources = dict(resources)
    if price_sources is not None or "price_sources" not in all_resources:
        all_resources["price_sources"] = price_sources or price_sources_from_settings()
    progress(f"prices: fetching {day} from every provider ...")
    result = run_job("prices_job", instance, all_resources, partition_key=day, debug=debug)
    metadata = materialized_metadata(result)
    outcomes = []
    for step_key, seconds in _step_seconds(instance, result.run_id).items():
        provider = step_key.removesuffix("_prices")
        meta = next((m for asset, m in metadata.items() if asset.split("/")[-1] == step_key), None)
        unreachable = False
        if meta is not None:
            staged = PricesStaged.from_metadata(meta)
            if staged.skipped:
                detail = f"skipped: {staged.skipped}"
            else:
                detail = f"prices {staged.rows}, quarantined {staged.quarantined}, pages {staged.pages}"
                detail += f"; {staged.notes}" if staged.notes else ""
        else:
            error, unreachable = run_error(result, step_key)
            # the error is cut, never what it means for the data: a failure line stays under 160 characters
            detail = clip(error, 90) + ("; previous snapshot kept" if _has_snapshot(all_resources, provider)
                                         else "; no earlier snapshot")
        warned = meta is not None and PricesStaged.from_metadata(meta).warning
        outcomes.append(StepOutcome(f"prices {provider}", meta is not None, seconds, detail, warning=warned,
                                    unreachable=unreachable))
        progress(f"prices {provider}: {'ok' if meta is not None else 'FAILED'} in {seconds:.1f}s; {detail}")
    if not result.success and not outcomes:  # the run failed before any provider's step started
        error, unreachable = run_error(result)
        outcomes.append(StepOutcome("prices", False, 0.0, error, unreachable=unreachable))
    return outcomes


def _step_seconds(instance: dg.DagsterInstance, run_id: str) -> dict[str, float]:
    """Each step of the run, in the order it started, with how long it took (from the event log)."""
    started, seconds = {}, {}
    for record in instance.all_logs(run_id, of_type={dg.DagsterEventType.STEP_START, dg.DagsterEventType.STEP_SUCCESS,
                                                   dg.DagsterEventType.STEP_FAILURE}):
        key = record.step_key
        if record.dagster_event.event_type == dg.DagsterEventType.STEP_START:
            started[key] = record.timestamp
        else:
            seconds[key] = record.timestamp - started.get(key, record.timestamp)
    return {key: seconds.get(key, 0.0) for key in started}


def _has_snapshot(resources: dict, provider: str) -> bool:
    """Whether an earlier snapshot of `provider` stays current (so the failure message is true)."""
    base = resources["warehouse_location"].path()
    return any(path.name.startswith(f"{provider}-") for path in staged_files("cloud_prices", base))
