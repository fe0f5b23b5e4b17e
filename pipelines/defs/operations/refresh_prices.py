"""Refresh the cloud price lists in-process: one provider asset at a time, today's partition, so one
provider failing does not stop the others (its previous snapshot stays current)."""

from __future__ import annotations

import time
from datetime import date
from typing import Callable

import dagster as dg

from pipelines.defs.operations.refresh_runner import (
    _QUIET,
    StepOutcome,
    _clip,
    _error,
    _metadata,
)


def refresh_prices(instance: dg.DagsterInstance, resources: dict, progress: Callable[[str], None] = lambda _: None,
                   *, day: str | None = None, price_sources=None) -> list[StepOutcome]:
    from pipelines.defs.prices.assets import PRICE_ASSETS
    from pipelines.defs.prices.resources import price_sources_from_env

    day = day or date.today().isoformat()
    all_resources = dict(resources) | {"price_sources": price_sources or price_sources_from_env()}
    outcomes = []
    for asset in PRICE_ASSETS:
        provider = asset.key.to_user_string().removesuffix("_prices")
        progress(f"prices {provider}: fetching {day} ...")
        started = time.perf_counter()
        result = dg.materialize([asset], partition_key=day, instance=instance, resources=all_resources,
                                raise_on_error=False, run_config=_QUIET)
        seconds = time.perf_counter() - started
        if result.success:
            meta = _metadata(result, asset.key.to_user_string())
            if meta.get("skipped"):
                detail = f"skipped: {meta['skipped']}"
            else:
                detail = (f"prices {meta.get('rows')}, quarantined {meta.get('quarantined')}, "
                          f"pages {meta.get('pages')}")
        else:
            # the error is cut, never what it means for the data: a failure line stays under 160 characters
            detail = _clip(_error(result), 90) + ("; previous snapshot kept" if _has_snapshot(all_resources, provider)
                                                   else "; no earlier snapshot")
        outcomes.append(StepOutcome(f"prices {provider}", result.success, seconds, detail))
        progress(f"prices {provider}: {'ok' if result.success else 'FAILED'} in {seconds:.1f}s; {detail}")
    return outcomes


def _has_snapshot(resources: dict, provider: str) -> bool:
    """Whether an earlier snapshot of `provider` stays current (so the failure message is true)."""
    from pipelines.lib.warehouse.staging import staged_files

    base = resources["warehouse_location"].path()
    return any(path.name.startswith(f"{provider}-") for path in staged_files("cloud_prices", base))
