"""Schedules that keep the warehouse current without anyone running `refresh` by hand."""

import dagster as dg

from pipelines.defs.hpc.partitions import mlperf_hpc_rounds
from pipelines.defs.inference.partitions import mlperf_inference_rounds
from pipelines.defs.mlperf.partitions import mlperf_rounds
from pipelines.defs.operations.jobs import hpc_round_job, inference_round_job, mlperf_round_job


@dg.schedule(
    cron_schedule="0 6 * * 1",
    job=mlperf_round_job,
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


@dg.schedule(
    cron_schedule="30 6 * * 1",
    job=hpc_round_job,
    execution_timezone="UTC",
    description="Weekly: re-check every known MLPerf HPC round upstream, as weekly_mlperf_results does for Training.",
)
def weekly_hpc_results(context: dg.ScheduleEvaluationContext):
    rounds = context.instance.get_dynamic_partitions(mlperf_hpc_rounds.name)
    if not rounds:
        return dg.SkipReason("no mlperf_hpc_round partitions yet: run `mlperf-warehouse refresh --suites hpc`")
    stamp = context.scheduled_execution_time.strftime("%Y%m%dT%H%M")
    return [dg.RunRequest(run_key=f"weekly-{stamp}-{r}", partition_key=r) for r in rounds]


@dg.schedule(
    cron_schedule="45 6 * * 1",
    job=inference_round_job,
    execution_timezone="UTC",
    description="Weekly: re-check every known MLPerf Inference round upstream (partitions exist only when the "
    "inference suite was loaded).",
)
def weekly_inference_results(context: dg.ScheduleEvaluationContext):
    rounds = context.instance.get_dynamic_partitions(mlperf_inference_rounds.name)
    if not rounds:
        return dg.SkipReason("no mlperf_inference_round partitions: `mlperf-warehouse refresh --suites inference`")
    stamp = context.scheduled_execution_time.strftime("%Y%m%dT%H%M")
    return [dg.RunRequest(run_key=f"weekly-{stamp}-{r}", partition_key=r) for r in rounds]
