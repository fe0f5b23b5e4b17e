"""The jobs, by asset group: the CLI's `refresh`, the schedules and the sensors all run these,
so a new asset or check in a group runs everywhere without anyone listing it. Each MLPerf suite's round job
(`training_round_job`, `hpc_round_job`, ...) is made with its assets, in pipelines/defs/rounds/assets.py."""

import dagster as dg

OUTPUTS = dg.AssetSelection.groups("outputs")

# Partitioned and unpartitioned assets cannot share a run: one job per partitioning. A job's partitions
# are its assets' (daily for prices_job): Dagster infers them.
prices_job = dg.define_asset_job(
    "prices_job",
    selection=dg.AssetSelection.groups("prices"),
    description="Fetch every cloud price list for one day and stage a snapshot per provider; one provider "
    "failing does not stop the others (its previous snapshot stays current).",
)
warehouse_job = dg.define_asset_job(
    "warehouse_job",
    # The SQL models by layer, with their asset checks; what is made from the published file is outputs_job's.
    selection=dg.AssetSelection.groups("staging", "core", "metrics"),
    description="Build every SQL model into a new DuckDB file, run the SQL tests and the asset checks, and "
    "atomically publish warehouse/mlperf.duckdb (skipped when no staged input or SQL changed).",
    tags={"mlperf/publishes": "warehouse"},  # lets a run-queue tag limit serialize publishing runs
)
outputs_job = dg.define_asset_job(
    "outputs_job",
    selection=OUTPUTS,
    description="Refresh what a refresh makes from the published warehouse: the Parquet export and the report.",
)
site_job = dg.define_asset_job(
    "site_job",
    selection=dg.AssetSelection.groups("site"),
    description="Rebuild the static results site from the published warehouse (every round's pages).",
)

