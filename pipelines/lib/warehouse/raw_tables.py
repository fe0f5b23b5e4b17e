"""The raw tables a build loads: name → Polars schema used when no staged file exists yet.

Staged data lives in `warehouse/staging/<table>/<partition>.parquet`; every file of a table is
loaded into `raw_<table>`.
"""

from __future__ import annotations

import polars as pl

from pipelines.lib.mlperf.tables import TABLES as MLPERF_TABLES
from pipelines.lib.prices.normalize import STAGED_PRICE_SCHEMA
from pipelines.lib.staging.validation import QUARANTINE_SCHEMA

RAW_TABLES: dict[str, dict] = {name: types for name, (types, _model, _file) in MLPERF_TABLES.items()}
RAW_TABLES["quarantine"] = QUARANTINE_SCHEMA
# One file per provider and fetch day; every snapshot is kept (price history).
RAW_TABLES["cloud_prices"] = STAGED_PRICE_SCHEMA


# The raw tables staged per MLPerf round (one file per round; the quarantine's MLPerf files are named
# mlperf-<round>): what a round left out of a build takes from the previous build. (column, file prefix)
ROUND_COLUMNS: dict[str, tuple[str, str]] = {name: ("round", "") for name in MLPERF_TABLES}
ROUND_COLUMNS["quarantine"] = ("partition", "mlperf-")


def empty(name: str) -> pl.DataFrame:
    return pl.DataFrame(schema=RAW_TABLES[name])
