import dagster as dg

from pipelines.defs.resources import WarehouseLocation
from pipelines.defs.warehouse.assets import mlperf_warehouse
from pipelines.lib.paths import ensure_inside, published_db
from pipelines.lib.query import connect_readonly


@dg.asset(
    deps=[mlperf_warehouse],
    group_name="metrics",
    kinds={"duckdb", "html"},
    # re-rendered whenever a refresh publishes a new warehouse (by the automation-condition sensor)
    automation_condition=dg.AutomationCondition.eager(),
    description="The scaling and cost report (self-contained HTML + PNG charts) of the latest round, for gpt3 or a "
    "Llama benchmark when the round has one, else its most-submitted benchmark: warehouse/reports/<round>/.",
)
def mlperf_report(context: dg.AssetExecutionContext, warehouse_location: WarehouseLocation) -> dg.MaterializeResult:
    from pipelines.lib.report import build_report, default_benchmark, latest_round

    base = warehouse_location.path()
    with connect_readonly(published_db(base)) as con:
        round_version = latest_round(con)
        benchmark = default_benchmark(con, round_version) if round_version else None
        if benchmark is None:
            context.log.info("no scored results in the warehouse: no report")
            return dg.MaterializeResult(metadata={"skipped": True})
        out_dir = ensure_inside(base / "reports" / round_version, base)
        report = build_report(con, round_version, benchmark, out_dir)
    for note in report.notes:
        context.log.info(note)
    return dg.MaterializeResult(
        metadata={
            "round": round_version,
            "benchmark": benchmark,
            "html": dg.MetadataValue.path(str(report.html)),
            "charts": len(report.pngs),
            "systems": len(report.figures),
            "skipped": False,
        }
        | {f"png_{name}": dg.MetadataValue.path(str(path)) for name, path in report.pngs.items()},
    )


@dg.asset_check(
    asset=mlperf_warehouse,
    description="Metric marts in sensible ranges: scaling efficiencies in (0, 1.5], costs positive, MFU in (0, 1]. "
    "Warns (the SQL tests already block publishing on non-positive values and fan-out).",
)
def metric_marts_sensible(warehouse_location: WarehouseLocation) -> dg.AssetCheckResult:
    with connect_readonly(published_db(warehouse_location.path())) as con:
        tables = {t for (t,) in con.execute("select table_name from information_schema.tables").fetchall()}
        counts = {}
        if "mart_scaling_efficiency" in tables:
            counts["scaling_out_of_range"] = con.execute(
                "select count(*) from mart_scaling_efficiency where convergence_scaling_efficiency not between 1e-9 and 1.5 "
                "or weak_scaling_efficiency not between 1e-9 and 1.5"
            ).fetchone()[0]
        if "mart_cost_to_train" in tables:
            counts["costs_not_positive"] = con.execute(
                "select count(*) from mart_cost_to_train where not cost_to_train_usd > 0"
            ).fetchone()[0]
        if "mart_utilization" in tables:
            counts["mfu_out_of_range"] = con.execute(
                "select count(*) from mart_utilization where mfu <= 0 or mfu > 1"
            ).fetchone()[0]
    missing = sorted({"mart_scaling_efficiency", "mart_cost_to_train", "mart_utilization"} - tables)
    return dg.AssetCheckResult(
        passed=not missing and not any(counts.values()),
        severity=dg.AssetCheckSeverity.WARN,
        metadata=counts | {"missing_marts": ", ".join(missing)},
    )
