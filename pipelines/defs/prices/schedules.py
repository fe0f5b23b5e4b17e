import dagster as dg

from pipelines.defs.operations.jobs import prices_job

daily_price_refresh = dg.build_schedule_from_partitioned_job(
    prices_job,
    name="daily_price_refresh",
    hour_of_day=5,
    minute_of_hour=0,  # cron "0 5 * * *" (UTC, the partitions timezone)
    description="Daily at 05:00 UTC: fetch today's price lists (one provider failing does not stop the others).",
)
