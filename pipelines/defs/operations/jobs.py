"""The jobs, by asset group: the CLI's `refresh`, the schedules and the sensors all run these,
so a new asset or check in a group runs everywhere without anyone listing it."""

from dataclasses import dataclass

import dagster as dg

from pipelines.defs.hpc.assets import hpc_results_archive, hpc_round_tables, hpc_rules_archive
from pipelines.defs.hpc.partitions import mlperf_hpc_rounds
from pipelines.defs.inference.assets import inference_results_archive, inference_round_tables
from pipelines.defs.inference.partitions import mlperf_inference_rounds
from pipelines.defs.mlperf.assets import mlperf_results_archive, mlperf_round_tables, mlperf_rules_archive
from pipelines.defs.mlperf.partitions import mlperf_rounds
from pipelines.lib.mlperf.suites import HPC, INFERENCE, TRAINING

OUTPUTS = dg.AssetSelection.groups("outputs")

# Partitioned and unpartitioned assets cannot share a run: one job per partitioning. A job's partitions
# are its assets' (mlperf_round for this one, daily for prices_job): Dagster infers them.
mlperf_round_job = dg.define_asset_job(
    "mlperf_round_job",
    selection=dg.AssetSelection.groups("mlperf"),
    description="Fetch (conditional GET) one MLPerf round and the rules it was scored with, parse, score and "
    "stage it. A round that fails keeps its previously staged tables.",
)
hpc_round_job = dg.define_asset_job(
    "hpc_round_job",
    selection=dg.AssetSelection.groups("hpc"),
    description="Fetch (conditional GET) one MLPerf HPC round and the rules it was scored with, parse, score and "
    "stage it. A round that fails keeps its previously staged tables.",
)
inference_round_job = dg.define_asset_job(
    "inference_round_job",
    selection=dg.AssetSelection.groups("inference"),
    description="Fetch (conditional GET) one MLPerf Inference round, parse its LoadGen summaries and systems, and "
    "stage them. A round that fails keeps its previously staged tables.",
)
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


@dataclass(frozen=True)
class SuiteRounds:
    """A suite's rounds in the definitions: their partitions, the job that fetches and stages one, and the
    names of that job's assets (the results archive, the staged round tables, the rules archive if any)."""

    partitions: dg.DynamicPartitionsDefinition
    job: object  # what dg.define_asset_job returns (its class is not public Dagster API)
    results_archive: str
    round_tables: str
    rules_archive: str | None


def _name(asset: dg.AssetsDefinition) -> str:
    return asset.key.to_user_string()


# The one map from a suite (pipelines.lib.mlperf.suites) to its Dagster pieces: the CLI's refresh and the
# sensors read it.
SUITE_ROUNDS = {
    TRAINING.name: SuiteRounds(mlperf_rounds, mlperf_round_job, _name(mlperf_results_archive),
                               _name(mlperf_round_tables), _name(mlperf_rules_archive)),
    HPC.name: SuiteRounds(mlperf_hpc_rounds, hpc_round_job, _name(hpc_results_archive), _name(hpc_round_tables),
                          _name(hpc_rules_archive)),
    INFERENCE.name: SuiteRounds(mlperf_inference_rounds, inference_round_job, _name(inference_results_archive),
                                _name(inference_round_tables), None),
}
ROUND_JOBS = [suite.job for suite in SUITE_ROUNDS.values()]
