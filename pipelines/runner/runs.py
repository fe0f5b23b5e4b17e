"""One run of a definitions job on the warehouse's instance, and what it did: the pieces every refresh
step uses (the results rounds, the price lists, the build, the outputs)."""

from __future__ import annotations

import functools

import dagster as dg

from pipelines.lib.warehouse.summary import is_unreachable, readable_error
from pipelines.settings import Settings


def run_config(debug: bool) -> dict:
    """Dagster's per-step lines and failure tracebacks drown the progress display; failures are summarized
    one line each instead. The `debug` setting (MLPERF_DEBUG=1) shows Dagster's errors with their tracebacks."""
    return {"loggers": {"console": {"config": {"log_level": "ERROR" if debug else "CRITICAL"}}}}


@functools.cache
def _definitions() -> dg.Definitions:
    from pipelines.definitions import defs

    return defs()


@functools.cache
def job(name: str) -> dg.JobDefinition:
    """A job of the definitions, resolved once per process."""
    return _definitions().resolve_job_def(name)


# On every run the CLI starts: the UI lists them as launched by `mlperf-warehouse refresh`, filterable.
CLI_RUN_TAGS = {"mlperf/launched_by": "mlperf-warehouse refresh"}


def run_job(name: str, instance: dg.DagsterInstance, resources: dict, partition_key: str | None = None,
            *, debug: bool = False) -> dg.ExecuteInProcessResult:
    """One run of a definitions job on `instance`, recorded there like a run launched from the UI."""
    return job(name).execute_in_process(partition_key=partition_key, instance=instance, resources=resources,
                                        raise_on_error=False, run_config=run_config(debug), tags=CLI_RUN_TAGS)


def job_resources(settings: Settings, *, backoff_seconds: float = 1.0, price_sources=None) -> dict:
    """The jobs' resources as the definitions build them from `settings` (the CLI's carry its flags); tests
    shorten the retries' `backoff_seconds` or give their own `price_sources`."""
    from pipelines.defs.prices.resources import price_sources_from_settings
    from pipelines.defs.resources import (
        build_assumptions_from_settings,
        results_source_from_settings,
        warehouse_location_from_settings,
    )

    return {
        "results_source": results_source_from_settings(settings, backoff_seconds=backoff_seconds),
        "warehouse_location": warehouse_location_from_settings(settings),
        "build_assumptions": build_assumptions_from_settings(settings),
        "price_sources": price_sources or price_sources_from_settings(settings, backoff_seconds=backoff_seconds),
    }


def materialized_metadata(result: dg.ExecuteInProcessResult) -> dict[str, dict]:
    """Each materialized asset's metadata values, by asset key."""
    return {event.asset_key.to_user_string(): {k: v.value for k, v in event.materialization.metadata.items()}
            for event in result.get_asset_materialization_events()}


def run_error(result: dg.ExecuteInProcessResult, step_key: str | None = None) -> tuple[str, bool]:
    """The first step failure of the run (or of `step_key`) as one readable line, and whether it says
    the source could not be reached."""
    for event in result.all_events:
        if not (event.is_step_failure and event.step_failure_data and event.step_failure_data.error):
            continue
        if step_key is not None and event.step_key != step_key:
            continue
        chain, err = [], event.step_failure_data.error
        while err is not None:
            chain.append(err)
            err = err.cause
        user = next((e for e in chain if not (e.cls_name or "").startswith("Dagster")), chain[-1])
        unreachable = is_unreachable([e.cls_name or "" for e in chain], [e.message or "" for e in chain])
        return readable_error(user.message, user.cls_name), unreachable
    return "failed", False


