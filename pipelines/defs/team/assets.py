"""Team mode's outputs: the published build as a DuckLake snapshot (MLPERF_CATALOG), and the PostgreSQL mirror
for BI tools (MLPERF_BI_MIRROR). Each does nothing, and says so, when its setting is unset; each does nothing
when its target holds the published build already (a refresh whose build was skipped republishes nothing)."""

import dagster as dg

from pipelines.defs.resources import WarehouseLocation
from pipelines.defs.warehouse.models import public_models


@dg.asset(
    deps=public_models(),
    group_name="outputs",
    kinds={"ducklake", "postgresql"},
    description="The published build as one snapshot of the team's DuckLake (catalog in PostgreSQL: MLPERF_CATALOG; "
    "Parquet under MLPERF_CATALOG_DATA_PATH), under the catalog's advisory lock; readers on any machine see the "
    "previous snapshot until it commits. Only relations whose content changed are rewritten.",
)
def team_warehouse_snapshot(context: dg.AssetExecutionContext,
                            warehouse_location: WarehouseLocation) -> dg.MaterializeResult:
    from pipelines.lib.warehouse.lake_publish import publish_published
    from pipelines.lib.warehouse.team import team_catalog

    catalog = team_catalog()
    if catalog is None:
        return dg.MaterializeResult(metadata={"team_mode": False})
    record = publish_published(catalog, warehouse_location.path())
    if record is None:
        return dg.MaterializeResult(metadata={"team_mode": True, "published": False,
                                              "why": "nothing is published locally yet"})
    context.log.info(f"team catalog {catalog.shown}: snapshot {record['snapshot']}"
                     f"{'' if record['published'] else ' (already held this build)'}")
    return dg.MaterializeResult(metadata={
        "team_mode": True, "catalog": catalog.shown, "snapshot": record["snapshot"], "published": record["published"],
        "build": record.get("build"), "replaced": len(record.get("replaced") or []),
        "seconds": record.get("seconds", 0.0)})


@dg.asset(
    deps=public_models(),
    group_name="outputs",
    kinds={"postgresql"},
    description="Every public table (dim_, fct_, mart_) of the published build in a PostgreSQL schema for BI tools "
    "(MLPERF_BI_MIRROR, MLPERF_BI_MIRROR_SCHEMA), with the model headers' table and column comments; built in "
    "<schema>_staging and swapped in one transaction; readable by MLPERF_BI_READER_ROLE only.",
)
def bi_postgres_mirror(context: dg.AssetExecutionContext,
                       warehouse_location: WarehouseLocation) -> dg.MaterializeResult:
    from pipelines.lib.warehouse.pg_mirror import mirror_published
    from pipelines.lib.warehouse.team import bi_mirror

    target = bi_mirror()
    if target is None:
        return dg.MaterializeResult(metadata={"bi_mirror": False})
    record = mirror_published(target, warehouse_location.path())
    if record is None:
        return dg.MaterializeResult(metadata={"bi_mirror": True, "mirrored": False,
                                              "why": "nothing is published locally yet"})
    context.log.info(f"BI mirror {target.shown} schema {target.schema}: build {record['build']}"
                     f"{'' if record['mirrored'] else ' (already held)'}")
    return dg.MaterializeResult(metadata={
        "bi_mirror": True, "database": target.shown, "schema": target.schema, "build": record["build"],
        "mirrored": record["mirrored"], "tables": len(record.get("tables") or {}),
        "seconds": record.get("seconds", 0.0)})
