import time

import dagster as dg

from pipelines.defs.resources import WarehouseLocation
from pipelines.defs.warehouse.models import public_models
from pipelines.lib.warehouse.exports import export


@dg.asset(
    deps=[*public_models(), "team_warehouse_snapshot"],  # in team mode the export reads the lake
    group_name="outputs",
    kinds={"parquet"},
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
