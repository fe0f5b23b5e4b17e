"""Pandera models of every staged table: the one place each column's name, dtype and checks are written.

The Polars schemas the parsers build frames with are derived from these models (`polars_schema`).
"""

from __future__ import annotations

import pandera.polars as pa
import polars as pl


def polars_schema(model: type[pa.DataFrameModel]) -> dict[str, pl.DataType]:
    """Column name → Polars dtype, in the model's field order."""
    return {name: column.dtype.type for name, column in model.to_schema().columns.items()}
