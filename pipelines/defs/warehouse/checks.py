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


@dg.asset_check(
    asset=mlperf_warehouse,
    description="Every accelerator_model_name of dim_system maps to dim_accelerator, or is named here. "
    "Names mapped to nothing on purpose (CPU-only systems) are listed apart and do not fail the check.",
)
def unmapped_accelerators(warehouse_location: WarehouseLocation) -> dg.AssetCheckResult:
    with connect_readonly(published_db(warehouse_location.path())) as con:
        rows = con.execute(
            "select accelerator_mapping, coalesce(accelerator_model_name, '(none)'), list(distinct round order by round), "
            "count(*) from dim_system where accelerator_mapping <> 'mapped' group by all order by 1, 2"
        ).fetchall()
    unmapped = {name: f"{n} systems in {', '.join(rounds)}" for kind, name, rounds, n in rows if kind == "unmapped"}
    deliberate = {name: f"{n} systems in {', '.join(rounds)}" for kind, name, rounds, n in rows if kind != "unmapped"}
    return dg.AssetCheckResult(
        passed=not unmapped,
        metadata={"unmapped": dg.MetadataValue.json(unmapped), "deliberately_unmapped": dg.MetadataValue.json(deliberate)},
    )
