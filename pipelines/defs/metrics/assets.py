import dagster as dg

from pipelines.defs.resources import WarehouseLocation
from pipelines.defs.warehouse.models import REPORT_INPUTS
from pipelines.lib.io.paths import ensure_inside, published_db
from pipelines.lib.warehouse.query import connect_published, connect_readonly


@dg.asset(
    # after the team snapshot: in team mode the report reads the lake
    deps=[*REPORT_INPUTS, "team_warehouse_snapshot"],
    group_name="outputs",
    kinds={"duckdb", "html"},
    # re-rendered whenever a refresh publishes a new warehouse (by the automation-condition sensor)
    description="The scaling and cost report (self-contained HTML + PNG charts) of the latest round, for gpt3 or a "
    "Llama benchmark when the round has one, else its most-submitted benchmark: warehouse/reports/<round>/.",
)
def mlperf_report(context: dg.AssetExecutionContext, warehouse_location: WarehouseLocation) -> dg.MaterializeResult:
    from pipelines.lib.report.round_report import default_benchmark, latest_round, write_report

    base = warehouse_location.path()
    with connect_published(base) as con:
        round_version = latest_round(con)
        benchmark = default_benchmark(con, round_version) if round_version else None
        if benchmark is None:
            context.log.info("no scored results in the warehouse: no report")
            return dg.MaterializeResult(metadata={"skipped": True})
        out_dir = ensure_inside(base / "reports" / round_version, base)
        report = write_report(con, round_version, benchmark, out_dir)
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


def _table_metadata(rows: list[dict]) -> dg.MetadataValue:
    """Offending rows as a Markdown table (round, submitter, system, benchmark, value, ...)."""
    if not rows:
        return dg.MetadataValue.md("none")
    columns = list(rows[0])
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join("" if r[c] is None else str(r[c]) for c in columns) + " |" for r in rows[:200]]
    if len(rows) > 200:
        lines.append(f"\n… and {len(rows) - 200} more")
    return dg.MetadataValue.md("\n".join(lines))


@dg.asset_check(
    asset="mart_scaling_efficiency",
    description="Scaling efficiencies (convergence in (0, 1.5], throughput in [0.30, 1.10]); names every "
    "offending row (round, submitter, system, benchmark, value, stated cause). Warns: every throughput "
    "efficiency outside its band carries a cause in mart_scaling_efficiency.weak_scaling_flag to read before "
    "using it. (MFU, sample and throughput plausibility are the SQL tests of severity 'plausibility'.)",
)
def metric_marts_sensible(warehouse_location: WarehouseLocation) -> dg.AssetCheckResult:
    from pipelines.lib.report.metrics import describe, scaling_findings

    # the local build just published (in team mode the lake gets it later, in outputs_job)
    with connect_readonly(published_db(warehouse_location.path())) as con:
        # every published build holds every model (the build fails on a missing one)
        found: dict[str, list[dict]] = {
            "scaling out of range": scaling_findings(con),
        }
    lines = [describe(title, rows) for title, rows in found.items() if rows]
    return dg.AssetCheckResult(
        passed=not any(found.values()),
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"summary": " | ".join(lines) or "all metric marts in range"}
        | {f"{title} (rows)": len(rows) for title, rows in found.items()}
        | {title: _table_metadata(rows) for title, rows in found.items()},
    )
