"""The raw tables a build loads: name → Polars schema used when no staged file exists yet.

Staged data lives in `warehouse/staging/<table>/<partition>.parquet`; every file of a table is
loaded into `raw_<table>`.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from pipelines.lib.mlperf.suites import SUITES, RoundKey, Suite
from pipelines.lib.mlperf.tables import SUITE_TABLES
from pipelines.lib.prices.normalize import STAGED_PRICE_SCHEMA
from pipelines.lib.staging.validation import QUARANTINE_SCHEMA

RAW_TABLES: dict[str, dict] = {name: types for tables in SUITE_TABLES.values()
                               for name, (types, _model, _file) in tables.items()}
RAW_TABLES["quarantine"] = QUARANTINE_SCHEMA
# One file per provider and fetch day; every snapshot is kept (price history).
RAW_TABLES["cloud_prices"] = STAGED_PRICE_SCHEMA


@dataclass(frozen=True)
class RoundFiles:
    """How a raw table holds one round of a suite: staged as `<file_prefix><round>.parquet`, its rows
    those whose `column` is the round (and, in the shared quarantine, whose `source` is the suite's)."""

    suite: Suite
    column: str
    file_prefix: str
    source: str | None = None

    def key(self, round_version: str) -> str:
        """The name a build gives the round when it leaves it out: `v4.1` (Training), `hpc:v3.0` (HPC)."""
        return str(RoundKey(self.suite, round_version))


# The raw tables staged per round: what a round left out of a build takes from the previous build.
ROUND_FILES: dict[str, list[RoundFiles]] = {
    name: [RoundFiles(suite, "round", "")] for suite in SUITES.values() for name in SUITE_TABLES[suite.name]
}
ROUND_FILES["quarantine"] = [RoundFiles(suite, "partition", suite.quarantine_prefix, suite.quarantine_source)
                             for suite in SUITES.values()]


def empty(name: str) -> pl.DataFrame:
    return pl.DataFrame(schema=RAW_TABLES[name])
