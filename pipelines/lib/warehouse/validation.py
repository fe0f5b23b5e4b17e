"""Validate a frame against a Pandera model; rows that fail become quarantine rows, never vanish."""

from __future__ import annotations

import json

import pandera.polars as pa
import polars as pl

from schemas import polars_schema
from schemas.quarantine import QuarantineRow

QUARANTINE_SCHEMA = polars_schema(QuarantineRow)


def empty_quarantine() -> pl.DataFrame:
    return pl.DataFrame(schema=QUARANTINE_SCHEMA)


def quarantine_frame(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=QUARANTINE_SCHEMA) if rows else empty_quarantine()


def validate_or_quarantine(
    df: pl.DataFrame, model: type[pa.DataFrameModel], *, source: str, partition: str, file_column: str | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(valid rows, quarantine rows). Schema-level failures (a missing column) raise: that is a bug."""
    try:
        return model.validate(df, lazy=True), empty_quarantine()
    except pa.errors.SchemaErrors as exc:
        cases = exc.failure_cases
    row_cases = cases.filter(pl.col("index").is_not_null())
    if row_cases.height == 0:
        raise ValueError(f"{model.__name__}: table-level validation failed:\n{cases}")
    reasons: dict[int, list[str]] = {}
    for idx, column, check, value in row_cases.select("index", "column", "check", "failure_case").iter_rows():
        reasons.setdefault(int(idx), []).append(f"{model.__name__}.{column} failed {check} (value {value!r})")
    bad_index = sorted(reasons)
    indexed = df.with_row_index("__row")
    bad = indexed.filter(pl.col("__row").is_in(bad_index))
    good = indexed.filter(~pl.col("__row").is_in(bad_index)).drop("__row")
    quarantine = [
        {
            "source": source,
            "partition": partition,
            "file": str(row.get(file_column)) if file_column else None,
            "record": str(row["__row"]),
            "reason": "; ".join(reasons[row["__row"]]),
            "payload": json.dumps({k: v for k, v in row.items() if k != "__row"}, default=str)[:4000],
        }
        for row in bad.iter_rows(named=True)
    ]
    return model.validate(good, lazy=True), quarantine_frame(quarantine)
