"""Hand-maintained seed tables shipped with the code, loaded as `raw_<name>` next to the staged tables.

SQL models read the raw table (`raw_benchmark_seed`), never a file path.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from .accelerators import ACCELERATORS_CSV
from .prices.clouds import CLOUD_PROVIDERS_CSV

_HERE = Path(__file__).resolve().parent

SEED_TABLES: dict[str, Path] = {
    "benchmark_seed": _HERE / "benchmarks.csv",
    "accelerator_seed": ACCELERATORS_CSV,
    "cloud_provider_seed": CLOUD_PROVIDERS_CSV,
}


def load_seeds(con: duckdb.DuckDBPyConnection, seeds: dict[str, Path] | None = None) -> None:
    """Create `raw_<name>` for every seed (all columns read as text; models cast what they need)."""
    for name, path in sorted((seeds or SEED_TABLES).items()):
        con.execute(
            f"create or replace table raw_{name} as select * from read_csv($path, header = true, all_varchar = true)",
            {"path": str(path)},
        )
