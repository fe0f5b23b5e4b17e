"""Jobs and schedules that keep the warehouse current without anyone running `refresh` by hand."""

import dagster as dg

from pipelines.defs.mlperf.assets import ROUND_ASSETS
from pipelines.defs.mlperf.partitions import mlperf_rounds

# Partitioned and unpartitioned assets cannot share a job: one job per round, one for the build.
mlperf_rounds_job = dg.define_asset_job(
    "mlperf_rounds_job",
    selection=dg.AssetSelection.assets(*ROUND_ASSETS),
    description="Fetch (conditional GET) one MLPerf round and the rules it was scored with, and stage it.",
)
mlperf_warehouse_job = dg.define_asset_job(
    "mlperf_warehouse_job",
    # The build, its asset checks, then what hangs off a publish: the BI export and the report.
    selection=dg.AssetSelection.groups("staging", "core", "metrics", "outputs"),
    description="Build, test and atomically publish warehouse/mlperf.duckdb (skipped if inputs unchanged), "
    "then refresh the Parquet export and the report.",
    tags={"mlperf/publishes": "warehouse"},  # lets a run-queue tag limit serialize publishing runs
)


@dg.schedule(
    cron_schedule="0 6 * * 1",
    job=mlperf_rounds_job,
    execution_timezone="UTC",
    description="Weekly: re-check every known round upstream. Unchanged archives are not re-downloaded "
    "(ETag) or re-parsed; the publish_after_refresh sensor then rebuilds if anything changed.",
)
def weekly_mlperf_results(context: dg.ScheduleEvaluationContext):
    rounds = context.instance.get_dynamic_partitions(mlperf_rounds.name)
    if not rounds:
        return dg.SkipReason("no mlperf_round partitions yet: run `mlperf-warehouse refresh` or the discovery sensor")
    stamp = context.scheduled_execution_time.strftime("%Y%m%dT%H%M")
    return [dg.RunRequest(run_key=f"weekly-{stamp}-{r}", partition_key=r) for r in rounds]
