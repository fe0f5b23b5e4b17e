import time

import dagster as dg

from pipelines.defs.resources import WarehouseLocation
from pipelines.defs.warehouse.assets import mlperf_warehouse
from pipelines.lib.warehouse.exports import export


@dg.asset(
    deps=[mlperf_warehouse],
    group_name="outputs",
    kinds={"parquet"},
    automation_condition=dg.AutomationCondition.eager(),  # after every publish
    description="Every public table of the published warehouse as Parquet (partitioned by round where a "
    "table has one) with manifest.json, in <warehouse>/exports/parquet, for BI tools.",
)
def warehouse_parquet_export(warehouse_location: WarehouseLocation) -> dg.MaterializeResult:
    base = warehouse_location.path()
    started = time.perf_counter()
    manifest = export(base / "exports" / "parquet", "parquet", base=base)
    return dg.MaterializeResult(
        metadata={"tables": len(manifest["tables"]), "built_at": manifest["built_at"],
                  "seconds": round(time.perf_counter() - started, 2)}
        | {f"rows_{t['name']}": t["rows"] for t in manifest["tables"]}
    )
