"""Read-only access to the published warehouse (never through Dagster's read-write resources)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator

import duckdb

from .paths import published_db


class WarehouseMissing(Exception):
    pass


@contextlib.contextmanager
def connect_readonly(path: Path | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    path = path or published_db()
    if not path.exists():
        raise WarehouseMissing(f"no published warehouse at {path}; run `mlperf-warehouse refresh` first")
    con = duckdb.connect(str(path), read_only=True)
    try:
        yield con
    finally:
        con.close()
