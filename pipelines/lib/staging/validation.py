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


NOTES_COLUMN = "values_nulled"  # where a row says which of its values were nulled, and why


def validate_or_quarantine(
    df: pl.DataFrame, model: type[pa.DataFrameModel], *, source: str, partition: str, file_column: str | None = None,
    nulled_on_failure: tuple[str, ...] = (), shown_as: str | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(valid rows, quarantine rows). Schema-level failures (a missing column) raise: that is a bug.
    A failed check on a column of `nulled_on_failure` nulls that value and keeps the row (the reason is
    appended to its `values_nulled` column and recorded in the quarantine); any other failure
    quarantines the whole row. A reason names the model as `shown_as` (default: its class name)."""
    try:
        return model.validate(df, lazy=True), empty_quarantine()
    except pa.errors.SchemaErrors as exc:
        cases = exc.failure_cases
    row_cases = cases.filter(pl.col("index").is_not_null())
    if row_cases.height == 0:
        raise ValueError(f"{model.__name__}: table-level validation failed:\n{cases}")
    reasons: dict[int, list[str]] = {}
    nulled: dict[int, dict[str, str]] = {}
    for idx, column, check, value in row_cases.select("index", "column", "check", "failure_case").iter_rows():
        reason = f"{shown_as or model.__name__}.{column} failed {check} (value {value!r})"
        if column in nulled_on_failure:
            nulled.setdefault(int(idx), {})[column] = reason
        else:
            reasons.setdefault(int(idx), []).append(reason)
    nulled_rows: list[dict] = []
    if nulled:
        df, nulled_rows = _null_values(df, nulled, source, partition, file_column)
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
    # Nulled values and dropped rows can leave nothing to fail: the second pass normally passes at once.
    valid, more = validate_or_quarantine(good, model, source=source, partition=partition, file_column=file_column,
                                         nulled_on_failure=nulled_on_failure, shown_as=shown_as)
    return valid, pl.concat([quarantine_frame(nulled_rows + quarantine), more])


def _null_values(df: pl.DataFrame, nulled: dict[int, dict[str, str]], source: str, partition: str,
                 file_column: str | None) -> tuple[pl.DataFrame, list[dict]]:
    """`df` with each failing value nulled and its row's NOTES_COLUMN saying why; one quarantine row
    per nulled value (the row itself stays)."""
    rows = df.with_row_index("__row")
    notes = {idx: "; ".join(reasons.values()) + " (value nulled, row kept)" for idx, reasons in nulled.items()}
    exprs = []
    for column in sorted({c for reasons in nulled.values() for c in reasons}):
        hit = [idx for idx, reasons in nulled.items() if column in reasons]
        exprs.append(pl.when(pl.col("__row").is_in(hit)).then(None).otherwise(pl.col(column)).alias(column))
    note = pl.col("__row").replace_strict(notes, default=None, return_dtype=pl.String)
    if NOTES_COLUMN in df.columns:
        exprs.append(pl.concat_str([pl.col(NOTES_COLUMN), note], separator="; ", ignore_nulls=True).alias(NOTES_COLUMN))
    quarantine = []
    for row in rows.filter(pl.col("__row").is_in(list(nulled))).iter_rows(named=True):
        for reason in nulled[row["__row"]].values():
            quarantine.append({
                "source": source, "partition": partition,
                "file": str(row.get(file_column)) if file_column else None, "record": str(row["__row"]),
                "reason": f"{reason}: value nulled, row kept", "payload": None,
            })
    return rows.with_columns(exprs).drop("__row"), quarantine
