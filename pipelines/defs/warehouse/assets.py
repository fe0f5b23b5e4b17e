import time
from datetime import timedelta

import dagster as dg

from pipelines.defs.mlperf.assets import mlperf_round_tables
from pipelines.defs.prices.assets import PRICE_ASSETS
from pipelines.defs.resources import WarehouseLocation
from pipelines.lib.warehouse import build as warehouse


@dg.asset(
    deps=[mlperf_round_tables, *PRICE_ASSETS],
    group_name="warehouse",
    kinds={"duckdb", "sql"},
    description="Builds every SQL model into a new DuckDB file, runs the SQL tests, then atomically publishes "
    "it as warehouse/mlperf.duckdb. Skipped when no staged input or SQL changed.",
    # Weekly results refresh plus a day of slack: older than that, the UI shows the warehouse stale.
    freshness_policy=dg.FreshnessPolicy.time_window(fail_window=timedelta(days=8)),
)
def mlperf_warehouse(context: dg.AssetExecutionContext, warehouse_location: WarehouseLocation) -> dg.MaterializeResult:
    started = time.perf_counter()
    result = warehouse.build(warehouse_location.path())
    if result.skipped:
        context.log.info("inputs unchanged since the published build: nothing rebuilt")
    return dg.MaterializeResult(
        metadata={"published": result.published, "skipped": result.skipped, "path": str(result.path),
                  "build_seconds": round(time.perf_counter() - started, 2)}
        | {f"rows_{t}": n for t, n in result.row_counts.items() if not t.startswith(("raw_", "stg_", "_"))},
        data_version=dg.DataVersion(result.fingerprint),
    )
