"""Hand-maintained seed tables shipped with the code, loaded as `raw_<name>` next to the staged tables.

SQL models read the raw table (`raw_benchmark_seed`), never a file path.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from pipelines.lib.io.package_data import package_path
from pipelines.lib.reference.accelerators import ACCELERATORS_CSV
from pipelines.lib.reference.vocabulary import VOCABULARY_CSV

BENCHMARKS_CSV = package_path(__package__, "benchmarks.csv")
# Price providers: their kind (hyperscaler, neocloud, marketplace) and the submitter names that are them.
CLOUD_PROVIDERS_CSV = package_path(__package__, "cloud_providers.csv")
FRAMEWORK_FAMILIES_CSV = package_path(__package__, "framework_families.csv")
SUBMITTER_ALIASES_CSV = package_path(__package__, "submitter_aliases.csv")
# Each benchmark's training set by round (a benchmark keeps its name when its dataset changes).
BENCHMARK_DATASETS_CSV = package_path(__package__, "benchmark_datasets.csv")
# MLPerf HPC benchmarks: the models a weak-scaling result must train, the runs the olympic mean drops.
HPC_BENCHMARKS_CSV = package_path(__package__, "hpc_benchmarks.csv")
# MLPerf Inference models: every folder spelling of a model, and whether its throughput counts tokens or samples.
INFERENCE_MODELS_CSV = package_path(__package__, "inference_models.csv")

SEED_TABLES: dict[str, Path] = {
    "benchmark_seed": BENCHMARKS_CSV,
    "benchmark_dataset_seed": BENCHMARK_DATASETS_CSV,
    "accelerator_seed": ACCELERATORS_CSV,
    "cloud_provider_seed": CLOUD_PROVIDERS_CSV,
    "vocabulary_seed": VOCABULARY_CSV,
    "framework_family_seed": FRAMEWORK_FAMILIES_CSV,
    "submitter_alias_seed": SUBMITTER_ALIASES_CSV,
    "hpc_benchmark_seed": HPC_BENCHMARKS_CSV,
    "inference_model_seed": INFERENCE_MODELS_CSV,
}


def load_seeds(con: duckdb.DuckDBPyConnection, seeds: dict[str, Path] | None = None) -> None:
    """Create `raw_<name>` for every seed (all columns read as text; models cast what they need)."""
    for name, path in sorted((seeds or SEED_TABLES).items()):
        con.execute(
            f"create or replace table raw_{name} as select * from read_csv($path, header = true, all_varchar = true)",
            {"path": str(path)},
        )
