import dagster as dg

from pipelines.defs.inference.partitions import mlperf_inference_rounds
from pipelines.defs.mlperf.assets import fetch_results_archive, stage_round_tables
from pipelines.defs.resources import MlperfResultsSource, WarehouseLocation
from pipelines.lib.mlperf.suites import INFERENCE


@dg.asset(
    partitions_def=mlperf_inference_rounds,
    group_name="inference",
    kinds={"python", "file"},
    description="The round's MLPerf Inference results archive (mlcommons/inference_results_vX.Y), downloaded with "
    "a conditional GET.",
)
def inference_results_archive(
    context: dg.AssetExecutionContext, results_source: MlperfResultsSource, warehouse_location: WarehouseLocation
) -> dg.MaterializeResult:
    return fetch_results_archive(context, INFERENCE, results_source, warehouse_location)


@dg.asset(
    partitions_def=mlperf_inference_rounds,
    deps=[inference_results_archive],
    group_name="inference",
    kinds={"python", "polars", "parquet"},
    description=(
        "Inference results (one LoadGen performance summary per division, submitter, system, model and scenario) "
        "and systems parsed from the archive; validated, failures quarantined. LoadGen judged each run: no rules "
        "archive is fetched."
    ),
)
def inference_round_tables(
    context: dg.AssetExecutionContext, results_source: MlperfResultsSource, warehouse_location: WarehouseLocation
) -> dg.MaterializeResult:
    return stage_round_tables(context, INFERENCE, results_source, warehouse_location)


INFERENCE_ROUND_ASSETS = [inference_results_archive, inference_round_tables]
