import dagster as dg

price_refresh_job = dg.define_asset_job(
    "price_refresh_job",
    selection=dg.AssetSelection.groups("prices"),
    description="Fetch every cloud price list for one day and stage a snapshot per provider.",
)

daily_price_refresh = dg.build_schedule_from_partitioned_job(
    price_refresh_job,
    name="daily_price_refresh",
    hour_of_day=5,
    minute_of_hour=0,  # cron "0 5 * * *" (UTC, the partitions timezone)
    description="Daily at 05:00 UTC: fetch today's price lists (one provider failing does not stop the others).",
)
