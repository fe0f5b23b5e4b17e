import dagster as dg

from pipelines.defs.hpc.partitions import mlperf_hpc_rounds
from pipelines.defs.mlperf.assets import fetch_results_archive, fetch_rules_archive, stage_round_tables
from pipelines.defs.resources import MlperfResultsSource, WarehouseLocation
from pipelines.lib.mlperf.suites import HPC


@dg.asset(
    partitions_def=mlperf_hpc_rounds,
    group_name="hpc",
    kinds={"python", "file"},
    description="The round's MLPerf HPC results archive (mlcommons/hpc_results_vX.Y), downloaded with a conditional GET.",
)
def hpc_results_archive(
    context: dg.AssetExecutionContext, results_source: MlperfResultsSource, warehouse_location: WarehouseLocation
) -> dg.MaterializeResult:
    return fetch_results_archive(context, HPC, results_source, warehouse_location)


@dg.asset(
    partitions_def=mlperf_hpc_rounds,
    group_name="hpc",
    kinds={"python", "file"},
    description=(
        "The mlcommons/logging archive at the git ref whose hpc_X.Y.0 rules scored the HPC round "
        "(pipelines/lib/mlperf/rules_refs.csv, suite hpc)."
    ),
)
def hpc_rules_archive(
    context: dg.AssetExecutionContext, results_source: MlperfResultsSource, warehouse_location: WarehouseLocation
) -> dg.MaterializeResult:
    return fetch_rules_archive(context, HPC, results_source, warehouse_location)


@dg.asset(
    partitions_def=mlperf_hpc_rounds,
    deps=[hpc_results_archive, hpc_rules_archive],
    group_name="hpc",
    kinds={"python", "polars", "parquet"},
    description=(
        "HPC runs (strong and weak scaling), systems and scaling factors parsed from the archive, each run judged "
        "by the round's own HPC rules and today's; validated, failures quarantined."
    ),
)
def hpc_round_tables(
    context: dg.AssetExecutionContext, results_source: MlperfResultsSource, warehouse_location: WarehouseLocation
) -> dg.MaterializeResult:
    return stage_round_tables(context, HPC, results_source, warehouse_location)


HPC_ROUND_ASSETS = [hpc_results_archive, hpc_rules_archive, hpc_round_tables]
