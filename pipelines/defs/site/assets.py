import dagster as dg

from pipelines.defs.resources import WarehouseLocation
from pipelines.defs.warehouse.models import REPORT_INPUTS
from pipelines.lib.io.paths import ensure_inside
from pipelines.lib.warehouse.query import connect_published


@dg.asset(
    deps=list(REPORT_INPUTS),
    # Its own group and job: rendering every round's pages takes several times as long as the export
    # and the report, so a refresh does not wait for it (`mlperf-warehouse site`, site_job, its sensor).
    group_name="site",
    kinds={"duckdb", "html"},
    # rebuilt whenever a refresh publishes a new warehouse (by the automation-condition sensor)
    description="The static results site (warehouse/site/): an index of rounds; per round a table of systems × "
    "benchmarks (minutes) with filters and sorting; a scaling and cost report per benchmark; a page per system "
    "with links to its files at MLCommons. Plain HTML, CSS and a small script: opens offline from the folder.",
)
def mlperf_site(context: dg.AssetExecutionContext, warehouse_location: WarehouseLocation) -> dg.MaterializeResult:
    from pipelines.lib.report.site import write_site

    base = warehouse_location.path()
    out_dir = ensure_inside(base / "site", base)
    with connect_published(base) as con:
        site = write_site(con, out_dir)
    for note in site.notes:
        context.log.info(note)
    return dg.MaterializeResult(
        metadata={
            "index": dg.MetadataValue.path(str(site.index)),
            "rounds": ", ".join(site.rounds),
            "reports": len(site.reports),
            "system_pages": site.system_pages,
        }
    )
