import dagster as dg

from pipelines.defs.resources import WarehouseLocation
from pipelines.defs.warehouse.assets import mlperf_warehouse
from pipelines.lib.paths import published_db
from pipelines.lib.query import connect_readonly


@dg.asset_check(
    asset=mlperf_warehouse,
    description="Quarantine counts per source and round. Fails when a round's result logs are mostly "
    "unparseable (a sign the log format changed under us).",
)
def quarantine_counts(warehouse_location: WarehouseLocation) -> dg.AssetCheckResult:
    with connect_readonly(published_db(warehouse_location.path())) as con:
        counts = con.execute(
            "select source || ':' || partition, count(*) from fct_quarantine group by all order by 1"
        ).fetchall()
        worst = con.execute(
            "select round, avg((parse_errors > 0)::int) as share from fct_training_run group by all order by share desc limit 1"
        ).fetchone()
    return dg.AssetCheckResult(
        passed=worst is None or worst[1] <= 0.5,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={k: v for k, v in counts}
        | ({"worst_round": worst[0], "worst_unparseable_share": float(worst[1])} if worst else {}),
    )


@dg.asset_check(asset=mlperf_warehouse, description="One official result per (round, submitter, system, benchmark).")
def training_result_unique(warehouse_location: WarehouseLocation) -> dg.AssetCheckResult:
    with connect_readonly(published_db(warehouse_location.path())) as con:
        duplicates = con.execute(
            "select count(*) from (select 1 from fct_training_result group by round, submitter, system, benchmark having count(*) > 1)"
        ).fetchone()[0]
    return dg.AssetCheckResult(passed=duplicates == 0, metadata={"duplicate_keys": duplicates})
